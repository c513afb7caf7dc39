"""The cache of finished ``GET /v1/offers`` answers and its one ETag/304 rule.

Each :class:`~service.api.state.ApiState` carries its own :class:`ResultCache` of finished
answers (body bytes and ETag) keyed by (canonical query, time bucket), so a cached answer
never outlives the snapshot it was computed from and queries that mean the same share one
answer. Compression is Starlette's ``GZipMiddleware``, for these answers as for every
other response; the weak ETag names the answer, not its encoding (RFC 9110, 8.8.1).
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Hashable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from starlette.responses import Response

if TYPE_CHECKING:
    from .state import ApiState

__all__ = [
    "GZIP_LEVEL",
    "GZIP_MIN_BYTES",
    "OFFERS_PATH",
    "TIME_BUCKET_S",
    "CachedPage",
    "ResultCache",
    "etag_for",
    "etag_matches",
    "not_modified",
    "page_response",
    "time_bucket",
]

OFFERS_PATH = "/v1/offers"
#: ``now`` used for ranking is floored to this many seconds, so that a cached answer is
#: reused within the bucket (ages are "as of ``generated_at``").
TIME_BUCKET_S = 300
#: Responses smaller than this many bytes are not worth gzipping.
GZIP_MIN_BYTES = 1024
#: zlib's level: 9 is several times slower than 6 on JSON and HTML for about 1% smaller
#: output.
GZIP_LEVEL = 6


class CachedPage:
    """A finished answer and its validator."""

    __slots__ = ("body", "etag")

    def __init__(self, body: bytes, etag: str) -> None:
        self.body = body
        self.etag = etag

    @property
    def size(self) -> int:
        """The bytes it holds."""
        return len(self.body)


class ResultCache:
    """A small LRU of finished answers, keyed by (query key, time bucket), bounded by
    entries and by the bytes of the answers it holds.

    Entries alone do not bound memory: answers run from a few kB to over 100 kB (the
    ``limit`` and the groups); the byte budget keeps a worker's resident size steady
    whatever the traffic. Only the event-loop thread touches it, so it needs no lock.
    """

    def __init__(self, max_entries: int, max_bytes: int | None = None) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        self._data: collections.OrderedDict[Hashable, CachedPage] = collections.OrderedDict()

    def get(self, key: Hashable) -> CachedPage | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: CachedPage) -> None:
        if self.max_entries <= 0 or (self.max_bytes is not None and value.size > self.max_bytes):
            return
        old = self._data.pop(key, None)
        if old is not None:
            self.bytes -= old.size
        self._data[key] = value
        self.bytes += value.size
        while len(self._data) > self.max_entries or (
            self.max_bytes is not None and self.bytes > self.max_bytes
        ):
            self.bytes -= self._data.popitem(last=False)[1].size

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


def _headers(etag: str, max_age_s: int) -> dict[str, str]:
    return {"ETag": etag, "Cache-Control": f"public, max-age={max_age_s}"}


def not_modified(etag: str, if_none_match: str | None, max_age_s: int) -> Response | None:
    """The 304 when the client already holds ``etag``; ``None`` when it does not."""
    if etag_matches(if_none_match, etag):
        return Response(status_code=304, headers=_headers(etag, max_age_s))
    return None


def page_response(page: CachedPage, if_none_match: str | None, max_age_s: int) -> Response:
    """A cached answer as sent: a 304 if the client holds it, else its bytes."""
    unchanged = not_modified(page.etag, if_none_match, max_age_s)
    if unchanged is not None:
        return unchanged
    headers = _headers(page.etag, max_age_s)
    return Response(page.body, media_type="application/json", headers=headers)
