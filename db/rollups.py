"""Rollups of the price history: the index's statistics per UTC day (and per UTC hour for
the last days), GPU series, term and region class, written by each snapshot, so a history
view reads one row per period instead of the history (O(window x series), not O(history)).

A *series* is a set of catalog models a renter's GPU name can mean (:func:`series_named`):
one model (``H100-SXM5-80GB``), a family (``family:H100``) or a vendor (``vendor:amd``).
A *region class* is the coarse region of the offers' countries
(:class:`adapters.regions.RegionClass`); every row is also written for ``all`` of them,
which is what the views without a region filter read.
Each period's row holds what :func:`db.history.daily_index` computes for a day over the
series' prices: an offer's price in a period is the last price valid during it (an offer
repriced at noon counts once, at its new price); min, p10, median and p90 of USD per
GPU-hour (quantiles interpolate linearly), the number of offers, of providers and of
offers replayed from the offline sample. With them, the *availability* of those offers:
``stock_offers``, those whose stock was recorded in the period (``offer_stock``, from
:mod:`db.availability`), and ``available_offers``, those of them stated available at some
time in it; the share is one over the other (:data:`AVAILABILITY_SHARE`), unknown when no
stock was recorded (a history older than the stock records).

Because ``price_history`` and ``offer_stock`` store changes, a period's statistics depend
only on the rows valid during it: :func:`update_rollups` recomputes the days and hours a
snapshot touched (and any since the last one written, when snapshots skipped some) from
those rows, found through the indexes on open rows and on ``valid_to``, in the snapshot's
transaction. Recomputing is a function of the history, so a re-run of the same snapshot
writes the same rows. Hour rows are kept for the last :data:`HOURLY_DAYS` days (a
setting) and pruned beyond them by each snapshot. The ``open`` rows hold the prices valid
since the last snapshot: every day and hour after the last one written holds them until a
price changes.

A name meaning another set of models (``A100 80GB``: two of the A100s), or a view leaving
providers out (``publication = public``), is answered from the history, as before, for
every region. Retention prunes price rows, not day rollups: the index of a pruned day stays
as it was. A series is the catalog's set of models, and a region class the table's, when
the rollups were written: a catalog or table that moves a model or a country needs the
rollups rebuilt (:func:`rebuild_rollups`).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, cast

import polars as pl
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from gpuscout.adapters.gpus import catalog, gpus_named
from gpuscout.adapters.regions import region_class_of
from gpuscout.adapters.run import Origin

from .memory import release_memory
from .models import OfferStock, PriceHistory, PriceRollup, Snapshot

__all__ = [
    "ALL_REGIONS",
    "AVAILABILITY_SHARE",
    "DAY",
    "HOUR",
    "HOURLY_DAYS",
    "OPEN",
    "STATS_COLUMNS",
    "STOCK_COLUMNS",
    "index_statistics",
    "read_hourly_rollups",
    "read_rollups",
    "rebuild_rollups",
    "series_named",
    "spread_over_days",
    "update_rollups",
]

_history = cast(sa.Table, PriceHistory.__table__)
_stock = cast(sa.Table, OfferStock.__table__)
_rollup = cast(sa.Table, PriceRollup.__table__)
_snapshot = cast(sa.Table, Snapshot.__table__)

#: ``price_rollup.period`` of a UTC day's row, of a UTC hour's, and of the prices valid
#: since the last snapshot.
DAY, HOUR, OPEN = "day", "hour", "open"

#: ``price_rollup.region_class`` of the rows over every offer, whatever its country.
ALL_REGIONS = "all"

#: Days of hour rows kept by default (``GPUSCOUT_ROLLUP_HOURLY_DAYS``).
HOURLY_DAYS = 7

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

#: The stock counts a rollup row holds beside them (see the module's docstring).
STOCK_COLUMNS = ("stock_offers", "available_offers")

#: The share of a period's offers in stock: of those whose stock was recorded in it, the
#: ones stated available at some time in it (null when none was recorded).
AVAILABILITY_SHARE = (
    pl.when(pl.col("stock_offers") > 0)
    .then(pl.col("available_offers") / pl.col("stock_offers"))
    .otherwise(None)
    .alias("availability_share")
)

#: The history rows the statistics are computed from, as a frame: the few distinct
#: providers, models, terms and region classes as categoricals (integers), not text, for
#: the rows are copied once per layer of series (:func:`_membership`) and grouped by them.
#: The offer key is its 64-bit hash (:func:`_hashed_keys`), the same offer's the same in both
#: frames.
ROWS_SCHEMA: dict[str, Any] = {
    "offer_key": pl.UInt64,
    "provider": pl.Categorical,
    "gpu_model": pl.Categorical,
    "term": pl.Categorical,
    "region_class": pl.Categorical,
    "usd_per_gpu_hour": pl.Float64,
    "valid_from": pl.Datetime("us"),
    "valid_to": pl.Datetime("us"),
    "sample": pl.Boolean,
}

#: The stock rows the availability is counted from, as a frame.
STOCK_SCHEMA: dict[str, Any] = {
    "offer_key": pl.UInt64,
    "available": pl.Boolean,
    "valid_from": pl.Datetime("us"),
    "valid_to": pl.Datetime("us"),
}

_DAY_STEP, _HOUR_STEP = timedelta(days=1), timedelta(hours=1)
_EVERY = {_DAY_STEP: "1d", _HOUR_STEP: "1h"}


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
def _membership() -> tuple[pl.DataFrame, ...]:
    """Each catalog model with the series it belongs to, in layers by the series' kind
    (models, families, vendors): a model is in at most one series of each kind, so each
    layer maps a model to one series. The statistics are computed a layer at a time: the
    rows are copied once per layer, not once per series of their model at once."""
    layers: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for models, name in _series().items():
        kind = name.partition(":")[0] if ":" in name else "model"
        layers[kind].extend((model, name) for model in sorted(models))
    schema = {"gpu_model": pl.Categorical, "series": pl.Categorical}
    return tuple(pl.DataFrame(pairs, schema=schema, orient="row") for pairs in layers.values())


def series_named(gpu: str) -> str | None:
    """The series a renter's GPU name means (the models :func:`adapters.gpus.gpus_named`
    gives), or ``None`` when those models are no series (then the history answers)."""
    models = frozenset(spec.name for spec in gpus_named(gpu))
    return _series().get(models) if models else None


def _naive(at: datetime | None) -> datetime | None:
    return None if at is None else at.astimezone(UTC).replace(tzinfo=None)


def _utc_start(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def _hour_of(at: datetime) -> datetime:
    """The UTC hour ``at`` falls in (aware)."""
    return at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


#: History and stock rows read (and framed) at a time: the Python rows of a chunk are let
#: go of before the next is read, so a snapshot's million open rows are held as a frame
#: (~100 MB), not as Python tuples (~700 MB).
ROWS_CHUNK = 50_000

#: :data:`ROWS_SCHEMA` as read, a chunk at a time: the offer key's text, and each row's
#: country, not its class yet.
_READ_SCHEMA: dict[str, Any] = ROWS_SCHEMA | {"offer_key": pl.String, "region_class": pl.String}


def _hashed_keys(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its offer keys' text replaced by their 64-bit hash, as each chunk is
    read: the rows are sorted, copied per layer of series and joined by the key, which costs
    far less with an integer, and no text of a million keys is held. Two keys of one hash
    (about one chance in 37 million at a million offers) would count as one offer."""
    return frame.with_columns(pl.col("offer_key").hash())


def _chunks(connection: Connection, queries: Sequence[sa.Select[Any]]) -> Iterator[Sequence[Any]]:
    """The rows of ``queries``, streamed from the database :data:`ROWS_CHUNK` at a time."""
    for query in queries:
        # on the statement: a connection's own option would stream the writes after it too
        yield from connection.execute(query.execution_options(yield_per=ROWS_CHUNK)).partitions()


def _rows(connection: Connection, lower: datetime, upper: datetime) -> pl.DataFrame:
    """The priced rows valid at some time of ``lower`` .. ``upper``: the open rows, and the
    rows closed after ``lower`` (each read through its own index on ``valid_to``), framed
    :data:`ROWS_CHUNK` at a time."""
    h = _history.c
    columns = (
        h.offer_key,
        h.provider,
        h.gpu_model,
        h.term,
        h.country,
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
    frames = [_frame_of_rows(chunk) for chunk in _chunks(connection, queries)]
    return pl.concat(frames) if frames else pl.DataFrame(schema=ROWS_SCHEMA)


def _frame_of_rows(rows: Sequence[Any]) -> pl.DataFrame:
    """Some history rows, as :func:`_rows` reads them, as :data:`ROWS_SCHEMA`."""
    sample = Origin.SAMPLE.value
    read = pl.DataFrame(
        [
            (key, provider, model, term, country, price, _naive(since), _naive(until), sample == o)
            for key, provider, model, term, country, price, since, until, o in rows
        ],
        schema=_READ_SCHEMA,
        orient="row",
    )
    return _hashed_keys(_region_classes(read))


def _region_classes(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with each country (column ``region_class``, as read) replaced by its region
    class (:func:`adapters.regions.region_class_of`), looked up once per distinct country."""
    countries = frame.get_column("region_class").unique().to_list()
    classes = {country: region_class_of(country).value for country in countries}
    return frame.with_columns(
        pl.col("region_class").replace_strict(classes, return_dtype=pl.Categorical)
    )


def _stock_rows(connection: Connection, lower: datetime, upper: datetime) -> pl.DataFrame:
    """The stock rows valid at some time of ``lower`` .. ``upper``, read as :func:`_rows`
    reads the price rows."""
    s = _stock.c
    columns = (s.offer_key, s.available, s.valid_from, s.valid_to)
    queries = (
        sa.select(*columns).where(s.closed_snapshot_id.is_(None), s.valid_from < upper),
        sa.select(*columns).where(
            s.valid_to.is_not(None), s.valid_to > lower, s.valid_from < upper
        ),
    )
    read = STOCK_SCHEMA | {"offer_key": pl.String}
    frames = [
        _hashed_keys(
            pl.DataFrame(
                [
                    (key, bool(available), _naive(since), _naive(until))
                    for key, available, since, until in chunk
                ],
                schema=read,
                orient="row",
            )
        )
        for chunk in _chunks(connection, queries)
    ]
    return pl.concat(frames) if frames else pl.DataFrame(schema=STOCK_SCHEMA)


#: The key columns of a rollup row besides its period.
_KEY_COLUMNS = ("series", "term", "region_class")


def index_statistics() -> list[pl.Expr]:
    """:data:`STATS_COLUMNS` of one price per offer (``usd_per_gpu_hour``, ``provider``,
    ``sample``) in a group: what the index says of a day, from rollups or from the rows."""
    price = pl.col("usd_per_gpu_hour")
    return [
        price.median().alias("median_usd_per_gpu_hour"),
        price.quantile(0.1, interpolation="linear").alias("p10_usd_per_gpu_hour"),
        price.quantile(0.9, interpolation="linear").alias("p90_usd_per_gpu_hour"),
        price.min().alias("min_usd_per_gpu_hour"),
        pl.len().alias("offers"),
        pl.col("provider").n_unique().alias("providers"),
        pl.col("sample").sum().alias("sample_offers"),
    ]


def _statistics(prices: pl.LazyFrame, by: list[str]) -> pl.DataFrame:
    """The index's statistics of one price per offer, per ``by`` and region class (each
    offer counted in its own class and in ``all``); ``available``: whether the offer was in
    stock (null: no stock recorded). ``prices`` is read once and grouped twice (its rows are
    not copied for ``all``)."""
    available = pl.col("available")
    statistics = [
        *index_statistics(),
        available.is_not_null().sum().alias("stock_offers"),
        available.fill_null(False).sum().alias("available_offers"),
    ]
    held = prices.collect()
    per_class = held.group_by([*by, "region_class"]).agg(statistics)
    every_region = (
        held.group_by(by)
        .agg(statistics)
        .with_columns(region_class=pl.lit(ALL_REGIONS, dtype=pl.Categorical))
        .select(per_class.columns)
    )
    del held
    return pl.concat([per_class, every_region]).with_columns(pl.col(*_KEY_COLUMNS).cast(pl.String))


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


def _spread(
    rows: pl.LazyFrame, first: datetime, last: datetime, step: timedelta, *bounds: pl.Expr
) -> pl.LazyFrame:
    """``rows`` (rows valid over ``valid_from`` .. ``valid_to``) once per period of length
    ``step`` (a UTC day or hour) starting ``first`` .. ``last`` (naive UTC) each is valid
    in, as column ``start``; ``bounds``: further last starts a row does not go past."""
    every = _EVERY[step]
    return (
        rows.with_columns(
            first_start=pl.max_horizontal(pl.col("valid_from").dt.truncate(every), pl.lit(first)),
            last_start=pl.min_horizontal(
                # valid_to is exclusive: a row closed on the hour does not cover that hour
                (pl.col("valid_to") - pl.duration(microseconds=1))
                .dt.truncate(every)
                .fill_null(last),
                *bounds,
                pl.lit(last),
            ),
        )
        .filter(pl.col("first_start") <= pl.col("last_start"))
        .with_columns(start=pl.datetime_ranges("first_start", "last_start", every))
        .explode("start")
    )


def _period_statistics(
    rows: pl.DataFrame, stock: pl.DataFrame, first: datetime, last: datetime, step: timedelta
) -> pl.DataFrame:
    """Per period (``start``) of ``first`` .. ``last``, series, term and region class with
    offers: the statistics of the last price of each offer valid during that period and
    whether it was in stock then (``rows``: :data:`ROWS_SCHEMA`, sorted by offer key and
    ``valid_from``; ``stock``: :data:`STOCK_SCHEMA`).

    A row is an offer's last price in the periods it is valid in up to the period before
    its offer's next row starts (that period the next row is the last), so each row is
    spread over exactly the periods it counts in, without sorting a row per offer and
    period. One layer of series (:func:`_membership`) at a time."""
    every = _EVERY[step]
    before_next = (pl.col("next_from").dt.truncate(every) - step).fill_null(pl.lit(last))
    in_stock = (
        _spread(stock.lazy(), first, last, step)
        .group_by("start", "offer_key")
        .agg(available=pl.col("available").any())
        .collect()
    )
    frames = []
    for layer in _membership():
        per_offer = (
            rows.lazy()
            .join(layer.lazy(), on="gpu_model", maintain_order="left")
            .with_columns(
                next_from=pl.col("valid_from").shift(-1).over("series", "term", "offer_key")
            )
        )
        spread = _spread(per_offer, first, last, step, before_next)
        with_stock = spread.join(in_stock.lazy(), on=["start", "offer_key"], how="left")
        frames.append(_statistics(with_stock, ["start", "series", "term"]))
    return pl.concat(frames)


def _open_statistics(rows: pl.DataFrame, stock: pl.DataFrame) -> pl.DataFrame:
    """Per series, term and region class: the statistics of the prices valid now (the open
    rows), with the open stock rows; one layer of series at a time."""
    open_rows = rows.filter(pl.col("valid_to").is_null())
    open_stock = stock.filter(pl.col("valid_to").is_null()).select("offer_key", "available")
    return pl.concat(
        _statistics(
            open_rows.lazy()
            .join(layer.lazy(), on="gpu_model")
            .join(open_stock.lazy(), on="offer_key", how="left"),
            ["series", "term"],
        )
        for layer in _membership()
    )


def _records(frame: pl.DataFrame, period: str, day: date | None = None) -> list[dict[str, Any]]:
    """The rows of ``frame`` (with ``start``, unless ``day`` is given) as ``period`` rows."""
    out = []
    for row in frame.iter_rows(named=True):
        record = {name: row[name] for name in (*_KEY_COLUMNS, *STATS_COLUMNS, *STOCK_COLUMNS)}
        if day is None:
            start: datetime = row["start"]
            record["day"], record["hour"] = start.date(), start.hour if period == HOUR else 0
        else:
            record["day"], record["hour"] = day, 0
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


def _last_hour(connection: Connection) -> datetime | None:
    """The last hour a rollup was written for, aware UTC (``None``: none yet)."""
    r = _rollup.c
    found = connection.execute(
        sa.select(r.day, r.hour)
        .where(r.period == HOUR)
        .order_by(r.day.desc(), r.hour.desc())
        .limit(1)
    ).first()
    return None if found is None else _utc_start(found[0]) + found[1] * _HOUR_STEP


def _hours_from(first: datetime) -> sa.ColumnElement[bool]:
    """Hour rows of the hour ``first`` (aware UTC) and after."""
    r, day = _rollup.c, first.date()
    return sa.or_(r.day > day, sa.and_(r.day == day, r.hour >= first.hour))


def _hours_to(last: datetime) -> sa.ColumnElement[bool]:
    """Hour rows of the hour ``last`` (aware UTC) and before."""
    r, day = _rollup.c, last.date()
    return sa.or_(r.day < day, sa.and_(r.day == day, r.hour <= last.hour))


def _write(
    connection: Connection,
    days: tuple[date, date] | None,
    hours: tuple[datetime, datetime] | None,
    keep_hours_from: datetime | None,
) -> None:
    """Recompute the day rows of ``days`` (first, last), the hour rows of ``hours`` (aware
    UTC hours, first, last) and the open rows; drop the hour rows before
    ``keep_hours_from`` (``None``: every hour row)."""
    r = _rollup.c
    pruned = [r.period == HOUR]
    if keep_hours_from is not None:
        pruned.append(sa.not_(_hours_from(keep_hours_from)))
    connection.execute(sa.delete(_rollup).where(*pruned))
    if hours is not None and hours[0] > hours[1]:
        hours = None
    bounds: list[tuple[datetime, datetime]] = []
    if days is not None:
        bounds.append((_utc_start(days[0]), _utc_start(days[1]) + _DAY_STEP))
    if hours is not None:
        bounds.append((hours[0], hours[1] + _HOUR_STEP))
    if not bounds:
        return
    lower, upper = min(a for a, _ in bounds), max(b for _, b in bounds)
    # the snapshot's offers, freed, stay in the C heap, which polars (another allocator)
    # cannot reuse: given back, they do not add up with the frames below
    release_memory()
    rows = _rows(connection, lower, upper).sort("offer_key", "valid_from")  # once for every pass
    stock = _stock_rows(connection, lower, upper)
    records: list[dict[str, Any]] = []
    if days is not None:
        first, last = (datetime.combine(day, time(0)) for day in days)
        frame = _period_statistics(rows, stock, first, last, _DAY_STEP)
        connection.execute(sa.delete(_rollup).where(r.period == DAY, r.day.between(*days)))
        records += _records(frame, DAY)
    if hours is not None:
        connection.execute(
            sa.delete(_rollup).where(r.period == HOUR, _hours_from(hours[0]), _hours_to(hours[1]))
        )
        # a day of hours at a time: memory holds a day's spread, as a day row's pass does
        first, last = (cast(datetime, _naive(hour)) for hour in hours)
        while first <= last:
            upto = min(first + _DAY_STEP - _HOUR_STEP, last)
            frame = _period_statistics(rows, stock, first, upto, _HOUR_STEP)
            records += _records(frame, HOUR)
            first = upto + _HOUR_STEP
    connection.execute(sa.delete(_rollup).where(r.period == OPEN))
    held = max(days[1] if days else date.min, _last_day(connection) or date.min)
    if hours is not None:
        held = max(held, hours[1].date())
    records += _records(_open_statistics(rows, stock), OPEN, held)
    if records:
        connection.execute(sa.insert(_rollup), records)


def update_rollups(
    connection: Connection,
    *,
    first: datetime,
    last: datetime,
    changed: bool = True,
    hourly_days: int = HOURLY_DAYS,
) -> None:
    """Bring the rollups up to date after a snapshot whose price and stock rows open and
    close between ``first`` and ``last`` (aware UTC): recompute those days and hours, and
    every day and hour since the last one written (they still hold prices); keep the hour
    rows of the last ``hourly_days`` days (0: none). Run in the snapshot's transaction.
    A snapshot that ``changed`` no row changes no period already written: then only a new
    day or hour is written."""
    first_day, last_day = first.astimezone(UTC).date(), last.astimezone(UTC).date()
    first_hour, last_hour = _hour_of(first), _hour_of(last)
    written_day = _last_day(connection)
    written_hour = _last_hour(connection)
    new_day = written_day is None or written_day < last_day
    if hourly_days:
        new_hour = written_hour is None or written_hour < last_hour
    else:  # hour rows left from a setting that kept some go
        new_hour = written_hour is not None
    if not changed and not new_day and not new_hour:
        return
    if written_day is not None:
        first_day = min(first_day, written_day + _DAY_STEP)
        last_day = max(last_day, written_day)
    days = (first_day, last_day) if changed or new_day else None
    if not hourly_days:
        _write(connection, days, None, None)
        return
    if written_hour is not None:
        first_hour = min(first_hour, written_hour + _HOUR_STEP)
        last_hour = max(last_hour, written_hour)
    keep_from = last_hour - timedelta(days=hourly_days) + _HOUR_STEP
    hours = (max(first_hour, keep_from), last_hour) if changed or new_hour else None
    _write(connection, days, hours, keep_from)


def rebuild_rollups(
    connection: Connection,
    *,
    until: date,
    days_per_pass: int = 31,
    hourly_days: int = HOURLY_DAYS,
    now: datetime | None = None,
) -> None:
    """Build every day's rollups from the whole history up to ``until`` (the migration's
    work), a month of rows per pass so memory stays bounded by a month of history, then
    the hour rows of the ``hourly_days`` days up to the hour of ``now`` (default: of the
    last snapshot, as the snapshots left them)."""
    h = _history.c
    earliest = connection.execute(sa.select(sa.func.min(h.valid_from))).scalar()
    connection.execute(sa.delete(_rollup))
    if earliest is None:
        return
    day = cast(datetime, earliest).astimezone(UTC).date()
    while day <= until:
        end = min(day + timedelta(days=days_per_pass - 1), until)
        _write(connection, (day, end), None, None)
        day = end + _DAY_STEP
    if now is None:
        now = connection.execute(sa.select(sa.func.max(_snapshot.c.started_at))).scalar()
    if not hourly_days or now is None:
        return
    last_hour = min(_hour_of(now), _utc_start(until) + 23 * _HOUR_STEP)
    keep_from = last_hour - timedelta(days=hourly_days) + _HOUR_STEP
    first_hour = max(keep_from, _hour_of(cast(datetime, earliest)))
    _write(connection, None, (first_hour, last_hour), keep_from)


def _stats_schema() -> dict[str, Any]:
    return {
        name: (pl.Float64 if name.endswith("hour") else pl.Int64)
        for name in (*STATS_COLUMNS, *STOCK_COLUMNS)
    }


def read_rollups(
    connection: Connection,
    *,
    series: str,
    term: str,
    start: date,
    end: date,
    region_class: str = ALL_REGIONS,
) -> pl.DataFrame:
    """The rollup statistics of ``series``, ``term`` and ``region_class`` per day of
    ``start`` .. ``end`` that has offers (columns ``day``, :data:`STATS_COLUMNS` and
    :data:`STOCK_COLUMNS`): the day rows, and for the days after the last one written the
    open rows."""
    r = _rollup.c
    stats = [r.day, *(getattr(r, name) for name in (*STATS_COLUMNS, *STOCK_COLUMNS))]
    same = (r.series == series, r.term == term, r.region_class == region_class)
    found = connection.execute(
        sa.select(*stats).where(*same, r.period == DAY, r.day.between(start, end))
    ).all()
    rows = [tuple(row) for row in found]
    written = _last_day(connection)
    if written is not None and written < end:
        held = connection.execute(sa.select(*stats[1:]).where(*same, r.period == OPEN)).first()
        if held is not None:
            day = max(start, written + _DAY_STEP)
            while day <= end:
                rows.append((day, *held))
                day += _DAY_STEP
    schema: dict[str, Any] = {"day": pl.Date} | _stats_schema()
    return pl.DataFrame(rows, schema=schema, orient="row")


def read_hourly_rollups(
    connection: Connection,
    *,
    series: str,
    term: str,
    start: datetime,
    end: datetime,
    region_class: str = ALL_REGIONS,
) -> pl.DataFrame:
    """The rollup statistics of ``series``, ``term`` and ``region_class`` per UTC hour of
    ``start`` .. ``end`` (aware; their hours) that has offers (columns ``hour``, aware UTC,
    :data:`STATS_COLUMNS` and :data:`STOCK_COLUMNS`): the hour rows, and for the hours after
    the last one written the open rows. Hours before the kept ones have no rows: the caller
    bounds the window (:data:`HOURLY_DAYS`)."""
    r = _rollup.c
    first, last = _hour_of(start), _hour_of(end)
    stats = [getattr(r, name) for name in (*STATS_COLUMNS, *STOCK_COLUMNS)]
    same = (r.series == series, r.term == term, r.region_class == region_class)
    found = connection.execute(
        sa.select(r.day, r.hour, *stats).where(
            *same, r.period == HOUR, _hours_from(first), _hours_to(last)
        )
    ).all()
    rows = [(_utc_start(day) + hour * _HOUR_STEP, *rest) for day, hour, *rest in found]
    written = _last_hour(connection)
    if written is not None and written < last:
        held = connection.execute(sa.select(*stats).where(*same, r.period == OPEN)).first()
        if held is not None:
            hour = max(first, written + _HOUR_STEP)
            while hour <= last:
                rows.append((hour, *held))
                hour += _HOUR_STEP
    schema: dict[str, Any] = {"hour": pl.Datetime("us", "UTC")} | _stats_schema()
    return pl.DataFrame(rows, schema=schema, orient="row").sort("hour")
