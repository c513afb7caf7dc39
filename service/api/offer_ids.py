"""The offer ``id`` of the answers and the cursor of ``/v1/offers``: opaque, URL-safe.

An offer's ``id`` is its stable key (``provider|offer_id|region|term|basis[|variant]``, see
:attr:`adapters.schema.Offer.key`) in unpadded URL-safe base64: the same offer has the same
id in every snapshot, and a client puts it in a URL as it is
(``/v1/offers/{id}/history``) instead of building and percent-encoding the key.

A cursor names where the next page of one query starts in one snapshot: the snapshot's
tag, a digest of the query (without ``cursor`` and ``limit``, so the page size may
change) and the offset. It is opaque to clients; one from another snapshot is refused
(410: the ranking it pointed into is gone), one of another query or altered is a 422.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from gpuscout.adapters.rent import rent_link

__all__ = [
    "KEY_COLUMNS",
    "MAX_OFFSET",
    "Cursor",
    "CursorError",
    "decode_cursor",
    "decode_offer_id",
    "encode_cursor",
    "history_link",
    "offer_id",
    "offer_key",
    "offer_links",
    "query_digest",
]

#: The deepest page a cursor may point to (offers ranked before it).
MAX_OFFSET = 100_000


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


#: The fields of a ranking row :func:`offer_key` reads (``term_variant`` when set).
KEY_COLUMNS = ("provider", "offer_id", "region", "term", "price_basis", "term_variant")


def offer_key(row: Mapping[str, Any]) -> str:
    """The stable key of a ranking row (the fields of :attr:`adapters.schema.Offer.key`)."""
    key = (
        f"{row['provider']}|{row['offer_id']}|{row['region'] or ''}"
        f"|{row['term']}|{row['price_basis']}"
    )
    return key if row.get("term_variant") is None else f"{key}|{row['term_variant']}"


def offer_id(key: str) -> str:
    """The URL-safe id of an offer key.

    >>> offer_id("acme|8x-h100|us-east-1|on_demand|instance")
    'YWNtZXw4eC1oMTAwfHVzLWVhc3QtMXxvbl9kZW1hbmR8aW5zdGFuY2U'
    """
    return _b64(key.encode())


def decode_offer_id(text: str) -> str | None:
    """The offer key of an id; ``None`` if ``text`` is not one."""
    if not text or len(text) > 2000:
        return None
    try:
        key = _unb64(text).decode()
    except (binascii.Error, ValueError):
        return None
    ok = key.count("|") >= 4 and key.isprintable() and offer_id(key) == text
    return key if ok else None


def history_link(key: str) -> str:
    return f"/v1/offers/{offer_id(key)}/history"


def offer_links(key: str, row: Mapping[str, Any]) -> dict[str, str | None]:
    """An offer's ``links``: its stored prices, and where to rent it (from the row's
    ``provider``, ``seller``, ``offer_id``, ``instance_name`` and ``region``)."""
    return {
        "history": history_link(key),
        "rent": rent_link(
            row["provider"],
            instance_name=row.get("instance_name"),
            region=row.get("region"),
            offer_id=row.get("offer_id"),
            seller=row.get("seller"),
        ),
    }


class Cursor(NamedTuple):
    tag: str
    query: str
    offset: int


class CursorError(ValueError):
    """A cursor that is not one of ours, or not of this query."""


def query_digest(canonical: str) -> str:
    """A short digest of a canonical query (see :func:`service.api.offers_query.canonical_key`)
    without its ``cursor`` and ``limit``."""
    data = {k: v for k, v in json.loads(canonical).items() if k not in ("cursor", "limit")}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def encode_cursor(cursor: Cursor) -> str:
    return _b64(json.dumps(list(cursor), separators=(",", ":")).encode())


def decode_cursor(text: str) -> Cursor:
    """The cursor a client sent back; :class:`CursorError` if it is not one."""
    try:
        tag, query, offset = json.loads(_unb64(text))
    except (binascii.Error, ValueError, TypeError):
        raise CursorError("not a cursor of this API; pass the next cursor of an answer") from None
    if not (isinstance(tag, str) and isinstance(query, str) and isinstance(offset, int)):
        raise CursorError("not a cursor of this API; pass the next cursor of an answer")
    if not 0 < offset <= MAX_OFFSET:
        raise CursorError(f"the cursor's offset is outside 1..{MAX_OFFSET}")
    return Cursor(tag, query, offset)
