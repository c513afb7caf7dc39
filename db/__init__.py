"""Persistence: snapshots, current offers and the price history (SQLite or PostgreSQL).

Nothing connects at import time: build an engine with :func:`make_engine`, apply the
migrations with :func:`upgrade`, then write with :func:`store_snapshot` and read with
:func:`load_current_offers` and the queries in :mod:`db.history`.

The names below load on first use (PEP 562), so importing the package imports nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: Public name -> the module of this package that defines it.
_WHERE: dict[str, str] = {
    **dict.fromkeys(("CurrentState", "Outcome", "ProviderState", "load_current_offers"), "current"),
    **dict.fromkeys(("make_engine", "transaction", "write_connection"), "engine"),
    **dict.fromkeys(
        (
            "PriceChange",
            "PricePoint",
            "WeekOverWeek",
            "daily_index",
            "offer_price_history",
            "week_over_week",
        ),
        "history",
    ),
    "job_lock": "locks",
    "upgrade": "migrate",
    **dict.fromkeys(("PruneResult", "prune"), "retention"),
    **dict.fromkeys(("ProviderChanges", "SnapshotSummary", "store_snapshot"), "snapshots"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


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
