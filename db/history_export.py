"""The price history as daily Parquet files, to analyse years of prices in polars or DuckDB
without the server (``gpuscout history export DIR``).

Layout, Hive-partitioned by day as published price datasets are (``prices/dt=``)::

    DIR/prices/dt=YYYY-MM-DD/prices.parquet   one row per offer held that day
    DIR/manifest.json                         every file: its day, rows and sha256

A day's file holds each offer's price *on that day* as the daily index counts it
(:mod:`db.history`): the last price valid during the UTC day, with when it started
(``price_since``). Only finished days are written, so a written day never changes and a
second export writes only the days since (a file already listed with its sha256 is kept,
even after retention pruned its rows). Money stays exact: ``price_amount`` (as the provider
states it) and ``usd_per_hour`` (the whole instance) are decimal text;
``usd_per_gpu_hour`` is the float the index computes with.

Read it with ``pl.scan_parquet("DIR/prices/**/*.parquet", hive_partitioning=True)`` (the
``dt`` column is the day) or DuckDB's ``read_parquet('DIR/prices/*/*.parquet')``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any, cast

import polars as pl
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .models import PriceHistory
from .rollups import spread_over_days

__all__ = ["EXPORT_SCHEMA", "MANIFEST", "ExportResult", "export_history", "read_manifest"]

_history = cast(sa.Table, PriceHistory.__table__)

#: The manifest's file name under the export directory.
MANIFEST = "manifest.json"
#: What the manifest says the files are.
FORMAT = "gpuscout daily price history v1"

#: The columns of a day's file.
EXPORT_SCHEMA: dict[str, Any] = {
    "offer_key": pl.String,
    "provider": pl.String,
    "gpu_model": pl.String,
    "gpus": pl.Float64,
    "term": pl.String,
    "region": pl.String,
    "price_amount": pl.String,
    "price_currency": pl.String,
    "price_unit": pl.String,
    "price_basis": pl.String,
    "usd_per_hour": pl.String,
    "usd_per_gpu_hour": pl.Float64,
    "price_since": pl.Datetime("us", "UTC"),
    "origin": pl.String,
}

#: Days read from the database in one pass (memory: one pass's rows).
DAYS_PER_PASS = 7


@dataclasses.dataclass(frozen=True, slots=True)
class ExportResult:
    days_written: int
    days_kept: int
    rows_written: int
    manifest: Path


def _start(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def _rows(engine: Engine, first: date, last: date) -> pl.DataFrame:
    """The price rows valid on some day of ``first`` .. ``last``, with their validity."""
    h = _history.c
    lower, upper = _start(first), _start(last + timedelta(days=1))
    columns = (
        h.offer_key,
        h.provider,
        h.gpu_model,
        h.gpus,
        h.term,
        h.region,
        h.price_amount,
        h.price_currency,
        h.price_unit,
        h.price_basis,
        h.usd_per_hour,
        h.usd_per_gpu_hour,
        h.valid_from,
        h.valid_to,
        h.origin,
    )
    queries = (  # open rows, and rows closed since ``lower`` (each through its index)
        sa.select(*columns).where(h.valid_to.is_(None), h.valid_from < upper),
        sa.select(*columns).where(
            h.valid_to.is_not(None), h.valid_to > lower, h.valid_from < upper
        ),
    )
    records = []
    with engine.connect() as connection:
        for query in queries:
            for row in connection.execute(query):
                values = list(row)
                for i in (6, 10):  # exact decimals as text
                    values[i] = format(values[i], "f")
                records.append(values)
    schema = {name: kind for name, kind in EXPORT_SCHEMA.items() if name != "price_since"}
    schema |= {
        "valid_from": pl.Datetime("us", "UTC"),
        "valid_to": pl.Datetime("us", "UTC"),
    }
    order = [*list(EXPORT_SCHEMA)[:-2], "valid_from", "valid_to", "origin"]
    return pl.DataFrame(records, schema={k: schema[k] for k in order}, orient="row")


def _per_day(rows: pl.DataFrame, first: date, last: date) -> pl.DataFrame:
    """Per day of ``first`` .. ``last``: each offer's last price valid that day."""
    return (
        spread_over_days(rows.lazy(), first, last)
        .sort("day", "offer_key", "valid_from")
        .group_by("day", "offer_key", maintain_order=True)
        .last()
        .rename({"valid_from": "price_since"})
        .select("day", *EXPORT_SCHEMA)
        .collect()
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(directory: Path) -> dict[str, Any]:
    """The export's manifest (an empty one if there is none yet)."""
    path = directory / MANIFEST
    if not path.exists():
        return {"format": FORMAT, "files": []}
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: not a gpuscout price history export ({FORMAT!r})")
    return cast(dict[str, Any], manifest)


def _relative(day: date) -> str:
    return f"prices/dt={day.isoformat()}/prices.parquet"


def export_history(engine: Engine, directory: Path, *, until: date) -> ExportResult:
    """Write each finished day up to ``until`` (inclusive) the history holds to
    ``directory`` (see the module's docstring) and its manifest; a day the manifest lists
    whose file is intact is kept as it is."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(directory)
    listed = {entry["path"]: entry for entry in manifest["files"]}
    h = _history.c
    with engine.connect() as connection:
        earliest = connection.execute(sa.select(sa.func.min(h.valid_from))).scalar()
    written = kept = rows_written = 0
    if earliest is not None:
        day = cast(datetime, earliest).astimezone(UTC).date()
        while day <= until:
            last = min(day + timedelta(days=DAYS_PER_PASS - 1), until)
            wanted = [
                d
                for d in (day + timedelta(days=n) for n in range((last - day).days + 1))
                if not _intact(directory, listed.get(_relative(d)))
            ]
            kept += (last - day).days + 1 - len(wanted)
            if wanted:
                first_wanted, last_wanted = min(wanted), max(wanted)
                rows = _rows(engine, first_wanted, last_wanted)
                frame = _per_day(rows, first_wanted, last_wanted)
                for d in wanted:
                    part = frame.filter(pl.col("day") == d).drop("day")
                    relative = _relative(d)
                    path = directory / relative
                    path.parent.mkdir(parents=True, exist_ok=True)
                    part.write_parquet(path, statistics=True)
                    listed[relative] = {
                        "path": relative,
                        "day": d.isoformat(),
                        "rows": part.height,
                        "sha256": _sha256(path),
                    }
                    written += 1
                    rows_written += part.height
            day = last + timedelta(days=1)
    manifest["files"] = [listed[p] for p in sorted(listed)]
    manifest["columns"] = {name: str(kind) for name, kind in EXPORT_SCHEMA.items()}
    path = directory / MANIFEST
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return ExportResult(written, kept, rows_written, path)


def _intact(directory: Path, entry: dict[str, Any] | None) -> bool:
    if entry is None:
        return False
    path = directory / entry["path"]
    return path.is_file() and _sha256(path) == entry["sha256"]
