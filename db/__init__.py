"""Persistence: snapshots, current offers and the price history (SQLite or PostgreSQL).

Nothing connects at import time: build an engine with :func:`make_engine`, apply the
migrations with :func:`upgrade`, then write with :func:`store_snapshot` and read with
:func:`load_current_offers` and the queries in :mod:`db.history`.
"""

from __future__ import annotations

from .current import CurrentState, Outcome, ProviderState, load_current_offers
from .engine import make_engine, transaction, write_connection
from .history import (
    PriceChange,
    PricePoint,
    WeekOverWeek,
    daily_index,
    offer_price_history,
    week_over_week,
)
from .locks import job_lock
from .migrate import upgrade
from .retention import PruneResult, prune
from .snapshots import ProviderChanges, SnapshotSummary, store_snapshot

__all__ = [
    "CurrentState",
    "Outcome",
    "PriceChange",
    "PricePoint",
    "ProviderChanges",
    "ProviderState",
    "PruneResult",
    "SnapshotSummary",
    "WeekOverWeek",
    "daily_index",
    "job_lock",
    "load_current_offers",
    "make_engine",
    "offer_price_history",
    "prune",
    "store_snapshot",
    "transaction",
    "upgrade",
    "week_over_week",
    "write_connection",
]
