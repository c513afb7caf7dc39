"""How often an offer was in stock: the share of its provider's snapshots in which it was.

A provider's answer says what is rentable now (``available_now``, ``available_count``, or
simply listing only what is free, as marketplaces do). One answer says little about next
week; many do. Each successful fetch is recorded in ``offer_stock`` as change-only intervals
(:func:`record_stock`, in the snapshot's own transaction), and a share is counted from them
(:func:`availability`): of the provider's successful snapshots in the window, those in which
the offer was listed and not stated unavailable. A failed or skipped fetch counts neither
way (nothing was observed). Where the provider publishes a count, the mean count over the
snapshots in which the offer was available comes with it.

Counting is interval arithmetic on snapshot ids (two binary searches per interval), not a
join of offers by snapshots, so a month of hourly snapshots of 100k offers stays cheap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, cast

import polars as pl
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .models import OfferStock, Snapshot, SnapshotProvider

__all__ = ["WINDOWS_DAYS", "Stock", "availability", "has_stock", "record_stock", "stock_of"]

_stock = cast(sa.Table, OfferStock.__table__)
_snapshot = cast(sa.Table, Snapshot.__table__)
_snapshot_provider = cast(sa.Table, SnapshotProvider.__table__)

#: The windows every answer states a share over, in days.
WINDOWS_DAYS: tuple[int, ...] = (7, 30)


@dataclasses.dataclass(frozen=True, slots=True)
class Stock:
    """An offer's stock as one fetch states it."""

    available: bool
    count: int | None
    gpu_model: str | None = None


def stock_of(available_now: bool | None, available_count: int | None) -> tuple[bool, int | None]:
    """Listed offers are available unless stated otherwise (``available_now`` false or a
    count of 0): a listing is the provider's word that it rents this now."""
    return (available_now is not False and available_count != 0), available_count


def record_stock(
    connection: Connection,
    provider: str,
    listed: Mapping[str, Stock],
    *,
    snapshot_id: int,
    at: datetime,
) -> None:
    """Record one successful fetch of ``provider``: open a row for each offer whose stock
    differs from its open row (or that has none), close the rows of changed offers and of
    offers no longer listed."""
    open_rows = connection.execute(
        sa.select(_stock.c.offer_key, _stock.c.available, _stock.c.available_count).where(
            _stock.c.provider == provider, _stock.c.closed_snapshot_id.is_(None)
        )
    ).all()
    held = {key: (bool(available), count) for key, available, count in open_rows}
    closing = [k for k, state in held.items() if k not in listed]
    opening: list[dict[str, Any]] = []
    for key, stock in listed.items():
        state = (stock.available, stock.count)
        before = held.get(key)
        if before == state:
            continue
        if before is not None:
            closing.append(key)
        opening.append(
            {
                "offer_key": key,
                "provider": provider,
                "gpu_model": stock.gpu_model,
                "available": stock.available,
                "available_count": stock.count,
                "opened_snapshot_id": snapshot_id,
                "valid_from": at,
            }
        )
    for chunk in _chunks(closing):
        connection.execute(
            sa.update(_stock)
            .where(_stock.c.offer_key.in_(chunk), _stock.c.closed_snapshot_id.is_(None))
            .values(closed_snapshot_id=snapshot_id, valid_to=at)
        )
    if opening:
        connection.execute(sa.insert(_stock), opening)


def has_stock(connection: Connection, provider: str) -> bool:
    """Whether ``provider`` has any open stock row (a database upgraded with offers already
    stored has none until their first fetch is recorded)."""
    query = sa.select(_stock.c.id).where(
        _stock.c.provider == provider, _stock.c.closed_snapshot_id.is_(None)
    )
    return connection.execute(query.limit(1)).first() is not None


def _chunks(items: Sequence[str], size: int = 500) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


_SHARES_SCHEMA = {
    "offer_key": pl.String(),
    "gpu_model": pl.String(),
    "days": pl.Int64(),
    "snapshots": pl.Int64(),
    "available_snapshots": pl.Int64(),
    "share": pl.Float64(),
    "mean_count": pl.Float64(),
}


def availability(
    connection: Connection,
    now: datetime,
    *,
    keys: Sequence[str] | None = None,
    days: Sequence[int] = WINDOWS_DAYS,
) -> pl.DataFrame:
    """Per offer (``keys``, else every offer with stock in the widest window) and window:
    the provider's successful snapshots in it (``snapshots``), those in which the offer was
    available, their ``share`` and the ``mean_count`` available where published.

    An offer first seen inside a window counts from then: its share is over the snapshots
    since it was listed, so a new offer is not penalised for the days before it existed.
    """
    since = now - timedelta(days=max(days))
    snaps = pl.DataFrame(
        connection.execute(
            sa.select(_snapshot_provider.c.provider, _snapshot.c.id, _snapshot.c.started_at)
            .join(_snapshot, _snapshot.c.id == _snapshot_provider.c.snapshot_id)
            .where(_snapshot_provider.c.status == "ok", _snapshot.c.started_at >= since)
            .order_by(_snapshot.c.id)
        ).all(),
        schema={"provider": pl.String(), "id": pl.Int64(), "started_at": pl.Datetime("us", "UTC")},
        orient="row",
    )
    if snaps.is_empty():
        return pl.DataFrame(schema=_SHARES_SCHEMA)
    first_id = int(snaps["id"].min())  # type: ignore[arg-type]
    query = sa.select(
        _stock.c.offer_key,
        _stock.c.provider,
        _stock.c.gpu_model,
        _stock.c.available,
        _stock.c.available_count,
        _stock.c.opened_snapshot_id,
        _stock.c.closed_snapshot_id,
    ).where(sa.or_(_stock.c.closed_snapshot_id.is_(None), _stock.c.closed_snapshot_id > first_id))
    if keys is not None:
        query = query.where(_stock.c.offer_key.in_(list(keys)))
    rows = pl.DataFrame(
        connection.execute(query).all(),
        schema={
            "offer_key": pl.String(),
            "provider": pl.String(),
            "gpu_model": pl.String(),
            "available": pl.Boolean(),
            "count": pl.Int64(),
            "opened": pl.Int64(),
            "closed": pl.Int64(),
        },
        orient="row",
    )
    out = [
        _shares(rows, snaps.filter(pl.col("started_at") >= now - timedelta(days=d)), d)
        for d in sorted(days)
    ]
    return pl.concat(out) if out else pl.DataFrame(schema=_SHARES_SCHEMA)


def _shares(rows: pl.DataFrame, snaps: pl.DataFrame, days: int) -> pl.DataFrame:
    """The shares over one window's snapshots (``snaps``: provider, id)."""
    parts: list[pl.DataFrame] = []
    for (provider,), ids_frame in snaps.group_by("provider", maintain_order=True):
        own = rows.filter(pl.col("provider") == provider)
        if own.is_empty():
            continue
        ids = ids_frame["id"].sort()
        past_last = int(ids.max()) + 1  # type: ignore[arg-type]
        # snapshots each interval covers: ids in [opened, closed)
        lo = ids.search_sorted(own["opened"], side="left")
        hi = ids.search_sorted(own["closed"].fill_null(past_last), side="left")
        own = own.with_columns(n=pl.Series(hi - lo, dtype=pl.Int64))
        offers = own.group_by("offer_key").agg(
            pl.col("gpu_model").last(),
            pl.col("opened").min(),
            pl.col("n").filter(pl.col("available")).sum().alias("available_snapshots"),
            (pl.col("count") * pl.col("n")).filter(pl.col("available")).sum().alias("counted"),
            pl.col("n")
            .filter(pl.col("available") & pl.col("count").is_not_null())
            .sum()
            .alias("with_count"),
        )
        # every snapshot of the window since the offer was first listed
        first = ids.search_sorted(offers["opened"], side="left")
        parts.append(offers.with_columns(snapshots=pl.Series(len(ids) - first, dtype=pl.Int64)))
    if not parts:
        return pl.DataFrame(schema=_SHARES_SCHEMA)
    return (
        pl.concat(parts)
        .with_columns(
            days=pl.lit(days, pl.Int64),
            available_snapshots=pl.col("available_snapshots").cast(pl.Int64),
            share=pl.when(pl.col("snapshots") > 0).then(
                pl.col("available_snapshots") / pl.col("snapshots")
            ),
            mean_count=pl.when(pl.col("with_count") > 0).then(
                pl.col("counted") / pl.col("with_count")
            ),
        )
        .select(list(_SHARES_SCHEMA))
    )
