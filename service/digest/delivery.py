"""Exactly-once weekly delivery: one ``digest_delivery`` row per (subscription, ISO week).

The protocol, per due subscription (each step its own short transaction)::

    check      the stored search validates, else the subscription is marked ``invalid``
               (logged, reported, never tried again) and the run goes on
    claim      INSERT the (subscription, week) row, status ``claimed``, a lease, and a fresh
               Message-ID; or, if the row exists, take it over when it is ``failed`` (and its
               ``retry_at`` has come) or its lease has expired (``SELECT ... FOR UPDATE SKIP
               LOCKED`` on PostgreSQL, a ``BEGIN IMMEDIATE`` transaction on SQLite). The
               Message-ID is kept forever.
    build      render the digest and the MIME message (no side effects)
    sending    UPDATE to ``sending`` (only if this process still holds the claim)
    SMTP       hand the message to the server (retries with backoff inside)
    sent       UPDATE to ``sent`` (only if this process still holds the claim); or
               ``failed`` with the error and a ``retry_at`` if SMTP gave up on a transient
               failure; or ``refused`` (final) if the server refused this message for good

Leases are taken from the clock *when each row is claimed*, not from the run's start, and a
thread renews the lease every third of it from the claim until the row is settled: a run
that takes longer than the lease (many subscribers, a slow SMTP server) keeps every row it
holds, so no second sender takes one over while it is being sent. Every step after the
claim checks the holder and the attempt number; a process that lost its lease (its renewals
failed, e.g. the database was unreachable for longer than the lease) learns it there, says
so in its report and the log, and does not overwrite the new holder's record.

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
* a transient SMTP failure (a 4xx, a dropped connection; after the retries inside one run)
  marks the row ``failed`` with the error and a ``retry_at`` that backs off (the next
  hourly run, then 2, 4, at most 8 hours later): the week's digest is not dropped, a later
  run claims it again (same Message-ID). A permanent refusal of the message (every
  recipient 5xx, or a 5xx to its data) marks it ``refused``: final, never retried, the
  error kept. A 5xx to the session (AUTH, MAIL FROM) is configuration, not this message's
  fault: retried like a 4xx.

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
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from email.message import EmailMessage
from typing import Any, cast
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from gpuscout.db.engine import write_connection
from gpuscout.db.subscriptions import (
    DeliveryStatus,
    DigestDelivery,
    Subscription,
    SubscriptionRecord,
    SubscriptionStatus,
    active_subscriptions,
    mark_subscription_invalid,
)

from .build import iso_week_label
from .mail import SmtpSendError
from .saved_search import CorruptSubscription, load_search

__all__ = [
    "Claim",
    "DeliveryOutcome",
    "LeaseKeeper",
    "SendReport",
    "claim_delivery",
    "deliver_claimed",
    "delivery_row",
    "due_week",
    "mark_failed",
    "mark_sending",
    "mark_sent",
    "new_holder_id",
    "renew_lease",
    "retry_delay",
    "run_clock",
    "send_due",
]

log = logging.getLogger("gpuscout.digest")

_delivery = cast(sa.Table, DigestDelivery.__table__)
_subscription = cast(sa.Table, Subscription.__table__)

#: The first wait before a failed delivery is claimed again; it doubles per attempt.
RETRY_FIRST = timedelta(hours=1)
#: The longest wait between two attempts of one delivery.
RETRY_MAX = timedelta(hours=8)
#: Taken off each wait: a failure is recorded a little after its run started, and the hourly
#: job's run at the hour the wait ends should still take the row.
RETRY_MARGIN = timedelta(minutes=5)
#: Final states: no run claims the row again.
_FINAL = (DeliveryStatus.SENT.value, DeliveryStatus.REFUSED.value)
#: States in which a holder is working on the row.
_HELD = (DeliveryStatus.CLAIMED.value, DeliveryStatus.SENDING.value)


def retry_delay(attempts: int) -> timedelta:
    """How long a delivery that failed on its ``attempts``-th claim waits for the next one:
    with the hourly job, the next attempts come 1, 2, 4 and then every 8 hours later.

    >>> [str(retry_delay(n)) for n in (1, 2, 3, 6)]
    ['0:55:00', '1:55:00', '3:55:00', '7:55:00']
    """
    return min(RETRY_FIRST * 2 ** max(0, min(attempts, 16) - 1), RETRY_MAX) - RETRY_MARGIN


def run_clock(start: datetime) -> Callable[[], datetime]:
    """The time as a run goes on: ``start`` plus the time elapsed since this call.

    Leases come from this clock, never from ``start`` itself; a test that sets the run's
    ``now`` gets a clock that moves on from it at the real pace.
    """
    t0 = time.monotonic()
    return lambda: start + timedelta(seconds=time.monotonic() - t0)


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
        if previous.value in _FINAL:
            return None
        live = row["lease_expires_at"] is not None and row["lease_expires_at"] > now
        if previous.value in _HELD and live:
            return None
        if previous is DeliveryStatus.FAILED and row["retry_at"] and row["retry_at"] > now:
            return None  # backing off after a transient failure
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
                retry_at=None,
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


def _held_by(claim: Claim) -> sa.ColumnElement[bool]:
    """The row is still ``claim``'s: same holder, same attempt, not settled."""
    d = _delivery.c
    return sa.and_(
        d.id == claim.delivery_id,
        d.claimed_by == claim.holder,
        d.attempts == claim.attempts,
        d.status.in_(_HELD),
    )


def renew_lease(engine: Engine, claim: Claim, *, now: datetime, lease: timedelta) -> bool:
    """Extend the lease to ``now + lease``; False if the claim is no longer held."""
    with write_connection(engine) as connection:
        return (
            connection.execute(
                sa.update(_delivery).where(_held_by(claim)).values(lease_expires_at=now + lease)
            ).rowcount
            == 1
        )


def mark_sending(engine: Engine, claim: Claim, *, now: datetime, lease: timedelta) -> bool:
    """Record "about to hand to SMTP"; False if this process no longer holds the claim."""
    d = _delivery.c
    with write_connection(engine) as connection:
        return (
            connection.execute(
                sa.update(_delivery)
                .where(_held_by(claim), d.status == DeliveryStatus.CLAIMED.value)
                .values(
                    status=DeliveryStatus.SENDING.value,
                    sending_at=now,
                    lease_expires_at=now + lease,
                )
            ).rowcount
            == 1
        )


def mark_sent(engine: Engine, claim: Claim, *, now: datetime) -> bool:
    """Record "the SMTP server accepted it"; False if the lease was lost meanwhile.

    Held: the row becomes ``sent``, final. Lost (another process took the row over after
    this lease ran out): the new holder's record is not overwritten while it may be
    sending a copy; if no copy is in flight (``claimed``, not begun, or ``failed``, to be
    retried) the row is settled as ``sent`` now, so that no second copy goes out. Either
    way it is logged.
    """
    d = _delivery.c
    done = {"status": DeliveryStatus.SENT.value, "sent_at": now, "lease_expires_at": None}
    with write_connection(engine) as connection:
        held = connection.execute(
            sa.update(_delivery)
            .where(_held_by(claim), d.status == DeliveryStatus.SENDING.value)
            .values(**done, last_error=None)
        ).rowcount
        if held == 1:
            return True
        settled = connection.execute(
            sa.update(_delivery)
            .where(
                d.id == claim.delivery_id,
                d.status.in_([DeliveryStatus.CLAIMED.value, DeliveryStatus.FAILED.value]),
            )
            .values(
                **done,
                last_error=f"{now.isoformat()} sent by {claim.holder} after its lease was lost",
            )
        ).rowcount
    log.warning(
        "digest %s for subscription %s week %s: sent, but the lease was lost meanwhile%s",
        claim.message_id,
        claim.subscription_id,
        claim.week,
        "; the row's new holder had no copy in flight and will send none"
        if settled
        else "; another process holds the row (a second copy, same Message-ID, is possible)",
    )
    return False


def mark_failed(
    engine: Engine,
    claim: Claim,
    error: str,
    *,
    now: datetime,
    maybe_delivered: bool = False,
    permanent: bool = False,
) -> bool:
    """Record a failed attempt; False if this process no longer holds the claim.

    Transient: ``failed``, claimable again from ``retry_at`` (:func:`retry_delay`), same
    Message-ID. ``permanent`` (the server refused this message for good): ``refused``,
    final.
    """
    values: dict[str, Any] = {
        "status": (DeliveryStatus.REFUSED if permanent else DeliveryStatus.FAILED).value,
        "lease_expires_at": None,
        "retry_at": None if permanent else now + retry_delay(claim.attempts),
        "last_error": f"{now.isoformat()} attempt {claim.attempts}: {error}"[:2000],
    }
    if maybe_delivered:
        values["possible_duplicate"] = True
    with write_connection(engine) as connection:
        held = (
            connection.execute(sa.update(_delivery).where(_held_by(claim)).values(values)).rowcount
            == 1
        )
    if not held:
        log.warning(
            "digest %s for subscription %s week %s: failed (%s), but the lease was lost "
            "meanwhile; the row's new holder's record stands",
            claim.message_id,
            claim.subscription_id,
            claim.week,
            error,
        )
    return held


class LeaseKeeper:
    """Renews a claim's lease every third of it, from a thread, until the row is settled.

    It stops once a renewal finds the claim gone (the steps after it say so: each checks
    the holder). A renewal that fails on a database error is retried at the next tick (the
    lease has two more thirds to run).
    """

    def __init__(
        self, engine: Engine, claim: Claim, clock: Callable[[], datetime], lease: timedelta
    ) -> None:
        self._stop = threading.Event()
        self._args = (engine, claim, clock, lease)
        self._thread = threading.Thread(
            target=self._run, name=f"digest-lease-{claim.delivery_id}", daemon=True
        )

    def _run(self) -> None:
        engine, claim, clock, lease = self._args
        while not self._stop.wait(lease.total_seconds() / 3):
            try:
                if not renew_lease(engine, claim, now=clock(), lease=lease):
                    return
            except Exception:
                log.exception("renewing the lease of digest %s failed", claim.message_id)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


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


def _final_weeks(engine: Engine) -> set[tuple[int, str]]:
    """(subscription, week) pairs no run sends again: sent, or refused for good."""
    d = _delivery.c
    with engine.connect() as connection:
        rows = connection.execute(sa.select(d.subscription_id, d.week).where(d.status.in_(_FINAL)))
        return {(r.subscription_id, r.week) for r in rows}


# --- one run ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    subscription_id: int
    week: str
    status: str
    """sent | failed (retried later) | refused (for good) | invalid (its stored search does
    not validate: marked, skipped) | skipped (held elsewhere, already sent) | would_send (dry
    run)"""
    message_id: str | None = None
    smtp_attempts: int = 0
    error: str | None = None
    possible_duplicate: bool = False
    lease_lost: bool = False
    """another process took the row over while this one worked on it (see the log)"""


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
        """Deliveries that did not go out this run: failed (retried later) or refused."""
        return self.count("failed") + self.count("refused")


#: Builds the message of one subscription's digest with the given Message-ID.
Render = Callable[[SubscriptionRecord, str], EmailMessage]
#: Hands a message to SMTP (retrying inside); returns the attempts it took.
Transport = Callable[[EmailMessage], int]
#: Checks a stored subscription before anything is claimed; raises CorruptSubscription.
Check = Callable[[SubscriptionRecord], object]


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
    clock: Callable[[], datetime] | None = None,
    check: Check = load_search,
) -> SendReport:
    """Send every digest due at ``now`` that no run has sent yet (see the module docstring).

    ``now`` decides which weeks are due; leases and records take the time from ``clock``
    (default: :func:`run_clock` from ``now``). ``dry_run`` builds the due digests and writes
    nothing (no claims, no mail, no marks); a digest that cannot be built is reported, not
    raised, in both modes. ``check`` runs first: a subscription it finds corrupt is marked
    ``invalid`` (not in a dry run) and reported, and the run goes on.
    """
    holder = holder or new_holder_id()
    clock = clock or run_clock(now)
    report = SendReport()
    final = _final_weeks(engine)
    for sub in subscriptions if subscriptions is not None else active_subscriptions(engine):
        week = due_week(sub.time_zone, now, weekday=weekday, hour=hour)
        if week is None or (sub.id, week) in final:
            continue
        try:
            check(sub)
        except CorruptSubscription as exc:
            log.error("%s; %s", exc, "skipped" if dry_run else "marked invalid, skipped")
            if not dry_run:
                mark_subscription_invalid(engine, sub.id, exc.problem)
            report.outcomes.append(DeliveryOutcome(sub.id, week, "invalid", error=exc.problem))
            continue
        if dry_run:
            report.outcomes.append(_dry_run(sub, week, render))
            continue
        claim = claim_delivery(
            engine, sub.id, week, holder=holder, now=clock(), lease=lease, message_id=message_id
        )
        if claim is None:
            report.outcomes.append(DeliveryOutcome(sub.id, week, "skipped"))
            continue
        with LeaseKeeper(engine, claim, clock, lease):
            report.outcomes.append(
                deliver_claimed(engine, sub, claim, render, transport, clock, lease)
            )
    return report


def _dry_run(sub: SubscriptionRecord, week: str, render: Render) -> DeliveryOutcome:
    try:
        render(sub, "<dry-run@gpuscout.invalid>")
    except Exception as exc:
        log.exception("digest for subscription %s could not be built", sub.id)
        return DeliveryOutcome(sub.id, week, "failed", error=f"build failed: {exc}")
    return DeliveryOutcome(sub.id, week, "would_send")


def deliver_claimed(
    engine: Engine,
    sub: SubscriptionRecord,
    claim: Claim,
    render: Render,
    transport: Transport,
    clock: Callable[[], datetime],
    lease: timedelta,
) -> DeliveryOutcome:
    def outcome(
        status: str, attempts: int = 0, error: str | None = None, *, held: bool = True
    ) -> DeliveryOutcome:
        return DeliveryOutcome(
            sub.id,
            claim.week,
            status,
            claim.message_id,
            attempts,
            error,
            claim.possible_duplicate,
            lease_lost=not held,
        )

    try:
        message = render(sub, claim.message_id)
    except Exception as exc:
        log.exception("digest for subscription %s could not be built", sub.id)
        held = mark_failed(engine, claim, f"build failed: {exc}", now=clock())
        return outcome("failed", error=f"build failed: {exc}", held=held)
    if not mark_sending(engine, claim, now=clock(), lease=lease):
        return outcome("skipped", error="claim lost before sending", held=False)
    try:
        attempts = transport(message)
    except SmtpSendError as exc:
        status = "refused" if exc.permanent else "failed"
        log.error(
            "digest %s to subscription %s not sent (%s): %s",
            claim.message_id,
            sub.id,
            "refused for good, not retried" if exc.permanent else "retried later",
            exc,
        )
        held = mark_failed(
            engine,
            claim,
            str(exc),
            now=clock(),
            maybe_delivered=_maybe_delivered(exc),
            permanent=exc.permanent,
        )
        return outcome(status, exc.attempts, str(exc), held=held)
    held = mark_sent(engine, claim, now=clock())
    log.info("digest %s sent to subscription %s (%s)", claim.message_id, sub.id, claim.week)
    return outcome("sent", attempts, None if held else "lease lost while sending", held=held)
