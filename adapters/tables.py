"""The adapters' data files: tables read from providers' documentation, a source per row.

Facts that would otherwise be written as code (instance families, card sizes, region and
country names) live in ``adapters/data/`` as CSV (:func:`data_rows`, a ``source`` column) or
TOML (:func:`sourced_rows`, a ``[sources]`` table that every entry names). Each file is read
once per process; a row without its source is a ValueError naming the file and row, so no
fact enters the tables unsourced.
"""

from __future__ import annotations

import csv
import functools
import io
import tomllib
from importlib import resources
from typing import Any

__all__ = ["DATA_DIR", "country_code", "data_rows", "sourced_rows"]

#: Folder of the adapters' data files (tables with a source per row), beside this module.
DATA_DIR = "data"


@functools.cache
def data_rows(filename: str) -> tuple[dict[str, str], ...]:
    """The rows of ``adapters/data/<filename>`` (CSV with a header), read once per process.

    Every data file carries a ``source`` column; a row without one is a ValueError naming the
    file and line, so that no fact enters the tables unsourced.
    """
    text = (
        resources.files(__package__ or "adapters").joinpath(DATA_DIR, filename).read_text("utf-8")
    )
    rows = tuple(csv.DictReader(io.StringIO(text)))
    for line, row in enumerate(rows, start=2):
        if not (row.get("source") or "").strip():
            raise ValueError(f"{DATA_DIR}/{filename} line {line}: no source")
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
    text = (
        resources.files(__package__ or "adapters").joinpath(DATA_DIR, filename).read_text("utf-8")
    )
    table = tomllib.loads(text)
    sources, entries = table.get("sources", {}), table.get(rows)
    if not isinstance(entries, list):
        raise ValueError(f"{filename}: no [[{rows}]] entries")
    for number, entry in enumerate(entries, start=1):
        if entry.get("source") not in sources:
            raise ValueError(f"{filename}: {rows} {number} does not name one of its [sources]")
    return entries


def _read(filename: str) -> str:
    path = resources.files(__package__ or "adapters").joinpath(DATA_DIR, filename)
    return path.read_text("utf-8")
