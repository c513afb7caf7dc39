"""Where the current offers come from: the database, or the offline sample.

Every reader of "today's offers" (CLI, API, digest) goes through :func:`load_current`, so
the rule "the database when it holds offers, else the bundled sample, and always say which"
lives in one place.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from adapters.collect import RunStatus
from adapters.sample import replay_sample, sample_entries
from adapters.schema import Offer

from .settings import Settings

__all__ = ["CurrentOffers", "load_current", "load_database", "load_sample"]


@dataclasses.dataclass(slots=True)
class CurrentOffers:
    """The offers to rank now, and what a user must know about them."""

    offers: list[Offer]
    source: str  # "database" or "sample"
    note: str | None = None
    stale_providers: list[str] = dataclasses.field(default_factory=list)
    failed_providers: list[str] = dataclasses.field(default_factory=list)
    snapshot_at: datetime | None = None


def sample_note() -> str:
    dates = sorted({f"{e.provider} {e.captured.isoformat()}" for e in sample_entries()})
    return "offline sample: recorded prices, not live (" + ", ".join(dates) + ")"


def load_sample() -> CurrentOffers:
    """The bundled recorded responses, replayed through each adapter's parse."""
    runs = replay_sample()
    offers = [o for r in runs if r.status is RunStatus.OK for o in r.offers]
    failed = [r.provider for r in runs if r.status is not RunStatus.OK]
    return CurrentOffers(offers, "sample", sample_note(), failed_providers=failed)


def load_database(settings: Settings) -> CurrentOffers | None:
    """The stored current offers, or ``None`` when the database holds none (or no schema)."""
    import sqlalchemy as sa

    from db.current import load_current_offers
    from db.engine import make_engine

    engine = make_engine(settings.database_url)
    try:
        if not sa.inspect(engine).has_table("current_offer"):
            return None
        state = load_current_offers(engine)
    finally:
        engine.dispose()
    if not state.offers:
        return None
    stale = state.stale_providers
    note = None
    if stale:
        ages = ", ".join(f"{p} ({_age(state.providers[p].age_s)} old)" for p in stale)
        note = f"last good offers kept for providers failing now: {ages}"
    return CurrentOffers(
        state.offers,
        "database",
        note,
        stale_providers=stale,
        failed_providers=state.failed_providers,
        snapshot_at=state.latest_snapshot_at,
    )


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} d"


def load_current(sample: bool = False, settings: Settings | None = None) -> CurrentOffers:
    """The current offers: the database when it holds offers, else the bundled sample.

    Settings are read even for the sample: their FX table converts its non-USD prices.
    """
    if settings is None:
        from .settings import get_settings

        settings = get_settings()
    if sample:
        return load_sample()
    stored = load_database(settings)
    return stored if stored is not None else load_sample()
