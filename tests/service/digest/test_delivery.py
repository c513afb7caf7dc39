"""Exactly once per (subscription, ISO week): crashes, restarts, SMTP refusals, concurrency."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from email.message import EmailMessage

import pytest
from sqlalchemy.engine import Engine

from gpuscout.db.current import CurrentState
from gpuscout.service.digest.delivery import (
    Claim,
    SendReport,
    claim_delivery,
    delivery_row,
    due_week,
    mark_failed,
    mark_sending,
    mark_sent,
    renew_lease,
)
from gpuscout.service.digest.mail import SmtpConfig, new_message_id, parse_sender, send_message
from gpuscout.service.digest.schedule import run_digests
from gpuscout.service.digest.subscriptions import SubscriptionManager, SubscriptionRequest
from gpuscout.service.settings import Settings

from .conftest import RecordingHandler
from .helpers import JOB, NOW, REQUIREMENT, current_from_db, link_in, seed_history, token_of

LEASE = timedelta(minutes=15)
WEEK = "2025-W11"


class Crash(BaseException):
    """A process dying: not an Exception, so nothing in the code under test catches it."""


@pytest.fixture
def active(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> tuple[int, CurrentState]:
    """One confirmed subscription (the confirmation mail removed from the inbox)."""
    handler, _ = smtp_server
    seed_history(engine)
    manager = SubscriptionManager(settings, engine, _transport(settings), clock=lambda: NOW)
    record = manager.subscribe(
        SubscriptionRequest(email="ada@example.com", name="H100", requirement=REQUIREMENT, job=JOB)
    )
    manager.confirm(token_of(link_in(handler.messages.pop(), "/v1/subscriptions/confirm")))
    return record.id, current_from_db(engine)


def _transport(settings: Settings) -> Callable[[EmailMessage], int]:
    """The real SMTP path without the backoff waits."""
    fast = dataclasses.replace(SmtpConfig.from_settings(settings), backoff_s=0.01)
    return lambda message: send_message(message, fast, sleep=lambda _s: None)


def test_restart_after_claim_before_send_sends_once(
    settings: Settings,
    engine: Engine,
    active: tuple[int, CurrentState],
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _ = smtp_server
    sub_id, current = active
    sender = parse_sender(settings.mail_from)
    # process 1 records its claim and dies before sending
    claim = claim_delivery(
        engine,
        sub_id,
        WEEK,
        holder="p1",
        now=NOW,
        lease=LEASE,
        message_id=lambda: new_message_id(sender),
    )
    assert claim is not None
    # process 2 starts at once: the lease is live, it must not send
    report = run_digests(
        settings,
        engine,
        now=NOW + timedelta(minutes=5),
        current=current,
        transport=_transport(settings),
    )
    assert [o.status for o in report.outcomes] == ["skipped"] and handler.messages == []
    # after the lease: sent once, with the Message-ID recorded before the crash
    report = run_digests(
        settings, engine, now=NOW + LEASE * 2, current=current, transport=_transport(settings)
    )
    assert report.sent == 1 and len(handler.messages) == 1
    assert handler.messages[0]["Message-ID"] == claim.message_id
    row = delivery_row(engine, sub_id, WEEK)
    assert row is not None and row["status"] == "sent" and not row["possible_duplicate"]
    assert row["attempts"] == 2
    # and never again that week
    run_digests(
        settings,
        engine,
        now=NOW + timedelta(days=2),
        current=current,
        transport=_transport(settings),
    )
    assert len(handler.messages) == 1


def test_crash_between_sending_and_sent_is_detectable(
    settings: Settings,
    engine: Engine,
    active: tuple[int, CurrentState],
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _ = smtp_server
    sub_id, current = active
    real = _transport(settings)

    def send_then_die(message: EmailMessage) -> int:
        real(message)
        raise Crash  # the server accepted it; "sent" is never recorded

    with pytest.raises(Crash):
        run_digests(settings, engine, now=NOW, current=current, transport=send_then_die)
    row = delivery_row(engine, sub_id, WEEK)
    assert row is not None and row["status"] == "sending"
    assert len(handler.messages) == 1
    first_id = handler.messages[0]["Message-ID"]
    assert first_id == row["message_id"]

    # the restarted scheduler resends it (never lost) with the SAME Message-ID, flagged
    report = run_digests(settings, engine, now=NOW + LEASE * 2, current=current, transport=real)
    assert report.sent == 1 and report.outcomes[0].possible_duplicate
    assert [m["Message-ID"] for m in handler.messages] == [first_id, first_id]
    row = delivery_row(engine, sub_id, WEEK)
    assert row is not None and row["status"] == "sent" and row["possible_duplicate"]
    # and that is the end of it
    run_digests(settings, engine, now=NOW + timedelta(days=1), current=current, transport=real)
    assert len(handler.messages) == 2


def test_smtp_refuses_then_accepts(
    settings: Settings,
    engine: Engine,
    active: tuple[int, CurrentState],
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _ = smtp_server
    _sub_id, current = active
    handler.refuse = 1  # 451 once
    report = run_digests(settings, engine, now=NOW, current=current, transport=_transport(settings))
    assert report.sent == 1 and report.outcomes[0].smtp_attempts == 2
    assert handler.refused == 1 and len(handler.messages) == 1


def test_smtp_failure_leaves_the_week_claimable(
    settings: Settings,
    engine: Engine,
    active: tuple[int, CurrentState],
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _ = smtp_server
    sub_id, current = active
    handler.refuse = 10  # more than smtp_attempts (3)
    report = run_digests(settings, engine, now=NOW, current=current, transport=_transport(settings))
    assert report.failed == 1 and report.outcomes[0].smtp_attempts == 3
    assert "451" in (report.outcomes[0].error or "")
    row = delivery_row(engine, sub_id, WEEK)
    assert row is not None and row["status"] == "failed" and "451" in row["last_error"]
    message_id = row["message_id"]
    handler.refuse = 0
    report = run_digests(
        settings,
        engine,
        now=NOW + timedelta(hours=1),
        current=current,
        transport=_transport(settings),
    )
    assert report.sent == 1
    assert [m["Message-ID"] for m in handler.messages] == [message_id]


def test_concurrent_runs_send_one_digest(
    settings: Settings,
    engine: Engine,
    active: tuple[int, CurrentState],
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _ = smtp_server
    _sub_id, current = active
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait()
            run_digests(settings, engine, now=NOW, current=current, transport=_transport(settings))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(handler.messages) == 1


def test_a_lost_claim_is_not_sent(
    settings: Settings,
    engine: Engine,
    active: tuple[int, CurrentState],
) -> None:
    sub_id, _ = active
    mid = iter(["<a@x.test>", "<b@x.test>"])
    first = claim_delivery(
        engine, sub_id, WEEK, holder="p1", now=NOW, lease=LEASE, message_id=lambda: next(mid)
    )
    assert first is not None
    later = NOW + LEASE * 2
    second = claim_delivery(
        engine, sub_id, WEEK, holder="p2", now=later, lease=LEASE, message_id=lambda: next(mid)
    )
    assert second is not None and second.message_id == first.message_id == "<a@x.test>"
    assert not mark_sending(engine, first, now=later, lease=LEASE)  # p1 woke up too late
    assert mark_sending(engine, second, now=later, lease=LEASE)


@pytest.mark.parametrize(
    ("zone", "utc_hour", "expected"),
    [
        ("UTC", 7, None),
        ("UTC", 8, "2025-W11"),
        ("America/New_York", 11, None),  # 07:00 EDT
        ("America/New_York", 12, "2025-W11"),  # 08:00 EDT
        ("Asia/Tokyo", 0, "2025-W11"),  # 09:00 JST, Monday
    ],
)
def test_due_week(zone: str, utc_hour: int, expected: str | None) -> None:
    assert due_week(zone, NOW.replace(hour=utc_hour), weekday=1, hour=8) == expected


def _confirmed(settings: Settings, engine: Engine, handler: RecordingHandler, n: int) -> list[int]:
    """``n`` confirmed subscriptions, the confirmation mails removed from the inbox."""
    manager = SubscriptionManager(settings, engine, _transport(settings), clock=lambda: NOW)
    ids = []
    for i in range(n):
        record = manager.subscribe(
            SubscriptionRequest(
                email=f"sub{i}@example.com", name=f"H100 {i}", requirement=REQUIREMENT, job=JOB
            )
        )
        manager.confirm(token_of(link_in(handler.messages.pop(), "/v1/subscriptions/confirm")))
        ids.append(record.id)
    handler.envelopes.clear()
    return ids


def test_a_run_outlasting_its_lease_and_a_second_sender_deliver_exactly_once(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    """The server holds the first run's first message past the lease; a second sender starts
    then and runs to its end before the server answers. The lease was taken when that row
    was claimed and is renewed while it is sent, so the second sender leaves it alone and
    sends the others; the first run then finds them sent. One digest per subscriber.
    (Before #14 the lease ran from the run's start, unrenewed: the second sender took the
    held row over and sent it a second time.)"""
    handler, _ = smtp_server
    seed_history(engine)
    current = current_from_db(engine)
    ids = _confirmed(settings, engine, handler, 3)
    lease_s = 1.5
    slow = settings.model_copy(update={"digest_lease_minutes": lease_s / 60, "smtp_timeout_s": 60})
    handler.hold = 1
    started = time.monotonic()
    reports: dict[str, SendReport] = {}
    errors: list[BaseException] = []

    def run(holder: str) -> None:
        try:
            now = NOW + timedelta(seconds=time.monotonic() - started)  # one clock for both
            reports[holder] = run_digests(
                slow, engine, now=now, current=current, transport=_transport(slow), holder=holder
            )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    first = threading.Thread(target=run, args=("p1",))
    first.start()
    try:
        assert handler.held.wait(30), "the first message never reached the server"
        time.sleep(1.5 * lease_s)  # the first lease, unrenewed, would be over
        run("p2")
    finally:
        handler.release.set()
        first.join()
    assert errors == []
    assert time.monotonic() - started > 1.5 * lease_s  # the first run did outlast its lease
    assert sorted(rcpt for _, (rcpt,) in handler.envelopes) == [
        f"sub{i}@example.com" for i in range(3)
    ]
    assert len({m["Message-ID"] for m in handler.messages}) == 3
    assert [o.status for o in reports["p2"].outcomes] == ["skipped", "sent", "sent"]
    assert [o.status for o in reports["p1"].outcomes] == ["sent", "skipped", "skipped"]
    outcomes = [o for r in reports.values() for o in r.outcomes]
    assert not any(o.lease_lost or o.possible_duplicate for o in outcomes)
    for sub_id in ids:
        row = delivery_row(engine, sub_id, WEEK)
        assert row is not None and row["status"] == "sent" and row["attempts"] == 1


@pytest.mark.parametrize("refusal", ["rcpt", "data"])
def test_a_permanent_refusal_is_final(
    refusal: str,
    settings: Settings,
    engine: Engine,
    active: tuple[int, CurrentState],
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _ = smtp_server
    sub_id, current = active
    if refusal == "rcpt":
        handler.unknown.add("ada@example.com")
    else:
        handler.refuse, handler.refuse_reply = 10, "554 5.7.1 Message rejected"
    report = run_digests(settings, engine, now=NOW, current=current, transport=_transport(settings))
    assert [o.status for o in report.outcomes] == ["refused"] and report.failed == 1
    assert report.outcomes[0].smtp_attempts == 1  # a 5xx is not retried inside the run
    row = delivery_row(engine, sub_id, WEEK)
    assert row is not None and row["status"] == "refused" and "55" in row["last_error"]
    handler.unknown.clear()
    handler.refuse = 0
    for hours in (1, 2, 24):  # nor by any later run that week
        later = run_digests(
            settings,
            engine,
            now=NOW + timedelta(hours=hours),
            current=current,
            transport=_transport(settings),
        )
        assert later.outcomes == []
    assert handler.messages == []


def test_a_transient_failure_is_retried_with_backoff(
    settings: Settings,
    engine: Engine,
    active: tuple[int, CurrentState],
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _ = smtp_server
    sub_id, current = active
    handler.refuse = 100  # 451 to every attempt
    send = _transport(settings)
    at = [NOW]
    attempts_at: list[timedelta] = []
    while at[0] < NOW + timedelta(hours=7):
        report = run_digests(settings, engine, now=at[0], current=current, transport=send)
        if report.outcomes and report.outcomes[0].status == "failed":
            attempts_at.append(at[0] - NOW)
        else:
            assert [o.status for o in report.outcomes] == ["skipped"]
        at[0] += timedelta(hours=1)  # the hourly job
    assert [int(a / timedelta(hours=1)) for a in attempts_at] == [0, 1, 3]  # waits 1, 2, 4 h
    row = delivery_row(engine, sub_id, WEEK)
    assert row is not None and row["status"] == "failed" and row["attempts"] == 3
    handler.refuse = 0
    report = run_digests(
        settings, engine, now=NOW + timedelta(hours=12), current=current, transport=send
    )
    assert report.sent == 1 and len(handler.messages) == 1


LATER = NOW + LEASE * 2


def _taken_over(engine: Engine, sub_id: int) -> tuple[Claim, Claim]:
    """p1 claims and begins sending, stalls past its lease, and p2 takes the row over
    (flagged: p1's copy may have gone out). Returns both claims."""
    mid = iter(["<a@x.test>", "<b@x.test>"])
    first = claim_delivery(
        engine, sub_id, WEEK, holder="p1", now=NOW, lease=LEASE, message_id=lambda: next(mid)
    )
    assert first is not None and mark_sending(engine, first, now=NOW, lease=LEASE)
    second = claim_delivery(
        engine, sub_id, WEEK, holder="p2", now=LATER, lease=LEASE, message_id=lambda: next(mid)
    )
    assert second is not None and second.possible_duplicate
    return first, second


def test_a_lost_lease_is_reported_and_the_new_holder_is_not_overwritten(
    settings: Settings, engine: Engine, active: tuple[int, CurrentState]
) -> None:
    sub_id, _ = active
    first, second = _taken_over(engine, sub_id)
    # p1's send did go through: it says the lease was lost, and settles the week so that
    # p2, which has not begun sending, does not send a second copy
    assert not mark_sent(engine, first, now=LATER)
    assert not mark_sending(engine, second, now=LATER, lease=LEASE)
    row = delivery_row(engine, sub_id, WEEK)
    assert row is not None and row["status"] == "sent" and "lease was lost" in row["last_error"]
    # a failure reported by a holder that lost the row changes nothing
    assert not mark_failed(engine, first, "451 late", now=LATER)
    assert not mark_failed(engine, second, "451 late", now=LATER)
    assert not renew_lease(engine, second, now=LATER, lease=LEASE)
    row = delivery_row(engine, sub_id, WEEK)
    assert row is not None and row["status"] == "sent"


def test_a_holder_whose_row_is_being_sent_by_another_keeps_its_hands_off(
    settings: Settings, engine: Engine, active: tuple[int, CurrentState]
) -> None:
    sub_id, _ = active
    first, second = _taken_over(engine, sub_id)
    assert mark_sending(engine, second, now=LATER, lease=LEASE)
    assert not mark_sent(engine, first, now=LATER)  # p2 is sending: its record stands
    row = delivery_row(engine, sub_id, WEEK)
    assert row is not None and (row["status"], row["claimed_by"]) == ("sending", "p2")
    assert mark_sent(engine, second, now=LATER)
