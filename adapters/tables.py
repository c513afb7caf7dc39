"""The adapters' data files: tables read from providers' documentation, a source per row.

Facts that would otherwise be written as code (instance families, card sizes, region and
country names) live in ``adapters/data/`` as CSV (:func:`data_rows`, a ``source`` column) or
TOML (:func:`sourced_rows`, a ``[sources]`` table that every entry names). Each file is read
once per process; a row without its source is a ValueError naming the file and row, so no
fact enters the tables unsourced.
"""

from __future__ import annotations

import csv
import dataclasses
import enum
import functools
import io
import re
import tomllib
import types
import typing
from collections.abc import Callable, Hashable, Mapping
from decimal import Decimal
from fractions import Fraction
from importlib import resources
from typing import Any, TypeVar

from .schema import OfferFields
from .units import to_decimal

__all__ = [
    "DATA_DIR",
    "ProviderDisk",
    "country_code",
    "data_rows",
    "package_text",
    "provider_disk",
    "read_table",
    "region_countries",
    "sourced_rows",
    "typed_row",
]

T = TypeVar("T")

#: Folder of the adapters' data files (tables with a source per row), beside this module.
DATA_DIR = "data"


@functools.cache
def data_rows(filename: str) -> tuple[dict[str, str], ...]:
    """The rows of the CSV table ``adapters/data/<filename>``, read once (:func:`read_table`)."""
    return read_table(package_text(DATA_DIR, filename), f"{DATA_DIR}/{filename}")


def read_table(content: str, filename: str) -> tuple[dict[str, str], ...]:
    """The rows of a CSV data table with a header; every row names its ``source``.

    A row without one, or with a cell too many or too few, is a ValueError naming the file and
    line: a fact from elsewhere carries where it comes from.
    """
    rows = tuple(csv.DictReader(io.StringIO(content)))
    for line, row in enumerate(rows, start=2):
        if None in row or None in row.values() or not (row.get("source") or "").strip():
            raise ValueError(f"{filename} line {line}: a cell too many or too few, or no source")
    return rows


@functools.cache
def _country_codes() -> dict[str, str]:
    return {row["name"].lower(): row["iso"] for row in data_rows("country_names.csv")}


def country_code(name: Any) -> str | None:
    """ISO 3166-1 alpha-2 code of a country name as providers write it, from
    ``data/country_names.csv`` (``"United States"``, ``"USA"``, ``"NORWAY"`` -> US, US, NO);
    ``None`` for a name not there: a country is left empty rather than guessed.
    """
    return _country_codes().get(name.strip().lower()) if isinstance(name, str) else None


def sourced_rows(filename: str, rows: str) -> list[dict[str, Any]]:
    """The ``[[<rows>]]`` entries of the TOML file ``adapters/data/<filename>``.

    Such a file holds a table read from a provider's documentation: a ``[sources]`` table (key
    -> where it was read) and entries that each name their ``source`` (and may ``quote`` it).
    An entry without a known source is a ValueError: every row keeps its source.
    """
    table = tomllib.loads(package_text(DATA_DIR, filename))
    sources, entries = table.get("sources", {}), table.get(rows)
    if not isinstance(entries, list):
        raise ValueError(f"{filename}: no [[{rows}]] entries")
    for number, entry in enumerate(entries, start=1):
        if entry.get("source") not in sources:
            raise ValueError(f"{filename}: {rows} {number} does not name one of its [sources]")
    return entries


def typed_row(cls: type[T], row: Mapping[str, Any]) -> T:
    """The dataclass ``cls`` from one table row, each field read from the cell of its name as
    its annotation says (columns it has no field for, such as ``source``, are left out).

    A text cell becomes the field's type: a number (``int``, ``float``, ``Fraction``), an
    enum member by value, an exact ``Decimal``, ``true`` for a ``bool``, the words of a
    ``frozenset[str]``, a case-blind ``re.Pattern``; an empty cell is ``None`` for an optional
    field, and a union tries its types in order (``int | float``: ``"85"`` stays whole). A
    TOML value is typed already and kept. A cell that does not read is a ValueError, so
    each table's loader states its types once, in its dataclass, not per column.
    """
    readers = _readers(typing.cast(Hashable, cls))
    cells = {name: row[name] for name in readers if name in row}
    return cls(**{k: readers[k](v) if isinstance(v, str) else v for k, v in cells.items()})


@functools.cache
def _readers(cls: Any) -> dict[str, Callable[[str], Any]]:
    hints = typing.get_type_hints(cls)
    return {field.name: _reader(hints[field.name]) for field in dataclasses.fields(cls)}


def _reader(kind: Any) -> Callable[[str], Any]:
    """How a text cell becomes ``kind`` (:func:`typed_row`); read once per field."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        optional = type(None) in typing.get_args(kind)
        options = [_reader(k) for k in typing.get_args(kind) if k is not type(None)]

        def first_reading(text: str) -> Any:
            if optional and not text.strip():
                return None
            for option in options[:-1]:
                try:
                    return option(text)
                except ValueError:
                    continue
            return options[-1](text)

        return first_reading
    if kind is bool:
        return lambda text: text.strip() == "true"
    if typing.get_origin(kind) is frozenset:
        return lambda text: frozenset(text.split())
    if kind is re.Pattern or typing.get_origin(kind) is re.Pattern:
        return lambda text: re.compile(text.strip(), re.IGNORECASE)
    if kind is Decimal:  # its own error on garbage is no ValueError; to_decimal's is
        return to_decimal
    if kind in (int, float, Fraction, str) or issubclass(kind, enum.Enum):
        return lambda text: kind(text.strip())
    raise TypeError(f"no reading of a table cell as {kind!r}")


def package_text(*path: str) -> str:
    """A text file of the ``adapters`` package (``"data", "fabrics.csv"``), read as UTF-8."""
    return resources.files(__package__ or "adapters").joinpath(*path).read_text("utf-8")


@functools.cache
def region_countries(provider: str) -> Mapping[str, str]:
    """``provider``'s region words -> ISO 3166-1 country, from ``data/region_countries.csv``."""
    return {
        row["name"]: row["country"]
        for row in data_rows("region_countries.csv")
        if row["provider"] == provider
    }


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderDisk:
    """What a provider's instances need of disk, from ``data/provider_disks.csv``: the least
    disk one is created with (GB), and a storage price the API does not publish (USD per
    GB-month), each ``None`` where the table leaves it empty."""

    boot_disk_min_gb: float | None
    storage_price_per_gb_month: Decimal | None

    def billed_apart(self, price: Decimal | None = None) -> OfferFields:
        """An offer's disk fields where every GB is billed apart, at ``price`` (per GB-month;
        else this row's) and none included, and the least disk it is created with."""
        price = self.storage_price_per_gb_month if price is None else price
        return {
            "storage_price_per_gb_month": price,
            "storage_included_gb": 0.0,
            "boot_disk_min_gb": self.boot_disk_min_gb,
        }


@functools.cache
def provider_disk(provider: str) -> ProviderDisk:
    """``provider``'s row of ``data/provider_disks.csv``; a KeyError names a provider that has
    none (an adapter that reads this table has a row)."""
    for row in data_rows("provider_disks.csv"):
        if row["provider"] == provider:
            return typed_row(ProviderDisk, row)
    raise KeyError(f"data/provider_disks.csv has no row for {provider!r}")
