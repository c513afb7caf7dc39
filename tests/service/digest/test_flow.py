"""End to end through a real SMTP server: subscribe, confirm, digest, unsubscribe."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from gpuscout.service.digest.limits import SubscribeRateLimited
from gpuscout.service.digest.schedule import run_digests, smtp_transport
from gpuscout.service.digest.subscriptions import SubscriptionManager, SubscriptionRequest
from gpuscout.service.settings import Settings

from .conftest import RecordingHandler
from .helpers import JOB, NOW, REQUIREMENT, current_from_db, link_in, seed_history, token_of


@pytest.fixture
def manager(settings: Settings, engine: Engine) -> SubscriptionManager:
    return SubscriptionManager(settings, engine, smtp_transport(settings), clock=lambda: NOW)


def _subscribe(manager: SubscriptionManager, email: str = "Ada@Example.com") -> int:
    record = manager.subscribe(
        SubscriptionRequest(
            email=email, name="H100 weekly", time_zone="UTC", requirement=REQUIREMENT, job=JOB
        )
    )
    return record.id


def test_subscribe_confirm_digest_unsubscribe(
    settings: Settings,
    engine: Engine,
    manager: SubscriptionManager,
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _port = smtp_server
    seed_history(engine)
    current = current_from_db(engine)

    _subscribe(manager)
    # only the confirmation mail goes out, and no digest before confirmation
    assert len(handler.messages) == 1
    confirmation = handler.messages[0]
    assert confirmation["To"] == "Ada@example.com"
    assert confirmation["List-Unsubscribe"] is None
    report = run_digests(settings, engine, now=NOW, current=current)
    assert report.outcomes == [] and len(handler.messages) == 1

    # follow the confirmation link (through the token functions, as the API does)
    record = manager.confirm(token_of(link_in(confirmation, "/v1/subscriptions/confirm")))
    assert record.status.value == "active"

    report = run_digests(settings, engine, now=NOW, current=current)
    assert (report.sent, report.failed) == (1, 0)
    assert len(handler.messages) == 2
    digest = handler.messages[1]
    assert handler.envelopes[1] == ("digest@gpuscout.test", ["Ada@example.com"])

    # headers
    assert digest["From"] == "gpuscout digest <digest@gpuscout.test>"
    assert digest["To"] == "Ada@example.com"
    assert "H100 weekly" not in digest["Subject"] and "2025-W11" in digest["Subject"]
    assert re.fullmatch(r"<[^<>@\s]+@gpuscout\.test>", digest["Message-ID"])
    assert report.outcomes[0].message_id == digest["Message-ID"]
    unsubscribe = digest["List-Unsubscribe"]
    assert re.fullmatch(
        r"<https://gpuscout\.test/v1/subscriptions/unsubscribe\?token=\S+>", unsubscribe
    )
    assert digest["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"

    # structure: alternative(text, related(html, png)), the png referenced by the html
    assert digest.get_content_type() == "multipart/alternative"
    text_part, related = digest.get_payload()  # type: ignore[misc]
    assert text_part.get_content_type() == "text/plain"
    assert related.get_content_type() == "multipart/related"
    html_part, image = related.get_payload()
    assert html_part.get_content_type() == "text/html"
    assert image.get_content_type() == "image/png"
    assert image.get_content().startswith(b"\x89PNG\r\n\x1a\n")
    cid = image["Content-ID"].strip("<>")
    html = html_part.get_content()
    assert f'src="cid:{cid}"' in html

    # content: top offers, the week's changes, the stale provider
    text = text_part.get_content()
    for needle in ("alpha", "Cheaper (1)", "Dearer (1)", "New (1)", "Gone (1)", "delta"):
        assert needle in text, needle
    assert "$20.00 -> $18.00/h (-10.0%)" in text
    assert "STALE DATA" in text and "Stale data." in html
    assert "<link" not in html and "<script" not in html and "http://" not in html.split("cid:")[0]

    # the same week is never sent twice
    again = run_digests(settings, engine, now=NOW + timedelta(hours=1), current=current)
    assert again.sent == 0 and len(handler.messages) == 2

    # one-click unsubscribe through the token in the header
    manager.unsubscribe(token_of(unsubscribe.strip("<>")))
    next_week = run_digests(settings, engine, now=NOW + timedelta(days=7), current=current)
    assert next_week.outcomes == [] and len(handler.messages) == 2


def test_digest_goes_out_at_the_subscribers_local_hour(
    settings: Settings,
    engine: Engine,
    manager: SubscriptionManager,
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _ = smtp_server
    record = manager.subscribe(
        SubscriptionRequest(
            email="tokyo@example.com",
            name="JP",
            time_zone="Asia/Tokyo",
            requirement=REQUIREMENT,
            job=JOB,
        )
    )
    manager.confirm(token_of(link_in(handler.messages[0], "/v1/subscriptions/confirm")))
    current = current_from_db(engine)
    # Sunday 22:00 UTC = Monday 07:00 in Tokyo: not yet
    sunday = NOW.replace(day=9, hour=22)
    assert run_digests(settings, engine, now=sunday, current=current).outcomes == []
    # Sunday 23:30 UTC = Monday 08:30 in Tokyo: due, in Tokyo's ISO week 11
    report = run_digests(settings, engine, now=sunday.replace(hour=23, minute=30), current=current)
    assert [(o.subscription_id, o.week, o.status) for o in report.outcomes] == [
        (record.id, "2025-W11", "sent")
    ]


def test_dry_run_sends_and_records_nothing(
    settings: Settings,
    engine: Engine,
    manager: SubscriptionManager,
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _ = smtp_server
    _subscribe(manager)
    manager.confirm(token_of(link_in(handler.messages[0], "/v1/subscriptions/confirm")))
    current = current_from_db(engine)
    report = run_digests(settings, engine, now=NOW, current=current, dry_run=True)
    assert [o.status for o in report.outcomes] == ["would_send"]
    assert len(handler.messages) == 1
    assert run_digests(settings, engine, now=NOW, current=current).sent == 1


def test_one_address_gets_a_bounded_number_of_confirmation_mails(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    """Each request mails the address given: a cap per address and day keeps gpuscout from
    being used to flood a stranger's inbox."""
    handler, _port = smtp_server
    limited = settings.model_copy(update={"subscriptions_per_address_per_day": 2})
    now = [NOW]
    manager = SubscriptionManager(limited, engine, smtp_transport(limited), clock=lambda: now[0])
    _subscribe(manager)
    now[0] += timedelta(hours=1)
    _subscribe(manager, email="ADA@example.com")  # one inbox, whatever the case
    now[0] += timedelta(hours=1)
    with pytest.raises(SubscribeRateLimited, match="2 subscription request") as caught:
        _subscribe(manager)
    assert caught.value.retry_after_s == 22 * 3600  # the first request leaves the window
    assert len(handler.messages) == 2  # nothing sent for the refused one
    _subscribe(manager, email="grace@example.com")  # other addresses are not held back
    now[0] = NOW + timedelta(hours=24)
    _subscribe(manager)  # a day after the first, the window holds one request again
    assert len(handler.messages) == 4
