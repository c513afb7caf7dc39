"""One alerts run: evaluate every alert against the newest snapshot, then deliver.

The scheduler calls :func:`run_alerts` right after each snapshot it stored
(:func:`service.scheduler.run_snapshot_job`); ``gpuscout alerts run`` does the same by hand.
A run that fails is logged and never fails the snapshot: the next run evaluates the next
snapshot and retries whatever was left undelivered.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.message import EmailMessage

import httpx
from sqlalchemy.engine import Engine

from gpuscout.db.current import CurrentState, load_current_offers

from ..fx import fx_table
from ..publication import publishable_state
from ..settings import Settings
from .deliver import AlertDeliveryReport, deliver_firings
from .evaluate import EvaluationReport, evaluate_alerts
from .webhooks import webhook_client

__all__ = ["AlertRunReport", "run_alerts"]


@dataclasses.dataclass(frozen=True)
class AlertRunReport:
    evaluation: EvaluationReport
    delivery: AlertDeliveryReport


def run_alerts(
    settings: Settings,
    engine: Engine,
    *,
    now: datetime | None = None,
    current: CurrentState | None = None,
    transport: Callable[[EmailMessage], int] | None = None,
    http: httpx.Client | None = None,
    holder: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> AlertRunReport:
    """Evaluate (against ``current``, default: the stored current offers) and deliver."""
    now = now or datetime.now(UTC)
    if current is None:
        current = load_current_offers(engine, fx=fx_table(settings), now=now)
    current = publishable_state(settings, current)  # publication = public: within terms
    evaluation = evaluate_alerts(settings, engine, current, now=now)
    if transport is None:
        from ..digest.schedule import smtp_transport

        transport = smtp_transport(settings)
    own = http is None
    client = http or webhook_client(
        timeout_s=settings.alert_webhook_timeout_s,
        allow_private=settings.alert_webhook_allow_private,
    )
    try:
        delivery = deliver_firings(
            settings, engine, transport=transport, http=client, now=now, holder=holder, sleep=sleep
        )
    finally:
        if own:
            client.close()
    return AlertRunReport(evaluation, delivery)
