"""Reading the current offers: the latest good offer set of every provider, with its age.

A provider whose latest fetch failed (or was skipped) still has its last good offers here,
flagged ``stale`` with their ``age_s``. Loading is one query over key columns and JSON
records, parsed in one pydantic call (see :mod:`db.records`).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from adapters.collect import RunStatus
from adapters.schema import Offer

from .models import CurrentOffer, ProviderStatus, Snapshot
from .records import decode_offers

__all__ = ["CurrentState", "ProviderState", "latest_snapshot", "load_current_offers"]

_current = cast(sa.Table, CurrentOffer.__table__)
_status = cast(sa.Table, ProviderStatus.__table__)
_snapshot = cast(sa.Table, Snapshot.__table__)


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderState:
    """One provider's latest outcome and the age of its stored offers."""

    provider: str
    last_status: RunStatus
    last_attempt_at: datetime
    last_success_at: datetime | None
    last_error: str | None
    offer_count: int
    """offers stored as current for this provider"""
    offers_fetched_at: datetime | None
    age_s: float | None
    """seconds since the stored offers were fetched (``None``: never fetched)"""

    @property
    def stale(self) -> bool:
        """The latest attempt did not succeed: the stored offers are from an earlier run."""
        return self.last_status is not RunStatus.OK and self.last_success_at is not None


@dataclasses.dataclass(frozen=True, slots=True)
class CurrentState:
    offers: list[Offer]
    providers: dict[str, ProviderState]
    latest_snapshot_id: int | None
    latest_snapshot_at: datetime | None
    """when the latest snapshot finished"""
    now: datetime

    @property
    def stale_providers(self) -> list[str]:
        return sorted(p.provider for p in self.providers.values() if p.stale)

    @property
    def failed_providers(self) -> list[str]:
        """Providers whose latest run ended in an error."""
        return sorted(
            p.provider for p in self.providers.values() if p.last_status is RunStatus.ERROR
        )

    def age_s(self, offer: Offer) -> float:
        """Seconds since ``offer`` was fetched."""
        return (self.now - offer.fetched_at).total_seconds()


def latest_snapshot(connection: Connection) -> tuple[int, datetime] | None:
    """Id and finish time of the newest snapshot, or ``None`` if there is none yet."""
    row = connection.execute(
        sa.select(_snapshot.c.id, _snapshot.c.finished_at).order_by(_snapshot.c.id.desc()).limit(1)
    ).first()
    return None if row is None else (row[0], row[1])


def load_current_offers(
    engine: Engine | Connection,
    *,
    providers: list[str] | None = None,
    now: datetime | None = None,
) -> CurrentState:
    """The current offers (ordered by key) and every provider's state, in one read."""
    now = now or datetime.now(UTC)
    if isinstance(engine, Engine):
        with engine.connect() as connection, connection.begin():
            return load_current_offers(connection, providers=providers, now=now)
    connection = engine
    states: dict[str, ProviderState] = {}
    for row in connection.execute(sa.select(_status).order_by(_status.c.provider)).mappings():
        fetched_at = row["offers_fetched_at"]
        states[row["provider"]] = ProviderState(
            provider=row["provider"],
            last_status=RunStatus(row["last_status"]),
            last_attempt_at=row["last_attempt_at"],
            last_success_at=row["last_success_at"],
            last_error=row["last_error"],
            offer_count=row["offer_count"],
            offers_fetched_at=fetched_at,
            age_s=None if fetched_at is None else (now - fetched_at).total_seconds(),
        )
    query = sa.select(_current.c.provider, _current.c.record, _current.c.fetched_at).order_by(
        _current.c.offer_key
    )
    if providers is not None:
        query = query.where(_current.c.provider.in_(providers))
    rows = connection.execute(query).all()
    default_at = {
        name: state.offers_fetched_at
        for name, state in states.items()
        if state.offers_fetched_at is not None
    }
    offers = decode_offers(
        (record, fetched_at or default_at[provider]) for provider, record, fetched_at in rows
    )
    latest = latest_snapshot(connection)
    return CurrentState(
        offers=offers,
        providers=states,
        latest_snapshot_id=None if latest is None else latest[0],
        latest_snapshot_at=None if latest is None else latest[1],
        now=now,
    )
