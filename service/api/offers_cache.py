"""The cache of finished ``GET /v1/offers`` answers and its one ETag/304 rule.

Each :class:`~service.api.state.ApiState` carries its own :class:`ResultCache` of finished
answers (body bytes and ETag) keyed by (query, time bucket), so a cached answer never
outlives the snapshot it was computed from. A request looks it up at most twice, answering
through :func:`page_response` either way:

1. :class:`OffersFastPath`, a pure ASGI middleware in front of the router, by the exact
   query string: a repeated query is sent without routing, dependency solving or
   validation (that query string was validated when it was first answered);
2. the router, by the canonical query (equal for queries that mean the same), after
   validating it; only a miss ranks, and fills both keys.

A page holds its answer gzip-compressed once, when the answer is made (an answer under
:data:`GZIP_MIN_BYTES`, as it is). A client whose ``Accept-Encoding`` takes gzip gets the
stored bytes (``Content-Encoding: gzip``), any other the answer decompressed (~50 us for
a 50 kB answer); both carry ``Vary: Accept-Encoding`` and the same weak ETag (a weak
validator names the answer, not its encoding: RFC 9110, 8.8.1). Compressing a 26 kB
answer on every hit was about a third of a cached hit's time, so :class:`GZipElsewhere`
compresses every other response and leaves these alone. Keeping the plain bytes beside
the compressed ones made a page ~8x its compressed size: a cache filled to its byte
budget held that many times fewer answers, and a worker's steady RSS after a drive of new
queries was the budget higher (64 MB of the 400 a worker may hold).
"""

from __future__ import annotations

import collections
import gzip
import hashlib
from collections.abc import Hashable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from .app_context import ApiContext
    from .state import ApiState

__all__ = [
    "GZIP_LEVEL",
    "GZIP_MIN_BYTES",
    "OFFERS_PATH",
    "TIME_BUCKET_S",
    "CachedPage",
    "GZipElsewhere",
    "OffersFastPath",
    "ResultCache",
    "accepts_gzip",
    "etag_for",
    "etag_matches",
    "if_none_match",
    "not_modified",
    "page_response",
    "raw_key",
    "time_bucket",
]

OFFERS_PATH = "/v1/offers"
#: ``now`` used for ranking is floored to this many seconds, so that a cached answer is
#: reused within the bucket (ages are "as of ``generated_at``").
TIME_BUCKET_S = 300


#: Responses smaller than this many bytes are not worth gzipping.
GZIP_MIN_BYTES = 1024
#: zlib's level for answers and pages: 9 is several times slower than 6 on JSON and HTML
#: for about 1% smaller output.
GZIP_LEVEL = 6


class CachedPage:
    """A finished answer and its validator, held gzip-compressed (:attr:`gzipped`) unless
    too small to be worth it (then :attr:`body` is the bytes held)."""

    __slots__ = ("_plain", "etag", "gzipped")

    def __init__(self, body: bytes, etag: str) -> None:
        self.etag = etag
        small = len(body) < GZIP_MIN_BYTES
        self.gzipped = None if small else gzip.compress(body, GZIP_LEVEL, mtime=0)
        self._plain = body if small else None

    @property
    def body(self) -> bytes:
        """The answer's bytes (decompressed from :attr:`gzipped` where it is held so)."""
        if self.gzipped is None:
            assert self._plain is not None
            return self._plain
        return gzip.decompress(self.gzipped)

    @property
    def size(self) -> int:
        """The bytes it holds."""
        held = self.gzipped if self.gzipped is not None else self._plain
        return len(held) if held is not None else 0


class ResultCache:
    """A small LRU of finished answers, keyed by (query key, time bucket), bounded by
    entries and by the bytes of the answers it holds (as held, each page once
    however many keys point at it: the router files a page under its canonical and its
    raw key).

    Entries alone do not bound memory: answers run from a few kB to over 100 kB (the
    ``limit`` and the groups), so 2,048 of them held 20 MB in one run and 250 MB in
    another; the byte budget keeps a worker's resident size steady whatever the traffic.
    Only the event-loop thread touches it, so it needs no lock.
    """

    def __init__(self, max_entries: int, max_bytes: int | None = None) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        self._data: collections.OrderedDict[Hashable, CachedPage] = collections.OrderedDict()
        self._keys_of: dict[int, int] = {}  # id(page) -> keys holding it

    def get(self, key: Hashable) -> CachedPage | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: CachedPage) -> None:
        if self.max_entries <= 0 or (self.max_bytes is not None and value.size > self.max_bytes):
            return
        old = self._data.get(key)
        if old is not value:
            if old is not None:
                self._release(old)
            self._data[key] = value
            held = self._keys_of.get(id(value), 0)
            self._keys_of[id(value)] = held + 1
            if not held:
                self.bytes += value.size
        self._data.move_to_end(key)
        while len(self._data) > self.max_entries or (
            self.max_bytes is not None and self.bytes > self.max_bytes
        ):
            self._release(self._data.popitem(last=False)[1])

    def _release(self, page: CachedPage) -> None:
        held = self._keys_of[id(page)] - 1
        if held:
            self._keys_of[id(page)] = held
        else:
            del self._keys_of[id(page)]
            self.bytes -= page.size

    def __len__(self) -> int:
        return len(self._data)


def time_bucket(now: datetime | None = None, *, not_before: datetime | None = None) -> datetime:
    """The instant an answer ages its prices against and calls ``generated_at``: ``now``
    floored to :data:`TIME_BUCKET_S`, so answers within one window are one cached answer;
    never before ``not_before`` (the snapshot the answer is built on: an answer generated
    before its own snapshot would be a contradiction, and fresh prices would age below
    zero)."""
    ts = (now or datetime.now(UTC)).timestamp()
    bucket = datetime.fromtimestamp(ts - ts % TIME_BUCKET_S, UTC)
    return not_before if not_before is not None and not_before > bucket else bucket


def raw_key(scope: Scope) -> str:
    """The cache key of a request's exact query string."""
    return "?" + scope["query_string"].decode("latin-1")


def if_none_match(scope: Scope) -> str:
    """Every ``If-None-Match`` header of a request as one list (repeats join with commas)."""
    return ",".join(v.decode("latin-1") for k, v in scope["headers"] if k == b"if-none-match")


def etag_for(state: ApiState, key: str) -> str:
    """A weak validator: the snapshot's tag and the canonical query."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    return f'W/"{state.tag}-{digest}"'


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """True if an ``If-None-Match`` value holds ``etag``.

    ``If-None-Match`` compares weakly (RFC 9110, 13.1.2): ``W/"x"`` and ``"x"`` match
    either form; the value may be a comma-separated list; ``*`` matches any.
    """
    if not if_none_match:
        return False
    bare = etag.removeprefix("W/")
    for token in if_none_match.split(","):
        token = token.strip()
        if token == "*" or token.removeprefix("W/") == bare:
            return True
    return False


def accepts_gzip(scope: Scope) -> bool:
    """The request's ``Accept-Encoding`` takes gzip (``gzip`` or ``*``, not at ``q=0``)."""
    values = b",".join(v for k, v in scope["headers"] if k == b"accept-encoding").lower()
    if b"gzip" not in values and b"*" not in values:
        return False
    taken: dict[str, bool] = {}
    for item in values.decode("latin-1").split(","):
        coding, _, params = item.partition(";")
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        taken[coding.strip()] = q > 0
    return taken.get("gzip", taken.get("*", False))


def _headers(etag: str, max_age_s: int) -> dict[str, str]:
    return {
        "ETag": etag,
        "Cache-Control": f"public, max-age={max_age_s}",
        "Vary": "Accept-Encoding",
    }


def not_modified(etag: str, if_none_match: str | None, max_age_s: int) -> Response | None:
    """The 304 when the client already holds ``etag``; ``None`` when it does not."""
    if etag_matches(if_none_match, etag):
        return Response(status_code=304, headers=_headers(etag, max_age_s))
    return None


def page_response(page: CachedPage, scope: Scope, max_age_s: int) -> Response:
    """A cached answer as sent to the request of ``scope``: a 304 if the client holds it,
    else its stored gzip bytes if it takes gzip, else its plain bytes (decompressed)."""
    unchanged = not_modified(page.etag, if_none_match(scope), max_age_s)
    if unchanged is not None:
        return unchanged
    headers = _headers(page.etag, max_age_s)
    if page.gzipped is not None and accepts_gzip(scope):
        headers["Content-Encoding"] = "gzip"
        return Response(page.gzipped, media_type="application/json", headers=headers)
    return Response(page.body, media_type="application/json", headers=headers)


class GZipElsewhere:
    """Starlette's gzip for every response except the offers answers, which carry their
    own compressed bytes (see the module doc)."""

    def __init__(self, app: ASGIApp, minimum_size: int = GZIP_MIN_BYTES) -> None:
        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=minimum_size, compresslevel=GZIP_LEVEL)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == OFFERS_PATH:
            await self.app(scope, receive, send)
        else:
            await self.gzip(scope, receive, send)


class OffersFastPath:
    """The first lookup, by exact query string; everything else falls through."""

    def __init__(self, app: ASGIApp, context: ApiContext) -> None:
        self.app = app
        self.context = context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == OFFERS_PATH and scope["method"] == "GET":
            state = self.context.holder.state
            if state is not None:
                now = state.answer_time()
                page = state.cache.get((raw_key(scope), now))
                if page is not None:
                    scope["gpuscout.route"] = OFFERS_PATH
                    self.context.metrics.offers_cache.labels("hit").inc()
                    max_age_s = self.context.settings.cache_max_age_s
                    response = page_response(page, scope, max_age_s)
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)
