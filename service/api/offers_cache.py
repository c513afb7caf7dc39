"""The hot path of ``GET /v1/offers``: answer a repeated query straight from the cache.

A pure ASGI middleware in front of the router. When this exact query string was answered
from the current snapshot in the current time bucket, the cached bytes (and their ETag, or
a 304) are sent without routing, dependency solving or validation: that query string was
validated when it was first answered. Everything else falls through to the router, which
validates, ranks and fills the cache.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from .app_context import ApiContext
from .answers import CachedPage, time_bucket

__all__ = ["OFFERS_PATH", "OffersFastPath", "raw_key"]

OFFERS_PATH = "/v1/offers"


def raw_key(scope: Scope) -> str:
    """The cache key of a request's exact query string."""
    return "?" + scope["query_string"].decode("latin-1")


def _matches(if_none_match: str, etag: str) -> bool:
    bare = etag.removeprefix("W/")
    return any(
        t.strip() == "*" or t.strip().removeprefix("W/") == bare for t in if_none_match.split(",")
    )


class OffersFastPath:
    def __init__(self, app: ASGIApp, context: ApiContext) -> None:
        self.app = app
        self.context = context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == OFFERS_PATH and scope["method"] == "GET":
            state = self.context.holder.state
            if state is not None:
                page: CachedPage | None = state.cache.get((raw_key(scope), time_bucket()))
                if page is not None:
                    scope["gpuscout.route"] = OFFERS_PATH
                    self.context.metrics.offers_cache.labels("hit").inc()
                    await self._send(scope, send, page)
                    return
        await self.app(scope, receive, send)

    async def _send(self, scope: Scope, send: Send, page: CachedPage) -> None:
        max_age = self.context.settings.cache_max_age_s
        headers = [
            (b"etag", page.etag.encode()),
            (b"cache-control", f"public, max-age={max_age}".encode()),
        ]
        for name, value in scope["headers"]:
            if name == b"if-none-match" and _matches(value.decode("latin-1"), page.etag):
                await send({"type": "http.response.start", "status": 304, "headers": headers})
                await send({"type": "http.response.body", "body": b""})
                return
        headers += [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(page.body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": page.body})
