"""What the OpenAPI document calls things, and HEAD wherever GET.

A client generated from ``/openapi.json`` reads as well as its names: each operation's id
is its route function's name (``list_offers``, not ``list_offers_v1_offers_get``), its
summary the first line of that function's docstring (not FastAPI's "Get One"), and every
description is plain Markdown: the reStructuredText roles of our docstrings
(``:func:`x```, ``:class:`~a.B```) are rewritten as code spans.

:class:`HeadAsGet` answers ``HEAD`` on every ``GET`` route with the headers of the GET
and no body (RFC 9110, 9.3.2): FastAPI routes answer only the methods they declare.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HeadAsGet", "markdown", "operation_id", "summary_of", "tidy_openapi"]

#: ``:func:`~pkg.mod.name``` -> ``name``; ``:class:`pkg.Name``` -> ``pkg.Name``.
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_TILDE_TARGET = re.compile(r":[a-z]+:`~[^`]*?([^.`]+)`")
_DOUBLE_BACKTICKS = re.compile(r"``([^`]+)``")


def operation_id(route: APIRoute) -> str:
    """The route function's name: unique across the app (a test checks)."""
    return route.name


def markdown(text: str) -> str:
    """A docstring's reStructuredText inline markup as Markdown code spans.

    >>> markdown("see :func:`~pricing.rank.rank` and ``gpus``")
    'see `rank` and `gpus`'
    """
    text = _TILDE_TARGET.sub(r"`\1`", text)
    text = _ROLE.sub(r"`\1`", text)
    return _DOUBLE_BACKTICKS.sub(r"`\1`", text)


def summary_of(description: str) -> str:
    """The first line of a docstring, as a short summary without its closing period."""
    first = markdown(description.strip().split("\n\n", 1)[0]).replace("\n", " ")
    return first.rstrip(".").strip()


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: markdown(v) if k == "description" and isinstance(v, str) else _walk(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_walk(v) for v in node]
    return node


def _problems_everywhere(schema: dict[str, Any]) -> dict[str, Any]:
    """Every error answer of every operation as a problem (FastAPI's 422 shape replaced),
    and the 422 documented everywhere: any route refuses an unknown parameter."""
    from .problems import PROBLEM_MEDIA_TYPE, Problem, problem_responses

    entry = Problem["properties"]["errors"]["items"]
    problem = {
        **Problem,
        "properties": {
            **Problem["properties"],
            "errors": {
                **Problem["properties"]["errors"],
                "items": {"$ref": "#/components/schemas/ProblemParameter"},
            },
        },
    }
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["Problem"] = problem
    components["ProblemParameter"] = {**entry, "title": "ProblemParameter"}
    ref = {"$ref": "#/components/schemas/Problem"}

    for path_item in schema.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            for code, standard in problem_responses(422).items():
                responses.setdefault(str(code), standard)
            for code, response in responses.items():
                if code.isdigit() and int(code) >= 400:
                    content = response.setdefault("content", {})
                    content.pop("application/json", None)
                    content[PROBLEM_MEDIA_TYPE] = {"schema": ref}
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    return schema


def _summaries(schema: dict[str, Any]) -> dict[str, Any]:
    """An operation's summary FastAPI made from its name ("Get One") becomes the first
    line of its description (the route function's docstring)."""
    for path_item in schema.get("paths", {}).values():
        for operation in path_item.values():
            generated = operation.get("operationId", "").replace("_", " ").title()
            if operation.get("summary") in (None, generated) and operation.get("description"):
                operation["summary"] = summary_of(operation["description"])
    return schema


def tidy_openapi(app: FastAPI) -> None:
    """Give every operation a summary from its docstring; serve descriptions as Markdown;
    document every error answer as a problem."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
            )
            app.openapi_schema = _summaries(_problems_everywhere(_walk(schema)))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


class HeadAsGet:
    """Pure ASGI middleware: a ``HEAD`` request runs as ``GET``; the body is not sent.

    The GET's status and headers (``Content-Length``, ``ETag``, ``Cache-Control``) go out
    unchanged, so a HEAD can validate a cached answer; the offers cache serves it too.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        scope = {**scope, "method": "GET", "gpuscout.head": True}
        done = False

        async def without_body(message: Message) -> None:
            nonlocal done
            if message["type"] == "http.response.body":
                if done:
                    return
                if message.get("more_body", False):
                    return  # swallow the chunks; the last one ends the answer
                done = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await send(message)

        await self.app(scope, receive, without_body)
