"""Small builders of offers and provider runs for the database tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.adapters.schema import Offer, default_fx
from gpuscout.db.current import CurrentState, load_current_offers
from gpuscout.db.models import PriceHistory, Snapshot, SnapshotProvider
from gpuscout.db.types import UtcDateTime

T0 = datetime(2025, 3, 3, 12, 0, tzinfo=UTC)  # a Monday noon


def at(hours: float = 0, *, days: float = 0) -> datetime:
    return T0 + timedelta(hours=hours, days=days)


def offer(
    provider: str = "alpha",
    offer_id: str = "o1",
    price: str | Decimal = "2.00",
    *,
    fetched_at: datetime = T0,
    gpu_model: str | None = "H100-SXM5-80GB",
    gpu_count: int = 1,
    **extra: Any,
) -> Offer:
    fields: dict[str, Any] = {
        "provider": provider,
        "offer_id": offer_id,
        "region": "eu-west",
        "fetched_at": fetched_at,
        "gpu_model": gpu_model,
        "gpu_count": gpu_count,
        "price_amount": Decimal(price),
        "price_currency": "USD",
        "price_unit": "hour",
        "price_basis": "instance",
        "term": "on_demand",
    }
    fields.update(extra)
    return Offer(**fields)


def ok(provider: str, offers: list[Offer], started_at: datetime = T0) -> ProviderRun:
    """A successful run; the offers are re-stamped with the run's start."""
    stamped = [o.model_copy(update={"fetched_at": started_at}) for o in offers]
    return ProviderRun(provider, RunStatus.OK, started_at, 0.5, offers=stamped)


def failed(provider: str, started_at: datetime = T0, error: str = "HTTP 503") -> ProviderRun:
    return ProviderRun(provider, RunStatus.ERROR, started_at, 0.1, error=error)


def skipped(provider: str, started_at: datetime = T0) -> ProviderRun:
    return ProviderRun(provider, RunStatus.SKIPPED, started_at, 0.0, error="credential not set")


def counts(engine: Engine) -> tuple[int, int, int]:
    """Rows in ``snapshot``, ``snapshot_provider`` and ``price_history``."""
    with engine.connect() as c:
        return tuple(
            c.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in (Snapshot.__table__, SnapshotProvider.__table__, PriceHistory.__table__)
        )  # type: ignore[return-value]


def current(engine: Engine, now: datetime | None = None) -> CurrentState:
    """The current state as stored, priced with the shipped FX table."""
    return load_current_offers(engine, fx=default_fx(), now=now)


def old_table(name: str, *columns: str) -> sa.TableClause:
    """A lightweight table of an earlier schema, to store rows as a migration's tests need
    them before it runs; ``*_at``, ``valid_from`` and ``valid_to`` columns as stored times."""
    timed = ("_at", "valid_from", "valid_to")
    return sa.table(
        name, *(sa.column(c, UtcDateTime) if c.endswith(timed) else sa.column(c) for c in columns)
    )
