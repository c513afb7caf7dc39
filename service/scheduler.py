"""The snapshot schedule: APScheduler 3 runs :func:`run_snapshot_job` on an interval.

:func:`build_scheduler` configures a scheduler without starting it (the API process starts
it beside uvicorn; ``gpuscout scheduler`` runs it alone). The job is coalesced, never runs
twice at once in one process (``max_instances=1``), is jittered and has a misfire grace.
Across processes, :func:`db.locks.job_lock` (a PostgreSQL advisory lock, or a lease row on
SQLite) lets exactly one runner take each snapshot; a runner that finds a snapshot taken
less than half an interval ago skips too.

:func:`persist_snapshot` is the one way a fetched snapshot is stored: migrations applied,
snapshot written, retention pruned. ``gpuscout snapshot`` uses it as well.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.engine import Engine

from adapters.collect import ProviderRun
from db.current import latest_snapshot
from db.engine import make_engine
from db.locks import job_lock
from db.migrate import upgrade
from db.retention import PruneResult, prune
from db.snapshots import SnapshotSummary, store_snapshot

from .fx import fx_table
from .settings import Settings

__all__ = [
    "FX_JOB_ID",
    "SNAPSHOT_JOB_ID",
    "StoredSnapshot",
    "build_scheduler",
    "fetch_providers",
    "persist_snapshot",
    "run_snapshot_job",
]

log = logging.getLogger("gpuscout.scheduler")

SNAPSHOT_JOB_ID = "snapshot"
FX_JOB_ID = "fx"

Fetch = Callable[[Settings], Sequence[ProviderRun]]


@dataclasses.dataclass(frozen=True, slots=True)
class StoredSnapshot:
    summary: SnapshotSummary
    pruned: PruneResult


def fetch_providers(settings: Settings) -> list[ProviderRun]:
    """Fetch every enabled provider concurrently with the credentials from ``settings``."""
    from adapters import registry
    from adapters.base import RetryPolicy
    from adapters.collect import collect

    creds = settings.provider_credentials()
    policy = RetryPolicy(attempts=settings.http_retries, timeout_s=settings.http_timeout_s)
    adapters = [
        cls(creds, policy=policy)
        for name, cls in registry().items()
        if name not in settings.providers_disabled
    ]

    async def run() -> list[ProviderRun]:
        headers = {"User-Agent": "gpuscout/0.1 (+price comparison)"}
        async with httpx.AsyncClient(
            headers=headers, timeout=settings.http_timeout_s, follow_redirects=True
        ) as client:
            return await collect(adapters, client)

    return asyncio.run(run())


def persist_snapshot(
    settings: Settings,
    runs: Sequence[ProviderRun],
    *,
    started_at: datetime,
    finished_at: datetime,
    engine: Engine | None = None,
) -> StoredSnapshot:
    """Apply the migrations, store the snapshot, then prune by the retention settings."""
    own = engine is None
    engine = engine or make_engine(settings.database_url)
    try:
        upgrade(engine)
        summary = store_snapshot(
            engine,
            runs,
            started_at=started_at,
            finished_at=finished_at,
            fx=fx_table(settings),
        )
        pruned = prune(
            engine,
            now=finished_at,
            snapshots_days=settings.retention_snapshots_days,
            history_days=settings.retention_history_days,
        )
    finally:
        if own:
            engine.dispose()
    return StoredSnapshot(summary, pruned)


def run_snapshot_job(
    settings: Settings,
    *,
    fetch: Fetch = fetch_providers,
    engine: Engine | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> StoredSnapshot | None:
    """Take one snapshot unless another runner holds the lock or took one recently.

    Returns what was stored, or ``None`` when this runner skipped.
    """
    own = engine is None
    engine = engine or make_engine(settings.database_url)
    try:
        upgrade(engine)
        interval = timedelta(minutes=settings.snapshot_interval_minutes)
        with job_lock(engine, SNAPSHOT_JOB_ID, lease_s=interval.total_seconds()) as got:
            if not got:
                log.info("snapshot skipped: another runner holds the lock")
                return None
            with engine.connect() as connection:
                latest = latest_snapshot(connection)
            if latest is not None and now() - latest[1] < interval / 2:
                log.info("snapshot skipped: one finished at %s", latest[1].isoformat())
                return None
            started_at = now()
            runs = fetch(settings)
            stored = persist_snapshot(
                settings, runs, started_at=started_at, finished_at=now(), engine=engine
            )
        log.info(
            "snapshot %d stored: %d offers, history +%d / closed %d",
            stored.summary.snapshot_id,
            stored.summary.offer_count,
            stored.summary.history_added,
            stored.summary.history_closed,
        )
        return stored
    finally:
        if own:
            engine.dispose()


def build_scheduler(
    settings: Settings,
    *,
    job: Callable[[], object] | None = None,
    scheduler: BaseScheduler | None = None,
    digests: bool = True,
) -> BaseScheduler:
    """A scheduler (a :class:`BackgroundScheduler` unless given) with the snapshot job,
    the FX rates job (every ``fx_update_hours``; first run a minute after start) and, with
    ``digests``, the hourly digest job added; not started.

    ``job`` replaces :func:`run_snapshot_job` (tests).
    """
    scheduler = scheduler or BackgroundScheduler(timezone=UTC)
    if settings.fx_update_hours > 0:
        from .fx import run_fx_job

        scheduler.add_job(
            functools.partial(run_fx_job, settings),
            trigger=IntervalTrigger(hours=settings.fx_update_hours, timezone=UTC),
            id=FX_JOB_ID,
            name="download the ECB's FX rates",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=settings.misfire_grace_s,
            replace_existing=True,
            next_run_time=datetime.now(UTC) + timedelta(minutes=1),
        )
    if digests:
        from .digest.schedule import add_digest_job

        add_digest_job(scheduler, settings, make_engine(settings.database_url))
    options: dict[str, Any] = {}
    if settings.snapshot_on_start:
        options["next_run_time"] = datetime.now(UTC)
    scheduler.add_job(
        job or functools.partial(run_snapshot_job, settings),
        trigger=IntervalTrigger(
            minutes=settings.snapshot_interval_minutes,
            jitter=settings.snapshot_jitter_s or None,
            timezone=UTC,
        ),
        id=SNAPSHOT_JOB_ID,
        name="take a snapshot of every provider",
        coalesce=True,
        max_instances=1,
        misfire_grace_time=settings.misfire_grace_s,
        replace_existing=True,
        **options,
    )
    return scheduler
