"""The current offers as :class:`~adapters.schema.Offer` objects, by provider, with each
provider's status: what a published catalog is written from.

The rankings read the current offers as one frame (:mod:`db.current`); a catalog needs
every field of every offer, so it decodes the stored records (:func:`db.records.decode_offers`),
an offer without its own ``fetched_at`` taking its provider's.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from gpuscout.adapters.run import Origin, RunStatus
from gpuscout.adapters.schema import FxTable, Offer

from .current import latest_snapshot
from .models import CurrentOffer, ProviderStatus
from .records import decode_offers

__all__ = ["HeldProvider", "held_offers", "held_providers"]

_current = cast(sa.Table, CurrentOffer.__table__)
_status = cast(sa.Table, ProviderStatus.__table__)


@dataclasses.dataclass(frozen=True, slots=True)
class HeldProvider:
    """One provider's status and the offers held for it (ordered by offer key)."""

    provider: str
    last_status: RunStatus
    fetched_at: datetime | None
    origin: Origin
    capture_date_known: bool
    error: str | None
    offers: list[Offer]


def held_providers(engine: Engine | Connection) -> dict[str, int]:
    """Each provider with offers held as current, and how many (no offer decoded)."""
    if isinstance(engine, Engine):
        with engine.connect() as connection:
            return held_providers(connection)
    rows = engine.execute(
        sa.select(_status.c.provider, _status.c.offer_count).where(_status.c.offer_count > 0)
    )
    return {provider: count for provider, count in rows}


def held_offers(
    engine: Engine, fx: FxTable
) -> tuple[tuple[int, datetime] | None, list[HeldProvider]]:
    """The latest snapshot (id, finished at) and every provider's held offers, in one
    transaction (a snapshot stored meanwhile is not half seen)."""
    with engine.connect() as connection, connection.begin():
        latest = latest_snapshot(connection)
        statuses = connection.execute(sa.select(_status).order_by(_status.c.provider)).mappings()
        held = []
        for row in list(statuses):
            records = connection.execute(
                sa.select(_current.c.record, _current.c.fetched_at)
                .where(_current.c.provider == row["provider"])
                .order_by(_current.c.offer_key)
            ).all()
            default = row["offers_fetched_at"]
            offers = decode_offers(
                ((record, fetched_at or default) for record, fetched_at in records), fx
            )
            held.append(
                HeldProvider(
                    provider=row["provider"],
                    last_status=RunStatus(row["last_status"]),
                    fetched_at=default,
                    origin=Origin(row["offers_origin"]),
                    capture_date_known=row["offers_capture_date_known"],
                    error=row["last_error"],
                    offers=offers,
                )
            )
    return latest, held
