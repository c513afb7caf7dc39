"""Delivering alert firings: each firing's mail and webhook calls, exactly once.

Every delivery is a ``digest_delivery`` row of the alert's subscription, its period naming
the firing (``alert:<firing>`` for the mail, ``hook:<firing>:<webhook>`` for a webhook
call), and goes through the digest's protocol (:mod:`service.digest.delivery`): claim with
a lease renewed while it works, ``sending`` just before the mail or the call, ``sent`` after;
``failed`` with a backed-off ``retry_at`` on a transient failure, ``refused`` (final) on a
permanent one; every step checks that this process still holds the claim. So across
restarts and several schedulers each firing is mailed once; a crash between ``sending`` and
``sent`` resends it with the same Message-ID (the webhook: the same
``X-Gpuscout-Delivery``), at least once and never lost.

A firing is *settled* once its mail and the calls of its enabled webhooks are final, or
once its subscription has ended (an unsubscribed alert sends nothing more), or, logged,
two days after it fired (:data:`FIRING_MAX_AGE`: a price that old is no alert). Unsettled
firings are retried by every run, after the snapshot's evaluation.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from email.message import EmailMessage

import httpx
from sqlalchemy.engine import Engine

from gpuscout.db.alerts import (
    AlertRow,
    FiringRow,
    WebhookRow,
    get_alert,
    note_webhook_result,
    settle_firing,
    unsettled_firings,
    webhooks_of,
)
from gpuscout.db.subscriptions import SubscriptionRecord, SubscriptionStatus, get_subscription

from ..digest.compose import signed_link, unsubscribe_url
from ..digest.delivery import (
    Claim,
    DeliveryOutcome,
    LeaseKeeper,
    claim_delivery,
    deliver_claimed,
    delivery_row,
    mark_failed,
    mark_sending,
    mark_sent,
    new_holder_id,
    run_clock,
)
from ..digest.mail import new_message_id, parse_sender
from ..digest.tokens import Purpose
from ..settings import Settings
from .condition import AlertCondition
from .evaluate import condition_of
from .message import AlertLinks, alert_message, webhook_body
from .webhooks import WebhookError, check_webhook_url, post_webhook

__all__ = [
    "AlertDeliveryReport",
    "deliver_firings",
    "history_url",
    "hook_label",
    "mail_label",
]

log = logging.getLogger("gpuscout.alerts")

Transport = Callable[[EmailMessage], int]
_FINAL = ("sent", "refused")
#: A firing whose deliveries are still not final this long after it fired is given up.
FIRING_MAX_AGE = timedelta(days=2)


def mail_label(firing_id: int) -> str:
    """The delivery period of a firing's mail."""
    return f"alert:{firing_id}"


def hook_label(firing_id: int, webhook_id: int) -> str:
    """The delivery period of a firing's call of one webhook."""
    return f"hook:{firing_id}:{webhook_id}"


def history_url(settings: Settings, alert: AlertRow, *, now: datetime) -> str:
    """The signed link to the alert's firing history (``GET /v1/alerts/<id>/firings``)."""
    return signed_link(
        settings,
        f"/v1/alerts/{alert.id}/firings",
        Purpose.ALERT_HISTORY,
        alert.subscription_id,
        alert.email,
        now=now,
    )


@dataclasses.dataclass(slots=True)
class AlertDeliveryReport:
    mails: list[DeliveryOutcome] = dataclasses.field(default_factory=list)
    webhooks: list[tuple[int, int, str]] = dataclasses.field(default_factory=list)
    """(firing, webhook, sent | failed | refused | disabled | skipped)"""
    settled: int = 0


def _call(
    settings: Settings,
    engine: Engine,
    claim: Claim,
    hook: WebhookRow,
    body: bytes,
    http: httpx.Client,
    clock: Callable[[], datetime],
    lease: timedelta,
    sleep: Callable[[float], None],
) -> str:
    """One claimed webhook delivery: sending -> the call -> sent / failed / refused."""
    if not mark_sending(engine, claim, now=clock(), lease=lease):
        return "skipped"
    production = settings.environment != "development"
    allow_private = settings.alert_webhook_allow_private
    try:
        post_webhook(
            http,
            hook.url,
            secret=hook.secret,
            body=body,
            delivery_id=claim.message_id,
            attempts=settings.alert_webhook_attempts,
            deadline_s=settings.alert_webhook_deadline_s,
            check=lambda url: check_webhook_url(
                url, production=production, allow_private=allow_private
            ),
            clock=lambda: clock().timestamp(),
            sleep=sleep,
        )
    except WebhookError as exc:
        mark_failed(engine, claim, str(exc), now=clock(), permanent=not exc.retryable)
        disabled = note_webhook_result(
            engine,
            hook.id,
            ok=False,
            error=str(exc),
            now=clock(),
            max_failures=settings.alert_webhook_max_failures,
        )
        log.warning(
            "webhook %s of alert %s failed: %s%s",
            hook.id,
            hook.alert_id,
            exc,
            "; disabled after repeated failures" if disabled else "",
        )
        return "disabled" if disabled else ("failed" if exc.retryable else "refused")
    mark_sent(engine, claim, now=clock())
    note_webhook_result(
        engine,
        hook.id,
        ok=True,
        error=None,
        now=clock(),
        max_failures=settings.alert_webhook_max_failures,
    )
    return "sent"


def _final(engine: Engine, subscription_id: int, label: str) -> bool:
    row = delivery_row(engine, subscription_id, label)
    return row is not None and row["status"] in _FINAL


def deliver_firings(
    settings: Settings,
    engine: Engine,
    *,
    transport: Transport,
    http: httpx.Client,
    now: datetime,
    holder: str | None = None,
    clock: Callable[[], datetime] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> AlertDeliveryReport:
    """Send every unsettled firing's mail and webhook calls that are not final yet."""
    holder = holder or new_holder_id()
    clock = clock or run_clock(now)
    lease = timedelta(minutes=settings.digest_lease_minutes)
    sender = parse_sender(settings.mail_from)
    report = AlertDeliveryReport()
    for firing in unsettled_firings(engine):
        alert = get_alert(engine, firing.alert_id)
        sub = None if alert is None else get_subscription(engine, alert.subscription_id)
        if alert is None or sub is None or sub.status is not SubscriptionStatus.ACTIVE:
            settle_firing(engine, firing.id)  # ended: nothing more goes out
            report.settled += 1
            continue
        if now - firing.fired_at > FIRING_MAX_AGE:
            log.warning(
                "alert %s firing #%d: still undelivered after %s; given up (news this old"
                " is no alert)",
                alert.id,
                firing.seq,
                FIRING_MAX_AGE,
            )
            settle_firing(engine, firing.id)
            report.settled += 1
            continue
        condition = condition_of(alert)
        links = AlertLinks(
            history_url(settings, alert, now=now),
            unsubscribe_url(settings, sub.id, sub.email, now=now),
        )
        _mail(
            engine,
            alert,
            condition,
            firing,
            sub,
            links,
            settings,
            transport,
            holder,
            clock,
            lease,
            sender,
            report,
        )
        hooks = [h for h in webhooks_of(engine, alert.id) if h.disabled_at is None]
        body = webhook_body(alert, condition, firing, links.history_url)
        for hook in hooks:
            claim = claim_delivery(
                engine,
                sub.id,
                hook_label(firing.id, hook.id),
                holder=holder,
                now=clock(),
                lease=lease,
                message_id=lambda: f"whd_{uuid.uuid4().hex}",
            )
            if claim is None:
                continue
            with LeaseKeeper(engine, claim, clock, lease):
                status = _call(settings, engine, claim, hook, body, http, clock, lease, sleep)
            report.webhooks.append((firing.id, hook.id, status))
        enabled = [h for h in webhooks_of(engine, alert.id) if h.disabled_at is None]
        if _final(engine, sub.id, mail_label(firing.id)) and all(
            _final(engine, sub.id, hook_label(firing.id, h.id)) for h in enabled
        ):
            settle_firing(engine, firing.id)
            report.settled += 1
    return report


def _mail(
    engine: Engine,
    alert: AlertRow,
    condition: AlertCondition,
    firing: FiringRow,
    sub: SubscriptionRecord,
    links: AlertLinks,
    settings: Settings,
    transport: Transport,
    holder: str,
    clock: Callable[[], datetime],
    lease: timedelta,
    sender: object,
    report: AlertDeliveryReport,
) -> None:
    claim = claim_delivery(
        engine,
        sub.id,
        mail_label(firing.id),
        holder=holder,
        now=clock(),
        lease=lease,
        message_id=lambda: new_message_id(sender),  # type: ignore[arg-type]
    )
    if claim is None:
        return

    def render(_sub: SubscriptionRecord, message_id: str) -> EmailMessage:
        return alert_message(
            settings, alert, condition, firing, links, message_id=message_id, date=clock()
        )

    with LeaseKeeper(engine, claim, clock, lease):
        report.mails.append(deliver_claimed(engine, sub, claim, render, transport, clock, lease))
