"""Offers as a Parquet file and back: every field of :class:`~adapters.schema.Offer`, one
column each, zstd-compressed.

Parquet, written and read by polars (no pyarrow), because a published catalog is read by
more than gpuscout: DuckDB, pandas, polars and Spark read it over HTTP as it is, its
columns are typed and compressed (a catalog of 100k offers is a few MB), and it is the
format static data sets are hosted in. Arrow IPC is faster to map but less widely read from
a web server, and gains nothing for files read once per poll.

Money stays exact: every ``Decimal`` field (``price_amount``, the storage, IPv4 and egress
prices) is a text column holding the exact decimal, as the database stores it, because a
Parquet decimal has one scale per column and would rewrite ``1.5`` as ``1.500000``.
``usd_per_hour`` is written too (text, exact) for readers that do not convert currencies;
reading ignores it and derives it again with the reader's FX table.
"""

from __future__ import annotations

import enum
import io
import types
import typing
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

import polars as pl
from pydantic import TypeAdapter

from gpuscout.adapters.schema import FxTable, Offer, fx_context

__all__ = ["OFFER_COLUMNS", "OffersFileError", "offers_from_parquet", "offers_to_parquet"]

_OFFERS = TypeAdapter(list[Offer])
#: Derived, written for readers, not read back.
_DERIVED = "usd_per_hour"


class OffersFileError(ValueError):
    """A provider's file that is not a catalog offers file (columns, types or values)."""


def _polars_type(annotation: Any) -> pl.DataType:
    """The column type of one Offer field's annotation (Optional unwrapped)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _polars_type(args[0])
    if origin in (types.UnionType, typing.Union):
        return _polars_type(args[0])
    if origin is tuple:
        return pl.List(pl.String)
    if isinstance(annotation, type):
        if issubclass(annotation, bool):
            return pl.Boolean()
        if issubclass(annotation, enum.Enum | str | Decimal | Fraction):
            return pl.String()
        if issubclass(annotation, int):
            return pl.Int64()
        if issubclass(annotation, float):
            return pl.Float64()
        if issubclass(annotation, datetime):
            return pl.Datetime("us", "UTC")
    raise TypeError(f"no catalog column type for {annotation!r}")


#: Column name -> polars type, in the model's field order, then the derived USD price.
OFFER_COLUMNS: dict[str, pl.DataType] = {
    **{name: _polars_type(field.annotation) for name, field in Offer.model_fields.items()},
    _DERIVED: pl.String(),
}


def offers_to_parquet(offers: Sequence[Offer]) -> bytes:
    """The offers as one zstd-compressed Parquet file, a row each, in the given order."""
    rows = _OFFERS.dump_python(list(offers), mode="json")
    for row, offer in zip(rows, offers, strict=True):
        row["fetched_at"] = offer.fetched_at  # typed column, not ISO text
    frame = pl.DataFrame(rows, schema=OFFER_COLUMNS, orient="row" if not rows else None)
    buffer = io.BytesIO()
    frame.write_parquet(buffer, compression="zstd", statistics=False)
    return buffer.getvalue()


def offers_from_parquet(data: bytes, *, fx: FxTable | None = None) -> list[Offer]:
    """The offers of a catalog offers file, validated as any offer is (with ``fx``).

    Raises :class:`OffersFileError` naming the first problem: a file Parquet cannot read,
    a missing or mistyped column, an offer the model refuses.
    """
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except Exception as exc:
        raise OffersFileError(f"not a Parquet file: {exc}") from None
    missing = [c for c in OFFER_COLUMNS if c not in frame.columns and c != _DERIVED]
    if missing:
        raise OffersFileError(f"missing column(s): {', '.join(missing)}")
    for name, dtype in OFFER_COLUMNS.items():
        if name in frame.columns and frame.schema[name] != dtype:
            raise OffersFileError(f"column {name}: {frame.schema[name]}, expected {dtype}")
    fields = [c for c in Offer.model_fields]
    rows = [
        {k: v for k, v in row.items() if v is not None}
        for row in frame.select(fields).iter_rows(named=True)
    ]
    try:
        return _OFFERS.validate_python(rows, context=None if fx is None else fx_context(fx))
    except ValueError as exc:
        first = str(exc).splitlines()
        raise OffersFileError(f"an offer the schema refuses: {' '.join(first[:3])}") from None
