"""Running the due digests: once by hand (``gpuscout digest send``) or hourly by APScheduler.

The job runs every hour at minute ``DIGEST_MINUTE`` (UTC); each run sends the digests whose
subscriber's local weekday and hour have come this ISO week and that no run has sent yet
(:mod:`.delivery` makes that exactly once, across processes and restarts).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from typing import Any

from sqlalchemy.engine import Engine

from gpuscout.db.current import CurrentState
from gpuscout.db.subscriptions import active_subscriptions

from ..current import load_current
from ..settings import Settings
from .compose import DigestComposer
from .delivery import SendReport, due_week, send_due
from .mail import SmtpConfig, new_message_id, parse_sender, send_message

__all__ = ["DIGEST_JOB_ID", "DIGEST_MINUTE", "add_digest_job", "run_digests", "smtp_transport"]

DIGEST_JOB_ID = "gpuscout-digest"
#: Minute of every hour the digest job runs (after the hourly snapshot has usually finished).
DIGEST_MINUTE = 15


def smtp_transport(settings: Settings) -> Callable[[EmailMessage], int]:
    """Send through the SMTP server of ``settings`` (retries with backoff inside)."""
    config = SmtpConfig.from_settings(settings)
    return lambda message: send_message(message, config)


def run_digests(
    settings: Settings,
    engine: Engine,
    *,
    now: datetime | None = None,
    dry_run: bool = False,
    current: CurrentState | None = None,
    transport: Callable[[EmailMessage], int] | None = None,
    holder: str | None = None,
) -> SendReport:
    """Send (or with ``dry_run`` only build) every digest due at ``now``."""
    now = now or datetime.now(UTC)
    subscriptions = [
        s
        for s in active_subscriptions(engine)
        if due_week(s.time_zone, now, weekday=settings.digest_weekday, hour=settings.digest_hour)
    ]
    if not subscriptions:
        return SendReport()
    from ..publication import publishable_state

    state = publishable_state(settings, current or load_current(settings=settings))
    composer = DigestComposer(settings, state, now, engine=engine)
    sender = parse_sender(settings.mail_from)
    return send_due(
        engine,
        render=composer.message,
        transport=transport or smtp_transport(settings),
        now=now,
        weekday=settings.digest_weekday,
        hour=settings.digest_hour,
        lease=timedelta(minutes=settings.digest_lease_minutes),
        message_id=lambda: new_message_id(sender),
        holder=holder,
        dry_run=dry_run,
        subscriptions=subscriptions,
    )


def add_digest_job(scheduler: Any, settings: Settings, engine: Engine) -> Any:
    """Add the hourly digest job to an APScheduler 3 scheduler; returns the job."""
    from apscheduler.triggers.cron import CronTrigger

    return scheduler.add_job(
        run_digests,
        CronTrigger(minute=DIGEST_MINUTE, timezone=UTC),
        args=(settings, engine),
        id=DIGEST_JOB_ID,
        name="weekly email digests",
        max_instances=1,
        coalesce=True,
        misfire_grace_time=3000,
        replace_existing=True,
    )
