"""What the API reads of a request, and what it says back about bad input.

Four limits bound the work one request can cost (settings, documented in ``.env.example``):

- the body: at most ``api_max_body_bytes``, checked from ``Content-Length`` and again while
  the body streams in, before anything parses it (:class:`BodySizeLimit`, 413);
- its nesting: at most ``api_max_json_depth`` levels of arrays and objects, counted on the
  bytes before any parser sees them (:class:`BodySizeLimit`, 400; unchecked, a body of a
  few thousand ``[`` stopped the JSON reader with a ``RecursionError``, a 500);
- every list in a JSON body or a query: at most ``api_max_list_items`` values
  (:func:`limit_body_lists` here, :func:`service.api.offers_query.validate_query` for the
  offers query; 422 naming the parameter and the limit), checked before the values are
  validated one by one (10,000 GPU names cost ~4 s of catalog look-ups);
- the 422 answer itself (an RFC 9457 problem, :mod:`service.api.problems`): an error's
  ``input`` and ``msg`` are cut to a few hundred characters, and a NaN or Infinity in them
  is shown as a string (strict JSON has no such numbers: unsanitised, the error answer
  itself failed with a 500).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpuscout.adapters.json_depth import json_depth_exceeds

from .problems import problem_response, validation_problem

__all__ = [
    "MAX_ERROR_CHARS",
    "MAX_ERROR_DEPTH",
    "MAX_MESSAGE_CHARS",
    "BodySizeLimit",
    "json_safe",
    "limit_body_lists",
    "safe_errors",
    "too_many_items",
    "validation_error_response",
]

#: Longest ``input`` (as JSON) a 422 error carries; longer ones are cut.
MAX_ERROR_CHARS = 200
#: Longest ``msg``: ours can list what is known (every provider name a query may give,
#: ~300 characters), and a cut list would leave the user guessing; still bounded, since a
#: message may quote the input.
MAX_MESSAGE_CHARS = 500
#: Deepest nesting of an input shown in a 422 error.
MAX_ERROR_DEPTH = 8
#: Methods whose body the API reads (the others' bodies are never read).
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _non_finite(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` with every non-finite float as a string, containers walked; strict JSON.

    Containers nested deeper than :data:`MAX_ERROR_DEPTH` are shown as ``"..."`` (a body
    can nest as deep as the JSON reader allows; this never recurses that far).

    >>> json_safe({"a": [1.0, float("inf")], "b": float("nan")})
    {'a': [1.0, 'Infinity'], 'b': 'NaN'}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else _non_finite(value)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, (Mapping, list, tuple, set, frozenset)) and depth >= MAX_ERROR_DEPTH:
        return "..."
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v, depth + 1) for v in value]
    return str(value)


def _cut(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters, cut)"


def _safe_input(value: Any) -> Any:
    """The input as strict JSON; a long one as its cut JSON text, never echoed whole."""
    value = json_safe(value)
    if isinstance(value, str):
        return _cut(value)
    if isinstance(value, (list, dict)):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return value if len(text) <= MAX_ERROR_CHARS else _cut(text)
    return value


def safe_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """FastAPI's validation errors, ready for a strict-JSON 422 of bounded size.

    Each keeps ``type``, ``loc`` and ``msg`` (cut at :data:`MAX_MESSAGE_CHARS`); ``input``
    is kept when the error had one (cut, non-finite numbers as strings); ``ctx`` is kept as
    strict JSON (its exception objects as their text).
    """
    out = []
    for error in errors:
        e = dict(error)
        safe: dict[str, Any] = {
            "type": str(e.get("type", "value_error")),
            "loc": [p if isinstance(p, int) else str(p) for p in e.get("loc", ())],
            "msg": _cut(str(e.get("msg", "")), MAX_MESSAGE_CHARS),
        }
        if "input" in e:
            safe["input"] = _safe_input(e["input"])
        if isinstance(e.get("ctx"), Mapping):
            safe["ctx"] = {k: _safe_input(v) for k, v in json_safe(e["ctx"]).items()}
        out.append(safe)
    return out


async def validation_error_response(request: Request, exc: Exception) -> Response:
    """The 422 answer of every invalid request: a problem whose ``errors`` name each
    offending parameter, strict JSON, bounded."""
    assert isinstance(exc, RequestValidationError)
    return validation_problem(request, safe_errors(exc.errors()))


def too_many_items(loc: Iterable[str | int], count: int, limit: int) -> dict[str, Any]:
    """The 422 error of a list parameter holding more than ``limit`` values."""
    where = [str(p) if not isinstance(p, int) else p for p in loc]
    name = ".".join(str(p) for p in where[1:]) or "the body"
    return {
        "type": "too_long",
        "loc": tuple(where),
        "msg": f"{name}: {count} values, at most {limit} are accepted (setting api_max_list_items)",
        "input": f"{count} values",
    }


def _long_lists(body: Any, limit: int) -> Iterator[dict[str, Any]]:
    """Errors for the lists in ``body`` longer than ``limit``, walked without recursion (a
    body may nest as deep as the JSON reader allows)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(body, ("body",))]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, list):
            if len(node) > limit:
                yield too_many_items(loc, len(node), limit)
                continue
            stack.extend(((item, (*loc, i)) for i, item in enumerate(node)))
        elif isinstance(node, dict):
            stack.extend(((value, (*loc, str(key))) for key, value in node.items()))


async def limit_body_lists(request: Request) -> None:
    """An app-wide dependency: a JSON body's lists hold at most ``api_max_list_items``.

    FastAPI has parsed the body (bounded by :class:`BodySizeLimit`) before dependencies
    run, and runs dependencies before it validates the body, so a 10,000-name list is
    refused before any name is looked up.
    """
    if request.method not in _BODY_METHODS:
        return
    content_type = request.headers.get("content-type", "")
    if "json" not in content_type:
        return
    try:
        body = await request.json()
    except ValueError:
        return  # not JSON: the body's own validation says so
    limit = request.app.state.context.settings.api_max_list_items
    errors = list(_long_lists(body, limit))
    if errors:
        raise RequestValidationError(errors)


class BodySizeLimit:
    """Pure ASGI middleware: a body over ``max_bytes`` is a 413, never read to its end; one
    nesting deeper than ``max_depth`` a 400, never parsed.

    A declared ``Content-Length`` over the limit is refused at once; otherwise the body is
    read up to the limit (a chunked or lying client is cut off there) and replayed to the
    app, which therefore never parses more than ``max_bytes``.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, max_depth: int = 32) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._too_large(scope, receive, send, f"{declared} bytes")
            return
        if scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break  # the client went away: let the app see it
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._too_large(scope, receive, send, f"more than {self.max_bytes} bytes")
                return
            if not message.get("more_body", False):
                break
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
        if json_depth_exceeds(body, self.max_depth):
            response = problem_response(
                scope,
                400,
                f"request body nests deeper than {self.max_depth} levels of arrays and objects"
                " (setting api_max_json_depth)",
                slug="body-too-deep",
            )
            await response(scope, receive, send)
            return

        async def replay() -> Message:
            if messages:
                return messages.pop(0)
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send, size: str) -> None:
        response = problem_response(
            scope,
            413,
            f"request body of {size}: at most {self.max_bytes} bytes are accepted"
            " (setting api_max_body_bytes)",
            slug="body-too-large",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
