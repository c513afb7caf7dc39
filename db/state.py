"""The current state as data: the offers to rank now as one polars frame, and each
provider's outcome (:class:`CurrentState`), with no database code.

:mod:`db.current` reads one from the database and re-exports these names; this module holds
what needs no SQLAlchemy and no HTTP client, so a reader of a state (the CLI ranking a
cached sample) imports neither. :func:`state_from_runs` makes one from provider runs (the
offline sample), :func:`state_from_offers` from offers (tests, benchmarks), framed by
:func:`pricing.frame.offers_to_frame`.

Each provider's state says where its held offers come from (:attr:`ProviderState.origin`:
a live fetch, or the offline sample replayed by ``gpuscout snapshot --sample``) and whether
their capture date is known; the state as a whole says so too (:attr:`CurrentState.sample`,
:attr:`CurrentState.origin`), and its ``note`` names the sample's capture dates first, so
an answer built on stored sample offers says "sample" as one built on the replayed sample
does. :meth:`ProviderState.fresh` follows price age.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Literal

import polars as pl

from gpuscout.adapters.field_coverage import ProviderCoverage, count_offers
from gpuscout.adapters.run import FRESH_WITHIN_HOURS, Origin, ProviderRun, RunStatus
from gpuscout.adapters.sample import sample_note
from gpuscout.adapters.schema import FxTable, Offer
from gpuscout.pricing.frame import offers_to_frame

__all__ = [
    "CurrentState",
    "Origin",
    "Outcome",
    "ProviderState",
    "Source",
    "by_name",
    "database_note",
    "sample_after_attempts",
    "state_from_offers",
    "state_from_runs",
    "stored_state",
]

#: Where a state's offers come from: the database, or the offline sample's recorded prices.
Source = Literal["database", "sample"]
#: Where the offers of a state come from taken together: every one live, every one from the
#: sample, or some of each (a sample snapshot followed by live runs of some providers).
StateOrigin = Literal["live", "sample", "mixed"]


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
    origin: Origin = Origin.LIVE
    """where the held offers come from: a live fetch or the offline sample"""
    capture_date_known: bool = True
    """``False``: sample offers whose capture date is unknown; ``fetched_at`` is then the
    latest it can be, and :meth:`price_age_s` the least the prices can be old"""

    @property
    def sample(self) -> bool:
        """Its held offers are the offline sample's recorded prices."""
        return self.offer_count > 0 and self.origin is Origin.SAMPLE

    def fresh(self, now: datetime, within_hours: float = FRESH_WITHIN_HOURS) -> bool:
        """Its prices are live and at most ``within_hours`` old at ``now`` (the adapter's
        ``fresh_within_hours``): freshness follows price age only, so a stale provider (its
        latest fetch failed) with recent prices is fresh; sample prices never are."""
        age = self.price_age_s(now)
        return (
            self.origin is not Origin.SAMPLE
            and self.offer_count > 0
            and age is not None
            and age <= within_hours * 3600
        )

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

    ``frame`` has the columns of :data:`pricing.frame.OFFER_SCHEMA`, ``config_id`` and the
    offer facts (:data:`pricing.offer_facts.FACT_COLUMNS`). Immutable: a newer snapshot
    makes a new state.
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
    count_fields: Callable[[], Mapping[str, ProviderCoverage]] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )
    """counts, when first asked, which fields the offers carry (:attr:`field_coverage`):
    the frame does not hold every field, and counting them all on every load would double
    the cost of a load for a figure few requests ask for"""

    @functools.cached_property
    def field_coverage(self) -> Mapping[str, ProviderCoverage] | None:
        """Per provider, how many of its offers carry each field of the seed's groups
        (:mod:`adapters.field_coverage`); ``None``: this state cannot say."""
        return None if self.count_fields is None else self.count_fields()

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

    @property
    def sample_providers(self) -> list[str]:
        """Providers whose held offers are the offline sample's recorded prices."""
        return [name for name, p in self.providers.items() if p.sample]

    @property
    def catalog_providers(self) -> list[str]:
        """Providers whose held offers were read from a published catalog (gpuhunt's,
        SkyPilot's) rather than their own API: each offer's ``via_catalog`` says which."""
        return [
            name
            for name, p in self.providers.items()
            if p.offer_count > 0 and p.origin is Origin.CATALOG
        ]

    @property
    def sample(self) -> bool:
        """Some offers are recorded sample prices, not live: the answer must say so."""
        return self.source == "sample" or bool(self.sample_providers)

    def provider_origin(self, provider: str) -> Literal["live", "catalog", "sample"]:
        """Where the held offers of ``provider`` come from: ``sample`` when the state is the
        replayed sample or that provider's held offers were stored from it, ``catalog`` when
        they were read from a published catalog, so a page about one offer of a mixed state
        says what its own price is."""
        held = self.providers.get(provider)
        if self.source == "sample" or (held is not None and held.sample):
            return "sample"
        return "catalog" if held is not None and held.origin is Origin.CATALOG else "live"

    def provider_sample_note(self, provider: str) -> str | None:
        """The sample note with the capture date of ``provider``'s held offers (``None``:
        they are not the sample's, or their date is not known)."""
        held = self.providers.get(provider)
        return None if held is None else _sample_note({provider: held})

    @property
    def origin(self) -> StateOrigin:
        """Where the held offers come from, taken together."""
        held = [p for p in self.providers.values() if p.offer_count > 0]
        if self.source == "sample" or (held and all(p.sample for p in held)):
            return "sample"
        return "mixed" if any(p.sample for p in held) else "live"

    @property
    def converted_currencies(self) -> list[str]:
        """The currencies, other than USD, of offers whose prices were converted with ``fx``."""
        if self.frame.is_empty() or "price_currency" not in self.frame.columns:
            return []
        found = self.frame.get_column("price_currency").unique().drop_nulls().to_list()
        return sorted(c for c in found if c != "USD")

    @property
    def fx_note(self) -> str | None:
        """Which FX table converted the non-USD prices (``None``: every price is in USD)."""
        currencies = self.converted_currencies
        if not currencies:
            return None
        return (
            f"prices in {', '.join(currencies)} converted to USD at the FX table of "
            f"{self.fx.as_of} ({self.fx.source})"
        )


def by_name(states: Iterable[ProviderState]) -> dict[str, ProviderState]:
    return {p.provider: p for p in sorted(states, key=lambda p: p.provider)}


def stored_state(
    frame: pl.DataFrame,
    providers: Mapping[str, ProviderState],
    fx: FxTable,
    now: datetime,
    snapshot: tuple[int, datetime] | None,
    count_fields: Callable[[], Mapping[str, ProviderCoverage]] | None = None,
) -> CurrentState:
    """A state of stored offers (read from the database, or kept beside the data dir):
    its note said at ``now``; ``snapshot`` is the latest one's id and finish time;
    ``count_fields`` reads which fields the stored offers carry, when first asked."""
    return CurrentState(
        frame=frame,
        providers=providers,
        source="database",
        fx=fx,
        loaded_at=now,
        note=database_note(providers, now),
        snapshot_id=None if snapshot is None else snapshot[0],
        snapshot_at=None if snapshot is None else snapshot[1],
        count_fields=count_fields,
    )


def sample_after_attempts(
    sample: CurrentState, stored: CurrentState, now: datetime | None = None
) -> CurrentState:
    """The sample's offers, told with the latest live attempts of ``stored``: the answer
    when the database records attempts (``provider_status``) but holds no offers, say every
    live fetch so far failed or was skipped (no network, no credentials).

    Each provider is as :mod:`db.current` would give it had the sample been stored first
    (``gpuscout snapshot --sample``) and the stored attempts taken after it:

    * no stored attempt: the sample's own state (``ok``, origin ``sample``);
    * its latest attempt failed or was skipped and the sample holds offers of it:
      ``stale``, with that attempt's status, time and error, and the sample's offers,
      capture date and origin (``sample``): it is in :attr:`CurrentState.failed_providers`
      when the attempt failed, and the note names it after the sample's dates;
    * its latest attempt failed or was skipped and the sample holds none of it: the
      attempt as stored, ``failed`` or ``skipped``;
    * its latest attempt succeeded (with no offers: the database holds none): the attempt
      as stored, ``ok`` with no offers, and its sample offers are left out (a live answer
      of none beats recorded prices).

    The state's ``source`` stays ``sample`` (the offers are); its snapshot is ``stored``'s
    latest, so a new snapshot, failed or not, is a new state (and ETag).
    """
    providers: dict[str, ProviderState] = dict(sample.providers)
    answered_live: list[str] = []
    for name, attempt in stored.providers.items():
        held = sample.providers.get(name)
        if attempt.last_status is RunStatus.OK:
            if held is not None and held.offer_count > 0:
                answered_live.append(name)
            providers[name] = attempt
        elif held is None or held.offer_count == 0:
            providers[name] = attempt
        else:
            providers[name] = dataclasses.replace(
                held,
                last_status=attempt.last_status,
                last_attempt_at=attempt.last_attempt_at,
                error=attempt.error,
            )
    frame = sample.frame
    count_fields = sample.count_fields
    if answered_live:
        frame = frame.filter(~pl.col("provider").is_in(answered_live))
        count_fields = _without(count_fields, answered_live)
    states = by_name(providers.values())
    notes = [sample.note, _stale_note(states, now or datetime.now(UTC))]
    return dataclasses.replace(
        sample,
        frame=frame,
        providers=states,
        note="; ".join(n for n in notes if n) or None,
        snapshot_id=stored.snapshot_id,
        snapshot_at=stored.snapshot_at,
        count_fields=count_fields,
    )


def _without(
    count: Callable[[], Mapping[str, ProviderCoverage]] | None, providers: Sequence[str]
) -> Callable[[], Mapping[str, ProviderCoverage]] | None:
    """``count`` with ``providers`` left out of what it counts."""
    if count is None:
        return None
    inner = count

    def counted() -> Mapping[str, ProviderCoverage]:
        return {k: v for k, v in inner().items() if k not in providers}

    return counted


def database_note(states: Mapping[str, ProviderState], now: datetime) -> str | None:
    """The sample's dates first (stored sample offers), then the stale providers."""
    parts = [_sample_note(states), _stale_note(states, now)]
    return "; ".join(p for p in parts if p) or None


def _sample_note(states: Mapping[str, ProviderState]) -> str | None:
    captures = [
        (p.provider, p.fetched_at.date(), p.capture_date_known)
        for p in states.values()
        if p.sample and p.fetched_at is not None
    ]
    return sample_note(captures) if captures else None


def _stale_note(states: Mapping[str, ProviderState], now: datetime) -> str | None:
    stale = [p for p in states.values() if p.stale]
    if not stale:
        return None
    ages = ", ".join(f"{p.provider} ({_age(p.price_age_s(now))} old)" for p in stale)
    return f"last good offers kept for providers failing now: {ages}"


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} d"


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
    held = tuple(offers)
    return CurrentState(
        frame=offers_to_frame(held, fx),
        providers=by_name([*given.values(), *derived]),
        source=source,
        fx=fx,
        loaded_at=now or datetime.now(UTC),
        note=note,
        snapshot_at=snapshot_at,
        count_fields=functools.partial(count_offers, held),
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
    latest attempt (nothing earlier is held). ``note`` defaults to the sample's dates when
    some runs replayed the sample."""
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
            origin=run.origin,
            capture_date_known=run.capture_date_known,
        )
        for run in runs
    ]
    offers = [o for run in runs if run.status is RunStatus.OK for o in run.offers]
    if note is None:
        note = _sample_note(by_name(states))
    return state_from_offers(offers, fx=fx, source=source, providers=states, note=note, now=now)
