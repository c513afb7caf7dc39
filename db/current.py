"""The current state: the offers to rank now as one polars frame, and each provider's outcome.

:class:`CurrentState` is the one type every reader of "today's offers" works on: the API
holds one per snapshot, the CLI ranks its frame, the digest frames nothing of its own. It
is made in one of three ways:

* :func:`load_current_offers` from the database: the latest good offer set of every
  provider and the outcome of each provider's latest attempt (``provider_status``). A
  provider whose latest fetch failed (or was skipped) still has its last good offers here,
  and its outcome says ``stale``.
* :func:`state_from_runs` from provider runs (the offline sample);
* :func:`state_from_offers` from offers (tests, benchmarks).

Framing 100k stored records takes about a second, so the snapshot that stores them frames
them once and keeps the frame in the database (:func:`keep_current_frame`, table
``kept_frame``), under a key naming what it was built from (:func:`frame_key`); every
reader, on any host, reads that frame back and frames the records only when none fits.

Prices convert to USD with the FX table passed in, and the state names it
(:attr:`CurrentState.fx_note`). Each provider's state says where its held offers come from
(:attr:`ProviderState.origin`: a live fetch, or the offline sample replayed by
``gpuscout snapshot --sample``); the state as a whole says so too, and its ``note`` names
the sample's capture dates first. :meth:`ProviderState.fresh` follows price age. What the
run of each provider's held offers skipped, by reason (:attr:`ProviderState.skipped`), is
the coverage note every offers answer gives (:attr:`CurrentState.skipped_note`).
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import hashlib
import io
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Literal, cast

import polars as pl
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from gpuscout.adapters.field_coverage import (
    ProviderCoverage,
    count_offers,
    count_records,
)
from gpuscout.adapters.run import FRESH_WITHIN_HOURS, Origin, ProviderRun, RunStatus
from gpuscout.adapters.sample import sample_note
from gpuscout.adapters.schema import FxTable, Offer
from gpuscout.adapters.skip_summary import SkipSummary, skip_line, summarise_skips
from gpuscout.pricing.frame import (
    OFFER_SCHEMA,
    held_lightly,
    offers_to_frame,
    record_chunks_to_frame,
)
from gpuscout.pricing.offer_facts import FACT_COLUMNS

from .engine import make_engine, write_connection
from .models import CurrentOffer, KeptFrame, ProviderStatus, Snapshot, SnapshotProvider

__all__ = [
    "SKIPPED_NOTE_HEAD",
    "CurrentState",
    "Origin",
    "Outcome",
    "ProviderState",
    "Source",
    "by_name",
    "code_digest",
    "database_note",
    "frame_key",
    "keep_current_frame",
    "latest_snapshot",
    "load_current_offers",
    "sample_after_attempts",
    "state_from_offers",
    "state_from_runs",
    "stored_coverage",
]

log = logging.getLogger(__name__)

#: How :attr:`CurrentState.skipped_note` begins.
SKIPPED_NOTE_HEAD = "rows skipped, not ranked: "

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
    skipped: SkipSummary | None = None
    """the records skipped by the run its held offers come from, by reason (``None``: not
    known: the database reads them for an ok latest attempt only, so a stale provider's
    held offers, from an earlier run, have none)"""

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
    def skipped_lines(self) -> list[str]:
        """One line per provider whose held offers' run skipped offers, naming the commonest
        reasons (:func:`adapters.skip_summary.skip_line`): what no answer ranks. Records
        that are no offer at all (a CPU-only instance type, a sheet's illustrative entry:
        :data:`adapters.skip_summary.NOT_OFFERS`) are not named."""
        lost = {
            name: p.skipped.offers_only()
            for name, p in self.providers.items()
            if p.skipped is not None
        }
        return [skip_line(name, summary) for name, summary in lost.items() if summary.total]

    @property
    def skipped_note(self) -> str | None:
        """The coverage note of the skipped records (``None``: no provider skipped any)."""
        lines = self.skipped_lines
        return SKIPPED_NOTE_HEAD + "; ".join(lines) if lines else None

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
            skipped=summarise_skips(run.skipped) if run.status is RunStatus.OK else None,
        )
        for run in runs
    ]
    offers = [o for run in runs if run.status is RunStatus.OK for o in run.offers]
    if note is None:
        note = _sample_note(by_name(states))
    return state_from_offers(offers, fx=fx, source=source, providers=states, note=note, now=now)


# --- the database's current offers -------------------------------------------------------

_current = cast(sa.Table, CurrentOffer.__table__)
_status = cast(sa.Table, ProviderStatus.__table__)
_snapshot = cast(sa.Table, Snapshot.__table__)
_run = cast(sa.Table, SnapshotProvider.__table__)
_kept = cast(sa.Table, KeptFrame.__table__)

#: Code and data a frame is computed by, relative to the repository root.
_CODE = ("adapters", "pricing", "db/current.py")
_ROOT = Path(__file__).resolve().parents[1]


def _version() -> str:
    try:
        return metadata.version("gpuscout")
    except metadata.PackageNotFoundError:  # run from a checkout without installing
        return "unknown"


@functools.cache
def code_digest() -> str:
    """The package version and the size and modification time of the code that parses and
    frames offers: what any kept frame was computed by (a working copy's edits included).
    Once per process: the code a process runs is the code it imported."""
    h = hashlib.blake2b(digest_size=12)
    h.update(f"{_version()}\n".encode())
    for name in _CODE:
        top = _ROOT / name
        for path in [top] if top.is_file() else sorted(top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                st = path.stat()
                h.update(f"{path.relative_to(_ROOT)} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def latest_snapshot(connection: Connection) -> tuple[int, datetime] | None:
    """Id and finish time of the newest snapshot, or ``None`` if there is none yet."""
    row = connection.execute(
        sa.select(_snapshot.c.id, _snapshot.c.finished_at).order_by(_snapshot.c.id.desc()).limit(1)
    ).first()
    return None if row is None else (row[0], row[1])


def frame_key(
    latest: tuple[int, datetime] | None,
    rows: int,
    states: Mapping[str, ProviderState],
    fx: FxTable,
) -> str:
    """A digest of everything the frame of the current offers is built from, as stored.

    Every snapshot adds a ``snapshot`` row in the transaction that writes the current
    offers, so its id and finish time move with them; the row count and each provider's
    held offers and fetch time guard against a snapshot id reused after a reset; the FX
    table gives the USD figures; the frame's schema and :func:`code_digest` the code."""
    parts: list[object] = [
        None if latest is None else [latest[0], latest[1].isoformat()],
        rows,
        [
            [p.provider, p.offer_count, p.fetched_at.isoformat() if p.fetched_at else None]
            for p in states.values()
        ],
        [fx.as_of, fx.source, sorted((k, str(v)) for k, v in fx.units_per_usd.items())],
        [f"{name}:{dtype!r}" for name, dtype in OFFER_SCHEMA.items()],
        code_digest(),
    ]
    return hashlib.blake2b(json.dumps(parts).encode(), digest_size=12).hexdigest()


def _provider_states(connection: Connection) -> dict[str, ProviderState]:
    """Each provider's ``provider_status`` row, with what its latest attempt skipped (its
    ``snapshot_provider`` row) when that attempt is where its held offers come from."""
    latest_run = sa.and_(
        _run.c.snapshot_id == _status.c.last_snapshot_id, _run.c.provider == _status.c.provider
    )
    query = sa.select(_status, _run.c.skipped_count, _run.c.skip_reasons).outerjoin(
        _run, latest_run
    )
    return by_name(
        ProviderState(
            provider=row.provider,
            last_status=RunStatus(row.last_status),
            offer_count=row.offer_count,
            fetched_at=row.offers_fetched_at,
            last_attempt_at=row.last_attempt_at,
            error=row.last_error,
            origin=Origin(row.offers_origin),
            capture_date_known=row.offers_capture_date_known,
            skipped=_stored_skips(row.skipped_count, row.skip_reasons)
            if row.last_status == RunStatus.OK.value
            else None,
        )
        for row in connection.execute(query)
    )


def _stored_skips(count: int | None, reasons: str | None) -> SkipSummary | None:
    """A run's stored skip summary; a run stored before reasons were is its count alone."""
    if reasons is not None:
        return SkipSummary.from_dict(json.loads(reasons))
    return None if count is None else SkipSummary(other=count)


def load_current_offers(
    target: Engine | Connection,
    *,
    fx: FxTable,
    providers: list[str] | None = None,
    now: datetime | None = None,
) -> CurrentState:
    """The current offers (by GPU model, then key) and every provider's state, read in one
    transaction.

    Prices convert to USD with ``fx``. For every provider, the frame the snapshot kept
    (:func:`keep_current_frame`) is read when it was built from these very offers, else the
    stored records are framed a chunk at a time (:func:`pricing.frame.record_chunks_to_frame`);
    an offer without its own ``fetched_at`` has its provider's. Which fields the offers
    carry is counted when first asked, on a connection of its own (:func:`stored_coverage`).
    """
    now = now or datetime.now(UTC)
    if isinstance(target, Engine):
        with target.connect() as connection, connection.begin():
            return load_current_offers(connection, fx=fx, providers=providers, now=now)
    connection = target
    states = _provider_states(connection)
    latest = latest_snapshot(connection)
    note = database_note(states, now)
    url = connection.engine.url.render_as_string(hide_password=False)
    count_fields = functools.partial(stored_coverage, url, providers)
    kept = None if providers is not None else _kept_frame(connection, states, latest, fx)
    if kept is None:
        frame = record_chunks_to_frame(_stored_records(connection, providers, states), fx)
    else:
        frame = held_lightly(kept)  # IPC brings empty columns back with full buffers
    return CurrentState(
        frame=frame,
        providers=states,
        source="database",
        fx=fx,
        loaded_at=now,
        note=note,
        snapshot_id=None if latest is None else latest[0],
        snapshot_at=None if latest is None else latest[1],
        count_fields=count_fields,
    )


def keep_current_frame(engine: Engine, fx: FxTable) -> None:
    """Frame the current offers of ``engine``'s database and keep the frame there, in place
    of any kept before: the last step of a snapshot, so no reader frames them.

    The offers are read (and framed) in a read transaction and the frame written in a short
    write transaction after: a snapshot stored meanwhile leaves a frame under a key no
    reader asks for, framed again by the next snapshot."""
    with engine.connect() as connection, connection.begin():
        states = _provider_states(connection)
        latest = latest_snapshot(connection)
        if latest is None or _kept_frame(connection, states, latest, fx) is not None:
            return
        frame = record_chunks_to_frame(_stored_records(connection, None, states), fx)
    key = frame_key(latest, frame.height, states, fx)
    buffer = io.BytesIO()
    frame.write_ipc(buffer, compression="zstd")  # ~3 MB for 100k offers, not ~67
    with write_connection(engine) as connection:
        connection.execute(sa.delete(_kept))
        connection.execute(
            sa.insert(_kept).values(
                key=key,
                snapshot_id=latest[0],
                row_count=frame.height,
                kept_at=datetime.now(UTC),
                frame=buffer.getvalue(),
            )
        )


def _kept_frame(
    connection: Connection,
    states: Mapping[str, ProviderState],
    latest: tuple[int, datetime] | None,
    fx: FxTable,
) -> pl.DataFrame | None:
    """The frame kept for the current offers (under their :func:`frame_key`, which names
    their count) if it has every column, else ``None`` (one that has not is logged and
    framed again)."""
    rows = connection.execute(sa.select(sa.func.count()).select_from(_current)).scalar_one()
    key = frame_key(latest, rows, states, fx)
    data = connection.execute(
        sa.select(_kept.c.frame).where(_kept.c.key == key)
    ).scalar_one_or_none()
    if data is None:
        return None
    try:
        frame = pl.read_ipc(io.BytesIO(bytes(data)))
        problem = _problem(frame)
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        frame, problem = None, f"unreadable: {exc}"
    if problem is not None or frame is None:
        log.warning("kept frame ignored (%s); framing the stored offers", problem)
        return None
    return frame


def _problem(frame: pl.DataFrame) -> str | None:
    """Why ``frame`` is not a frame of current offers (``None``: it is). Its rows need not
    be the stored rows': a retired provider's stored offers are not framed."""
    schema = frame.schema
    for name, dtype in OFFER_SCHEMA.items():
        if schema.get(name) != dtype:
            return f"column {name} is {schema.get(name)}, not {dtype}"
    missing = [name for name in ("config_id", *FACT_COLUMNS) if name not in schema]
    return f"no column {missing[0]}" if missing else None


#: Stored records read (and parsed) at a time when the current offers are framed.
RECORD_CHUNK = 20_000


def _stored_records(
    connection: Connection, providers: list[str] | None, states: Mapping[str, ProviderState]
) -> Iterator[tuple[list[str], pl.Series]]:
    """The current offers' stored records (of ``providers``: all) and their fetch times, in
    the order of their offer keys, :data:`RECORD_CHUNK` at a time: the rows are streamed
    from the database, so no more than a chunk of records is held at once."""
    query = sa.select(_current.c.provider, _current.c.record, _current.c.fetched_at)
    if providers is not None:
        query = query.where(_current.c.provider.in_(providers))
    result = connection.execution_options(yield_per=RECORD_CHUNK).execute(
        query.order_by(_current.c.offer_key)
    )
    for rows in result.partitions():
        names = [row.provider for row in rows]
        times = [row.fetched_at for row in rows]
        yield [row.record for row in rows], _fetched_at(names, times, states)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _fetched_at(
    providers: Sequence[str], stored: Sequence[datetime | None], states: Mapping[str, ProviderState]
) -> pl.Series:
    """Each row's ``fetched_at``: its own where stored, else (the usual case) its
    provider's. Each distinct time is converted once: the offers of one run share theirs,
    and a series from 100k datetimes costs several times one from their integers."""
    own = {name: p.fetched_at for name, p in states.items()}
    micros: dict[object, int] = {}
    out: list[int] = []
    for provider, value in zip(providers, stored, strict=True):
        key = (None, provider) if value is None else value
        at = micros.get(key)
        if at is None:
            when = value if value is not None else own.get(provider)
            if when is None:
                raise ValueError(
                    f"stored offers of {provider!r} have no fetch time (no provider_status row)"
                )
            at = micros[key] = (when - _EPOCH) // _MICROSECOND
        out.append(at)
    return pl.Series("fetched_at", out, dtype=pl.Int64).cast(pl.Datetime("us", "UTC"))


def stored_coverage(url: str, providers: list[str] | None = None) -> dict[str, ProviderCoverage]:
    """Which fields the stored current offers of the database at ``url`` carry, read when
    first asked (on an engine of its own: the load's is gone by then). A record leaves its
    ``None`` fields out, so the keys it has are the fields it carries."""
    if providers is not None and not providers:
        return {}
    query = sa.select(_current.c.record)
    if providers is not None:
        query = query.where(_current.c.provider.in_(providers))
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            records = connection.execute(query).scalars().all()
    finally:
        engine.dispose()
    return count_records(json.loads(record) for record in records)
