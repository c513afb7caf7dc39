"""Exactly-once weekly delivery: one ``digest_delivery`` row per (subscription, ISO week).

The protocol, per due subscription (each step its own short transaction)::

    claim      INSERT the (subscription, week) row, status ``claimed``, a lease, and a fresh
               Message-ID; or, if the row exists, take it over when it is ``failed`` or its
               lease has expired (``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL, a
               ``BEGIN IMMEDIATE`` transaction on SQLite). The Message-ID is kept forever.
    build      render the digest and the MIME message (no side effects)
    sending    UPDATE to ``sending`` (only if this process still holds the claim)
    SMTP       hand the message to the server (retries with backoff inside)
    sent       UPDATE to ``sent``; or ``failed`` with the error if SMTP gave up

What a crash or restart does, by where it happens:

* before ``sending`` is committed: nothing reached the server. The row stays ``claimed``
  until its lease (``digest_lease_minutes``) expires; the next run takes it over and sends
  it once. Nothing lost, nothing repeated.
* after ``sent`` is committed: final; no run sends that week again.
* between ``sending`` and ``sent`` (the SMTP server may or may not have accepted it): no
  protocol can tell from our side, so we choose *at least once*, never *lost*: the next run
  after the lease resends it **with the same Message-ID**, and flags the row
  ``possible_duplicate``. The copies are the same message: mail systems that deduplicate by
  Message-ID (Gmail, most IMAP clients' threading) show one, and the flag says so in the
  database. This window is one local UPDATE wide.
* an SMTP failure (after the retries) marks the row ``failed`` with the error: the week's
  digest is not dropped, the next hourly run claims it again (same Message-ID).

Several scheduler processes can run this at once: the unique (subscription_id, week) row
is the arbiter; a process that finds it claimed by a live lease (or row-locked by another
transaction) skips it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import smtplib
import socket
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from email.message import EmailMessage
from typing import Any, cast
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from db.engine import write_connection
from db.subscriptions import (
    DeliveryStatus,
    DigestDelivery,
    Subscription,
    SubscriptionRecord,
    SubscriptionStatus,
    active_subscriptions,
)

from .build import iso_week_label
from .mail import SmtpSendError

__all__ = [
    "Claim",
    "DeliveryOutcome",
    "SendReport",
    "claim_delivery",
    "delivery_row",
    "due_week",
    "mark_failed",
    "mark_sending",
    "mark_sent",
    "new_holder_id",
    "send_due",
]

log = logging.getLogger("gpuscout.digest")

_delivery = cast(sa.Table, DigestDelivery.__table__)
_subscription = cast(sa.Table, Subscription.__table__)


def new_holder_id() -> str:
    """Who holds a claim: host, process and a random part (distinct across restarts)."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def due_week(time_zone: str, now: datetime, *, weekday: int, hour: int) -> str | None:
    """The subscriber's ISO week if its digest is due at ``now``, else ``None``.

    Due once the local (weekday, hour) reaches the configured ones within the local ISO
    week, and until that week ends: a run that was down at the hour catches up later.
    """
    local = now.astimezone(ZoneInfo(time_zone))
    if (local.isoweekday(), local.hour) >= (weekday, hour):
        return iso_week_label(local)
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Claim:
    """This process's reservation of one (subscription, week) digest."""

    delivery_id: int
    subscription_id: int
    week: str
    message_id: str
    holder: str
    attempts: int
    possible_duplicate: bool


def _insert(connection: Connection) -> Any:
    dialect = connection.dialect.name
    if dialect == "postgresql":
        return postgresql.insert(_delivery)
    if dialect == "sqlite":
        return sqlite.insert(_delivery)
    raise NotImplementedError(f"digest delivery needs SQLite or PostgreSQL, not {dialect}")


def claim_delivery(
    engine: Engine,
    subscription_id: int,
    week: str,
    *,
    holder: str,
    now: datetime,
    lease: timedelta,
    message_id: Callable[[], str],
) -> Claim | None:
    """Reserve this week's digest for ``holder``; ``None`` if it is not ours to send.

    Not ours: already sent, held by a live lease, row-locked by another transaction, or the
    subscription is no longer active. ``message_id`` makes the Message-ID of a first claim.
    """
    d = _delivery.c
    with write_connection(engine) as connection:
        status = connection.execute(
            sa.select(_subscription.c.status).where(_subscription.c.id == subscription_id)
        ).scalar_one_or_none()
        if status != SubscriptionStatus.ACTIVE.value:
            return None
        new_id = connection.execute(
            _insert(connection)
            .values(
                subscription_id=subscription_id,
                week=week,
                status=DeliveryStatus.CLAIMED.value,
                message_id=message_id(),
                attempts=1,
                claimed_by=holder,
                claimed_at=now,
                lease_expires_at=now + lease,
                possible_duplicate=False,
            )
            .on_conflict_do_nothing(index_elements=["subscription_id", "week"])
            .returning(d.id, d.message_id)
        ).first()
        if new_id is not None:
            return Claim(new_id.id, subscription_id, week, new_id.message_id, holder, 1, False)
        row = (
            connection.execute(
                sa.select(_delivery)
                .where(d.subscription_id == subscription_id, d.week == week)
                .with_for_update(skip_locked=True)
            )
            .mappings()
            .first()
        )
        if row is None:  # PostgreSQL: another transaction holds the row right now
            return None
        previous = DeliveryStatus(row["status"])
        if previous is DeliveryStatus.SENT:
            return None
        live = row["lease_expires_at"] is not None and row["lease_expires_at"] > now
        if previous in (DeliveryStatus.CLAIMED, DeliveryStatus.SENDING) and live:
            return None
        duplicate = bool(row["possible_duplicate"]) or previous is DeliveryStatus.SENDING
        if previous is DeliveryStatus.SENDING:
            log.warning(
                "digest %s for subscription %s week %s: the previous attempt crashed while "
                "sending; resending with the same Message-ID (possible duplicate)",
                row["message_id"],
                subscription_id,
                week,
            )
        taken = connection.execute(
            sa.update(_delivery)
            .where(d.id == row["id"], d.status == previous.value, d.attempts == row["attempts"])
            .values(
                status=DeliveryStatus.CLAIMED.value,
                claimed_by=holder,
                claimed_at=now,
                lease_expires_at=now + lease,
                attempts=row["attempts"] + 1,
                possible_duplicate=duplicate,
            )
        ).rowcount
        if taken != 1:
            return None
        return Claim(
            row["id"],
            subscription_id,
            week,
            row["message_id"],
            holder,
            row["attempts"] + 1,
            duplicate,
        )


def mark_sending(engine: Engine, claim: Claim, *, now: datetime, lease: timedelta) -> bool:
    """Record "about to hand to SMTP"; False if this process no longer holds the claim."""
    d = _delivery.c
    with write_connection(engine) as connection:
        return (
            connection.execute(
                sa.update(_delivery)
                .where(
                    d.id == claim.delivery_id,
                    d.claimed_by == claim.holder,
                    d.status == DeliveryStatus.CLAIMED.value,
                    d.attempts == claim.attempts,
                )
                .values(
                    status=DeliveryStatus.SENDING.value,
                    sending_at=now,
                    lease_expires_at=now + lease,
                )
            ).rowcount
            == 1
        )


def mark_sent(engine: Engine, claim: Claim, *, now: datetime) -> None:
    """Record "the SMTP server accepted it": final, whoever holds the row now."""
    d = _delivery.c
    with write_connection(engine) as connection:
        connection.execute(
            sa.update(_delivery)
            .where(d.id == claim.delivery_id, d.status != DeliveryStatus.SENT.value)
            .values(
                status=DeliveryStatus.SENT.value,
                sent_at=now,
                lease_expires_at=None,
                last_error=None,
            )
        )


def mark_failed(
    engine: Engine, claim: Claim, error: str, *, now: datetime, maybe_delivered: bool = False
) -> None:
    """Record a failed attempt: claimable again by the next run (same Message-ID)."""
    d = _delivery.c
    values: dict[str, Any] = {
        "status": DeliveryStatus.FAILED.value,
        "lease_expires_at": None,
        "last_error": f"{now.isoformat()} attempt {claim.attempts}: {error}"[:2000],
    }
    if maybe_delivered:
        values["possible_duplicate"] = True
    with write_connection(engine) as connection:
        connection.execute(
            sa.update(_delivery)
            .where(
                d.id == claim.delivery_id,
                d.claimed_by == claim.holder,
                d.attempts == claim.attempts,
                d.status != DeliveryStatus.SENT.value,
            )
            .values(values)
        )


def delivery_row(engine: Engine, subscription_id: int, week: str) -> dict[str, Any] | None:
    """The delivery record of one subscription and week, as a dict (for reports and tests)."""
    d = _delivery.c
    with engine.connect() as connection:
        row = (
            connection.execute(
                sa.select(_delivery).where(d.subscription_id == subscription_id, d.week == week)
            )
            .mappings()
            .first()
        )
    return None if row is None else dict(row)


def _sent_weeks(engine: Engine) -> set[tuple[int, str]]:
    d = _delivery.c
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(d.subscription_id, d.week).where(d.status == DeliveryStatus.SENT.value)
        )
        return {(r.subscription_id, r.week) for r in rows}


# --- one run ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    subscription_id: int
    week: str
    status: str
    """sent | failed | skipped (held elsewhere, already sent) | would_send (dry run)"""
    message_id: str | None = None
    smtp_attempts: int = 0
    error: str | None = None
    possible_duplicate: bool = False


@dataclasses.dataclass(slots=True)
class SendReport:
    outcomes: list[DeliveryOutcome] = dataclasses.field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def sent(self) -> int:
        return self.count("sent")

    @property
    def failed(self) -> int:
        return self.count("failed")


#: Builds the message of one subscription's digest with the given Message-ID.
Render = Callable[[SubscriptionRecord, str], EmailMessage]
#: Hands a message to SMTP (retrying inside); returns the attempts it took.
Transport = Callable[[EmailMessage], int]


def _maybe_delivered(exc: SmtpSendError) -> bool:
    """Whether the failed send could still have reached the server (no reply was read)."""
    cause = exc.__cause__
    return isinstance(cause, (smtplib.SMTPServerDisconnected, TimeoutError))


def send_due(
    engine: Engine,
    *,
    render: Render,
    transport: Transport,
    now: datetime,
    weekday: int,
    hour: int,
    lease: timedelta,
    message_id: Callable[[], str],
    holder: str | None = None,
    dry_run: bool = False,
    subscriptions: list[SubscriptionRecord] | None = None,
) -> SendReport:
    """Send every digest due at ``now`` that no run has sent yet (see the module docstring).

    ``dry_run`` builds the due digests and writes nothing (no claims, no mail).
    """
    holder = holder or new_holder_id()
    report = SendReport()
    sent = _sent_weeks(engine)
    for sub in subscriptions if subscriptions is not None else active_subscriptions(engine):
        week = due_week(sub.time_zone, now, weekday=weekday, hour=hour)
        if week is None or (sub.id, week) in sent:
            continue
        if dry_run:
            render(sub, "<dry-run@gpuscout.invalid>")
            report.outcomes.append(DeliveryOutcome(sub.id, week, "would_send"))
            continue
        claim = claim_delivery(
            engine, sub.id, week, holder=holder, now=now, lease=lease, message_id=message_id
        )
        if claim is None:
            report.outcomes.append(DeliveryOutcome(sub.id, week, "skipped"))
            continue
        report.outcomes.append(_deliver(engine, sub, claim, render, transport, now, lease))
    return report


def _deliver(
    engine: Engine,
    sub: SubscriptionRecord,
    claim: Claim,
    render: Render,
    transport: Transport,
    now: datetime,
    lease: timedelta,
) -> DeliveryOutcome:
    def outcome(status: str, attempts: int = 0, error: str | None = None) -> DeliveryOutcome:
        return DeliveryOutcome(
            sub.id, claim.week, status, claim.message_id, attempts, error, claim.possible_duplicate
        )

    try:
        message = render(sub, claim.message_id)
    except Exception as exc:
        log.exception("digest for subscription %s could not be built", sub.id)
        mark_failed(engine, claim, f"build failed: {exc}", now=now)
        return outcome("failed", error=f"build failed: {exc}")
    if not mark_sending(engine, claim, now=now, lease=lease):
        return outcome("skipped", error="claim lost before sending")
    try:
        attempts = transport(message)
    except SmtpSendError as exc:
        log.error("digest %s to subscription %s not sent: %s", claim.message_id, sub.id, exc)
        mark_failed(engine, claim, str(exc), now=now, maybe_delivered=_maybe_delivered(exc))
        return outcome("failed", exc.attempts, str(exc))
    mark_sent(engine, claim, now=now)
    log.info("digest %s sent to subscription %s (%s)", claim.message_id, sub.id, claim.week)
    return outcome("sent", attempts)
