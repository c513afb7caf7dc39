"""Questions the price history answers: one offer over time, a daily price index per GPU
model and term, and week-over-week changes. They feed the API and the weekly digest.

A history row is a price valid over ``[valid_from, valid_to)`` (``valid_to`` NULL: still
valid). Days are UTC calendar days. An offer's price *on a day* is the last price valid
during that day, so an offer repriced at noon counts once, at its new price.

The history tells what this database observed, day by day. A price replayed from the offline
sample (``gpuscout snapshot --sample``; ``origin = sample``) is valid from when the sample
was *stored*, not from its capture date (:mod:`db.snapshots`): its prices were captured
once, in 2023-2026, and nobody observed them on the days in between, so the history of a
new database starts on the day it was filled, whatever the sample's dates. Answers over
sample rows say so (:func:`history_note`: "sample", the capture dates and what the days
mean); :func:`daily_index` counts them per day (``sample_offers``) and
:func:`index_sample_providers` names their providers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, cast

import polars as pl
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from gpuscout.adapters.gpus import gpus_named
from gpuscout.adapters.regions import RegionClass
from gpuscout.adapters.run import Origin
from gpuscout.adapters.sample import sample_entries, sample_note
from gpuscout.adapters.schema import Offer, PriceBasis, PriceUnit, RentalTerm

from .models import CurrentOffer, PriceHistory, ProviderStatus
from .records import decode_offers
from .rollups import (
    ALL_REGIONS,
    AVAILABILITY_SHARE,
    STOCK_COLUMNS,
    index_statistics,
    read_hourly_rollups,
    read_rollups,
    series_named,
    spread_over_days,
)

__all__ = [
    "INDEX_SCHEMA",
    "HistoryLabel",
    "PriceChange",
    "PricePoint",
    "WeekOverWeek",
    "daily_index",
    "gpu_filter",
    "history_note",
    "hourly_index",
    "hourly_window",
    "index_label",
    "index_sample_providers",
    "offer_price_history",
    "points_label",
    "week_over_week",
]

_history = cast(sa.Table, PriceHistory.__table__)
_current = cast(sa.Table, CurrentOffer.__table__)
_status = cast(sa.Table, ProviderStatus.__table__)

#: Columns of :func:`daily_index`; prices are USD per GPU-hour.
INDEX_SCHEMA: dict[str, pl.DataType] = {
    "day": pl.Date(),
    "median_usd_per_gpu_hour": pl.Float64(),
    "p10_usd_per_gpu_hour": pl.Float64(),
    "p90_usd_per_gpu_hour": pl.Float64(),
    "min_usd_per_gpu_hour": pl.Float64(),
    "offers": pl.UInt32(),
    "providers": pl.UInt32(),
    "sample_offers": pl.UInt32(),
}

#: What the rollups read by a region class or per hour need: a GPU series, every provider.
ROLLUPS_ONLY = (
    "a region class and the hourly index are read from the rollups: name a GPU model, family"
    " or vendor, with no provider left out"
)

#: What the days of a history over sample prices mean (the end of :func:`history_note`).
SAMPLE_DAYS_NOTE = (
    "its history starts when the sample was stored in this database, not at the capture dates"
)


@dataclasses.dataclass(frozen=True, slots=True)
class PricePoint:
    """One stored price of an offer: the raw figure and the normalised one."""

    valid_from: datetime
    valid_to: datetime | None
    price_amount: Decimal
    price_currency: str
    price_unit: PriceUnit
    price_basis: PriceBasis
    term: RentalTerm
    usd_per_hour: Decimal
    usd_per_gpu_hour: float | None
    origin: Origin = Origin.LIVE
    """``sample``: replayed from the offline sample; valid from when it was stored"""


def _connect(engine: Engine | Connection) -> Connection:
    return engine.connect() if isinstance(engine, Engine) else engine


def _read_rolled(
    engine: Engine | Connection,
    read: Callable[..., pl.DataFrame],
    series: str,
    term: RentalTerm | str,
    start: Any,
    end: Any,
    region_class: RegionClass | None,
) -> pl.DataFrame:
    """``read`` (:func:`~db.rollups.read_rollups` or its hourly twin) of ``series`` on a
    connection of ``engine``'s, every region (``all``) unless ``region_class``."""
    connection = _connect(engine)
    try:
        return read(
            connection,
            series=series,
            term=RentalTerm(term).value,
            start=start,
            end=end,
            region_class=ALL_REGIONS if region_class is None else region_class.value,
        )
    finally:
        if connection is not engine:
            connection.close()


def offer_price_history(engine: Engine | Connection, offer_key: str) -> list[PricePoint]:
    """Every stored price of the offer ``offer_key`` (see ``Offer.key``), oldest first."""
    h = _history.c
    query = (
        sa.select(
            h.valid_from,
            h.valid_to,
            h.price_amount,
            h.price_currency,
            h.price_unit,
            h.price_basis,
            h.term,
            h.usd_per_hour,
            h.usd_per_gpu_hour,
            h.origin,
        )
        .where(h.offer_key == offer_key)
        .order_by(h.valid_from, h.id)
    )
    connection = _connect(engine)
    try:
        rows = connection.execute(query).all()
    finally:
        if connection is not engine:
            connection.close()
    return [
        PricePoint(
            valid_from=valid_from,
            valid_to=valid_to,
            price_amount=amount,
            price_currency=currency,
            price_unit=PriceUnit(unit),
            price_basis=PriceBasis(basis),
            term=RentalTerm(term),
            usd_per_hour=usd_per_hour,
            usd_per_gpu_hour=usd_per_gpu_hour,
            origin=Origin(origin),
        )
        for (
            valid_from,
            valid_to,
            amount,
            currency,
            unit,
            basis,
            term,
            usd_per_hour,
            usd_per_gpu_hour,
            origin,
        ) in rows
    ]


def gpu_filter(gpu: str) -> sa.ColumnElement[bool]:
    """Rows of the catalog models the GPU name ``gpu`` means, read as a requirement's
    ``gpus`` is (:func:`adapters.gpus.gpus_named`), so the history takes every spelling the
    offers take and means by it the same models: a model (``H100-SXM5-80GB``, only itself,
    case aside), a family (``H100``: every H100; ``RTX-4080``: not ``RTX-4080-SUPER``), a
    vendor (``amd``) or a name as providers write it (``H100 SXM``, ``4090``). A name
    meaning no model matches no row. Stored ``gpu_model`` values are catalog names."""
    models = [spec.name for spec in gpus_named(gpu)]
    return _history.c.gpu_model.in_(models) if models else sa.false()


def _naive(at: object) -> datetime:
    """A stored time as naive UTC (polars' ``Datetime("us")``)."""
    assert isinstance(at, datetime)
    return at.astimezone(UTC).replace(tzinfo=None)


def _utc_start(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def _index_rows(
    engine: Engine | Connection,
    columns: tuple[sa.ColumnElement[object], ...],
    *,
    gpu: str,
    start: date,
    end: date,
    term: RentalTerm | str,
    exclude: Collection[str] = (),
) -> list[tuple[Any, ...]]:
    """``columns`` of the price rows of ``gpu`` and ``term`` valid on some day of
    ``start`` .. ``end`` (inclusive), but those of the providers ``exclude`` names."""
    if end < start:
        raise ValueError(f"end {end} is before start {start}")
    h = _history.c
    lower, upper = _utc_start(start), _utc_start(end + timedelta(days=1))
    wanted = [
        gpu_filter(gpu),
        h.term == RentalTerm(term).value,
        h.usd_per_gpu_hour.is_not(None),
        h.valid_from < upper,
    ]
    if exclude:
        wanted.append(h.provider.not_in(sorted(exclude)))
    # open rows and rows closed since ``lower``, each through its index on valid_to
    queries = (
        sa.select(*columns).where(h.valid_to.is_(None), *wanted),
        sa.select(*columns).where(h.valid_to.is_not(None), h.valid_to > lower, *wanted),
    )
    connection = _connect(engine)
    try:
        return [tuple(row) for query in queries for row in connection.execute(query)]
    finally:
        if connection is not engine:
            connection.close()


def index_sample_providers(
    engine: Engine | Connection,
    *,
    gpu: str,
    start: date,
    end: date,
    term: RentalTerm | str = RentalTerm.ON_DEMAND,
    exclude: Collection[str] = (),
) -> list[str]:
    """The providers (sorted) whose sample prices :func:`daily_index` counts on some day
    of ``start`` .. ``end``."""
    h = _history.c
    rows = _index_rows(
        engine,
        (h.provider, h.origin),
        gpu=gpu,
        start=start,
        end=end,
        term=term,
        exclude=exclude,
    )
    return sorted({str(p) for p, origin in rows if origin == Origin.SAMPLE.value})


def history_note(providers: Collection[str]) -> str:
    """What an answer over the sample prices of ``providers`` says: the sample note with
    their capture dates (as the shipped manifest gives them) and what the days mean."""
    wanted = set(providers)
    captures = [
        (e.provider, e.dated, e.capture_date_known)
        for e in sample_entries()
        if e.provider in wanted
    ]
    return f"{sample_note(captures)}; {SAMPLE_DAYS_NOTE}"


@dataclasses.dataclass(frozen=True, slots=True)
class HistoryLabel:
    """What an answer over stored prices says about where they come from, as the offers'
    answers do (:class:`db.current.CurrentState`)."""

    origin: str = Origin.LIVE.value
    """live | sample | mixed: all the prices answered are fetched, replayed from the
    offline sample, or some of each"""
    sample_providers: tuple[str, ...] = ()
    note: str | None = None
    """:func:`history_note` when any price is the sample's"""

    @property
    def sample(self) -> bool:
        return self.origin != Origin.LIVE.value

    @property
    def caption(self) -> str | None:
        """What a chart or table of these prices adds to its title (``None``: every price
        is live), so a plot never shows recorded prices as live ones."""
        if self.origin == Origin.SAMPLE.value:
            return "offline sample, not live"
        return "partly the offline sample, not live" if self.sample else None

    @classmethod
    def of(cls, *, sample: int, total: int, providers: Collection[str]) -> HistoryLabel:
        """The label of ``total`` prices, ``sample`` of them (of ``providers``) the
        sample's."""
        if not sample:
            return cls()
        origin = Origin.SAMPLE.value if sample == total else "mixed"
        return cls(origin, tuple(sorted(providers)), history_note(providers))


def index_label(
    engine: Engine | Connection,
    frame: pl.DataFrame,
    *,
    gpu: str,
    start: date,
    end: date,
    term: RentalTerm | str = RentalTerm.ON_DEMAND,
    exclude: Collection[str] = (),
) -> HistoryLabel:
    """The label of a :func:`daily_index` ``frame`` (of these arguments): sample when any
    day counts a sample price; the sample's providers are read only then."""
    sample = int(frame["sample_offers"].sum())
    providers = (
        index_sample_providers(engine, gpu=gpu, start=start, end=end, term=term, exclude=exclude)
        if sample
        else []
    )
    return HistoryLabel.of(sample=sample, total=int(frame["offers"].sum()), providers=providers)


def points_label(offer_key: str, points: Collection[PricePoint]) -> HistoryLabel:
    """The label of one offer's stored prices (``offer_key``: ``provider|...``)."""
    sample = sum(p.origin is Origin.SAMPLE for p in points)
    return HistoryLabel.of(sample=sample, total=len(points), providers=[offer_key.split("|", 1)[0]])


def daily_index(
    engine: Engine | Connection,
    *,
    gpu: str,
    start: date,
    end: date,
    term: RentalTerm | str = RentalTerm.ON_DEMAND,
    exclude: Collection[str] = (),
    region_class: RegionClass | None = None,
    availability: bool = False,
) -> pl.DataFrame:
    """Per UTC day from ``start`` to ``end`` (inclusive): median, p10, p90 and min of USD per
    GPU-hour over the offers of ``gpu`` (see :func:`gpu_filter`) and ``term`` but those of
    the providers ``exclude`` names (kept out by their terms), with the
    number of offers and of providers, and how many of those offers are the offline
    sample's (``sample_offers``). Quantiles interpolate linearly between ranks (as numpy's
    default). Days without offers have ``offers == 0`` and null prices.

    A day counts the prices this database held on it: a sample price from the day the
    sample was stored (see the module's docstring), never from its capture date.

    A name meaning a model, family or vendor, with no provider left out, is read from the
    rollups each snapshot writes (:mod:`db.rollups`: a row per day); any other from the
    price rows valid in the window. ``region_class`` counts only the offers of that region
    class (read from the rollups only: else a ValueError). ``availability`` adds the column
    ``availability_share`` (:data:`db.rollups.AVAILABILITY_SHARE`; null when no stock was
    recorded, and from the price rows, which do not hold it).
    """
    if end < start:
        raise ValueError(f"end {end} is before start {start}")
    series = None if exclude else series_named(gpu)
    if series is None and region_class is not None:
        raise ValueError(ROLLUPS_ONLY)
    if series is not None:
        rolled = _read_rolled(engine, read_rollups, series, term, start, end, region_class)
        if availability:
            rolled = rolled.with_columns(AVAILABILITY_SHARE)
        return _every_day(rolled.drop(STOCK_COLUMNS).lazy(), start, end)
    h = _history.c
    rows = _index_rows(
        engine,
        (h.offer_key, h.provider, h.usd_per_gpu_hour, h.valid_from, h.valid_to, h.origin),
        gpu=gpu,
        start=start,
        end=end,
        term=term,
        exclude=exclude,
    )
    naive = [
        (
            key,
            provider,
            price,
            _naive(valid_from),
            None if valid_to is None else _naive(valid_to),
            origin == Origin.SAMPLE.value,
        )
        for key, provider, price, valid_from, valid_to, origin in rows
    ]
    prices = pl.DataFrame(
        naive,
        schema={
            "offer_key": pl.String,
            "provider": pl.String,
            "usd_per_gpu_hour": pl.Float64,
            "valid_from": pl.Datetime("us"),
            "valid_to": pl.Datetime("us"),
            "sample": pl.Boolean,
        },
        orient="row",
    )
    price = pl.col("usd_per_gpu_hour")
    per_day = (
        spread_over_days(prices.lazy(), start, end)
        # one price per offer and day: the last one valid that day
        .sort("day", "offer_key", "valid_from")
        .group_by("day", "offer_key")
        .agg(pl.col("provider").last(), price.last(), pl.col("sample").last())
        .group_by("day")
        .agg(index_statistics())
    )
    if availability:
        per_day = per_day.with_columns(availability_share=pl.lit(None, pl.Float64))
    return _every_day(per_day, start, end)


def hourly_window(now: datetime, days: int, kept_days: int) -> tuple[datetime, datetime]:
    """The first and last UTC hour of the ``days`` of hours up to ``now``'s, if the hourly
    rollups keep them (the last ``kept_days`` days, :data:`db.rollups.HOURLY_DAYS` by
    default); else a ValueError saying what is kept."""
    if days < 1:
        raise ValueError(f"days must be at least 1, not {days}")
    if days > kept_days:
        kept = "none are kept" if kept_days < 1 else f"no more than {kept_days} days"
        raise ValueError(
            f"{days} days of hours asked for: the hourly index holds the last {kept_days} days"
            f" ({kept}; GPUSCOUT_ROLLUP_HOURLY_DAYS)"
        )
    last = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return last - timedelta(hours=days * 24 - 1), last


def hourly_index(
    engine: Engine | Connection,
    *,
    gpu: str,
    start: datetime,
    end: datetime,
    term: RentalTerm | str = RentalTerm.ON_DEMAND,
    exclude: Collection[str] = (),
    region_class: RegionClass | None = None,
) -> pl.DataFrame:
    """Per UTC hour from ``start``'s to ``end``'s (aware; see :func:`hourly_window`) what
    :func:`daily_index` gives per day, with ``availability_share``, as column ``hour``
    (aware UTC) then :data:`INDEX_SCHEMA`'s. Read from the hour rollups only: a name that is
    no GPU series, or providers left out, is a ValueError."""
    if end < start:
        raise ValueError(f"end {end} is before start {start}")
    series = None if exclude else series_named(gpu)
    if series is None:
        raise ValueError(ROLLUPS_ONLY)
    rolled = _read_rolled(engine, read_hourly_rollups, series, term, start, end, region_class)
    first = start.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    last = end.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    hours = pl.DataFrame(
        {"hour": pl.datetime_range(first, last, "1h", time_zone="UTC", eager=True)}
    ).cast({"hour": pl.Datetime("us", "UTC")})
    schema = {"hour": pl.Datetime("us", "UTC")} | {
        name: dtype for name, dtype in INDEX_SCHEMA.items() if name != "day"
    }
    return (
        hours.lazy()
        .join(
            rolled.with_columns(AVAILABILITY_SHARE).drop(STOCK_COLUMNS).lazy(),
            on="hour",
            how="left",
        )
        .with_columns(pl.col("offers", "providers", "sample_offers").fill_null(0))
        .sort("hour")
        .collect()
        .cast(schema)  # type: ignore[arg-type]
    )


def _every_day(per_day: pl.LazyFrame, start: date, end: date) -> pl.DataFrame:
    """``per_day`` (the days with offers) with every day of ``start`` .. ``end``, as
    :data:`INDEX_SCHEMA`."""
    days = pl.DataFrame({"day": pl.date_range(start, end, "1d", eager=True)})
    return (
        days.lazy()
        .join(per_day, on="day", how="left")
        .with_columns(pl.col("offers", "providers", "sample_offers").fill_null(0))
        .sort("day")
        .collect()
        .cast(INDEX_SCHEMA)  # type: ignore[arg-type]
    )


# --- week over week -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class PriceChange:
    """An offer's whole-instance price at the start and end of a period."""

    offer_key: str
    offer: Offer
    """the offer as last seen (now if still current, else just before it went)"""
    old_usd_per_hour: Decimal | None
    new_usd_per_hour: Decimal | None

    @property
    def change_ratio(self) -> float | None:
        """(new - old) / old: -0.1 is 10 % cheaper; ``None`` for a new or gone offer."""
        if self.old_usd_per_hour is None or self.new_usd_per_hour is None:
            return None
        return float((self.new_usd_per_hour - self.old_usd_per_hour) / self.old_usd_per_hour)


@dataclasses.dataclass(frozen=True, slots=True)
class WeekOverWeek:
    since: datetime
    until: datetime
    cheaper: list[PriceChange]
    """biggest drop first"""
    dearer: list[PriceChange]
    """biggest rise first"""
    new: list[PriceChange]
    gone: list[PriceChange]


def _valid_at(connection: Connection, at: datetime) -> dict[str, Decimal]:
    """Each offer's whole-instance USD per hour valid at ``at``."""
    h = _history.c
    # open rows and rows closed after ``at``, each through its index on valid_to
    queries = (
        sa.select(h.offer_key, h.usd_per_hour).where(h.valid_to.is_(None), h.valid_from <= at),
        sa.select(h.offer_key, h.usd_per_hour).where(
            h.valid_to.is_not(None), h.valid_to > at, h.valid_from <= at
        ),
    )
    return {key: price for query in queries for key, price in connection.execute(query)}


def _last_seen(connection: Connection, keys: Collection[str]) -> dict[str, Offer]:
    """The offers ``keys`` as last seen: current ones from ``current_offer``, gone ones
    from the record kept on their last closed price row (``fetched_at`` = that price's
    start)."""
    c, s, h = _current.c, _status.c, _history.c
    wanted = set(keys)
    rows: dict[str, tuple[str, datetime]] = {}
    current = sa.select(
        c.offer_key, c.record, sa.func.coalesce(c.fetched_at, s.offers_fetched_at)
    ).join_from(_current, _status, c.provider == s.provider)
    for key, record, fetched_at in connection.execute(current).all():
        if key in wanted:
            rows[key] = (record, fetched_at)
    missing = sorted(wanted - rows.keys())
    gone = (
        sa.select(h.offer_key, h.record, h.valid_from)
        .where(h.record.is_not(None), h.offer_key.in_(sa.bindparam("keys")))
        .order_by(h.valid_from)
    )
    for start in range(0, len(missing), 5000):
        chunk = missing[start : start + 5000]
        for key, record, valid_from in connection.execute(gone, {"keys": chunk}).all():
            rows[key] = (record, valid_from)  # the latest closed row wins
    ordered = sorted(rows)
    return dict(zip(ordered, decode_offers(rows[k] for k in ordered), strict=True))


def week_over_week(
    engine: Engine | Connection,
    *,
    until: datetime | None = None,
    days: int = 7,
    qualifies: Callable[[Offer], bool] | None = None,
    keys: Collection[str] | None = None,
) -> WeekOverWeek:
    """Compare the prices valid at ``until - days`` with those valid at ``until`` (default
    now): which offers got cheaper or dearer, which are new and which are gone.

    Only offers in ``keys`` (if given) that pass ``qualifies`` (if given; e.g. the pricing
    engine's requirement) count; the predicate sees the offer as last seen.
    """
    until = until or datetime.now(UTC)
    since = until - timedelta(days=days)
    connection = _connect(engine)
    try:
        before, after = _valid_at(connection, since), _valid_at(connection, until)
        if keys is not None:
            wanted = set(keys)
            before = {k: v for k, v in before.items() if k in wanted}
            after = {k: v for k, v in after.items() if k in wanted}
        offers = _last_seen(connection, before.keys() | after.keys())
    finally:
        if connection is not engine:
            connection.close()
    cheaper, dearer, new, gone = [], [], [], []
    for key in sorted(offers):
        offer = offers[key]
        if qualifies is not None and not qualifies(offer):
            continue
        old, now_ = before.get(key), after.get(key)
        change = PriceChange(key, offer, old, now_)
        if old is None:
            new.append(change)
        elif now_ is None:
            gone.append(change)
        elif now_ < old:
            cheaper.append(change)
        elif now_ > old:
            dearer.append(change)
    cheaper.sort(key=lambda c: (c.change_ratio or 0.0, c.offer_key))
    dearer.sort(key=lambda c: (-(c.change_ratio or 0.0), c.offer_key))
    return WeekOverWeek(since, until, cheaper, dearer, new, gone)
