"""Retention: how long snapshot records, closed price rows and closed stock rows are kept.

Open price rows (prices still valid) and the newest snapshot are never pruned, whatever the
settings say; a bound of 0 days keeps everything.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import cast

import sqlalchemy as sa

from .engine import Target, transaction
from .models import OfferStock, PriceHistory, Snapshot, SnapshotRun

__all__ = ["PruneResult", "prune"]

_snapshot = cast(sa.Table, Snapshot.__table__)
_history = cast(sa.Table, PriceHistory.__table__)
_run = cast(sa.Table, SnapshotRun.__table__)
_stock = cast(sa.Table, OfferStock.__table__)


@dataclasses.dataclass(frozen=True, slots=True)
class PruneResult:
    snapshots_deleted: int
    history_deleted: int


def prune(
    target: Target,
    *,
    now: datetime,
    snapshots_days: int,
    history_days: int,
) -> PruneResult:
    """Delete snapshots finished more than ``snapshots_days`` before ``now`` (with their
    per-provider rows, and the finished records of snapshot attempts as old) and price rows
    closed more than ``history_days`` before ``now``."""
    snapshots = history = 0
    with transaction(target) as connection:
        if snapshots_days > 0:
            newest = sa.select(sa.func.max(_snapshot.c.id)).scalar_subquery()
            snapshots = connection.execute(
                sa.delete(_snapshot).where(
                    _snapshot.c.finished_at < now - timedelta(days=snapshots_days),
                    _snapshot.c.id != newest,
                )
            ).rowcount
            connection.execute(
                sa.delete(_run).where(
                    _run.c.finished_at.is_not(None),
                    _run.c.finished_at < now - timedelta(days=snapshots_days),
                )
            )
        if history_days > 0:
            history = connection.execute(
                sa.delete(_history).where(
                    _history.c.valid_to.is_not(None),
                    _history.c.valid_to < now - timedelta(days=history_days),
                )
            ).rowcount
            connection.execute(  # stock intervals age as price rows do
                sa.delete(_stock).where(
                    _stock.c.valid_to.is_not(None),
                    _stock.c.valid_to < now - timedelta(days=history_days),
                )
            )
    return PruneResult(snapshots, history)
