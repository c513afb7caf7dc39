"""Daily rollups of the price history: the daily index's statistics per GPU series and
term, written by each snapshot, so a history view reads one row per day instead of the
history (O(window x series), not O(history)).

A *series* is a set of catalog models a renter's GPU name can mean (:func:`series_named`):
one model (``H100-SXM5-80GB``), a family (``family:H100``) or a vendor (``vendor:amd``).
Each day's row holds what :func:`db.history.daily_index` computes for that day over the
series' prices: an offer's price on a day is the last price valid during that day (an offer
repriced at noon counts once, at its new price); min, p10, median and p90 of USD per
GPU-hour (quantiles interpolate linearly), the number of offers, of providers and of
offers replayed from the offline sample.

Because ``price_history`` stores changes, a day's statistics depend only on the rows valid
during it: :func:`update_rollups` recomputes the days a snapshot touched (and any day since
the last one written, when snapshots skipped days) from those rows, found through the
history's indexes (open rows, and rows closed since), in the snapshot's transaction.
Recomputing is a function of the history, so a re-run of the same snapshot writes the same
rows. The ``open`` rows hold the prices valid since the last snapshot: every day after the
last one written holds them until a price changes.

A name meaning another set of models (``A100 80GB``: two of the A100s), or a view leaving
providers out (``publication = public``), is answered from the history, as before.
Retention prunes price rows, not rollups: the index of a pruned day stays as it was. A
series is the catalog's set of models when the rollups were written: a catalog that moves a
model to another family needs the rollups rebuilt (:func:`rebuild_rollups`).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, cast

import polars as pl
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from gpuscout.adapters.gpus import catalog, gpus_named
from gpuscout.adapters.run import Origin

from .models import PriceHistory, PriceRollup

__all__ = [
    "DAY",
    "OPEN",
    "STATS_COLUMNS",
    "day_statistics",
    "read_rollups",
    "rebuild_rollups",
    "series_named",
    "spread_over_days",
    "update_rollups",
]

_history = cast(sa.Table, PriceHistory.__table__)
_rollup = cast(sa.Table, PriceRollup.__table__)

#: ``price_rollup.period`` of a UTC day's row, and of the prices valid since the last snapshot.
DAY, OPEN = "day", "open"

#: The statistics a rollup row holds, as :func:`db.history.daily_index` names them.
STATS_COLUMNS = (
    "median_usd_per_gpu_hour",
    "p10_usd_per_gpu_hour",
    "p90_usd_per_gpu_hour",
    "min_usd_per_gpu_hour",
    "offers",
    "providers",
    "sample_offers",
)

#: The history rows the statistics are computed from, as a frame.
ROWS_SCHEMA: dict[str, Any] = {
    "offer_key": pl.String,
    "provider": pl.String,
    "gpu_model": pl.String,
    "term": pl.String,
    "usd_per_gpu_hour": pl.Float64,
    "valid_from": pl.Datetime("us"),
    "valid_to": pl.Datetime("us"),
    "sample": pl.Boolean,
}


@functools.cache
def _series() -> dict[frozenset[str], str]:
    """Every series: its set of model names -> its name (a model's own name first, then
    ``family:<family>``, then ``vendor:<vendor>``; a set met twice keeps its first name)."""
    families: dict[str, set[str]] = defaultdict(set)
    vendors: dict[str, set[str]] = defaultdict(set)
    out: dict[frozenset[str], str] = {}
    for spec in catalog():
        out.setdefault(frozenset({spec.name}), spec.name)
        families[spec.family].add(spec.name)
        vendors[spec.vendor.value].add(spec.name)
    for family, models in sorted(families.items()):
        out.setdefault(frozenset(models), f"family:{family}")
    for vendor, models in sorted(vendors.items()):
        out.setdefault(frozenset(models), f"vendor:{vendor}")
    return out


@functools.cache
def _membership() -> pl.DataFrame:
    """Each catalog model with every series it belongs to (one row per pair)."""
    pairs = [(model, name) for models, name in _series().items() for model in sorted(models)]
    return pl.DataFrame(pairs, schema={"gpu_model": pl.String, "series": pl.String}, orient="row")


def series_named(gpu: str) -> str | None:
    """The series a renter's GPU name means (the models :func:`adapters.gpus.gpus_named`
    gives), or ``None`` when those models are no series (then the history answers)."""
    models = frozenset(spec.name for spec in gpus_named(gpu))
    return _series().get(models) if models else None


def _naive(at: datetime | None) -> datetime | None:
    return None if at is None else at.astimezone(UTC).replace(tzinfo=None)


def _utc_start(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def _rows(connection: Connection, first: date, last: date) -> pl.DataFrame:
    """The priced rows valid on some day of ``first`` .. ``last``: the open rows, and the
    rows closed after ``first`` began (each read through its own index on ``valid_to``)."""
    h = _history.c
    lower, upper = _utc_start(first), _utc_start(last + timedelta(days=1))
    columns = (
        h.offer_key,
        h.provider,
        h.gpu_model,
        h.term,
        h.usd_per_gpu_hour,
        h.valid_from,
        h.valid_to,
        h.origin,
    )
    priced = (h.usd_per_gpu_hour.is_not(None), h.gpu_model.is_not(None), h.valid_from < upper)
    queries = (
        sa.select(*columns).where(h.valid_to.is_(None), *priced),
        sa.select(*columns).where(h.valid_to.is_not(None), h.valid_to > lower, *priced),
    )
    sample = Origin.SAMPLE.value
    rows = [
        (key, provider, model, term, price, _naive(since), _naive(until), origin == sample)
        for query in queries
        for key, provider, model, term, price, since, until, origin in connection.execute(query)
    ]
    return pl.DataFrame(rows, schema=ROWS_SCHEMA, orient="row")


def _statistics(prices: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """The index's statistics of one price per offer, per ``by``."""
    price = pl.col("usd_per_gpu_hour")
    return prices.group_by(by).agg(
        median_usd_per_gpu_hour=price.median(),
        p10_usd_per_gpu_hour=price.quantile(0.1, interpolation="linear"),
        p90_usd_per_gpu_hour=price.quantile(0.9, interpolation="linear"),
        min_usd_per_gpu_hour=price.min(),
        offers=pl.len(),
        providers=pl.col("provider").n_unique(),
        sample_offers=pl.col("sample").sum(),
    )


def spread_over_days(rows: pl.LazyFrame, first: date, last: date, *bounds: pl.Expr) -> pl.LazyFrame:
    """``rows`` (price history rows) once per UTC day of ``first`` .. ``last`` each is valid
    on, as column ``day``; ``bounds``: further last days a row does not go past."""
    return (
        rows.with_columns(
            first_day=pl.max_horizontal(pl.col("valid_from").dt.date(), pl.lit(first)),
            last_day=pl.min_horizontal(
                # valid_to is exclusive: a price closed at midnight does not cover that day
                (pl.col("valid_to") - pl.duration(microseconds=1)).dt.date().fill_null(last),
                *bounds,
                pl.lit(last),
            ),
        )
        .filter(pl.col("first_day") <= pl.col("last_day"))
        .with_columns(day=pl.date_ranges("first_day", "last_day", "1d"))
        .explode("day")
    )


def day_statistics(rows: pl.DataFrame, first: date, last: date) -> pl.DataFrame:
    """Per day of ``first`` .. ``last``, series and term with offers: the statistics of the
    last price of each offer valid during that day (``rows``: history rows as
    :data:`ROWS_SCHEMA`).

    A row is an offer's last price on the days it is valid on up to the day before its
    offer's next row starts (that day the next row is the last), so each row is spread
    over exactly the days it counts on, without sorting a row per offer and day."""
    series_offer = ("series", "term", "offer_key")
    per_offer = (
        rows.lazy()
        .sort("offer_key", "valid_from")
        .join(_membership().lazy(), on="gpu_model", maintain_order="left")
        .with_columns(next_from=pl.col("valid_from").shift(-1).over(series_offer))
    )
    before_next = (pl.col("next_from").dt.date() - pl.duration(days=1)).fill_null(last)
    per_offer = spread_over_days(per_offer, first, last, before_next)
    return _statistics(per_offer, ["day", "series", "term"]).collect()


def _open_statistics(rows: pl.DataFrame) -> pl.DataFrame:
    """Per series and term: the statistics of the prices valid now (the open rows)."""
    open_rows = rows.lazy().filter(pl.col("valid_to").is_null())
    joined = open_rows.join(_membership().lazy(), on="gpu_model")
    return _statistics(joined, ["series", "term"]).collect()


def _records(frame: pl.DataFrame, period: str, day: date | None = None) -> list[dict[str, Any]]:
    out = []
    for row in frame.iter_rows(named=True):
        record = {name: row[name] for name in ("series", "term", *STATS_COLUMNS)}
        record["day"] = row["day"] if day is None else day
        record["period"] = period
        out.append(record)
    return out


def _last_day(connection: Connection) -> date | None:
    """The last day a rollup was written for (``None``: none yet)."""
    r = _rollup.c
    return cast(
        date | None,
        connection.execute(sa.select(sa.func.max(r.day)).where(r.period == DAY)).scalar(),
    )


def _write(connection: Connection, first: date, last: date) -> None:
    """Recompute the day rows of ``first`` .. ``last`` and the open rows."""
    r = _rollup.c
    rows = _rows(connection, first, last)
    days = day_statistics(rows, first, last)
    connection.execute(sa.delete(_rollup).where(r.period == DAY, r.day.between(first, last)))
    connection.execute(sa.delete(_rollup).where(r.period == OPEN))
    records = _records(days, DAY) + _records(_open_statistics(rows), OPEN, last)
    if records:
        connection.execute(sa.insert(_rollup), records)


def update_rollups(
    connection: Connection, *, first: datetime, last: datetime, changed: bool = True
) -> None:
    """Bring the rollups up to date after a snapshot whose price rows open and close between
    ``first`` and ``last`` (aware UTC): recompute those days, and every day since the last
    one written (days no snapshot saw still hold prices). Run in the snapshot's transaction.
    A snapshot that ``changed`` no price row changes no day already written: nothing to do
    then unless its day is new."""
    first_day, last_day = first.astimezone(UTC).date(), last.astimezone(UTC).date()
    written = _last_day(connection)
    if not changed and written is not None and written >= last_day:
        return
    if written is not None:
        first_day = min(first_day, written + timedelta(days=1))
        last_day = max(last_day, written)
    _write(connection, first_day, last_day)


def rebuild_rollups(connection: Connection, *, until: date, days_per_pass: int = 31) -> None:
    """Build every day's rollups from the whole history up to ``until`` (the migration's
    work), a month of rows per pass so memory stays bounded by a month of history."""
    h = _history.c
    earliest = connection.execute(sa.select(sa.func.min(h.valid_from))).scalar()
    connection.execute(sa.delete(_rollup))
    if earliest is None:
        return
    day = cast(datetime, earliest).astimezone(UTC).date()
    while day <= until:
        end = min(day + timedelta(days=days_per_pass - 1), until)
        _write(connection, day, end)
        day = end + timedelta(days=1)


def read_rollups(
    connection: Connection, *, series: str, term: str, start: date, end: date
) -> pl.DataFrame:
    """The rollup statistics of ``series`` and ``term`` per day of ``start`` .. ``end`` that
    has offers (columns ``day`` and :data:`STATS_COLUMNS`): the day rows, and for the days
    after the last one written the open rows."""
    r = _rollup.c
    stats = [r.day, *(getattr(r, name) for name in STATS_COLUMNS)]
    found = connection.execute(
        sa.select(*stats).where(
            r.series == series, r.term == term, r.period == DAY, r.day.between(start, end)
        )
    ).all()
    rows = [tuple(row) for row in found]
    written = _last_day(connection)
    if written is not None and written < end:
        held = connection.execute(
            sa.select(*stats[1:]).where(r.series == series, r.term == term, r.period == OPEN)
        ).first()
        if held is not None:
            day = max(start, written + timedelta(days=1))
            while day <= end:
                rows.append((day, *held))
                day += timedelta(days=1)
    schema: dict[str, Any] = {"day": pl.Date} | {
        name: (pl.Float64 if name.endswith("hour") else pl.Int64) for name in STATS_COLUMNS
    }
    return pl.DataFrame(rows, schema=schema, orient="row")
