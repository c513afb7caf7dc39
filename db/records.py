"""How an offer is stored: compact JSON text next to indexed key columns, and back.

The stored record leaves out ``usd_per_hour`` (derived; its own column), ``fetched_at``
(a column, usually shared by the whole provider run) and every ``None`` field (the model's
default), which keeps rows small. The current offers are read as a polars frame straight
from these records (:func:`pricing.frame.records_to_frame`); where ``Offer`` objects are
needed (the price history), :func:`decode_offers` parses all records of a query in one
``validate_json`` call: no per-row ORM objects, no per-row ``json.loads``.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import operator
import struct
import types
import typing
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from gpuscout.adapters.schema import FxTable, Offer, fx_context

__all__ = [
    "decode_offers",
    "hash64",
    "hash64s",
    "record_json",
    "record_jsons",
]

_RECORD_EXCLUDE = {"usd_per_hour", "fetched_at"}
_OFFERS = TypeAdapter(list[Offer])


def _as_text(annotation: Any) -> Any:
    """``annotation`` with every enum type (all ``StrEnum``) replaced by ``str``."""
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return str
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) and args:
        return functools.reduce(operator.or_, (_as_text(arg) for arg in args))
    return annotation


#: An offer's stored fields as a plain dict (its ``__dict__``), enum fields typed ``str``.
#: Serialising the dicts writes the same JSON as the model's serialiser, byte for byte (an
#: enum is a ``StrEnum``, so its text is its value) and about twice as fast: pydantic reads
#: a model's enum value through the Python-level ``Enum.value`` descriptor, three to nine
#: calls an offer, but takes a ``str`` subclass as the string it is. The excluded fields
#: are not keys of the type, and a typed dict's serialiser leaves out keys it does not
#: declare (``extra`` is ``ignore``): no ``exclude`` argument, which costs a quarter of the
#: serialisation, is needed to drop ``fetched_at``.
_RecordDict = TypedDict(  # type: ignore[misc]
    "_RecordDict",
    {
        name: _as_text(field.annotation)
        for name, field in Offer.model_fields.items()
        if name not in _RECORD_EXCLUDE
    },
    total=False,
)
_RECORD_DICTS = TypeAdapter(list[_RecordDict])
#: Between two records of a serialised list: ``{"provider":`` opens every record (the first
#: field, required, never ``None``) and a JSON string cannot hold ``,{"`` (its quotes are
#: escaped) nor a raw newline, so the list splits exactly into its records.
_BETWEEN = b'},{"provider":'
_NEWLINE_BETWEEN = b'}\n{"provider":'


def hash64(text: str | bytes) -> int:
    """A stable signed 64-bit hash (fits a BIGINT) of ``text`` (str as UTF-8)."""
    data = text.encode() if isinstance(text, str) else text
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big", signed=True)


def hash64s(records: Sequence[bytes]) -> tuple[int, ...]:
    """:func:`hash64` of each of ``records``, the digests unpacked by one ``struct`` call
    instead of an ``int.from_bytes`` each."""
    blake2b = hashlib.blake2b
    digests = b"".join([blake2b(record, digest_size=8).digest() for record in records])
    return struct.unpack(f">{len(records)}q", digests)


def record_json(offer: Offer) -> str:
    """The offer as stored: JSON without ``usd_per_hour``, ``fetched_at`` and ``None``s."""
    return offer.__pydantic_serializer__.to_json(
        offer, exclude=_RECORD_EXCLUDE, exclude_none=True
    ).decode()


def record_jsons(offers: Sequence[Offer]) -> list[bytes]:
    """:func:`record_json` of every offer, UTF-8 encoded, from one serialiser call.

    Serialising the whole list at once (of the offers' field dicts, see :data:`_RecordDict`)
    and splitting it is cheaper than one call per offer; the result is byte for byte the
    same (an offer of a subclass, whose serialiser may differ, makes it fall back to one
    call per offer).
    """
    if not offers:
        return []
    dicts = [offer.__dict__ for offer in offers if type(offer) is Offer]
    if len(dicts) == len(offers):
        text = _RECORD_DICTS.serializer.to_json(dicts, exclude_none=True)
        records = text.replace(_BETWEEN, _NEWLINE_BETWEEN).split(b"\n")
        if len(records) == len(offers):
            # the list's brackets, cut off its end records (not by copying the whole text)
            records[0] = records[0][1:]
            records[-1] = records[-1][:-1]
            return records
    return [
        offer.__pydantic_serializer__.to_json(offer, exclude=_RECORD_EXCLUDE, exclude_none=True)
        for offer in offers
    ]


def decode_offers(rows: Iterable[tuple[str, datetime]], fx: FxTable | None = None) -> list[Offer]:
    """Offers from ``(record, fetched_at)`` pairs, validated in one call; they convert with
    ``fx`` (``None``: the shipped table)."""
    iso: dict[datetime, str] = {}
    parts = []
    for record, fetched_at in rows:
        stamp = iso.get(fetched_at)
        if stamp is None:
            stamp = iso[fetched_at] = f'{{"fetched_at":"{fetched_at.isoformat()}",'
        parts.append(stamp + record[1:])
    if not parts:
        return []
    text = "[" + ",".join(parts) + "]"
    return _OFFERS.validate_json(text, context=None if fx is None else fx_context(fx))
