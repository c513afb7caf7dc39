"""The snapshot schedule: APScheduler 3 runs :func:`run_snapshot_job` on an interval.

:func:`build_scheduler` configures a scheduler without starting it (the API process starts
it beside uvicorn; ``gpuscout scheduler`` runs it alone). After each snapshot it stored,
the snapshot job queues the alerts job (:data:`ALERTS_JOB_ID`, its own job: one instance,
coalesced), which evaluates and delivers the price alerts
(:func:`service.alerts.run.run_alerts`). So a slow webhook or mail server delays only the
alerts, never the next snapshot. Before that it publishes the catalog when ``publish_dir``
is set (:mod:`service.catalog.publish`). A follower (``catalog_url`` set) follows that
catalog instead of fetching the providers (:func:`service.catalog.follow.follow_catalog`).
Each run logs one line (``gpuscout.scheduler``): skipped and why, or what was stored with
the count of providers ok, failed and skipped (:func:`snapshot_line`; WARNING with the
first error when any failed). The job is coalesced, never runs twice at once in one
process (``max_instances=1``), is jittered and has a misfire grace.
Across processes, the job lock :func:`service.snapshots.take_snapshot` holds lets exactly one
runner take each snapshot; a runner that finds a snapshot taken less than half an interval
ago skips too.
"""

from __future__ import annotations

import collections
import functools
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.engine import Engine

from gpuscout.adapters.run import RunStatus
from gpuscout.db.engine import make_engine

from .settings import Settings
from .snapshots import Fetch, SnapshotResult, SnapshotSkipped, take_snapshot

__all__ = [
    "ALERTS_JOB_ID",
    "FX_JOB_ID",
    "SNAPSHOT_JOB_ID",
    "build_scheduler",
    "queue_alerts_job",
    "run_snapshot_job",
    "snapshot_line",
]

log = logging.getLogger("gpuscout.scheduler")

SNAPSHOT_JOB_ID = "snapshot"
FX_JOB_ID = "fx"
ALERTS_JOB_ID = "alerts"


def run_snapshot_job(
    settings: Settings,
    *,
    fetch: Fetch | None = None,
    engine: Engine | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    alerts: Callable[[], None] | None = None,
) -> SnapshotResult | None:
    """Take one snapshot unless another runner holds the lock or took one recently.

    Returns what was stored, or ``None`` when this runner skipped (and logged why). Once
    stored (the lock released), ``alerts`` is called (the scheduler's: queue the alerts
    job); ``None`` runs the alerts here, after the snapshot.
    """
    if settings.catalog_url and fetch is None:
        return _follow_job(settings, engine, now, alerts)
    interval = timedelta(minutes=settings.snapshot_interval_minutes)
    try:
        result = take_snapshot(
            settings, fetch=fetch, engine=engine, skip_within=interval / 2, now=now
        )
    except SnapshotSkipped as skipped:
        log.info("snapshot skipped: %s", skipped)
        return None
    level, line = snapshot_line(result)
    log.log(level, "%s", line)
    _publish_after(settings, engine)
    _alerts_after(settings, engine, now, alerts)
    return result


def _follow_job(
    settings: Settings,
    engine: Engine | None,
    now: Callable[[], datetime],
    alerts: Callable[[], None] | None,
) -> SnapshotResult | None:
    """A follower's snapshot: poll the followed catalog (``catalog_url``) instead of the
    providers (:func:`service.catalog.follow.follow_catalog`); a refused catalog is logged
    and its providers' last-good offers kept."""
    from .catalog.follow import follow_catalog
    from .catalog.manifest import CatalogError

    try:
        followed = follow_catalog(settings, engine=engine, now=now)
    except (CatalogError, SnapshotSkipped) as exc:
        log.warning("catalog not followed: %s", exc)
        return None
    if followed.unchanged:
        log.info("catalog unchanged: nothing stored")
        return None
    log.info("catalog followed: %d offers stored", followed.offer_count)
    _publish_after(settings, engine)
    _alerts_after(settings, engine, now, alerts)
    return None


def _alerts_after(
    settings: Settings,
    engine: Engine | None,
    now: Callable[[], datetime],
    alerts: Callable[[], None] | None,
) -> None:
    """After stored offers: queue the alerts job (``alerts``, the scheduler's), or run the
    alerts here when there is none (a one-off run)."""
    if alerts is None:
        run_alerts_job(settings, engine=engine, now=now)
    else:
        alerts()


def _publish_after(settings: Settings, engine: Engine | None) -> None:
    """Publish the catalog after a stored snapshot when ``publish_dir`` is set; a failure is
    logged, never the snapshot's."""
    if settings.publish_dir is None:
        return
    from .catalog.publish import publish_catalog

    try:
        result = publish_catalog(settings, engine=engine)
        log.info("catalog %s published: %d offers", result.manifest.version, result.offer_count)
    except Exception:
        log.exception("publishing the catalog after the snapshot failed")


def snapshot_line(result: SnapshotResult) -> tuple[int, str]:
    """The one log line of a stored snapshot and its level: what was stored, how many
    providers answered (ok), failed and were skipped, and, when some failed, the first
    failure's provider and error at WARNING (a snapshot whose every fetch fails, say on a
    machine without network, must not pass in silence); INFO otherwise.

    The runs are as stored, so a run the plausibility guard refused counts as failed.
    """
    summary = result.summary
    counts = collections.Counter(run.status for run in result.runs)
    failed = [run for run in result.runs if run.status is RunStatus.ERROR]
    line = (
        f"snapshot {summary.snapshot_id} stored: {summary.offer_count} offers, history "
        f"+{summary.history_added} / closed {summary.history_closed}; providers: "
        f"{counts[RunStatus.OK]} ok, {counts[RunStatus.ERROR]} failed, "
        f"{counts[RunStatus.SKIPPED]} skipped"
    )
    if not failed:
        return logging.INFO, line
    first = failed[0]
    error = (first.error or "no error recorded").strip().splitlines()[0][:_ERROR_CHARS]
    return logging.WARNING, f"{line}; first failure: {first.provider}: {error}"


#: How much of the first failure's error the snapshot's line quotes (one line of a log).
_ERROR_CHARS = 300


def run_alerts_job(
    settings: Settings,
    *,
    engine: Engine | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> None:
    """Evaluate and deliver the price alerts on the newest snapshot; a failure is logged
    (the next run retries what was left: failed deliveries back off, see
    :mod:`service.alerts.deliver`)."""
    from .alerts.run import run_alerts

    own = engine is None
    engine = engine or make_engine(settings.database_url)
    try:
        report = run_alerts(settings, engine, now=now())
        log.info(
            "alerts: %d evaluated over %d searches in %.2f s, %d fired, %d mail(s)",
            report.evaluation.alerts,
            report.evaluation.searches,
            report.evaluation.seconds,
            len(report.evaluation.fired),
            len(report.delivery.mails),
        )
    except Exception:
        log.exception("alerts run failed")
    finally:
        if own:
            engine.dispose()


def queue_alerts_job(scheduler: BaseScheduler, job: Callable[[], object]) -> None:
    """Run the alerts ``job`` now as its own job, beside the snapshot job, not inside it; one
    at a time: one queued while another still runs is skipped (APScheduler logs it), and the
    next snapshot queues the next run, which retries every delivery left undone."""
    scheduler.add_job(
        job,
        trigger=DateTrigger(datetime.now(UTC), timezone=UTC),
        id=ALERTS_JOB_ID,
        name="evaluate and deliver the price alerts",
        coalesce=True,
        max_instances=1,
        misfire_grace_time=None,
        replace_existing=True,
    )


def build_scheduler(
    settings: Settings,
    *,
    job: Callable[[], object] | None = None,
    scheduler: BaseScheduler | None = None,
    digests: bool = True,
    alerts_job: Callable[[], object] | None = None,
) -> BaseScheduler:
    """A scheduler (a :class:`BackgroundScheduler` unless given) with the snapshot job,
    the FX rates job (every ``fx_update_hours``; first run a minute after start) and, with
    ``digests``, the hourly digest job added; not started.

    ``job`` replaces :func:`run_snapshot_job` (tests); ``alerts_job`` replaces
    :func:`run_alerts_job`, which each stored snapshot queues as its own job.
    """
    scheduler = scheduler or BackgroundScheduler(timezone=UTC)
    queue_alerts = functools.partial(
        queue_alerts_job, scheduler, alerts_job or functools.partial(run_alerts_job, settings)
    )

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
        job or functools.partial(run_snapshot_job, settings, alerts=queue_alerts),
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
