"""The current state as data: the offers to rank now as one polars frame, and each
provider's outcome (:class:`CurrentState`), with no database code.

:mod:`db.current` reads one from the database and re-exports these names; this module holds
what needs no SQLAlchemy, so a reader of a state (the CLI ranking a cached sample) does not
import it. :func:`state_from_runs` makes one from provider runs (the offline sample),
:func:`state_from_offers` from offers (tests, benchmarks), framed by
:func:`pricing.frame.offers_to_frame`.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Literal

import polars as pl

from adapters.run import ProviderRun, RunStatus
from adapters.schema import FxTable, Offer
from pricing.frame import offers_to_frame

__all__ = [
    "CurrentState",
    "Outcome",
    "ProviderState",
    "Source",
    "by_name",
    "state_from_offers",
    "state_from_runs",
]

#: Where a state's offers come from: the database, or the offline sample's recorded prices.
Source = Literal["database", "sample"]


class Outcome(enum.StrEnum):
    """What a user must know about a provider's offers in the current state."""

    OK = "ok"
    """its latest fetch succeeded: the offers are from it"""
    STALE = "stale"
    """its latest fetch failed or was skipped: the offers held are from an earlier one"""
    FAILED = "failed"
    """its latest fetch failed and no earlier one succeeded: no offers from it"""
    SKIPPED = "skipped"
    """its latest fetch was skipped (e.g. no credentials) and none succeeded before"""


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderState:
    """One provider's latest attempt and the offers held from it."""

    provider: str
    last_status: RunStatus
    """how its latest attempt ended"""
    offer_count: int
    """offers held as current for this provider"""
    fetched_at: datetime | None = None
    """when the held offers were fetched (``None``: never fetched successfully)"""
    last_attempt_at: datetime | None = None
    error: str | None = None
    """why its latest attempt failed or was skipped"""

    @property
    def outcome(self) -> Outcome:
        if self.last_status is RunStatus.OK:
            return Outcome.OK
        if self.fetched_at is not None:
            return Outcome.STALE
        return Outcome.FAILED if self.last_status is RunStatus.ERROR else Outcome.SKIPPED

    @property
    def stale(self) -> bool:
        """The latest attempt did not succeed: the offers held are from an earlier run."""
        return self.outcome is Outcome.STALE

    def price_age_s(self, now: datetime) -> float | None:
        """Seconds from the fetch of the held offers to ``now`` (``None``: never fetched)."""
        if self.fetched_at is None:
            return None
        return max(0.0, (now - self.fetched_at).total_seconds())


@dataclasses.dataclass(frozen=True, eq=False)
class CurrentState:
    """The offers to rank now and what a user must know about them.

    ``frame`` has the columns of :data:`pricing.frame.OFFER_SCHEMA` and ``config_id``.
    Immutable: a newer snapshot makes a new state.
    """

    frame: pl.DataFrame
    providers: Mapping[str, ProviderState]
    """by provider name, in name order"""
    source: Source
    fx: FxTable
    """the table non-USD prices were converted with (its date: ``fx.as_of``)"""
    loaded_at: datetime
    note: str | None = None
    """what the user must be told first: the sample's dates, or which providers are stale"""
    snapshot_id: int | None = None
    snapshot_at: datetime | None = None
    """when the latest snapshot finished (``None``: the sample, or no snapshot yet)"""

    @property
    def offer_count(self) -> int:
        return self.frame.height

    @property
    def stale_providers(self) -> list[str]:
        """Providers whose latest fetch did not succeed but whose earlier offers are held."""
        return [name for name, p in self.providers.items() if p.stale]

    @property
    def failed_providers(self) -> list[str]:
        """Providers whose latest fetch ended in an error (stale ones included)."""
        return [name for name, p in self.providers.items() if p.last_status is RunStatus.ERROR]


def by_name(states: Iterable[ProviderState]) -> dict[str, ProviderState]:
    return {p.provider: p for p in sorted(states, key=lambda p: p.provider)}


def state_from_offers(
    offers: Sequence[Offer],
    *,
    fx: FxTable,
    source: Source,
    providers: Iterable[ProviderState] = (),
    note: str | None = None,
    snapshot_at: datetime | None = None,
    now: datetime | None = None,
) -> CurrentState:
    """A state holding ``offers``, framed with ``fx``.

    ``providers`` are taken as given; every other provider of the offers is ``ok``, with
    its offer count and newest fetch time.
    """
    given = {p.provider: p for p in providers}
    counts = collections.Counter(o.provider for o in offers)
    newest: dict[str, datetime] = {}
    for o in offers:
        if o.provider not in newest or o.fetched_at > newest[o.provider]:
            newest[o.provider] = o.fetched_at
    derived = [
        ProviderState(name, RunStatus.OK, count, fetched_at=newest[name])
        for name, count in counts.items()
        if name not in given
    ]
    return CurrentState(
        frame=offers_to_frame(offers, fx),
        providers=by_name([*given.values(), *derived]),
        source=source,
        fx=fx,
        loaded_at=now or datetime.now(UTC),
        note=note,
        snapshot_at=snapshot_at,
    )


def state_from_runs(
    runs: Sequence[ProviderRun],
    *,
    fx: FxTable,
    source: Source,
    note: str | None = None,
    now: datetime | None = None,
) -> CurrentState:
    """A state holding the offers of the successful ``runs``; each run is its provider's
    latest attempt (nothing earlier is held)."""
    states = [
        ProviderState(
            provider=run.provider,
            last_status=run.status,
            offer_count=run.offer_count,
            fetched_at=(max((o.fetched_at for o in run.offers), default=run.started_at))
            if run.status is RunStatus.OK
            else None,
            last_attempt_at=run.started_at,
            error=run.error,
        )
        for run in runs
    ]
    offers = [o for run in runs if run.status is RunStatus.OK for o in run.offers]
    return state_from_offers(offers, fx=fx, source=source, providers=states, note=note, now=now)
