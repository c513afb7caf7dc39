"""Every error of the API as an RFC 9457 problem (``application/problem+json``).

One shape for all of them, validation or not::

    {"type": "urn:gpuscout:problem:invalid-parameters", "title": "Invalid parameters",
     "status": 422, "detail": "unknown parameter 'gpu'; did you mean 'gpus'?",
     "instance": "/v1/offers?gpu=H100",
     "errors": [{"parameter": "gpu", "in": "query", "type": "extra_forbidden",
                 "loc": ["query", "gpu"], "msg": "unknown parameter 'gpu'; did you mean 'gpus'?",
                 "input": "H100"}]}

``type`` is ``about:blank`` when the status says all there is to say (404, 405, 409, 503),
its ``title`` then the status phrase (RFC 9457, 4.2.1); the problems a client may act on
have their own type (:data:`PROBLEM_TYPES`, documented in ``docs/api-vocabulary.md``).
``errors`` is only in validation problems: one entry per offending parameter, bounded and
strict JSON (:func:`service.api.input_limits.safe_errors`). An unknown parameter's entry
names the closest known one (:func:`did_you_mean`, from the route's documented parameters).
"""

from __future__ import annotations

import difflib
import http
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from ..validation_text import error_message

__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "PROBLEM_TYPES",
    "Problem",
    "ProblemError",
    "did_you_mean",
    "known_parameters",
    "problem_response",
    "problem_responses",
    "validation_problem",
]

PROBLEM_MEDIA_TYPE = "application/problem+json"

#: The problem types of their own: slug -> title. Any other problem is ``about:blank``.
PROBLEM_TYPES: dict[str, str] = {
    "invalid-parameters": "Invalid parameters",
    "body-too-large": "Request body too large",
    "body-too-deep": "Request body nested too deeply",
    "rate-limited": "Too many requests",
    "cursor-expired": "Cursor from another snapshot",
    "alert-limit": "Too many alerts for this address",
    "webhook-refused": "Webhook refused",
}
#: ``"Value error, gpus: required"`` names ``gpus``.
_NAMED = re.compile(r"(?:Value error, )?([a-z_]+):")
#: Where in a request a validation error's location starts.
_PLACES = frozenset({"query", "body", "path", "header", "cookie"})


def problem_type(slug: str) -> str:
    return f"urn:gpuscout:problem:{slug}"


def _instance(scope: Scope) -> str:
    """The request's path and query (cut); without the query when it carries a token."""
    query = scope.get("query_string", b"").decode("latin-1")
    if "token=" in query:
        query = ""
    path = str(scope.get("path", ""))
    text = f"{path}?{query}" if query else path
    return text if len(text) <= 300 else text[:300] + "..."


def problem_body(
    status: int,
    detail: str,
    *,
    slug: str | None = None,
    instance: str | None = None,
    errors: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The members of one problem, in the RFC's order."""
    body: dict[str, Any] = {
        "type": problem_type(slug) if slug else "about:blank",
        "title": PROBLEM_TYPES[slug] if slug else http.HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if instance is not None:
        body["instance"] = instance
    if errors is not None:
        body["errors"] = list(errors)
    return body


def problem_response(
    scope: Scope,
    status: int,
    detail: str,
    *,
    slug: str | None = None,
    errors: Sequence[Mapping[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """A problem answer for the request of ``scope`` (strict JSON: ``allow_nan=False``)."""
    body = problem_body(status, detail, slug=slug, instance=_instance(scope), errors=errors)
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return Response(
        data.encode(), status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers
    )


def did_you_mean(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``name``, if one is close enough (difflib).

    >>> did_you_mean("gpu", ["gpus", "regions", "limit"])
    'gpus'
    >>> did_you_mean("zzz", ["gpus"]) is None
    True
    """
    known = list(known)
    lowered = {k.lower(): k for k in known}
    if name.lower() in lowered:
        return lowered[name.lower()]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None


def known_parameters(request: Request, place: str = "query") -> list[str]:
    """The parameters the OpenAPI document declares for this request's route and method."""
    route = request.scope.get("route")
    path = getattr(route, "path_format", None)
    if path is None:
        return []
    try:
        operation = request.app.openapi()["paths"][path][request.method.lower()]
    except (KeyError, AttributeError):
        return []
    return [p["name"] for p in operation.get("parameters", ()) if p.get("in") == place]


def _entry(error: Mapping[str, Any], request: Request) -> dict[str, Any]:
    """One validation error as an ``errors`` entry naming its parameter."""
    loc = list(error.get("loc", ()))
    place = str(loc[0]) if loc and loc[0] in _PLACES else None
    rest = loc[1:] if place else loc
    name = ".".join(str(p) for p in rest)
    if not name:  # a rule over several fields: the parameter its message starts with
        named = _NAMED.match(str(error.get("msg", "")))
        name = named.group(1) if named else (place or "request")
    entry: dict[str, Any] = {"parameter": name, "in": place or "request"}
    if place == "body":
        entry["pointer"] = "#/" + "/".join(str(p) for p in rest)
    entry.update(error)
    entry["msg"] = error_message(entry)
    if error.get("type") == "extra_forbidden" and place == "query" and len(rest) == 1:
        hint = did_you_mean(str(rest[0]), known_parameters(request))
        entry["msg"] = f"unknown parameter {name!r}" + (f"; did you mean {hint!r}?" if hint else "")
        if hint:
            entry["did_you_mean"] = hint
    return entry


def validation_problem(request: Request, errors: Sequence[Mapping[str, Any]]) -> Response:
    """The 422 of invalid input: every offending parameter in ``errors``, one line in
    ``detail`` (the only error's message, else how many and which)."""
    entries = [_entry(e, request) for e in errors]
    names = list(dict.fromkeys(e["parameter"] for e in entries))
    if len(entries) == 1:
        detail = f"{names[0]}: {entries[0]['msg']}" if names[0] not in entries[0]["msg"] else ""
        detail = detail or str(entries[0]["msg"])
    else:
        detail = f"{len(entries)} invalid parameters: {', '.join(names)}"
    return problem_response(request.scope, 422, detail, slug="invalid-parameters", errors=entries)


class ProblemError(Exception):
    """Raised by a route for a problem of its own type (answered by the app's handler)."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        slug: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.slug = slug
        self.headers = dict(headers or {})


#: The OpenAPI schema of a problem, for the routes' ``responses``.
Problem: dict[str, Any] = {
    "type": "object",
    "title": "Problem",
    "description": "RFC 9457 problem details",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string", "examples": ["urn:gpuscout:problem:invalid-parameters"]},
        "title": {"type": "string", "examples": ["Invalid parameters"]},
        "status": {"type": "integer", "examples": [422]},
        "detail": {"type": "string"},
        "instance": {"type": "string", "examples": ["/v1/offers?gpu=H100"]},
        "errors": {
            "type": "array",
            "description": "validation problems only: one entry per offending parameter",
            "items": {
                "type": "object",
                "required": ["parameter", "in", "type", "loc", "msg"],
                "properties": {
                    "parameter": {"type": "string", "examples": ["gpu"]},
                    "in": {"type": "string", "enum": [*sorted(_PLACES), "request"]},
                    "pointer": {"type": "string", "description": "body errors: JSON pointer"},
                    "type": {"type": "string", "examples": ["extra_forbidden"]},
                    "loc": {"type": "array", "items": {}},
                    "msg": {"type": "string"},
                    "input": {},
                    "did_you_mean": {"type": "string", "examples": ["gpus"]},
                },
            },
        },
    },
}

_STANDARD = {
    404: "not found",
    405: "method not allowed (see the Allow header)",
    409: "conflict with the current state",
    410: "the cursor belongs to an older snapshot: start again without it",
    413: "the body is larger than the api_max_body_bytes setting",
    422: "invalid or unknown parameters, each named in errors",
    429: "too many requests (Retry-After)",
    503: "unavailable now (Retry-After when it will pass)",
}


def problem_responses(*statuses: int, **descriptions: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for these statuses, each a problem+json answer.

    ``descriptions`` override the standard text by status (``_409="..."``).
    """
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        text = descriptions.get(f"_{status}", _STANDARD.get(status, http.HTTPStatus(status).phrase))
        out[status] = {
            "description": text,
            "content": {PROBLEM_MEDIA_TYPE: {"schema": Problem}},
        }
    return out
