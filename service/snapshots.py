"""Taking a snapshot: the one way the scheduler, ``gpuscout snapshot`` and ``POST /v1/snapshots``
fetch every provider and store what they answered.

:func:`take_snapshot` applies the migrations, takes the job lock :data:`SNAPSHOT_LOCK` (a
PostgreSQL advisory lock or a SQLite lease, see :mod:`db.locks`), fetches inside it, stores
the snapshot in one transaction (:func:`db.snapshots.store_snapshot`) and prunes by the
retention settings (:func:`db.retention.prune`). Holding the lock across the fetch means two
runners, in one process or several, never take a snapshot at the same time. Past the lock it
frames the offers now current and keeps the frame in the database
(:func:`db.current.keep_current_frame`), the one framing of those offers every reader then
loads: the API's replicas on any host, the digest, the CLI.

Runs stream: :func:`fetch_providers` runs the fetch's event loop in a worker thread and
hands each provider's run over as soon as it is final (:func:`adapters.collect.stream_runs`);
the store writes it while the slow providers are still answering, then lets it go. Memory
holds the runs fetched and not yet stored, not the market; the result keeps the runs without
their offers (:class:`StoredRun`). Closing the stream early (the store failed) cancels the
fetches; a fetch that raises raises in the store, whose transaction rolls back.

Each attempt is recorded as it starts (:mod:`db.runs`): a row ``running``, renewed with the
SQLite lease every third of ``snapshot_lease_s`` and finished ``ok`` or ``failed``. A
snapshot killed mid-way leaves its row running and, on SQLite, a lease that expires within
``snapshot_lease_s`` (PostgreSQL's advisory lock goes with the dead session at once): the
next runner marks the row ``aborted`` and reports it (:attr:`SnapshotResult.aborted`).

A runner that finds the lock taken gets :class:`SnapshotLocked` and each caller says so its
own way: the scheduler logs and skips, the CLI prints one line and exits 1, the API answers
409. :func:`build_adapters` turns the settings into adapters and raises
:class:`UnknownProvider` (a plain ``ValueError``) for a name the registry does not hold.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta

import httpx
from anyio.from_thread import start_blocking_portal
from sqlalchemy.engine import Engine

from gpuscout.adapters import registry
from gpuscout.adapters.base import Adapter, RetryPolicy
from gpuscout.adapters.collect import ProviderRun, RunStatus, collect, stream_runs
from gpuscout.adapters.redirects import refuse_foreign_redirect
from gpuscout.adapters.schema import FxTable
from gpuscout.db.current import latest_snapshot
from gpuscout.db.engine import make_engine
from gpuscout.db.guard import OfferGuard
from gpuscout.db.locks import job_lock, periodic
from gpuscout.db.migrate import upgrade
from gpuscout.db.retention import PruneResult, prune
from gpuscout.db.runs import RunRecord, abort_left_running, beat, finish_run, run_holder, start_run
from gpuscout.db.snapshots import SnapshotSummary, store_snapshot

from .fx import fx_table
from .settings import Settings

__all__ = [
    "DISABLED",
    "SNAPSHOT_LOCK",
    "USER_AGENT",
    "Fetch",
    "RetiredProvider",
    "SnapshotLocked",
    "SnapshotRecent",
    "SnapshotResult",
    "SnapshotSkipped",
    "StoredRun",
    "StreamFetch",
    "UnknownProvider",
    "build_adapters",
    "disabled_runs",
    "fetch_adapters",
    "fetch_providers",
    "noting",
    "offer_guard",
    "stored_run",
    "stream_adapters",
    "take_snapshot",
]

log = logging.getLogger("gpuscout.snapshots")

#: The name of the job lock every snapshot runner takes (kept from the scheduler's job id,
#: so a lease or advisory lock of a running older deployment still excludes this one).
SNAPSHOT_LOCK = "snapshot"
#: What the providers' servers see of us.
USER_AGENT = "gpuscout/0.1 (+price comparison)"

#: Returns each provider's run: a live fetch (an iterator, each run as it is final), the
#: replayed sample, or runs given by a test (a list).
Fetch = Callable[[], Iterable[ProviderRun]]

#: Streams the runs of the adapters given (:func:`stream_adapters`; the CLI's shows progress).
StreamFetch = Callable[[list[Adapter], Settings], AsyncGenerator[ProviderRun, None]]


class UnknownProvider(ValueError):
    """A provider name the registry does not hold."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(f"unknown provider {name!r}; known: {', '.join(known)}")
        self.name = name


class RetiredProvider(UnknownProvider):
    """A provider its adapter declares retired: it is not fetched, even when named."""

    def __init__(self, name: str, lifecycle: str) -> None:
        ValueError.__init__(self, f"provider {name!r} is not fetched: {lifecycle}")
        self.name = name


class SnapshotSkipped(Exception):
    """No snapshot was taken (nothing was fetched or stored)."""


class SnapshotLocked(SnapshotSkipped):
    """Another runner (the scheduler, a replica, a ``gpuscout snapshot``) holds the lock."""

    def __init__(self) -> None:
        super().__init__("another runner is taking a snapshot now (it holds the snapshot lock)")


class SnapshotRecent(SnapshotSkipped):
    """A snapshot finished too recently to take another (the scheduler's ``skip_within``)."""

    def __init__(self, finished_at: datetime) -> None:
        super().__init__(f"one finished at {finished_at.isoformat()}")
        self.finished_at = finished_at


@dataclasses.dataclass(slots=True)
class StoredRun(ProviderRun):
    """A run as a snapshot stored it, its offers let go (``offers`` is empty): it keeps how
    many it had, so that whoever reports the snapshot (the API, the CLI, the scheduler's
    log) counts them without the snapshot holding the market's offers."""

    offered: int = 0
    """the number of offers the run had (0 when the guard stored it as failed)"""

    @property
    def offer_count(self) -> int:
        return self.offered


def stored_run(run: ProviderRun) -> StoredRun:
    """``run`` without its offers, their number kept (:class:`StoredRun`)."""
    fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(ProviderRun)}
    return StoredRun(**{**fields, "offers": []}, offered=run.offer_count)


@dataclasses.dataclass(frozen=True, slots=True)
class SnapshotResult:
    """What one snapshot fetched, what storing it changed, and what retention pruned;
    ``aborted``: earlier snapshots found left running by a dead process (now marked so).

    ``runs`` are as stored, without their offers (:class:`StoredRun`, which keeps their
    number): a run the plausibility guard found suspect is an error run with the guard's
    verdict (and no offers), as the database records it.
    """

    runs: tuple[ProviderRun, ...]
    summary: SnapshotSummary
    pruned: PruneResult
    aborted: tuple[RunRecord, ...] = ()


def build_adapters(settings: Settings, names: Sequence[str] | None = None) -> list[Adapter]:
    """The adapters ``names`` (default: every registered one not in ``providers_disabled``
    and not retired) with their credentials, retry policy and base URL
    (``<provider>_base_url``, when set) from ``settings``.

    Raises :class:`UnknownProvider` for a name the registry does not hold, and
    :class:`RetiredProvider` for a provider that no longer exists.
    """
    known = registry()
    for name in names or ():
        if name not in known:
            raise UnknownProvider(name, list(known))
        if known[name].lifecycle.retired:
            raise RetiredProvider(name, known[name].lifecycle.text())
    chosen = names or [
        n
        for n, cls in known.items()
        if n not in settings.providers_disabled and not cls.lifecycle.retired
    ]
    creds = settings.provider_credentials()
    policy = RetryPolicy(
        attempts=settings.http_retries,
        timeout_s=settings.http_timeout_s,
        max_response_bytes=int(settings.provider_max_response_mb * 2**20),
    )
    urls = settings.provider_base_urls()
    return [known[n](creds, policy=policy, base_url=urls.get(n)) for n in chosen]


def _client(settings: Settings) -> httpx.AsyncClient:
    """The HTTP client of one fetch: redirects are followed only to the provider's own hosts
    (:mod:`adapters.redirects`)."""
    return httpx.AsyncClient(
        headers={"User-Agent": USER_AGENT},
        timeout=RetryPolicy(timeout_s=settings.http_timeout_s).timeout(),
        follow_redirects=True,
        event_hooks={"response": [refuse_foreign_redirect]},
    )


async def fetch_adapters(
    adapters: Sequence[Adapter],
    settings: Settings,
    *,
    on_done: Callable[[ProviderRun], None] | None = None,
) -> list[ProviderRun]:
    """Fetch ``adapters`` concurrently over one HTTP client, each within
    ``provider_deadline_s``; ``on_done`` sees each run end. Every run, as a list."""
    async with _client(settings) as client:
        return await collect(
            adapters, client, deadline_s=settings.provider_deadline_s, on_done=on_done
        )


async def stream_adapters(
    adapters: Sequence[Adapter],
    settings: Settings,
    *,
    on_done: Callable[[ProviderRun], None] | None = None,
) -> AsyncGenerator[ProviderRun, None]:
    """:func:`fetch_adapters`, each run yielded as soon as it is final
    (:func:`adapters.collect.stream_runs`); closing it cancels the fetches still going."""
    async with _client(settings) as client:
        stream = stream_runs(
            adapters, client, deadline_s=settings.provider_deadline_s, on_done=on_done
        )
        async with contextlib.aclosing(stream) as runs:
            async for run in runs:
                yield run
                del run  # not held while the next provider is awaited


def offer_guard(settings: Settings) -> OfferGuard:
    """The plausibility guard's thresholds (``snapshot_guard_*``), see :mod:`db.guard`."""
    return OfferGuard(
        drop_share=settings.snapshot_guard_drop_share,
        min_count=settings.snapshot_guard_min_count,
        skipped_share=settings.snapshot_guard_skipped_share,
        rise_factor=settings.snapshot_guard_rise_factor,
        accept_after=settings.snapshot_guard_accept_after,
        baseline_runs=settings.snapshot_guard_baseline_runs,
    )


#: The error of a disabled provider's run (:func:`disabled_runs`).
DISABLED = "disabled by GPUSCOUT_PROVIDERS_DISABLED: not fetched"


def disabled_runs(settings: Settings) -> list[ProviderRun]:
    """A skipped run for each provider ``providers_disabled`` names, so a snapshot records
    why it was not fetched: offers it holds from earlier snapshots then show as stale with
    this reason (as a provider skipped for a missing key does), not as current prices."""
    at = _utc_now()
    return [
        ProviderRun(name, RunStatus.SKIPPED, at, 0.0, error=DISABLED)
        for name in settings.providers_disabled
    ]


def fetch_providers(
    settings: Settings,
    names: Sequence[str] | None = None,
    *,
    fetch: StreamFetch | None = None,
) -> Generator[ProviderRun, None, None]:
    """Fetch the providers ``names`` (default: every enabled one, then the disabled ones
    recorded as skipped, :func:`disabled_runs`) with ``fetch`` (default
    :func:`stream_adapters`; the CLI's shows progress).

    The adapters are built now (an unknown name raises :class:`UnknownProvider` here); the
    runs come as the returned iterator is read, each as soon as it is final, from an event
    loop in a worker thread (so it can be read from a thread that runs one). Closing the
    iterator cancels the fetches still going and waits for the thread; an exception of the
    fetch is raised by the iterator.
    """
    adapters = build_adapters(settings, names)
    stream = fetch or stream_adapters
    return _fetched(settings, lambda: stream(adapters, settings), with_disabled=not names)


def _fetched(
    settings: Settings,
    make: Callable[[], AsyncGenerator[ProviderRun, None]],
    *,
    with_disabled: bool,
) -> Generator[ProviderRun, None, None]:
    """The runs ``make`` streams, then, ``with_disabled``, the disabled providers' runs: a
    disabled provider a catalog named is left out of the stream, its disabled run stands."""
    disabled = set(settings.providers_disabled) if with_disabled else set()
    with contextlib.closing(_streamed(make)) as runs:
        for run in runs:
            if run.provider not in disabled:
                yield run
            del run  # not held while the next is fetched
    if with_disabled:
        yield from disabled_runs(settings)


def _streamed(
    make: Callable[[], AsyncGenerator[ProviderRun, None]],
) -> Generator[ProviderRun, None, None]:
    """The runs ``make`` streams, each as soon as it comes, from an event loop on a worker
    thread (anyio's blocking portal): the fetches go on while the caller stores a run.
    Closing this iterator (its reader stopped) closes the stream, which cancels the fetches
    still going; the stream's exception is raised here."""
    with start_blocking_portal() as portal:
        runs = make()
        try:
            while True:
                try:
                    run = portal.call(_next, runs)
                except StopAsyncIteration:
                    return
                yield run
                del run  # not held while the next is fetched
        finally:
            portal.call(runs.aclose)


async def _next(runs: AsyncGenerator[ProviderRun, None]) -> ProviderRun:
    return await anext(runs)


def noting(
    runs: Iterable[ProviderRun], note: Callable[[ProviderRun], None]
) -> Iterable[ProviderRun]:
    """``runs`` with ``note`` called on each as it is taken: a sequence's at once (returned
    as it is, so that the store still finds a provider given twice), an iterator's one at a
    time (closing the returned iterator closes ``runs``)."""
    if isinstance(runs, Sequence):
        for run in runs:
            note(run)
        return runs
    return _noted(iter(runs), note)


def _noted(
    runs: Iterator[ProviderRun], note: Callable[[ProviderRun], None]
) -> Iterator[ProviderRun]:
    try:
        for run in runs:
            note(run)
            yield run
            del run  # let the store let go of it
    finally:
        _close(runs)


def _close(runs: Iterable[ProviderRun]) -> None:
    """Close ``runs`` if it is an iterator that can be closed (a generator)."""
    close = getattr(runs, "close", None)
    if callable(close):
        close()


def _utc_now() -> datetime:
    return datetime.now(UTC)


def take_snapshot(
    settings: Settings,
    *,
    fetch: Fetch | None = None,
    engine: Engine | None = None,
    skip_within: timedelta | None = None,
    on_start: Callable[[], None] | None = None,
    now: Callable[[], datetime] = _utc_now,
) -> SnapshotResult:
    """Take one snapshot under the job lock: migrate, fetch, store, prune (blocking).

    ``fetch`` defaults to :func:`fetch_providers` over ``settings``; ``engine`` to one on
    ``settings.database_url`` (disposed at the end). With ``skip_within``, a snapshot that
    finished less than that long ago makes this one skip (:class:`SnapshotRecent`; the
    check runs under the lock, so two runners racing take exactly one). ``on_start`` is
    called once the lock is held, before fetching (the API answers "started" then).

    Where the offers come from travels with each run (:attr:`ProviderRun.origin
    <adapters.collect.ProviderRun.origin>`: ``fetch=replay_sample`` gives sample runs) and
    is stored with the snapshot (:attr:`SnapshotSummary.origin <db.snapshots.SnapshotSummary>`).

    The runs ``fetch`` returns are stored as they come (an iterator is read one run at a
    time, and closed when the store ends or fails); the snapshot's ``finished_at`` is when
    the last one was stored.

    Raises :class:`SnapshotLocked` when another runner holds the lock. The store is one
    transaction: an error while storing (or fetching) leaves the previous state as it was.
    Every attempt past the lock (and the skip check) is recorded in :mod:`db.runs`, a
    failed one with its error; runs left running by a dead process are marked aborted,
    logged and returned.
    """
    fetch = fetch or functools.partial(fetch_providers, settings)
    own = engine is None
    engine = engine or make_engine(settings.database_url)
    lease_s = settings.snapshot_lease_s
    try:
        upgrade(engine)  # before the lock: on SQLite the lease is a row of a migrated table
        with job_lock(engine, SNAPSHOT_LOCK, lease_s=lease_s, renew_every_s=lease_s / 3) as got:
            if not got:
                raise SnapshotLocked()
            aborted = tuple(abort_left_running(engine, at=now()))
            for run in aborted:
                log.warning("%s", run.describe())
            if skip_within is not None:
                with engine.connect() as connection:
                    latest = latest_snapshot(connection)
                if latest is not None and now() - latest[1] < skip_within:
                    raise SnapshotRecent(latest[1])
            started_at = now()
            run_id = start_run(engine, at=started_at, holder=run_holder())
            heartbeat = functools.partial(_beat, engine, run_id, now)
            try:
                with periodic(lease_s / 3, heartbeat, name="snapshot heartbeat"):
                    if on_start is not None:
                        on_start()
                    fx = fx_table(settings)
                    stored: list[StoredRun] = []
                    runs = noting(fetch(), lambda run: stored.append(stored_run(run)))
                    try:
                        summary = store_snapshot(
                            engine,
                            runs,
                            started_at=started_at,
                            finished_at=now,
                            guard=offer_guard(settings),
                            fx=fx,
                            hourly_days=settings.rollup_hourly_days,
                        )
                    finally:
                        _close(runs)  # a fetch still going is cancelled
                    del runs
                    pruned = prune(
                        engine,
                        now=summary.finished_at,
                        snapshots_days=settings.retention_snapshots_days,
                        history_days=settings.retention_history_days,
                    )
            except BaseException as exc:
                _finish_failed(engine, run_id, now(), exc)
                raise
            finish_run(engine, run_id, at=now(), snapshot_id=summary.snapshot_id)
        _keep_frame(fx, engine)
    finally:
        if own:
            engine.dispose()
    return SnapshotResult(_as_stored(stored, summary), summary, pruned, aborted)


def _keep_frame(fx: FxTable, engine: Engine) -> None:
    """Frame the offers just stored and keep the frame in the database, outside the job
    lock (:func:`db.current.keep_current_frame`): readers then load it instead of framing.
    The snapshot is stored whatever happens here; a frame not kept is framed by each load.
    ``fx`` is the table the offers were stored with, read once for both."""
    from gpuscout.db.current import keep_current_frame

    try:
        keep_current_frame(engine, fx)
    except Exception as exc:
        log.warning("snapshot stored; its frame not kept (the next load frames it): %s", exc)


def _as_stored(runs: Sequence[StoredRun], summary: SnapshotSummary) -> tuple[StoredRun, ...]:
    """``runs`` (as they were taken, without their offers) with each one the guard stored as
    failed turned into that error run."""
    guarded = {c.provider: c for c in summary.providers if c.guarded}
    return tuple(
        dataclasses.replace(run, status=change.status, error=change.error, offered=0)
        if (change := guarded.get(run.provider)) is not None
        else run
        for run in runs
    )


def _beat(engine: Engine, run_id: int, now: Callable[[], datetime]) -> None:
    beat(engine, run_id, at=now())


def _finish_failed(engine: Engine, run_id: int, at: datetime, exc: BaseException) -> None:
    """Record a snapshot that raised; a failure to record it must not hide ``exc``."""
    try:
        finish_run(engine, run_id, at=at, error=f"{type(exc).__name__}: {exc}"[:2000])
    except Exception:
        log.exception("snapshot run %d: could not record its failure", run_id)
