"""Alerts end to end on SQLite and PostgreSQL: created with double opt-in, evaluated after
snapshots, mailed through a real SMTP server and called on a real local HTTP server."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import timedelta
from decimal import Decimal
from email.message import EmailMessage
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from sqlalchemy.engine import Engine

from gpuscout.db.alerts import firings, get_alert, webhooks_of
from gpuscout.pricing import Requirement
from gpuscout.service.alerts.condition import AlertCondition
from gpuscout.service.alerts.deliver import deliver_firings, hook_label, mail_label
from gpuscout.service.alerts.evaluate import evaluate_alerts
from gpuscout.service.alerts.manager import AlertLimitExceeded, AlertRequest, create_alert
from gpuscout.service.alerts.run import AlertRunReport, run_alerts
from gpuscout.service.alerts.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER
from gpuscout.service.digest.delivery import claim_delivery, delivery_row, mark_sending
from gpuscout.service.digest.schedule import smtp_transport
from gpuscout.service.digest.subscriptions import SubscriptionManager
from gpuscout.service.settings import Settings
from tests.db.factories import T0

from .conftest import RecordingHandler, WebhookServer, state

H100x8 = Requirement(gpus=("H100",), min_gpus=8)
BELOW = AlertCondition(kind="below", threshold=Decimal("2.20"))


def _token(message: EmailMessage) -> str:
    body = message.get_body(("plain",))
    assert body is not None
    match = re.search(r"token=(\S+)", body.get_content())
    assert match
    return unquote(match.group(1))


def _alert_mails(handler: RecordingHandler) -> list[EmailMessage]:
    return [m for m in handler.messages if "List-Unsubscribe" in m]


def _create(
    settings: Settings,
    engine: Engine,
    handler: RecordingHandler,
    condition: AlertCondition = BELOW,
    **fields: Any,
) -> int:
    """An alert confirmed through the link of its confirmation mail; its id."""
    manager = SubscriptionManager(settings, engine, smtp_transport(settings), clock=lambda: T0)
    request = AlertRequest(
        email="ada@example.com", name="8x H100", requirement=H100x8, condition=condition, **fields
    )
    created = create_alert(manager, request)
    confirmation = handler.messages[-1]
    assert "price alert" in str(confirmation["Subject"])
    assert get_alert(engine, created.alert_id) is not None
    manager.confirm(_token(confirmation))
    return created.alert_id


def _run(
    settings: Settings, engine: Engine, hours: float, *prices: str, **kw: Any
) -> AlertRunReport:
    with httpx.Client(timeout=5) as http:
        return run_alerts(
            settings,
            engine,
            now=T0 + timedelta(hours=hours),
            current=state(*prices, **kw),
            transport=smtp_transport(settings),
            http=http,
            sleep=lambda _s: None,
        )


def test_a_crossing_fires_once_with_the_best_offer_and_its_factors(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    alert_id = _create(settings, engine, handler)
    assert len(_run(settings, engine, 1, "2.30").evaluation.fired) == 0
    report = _run(settings, engine, 2, "2.40", "2.10")
    assert [f.seq for f in report.evaluation.fired] == [1]
    assert len(_run(settings, engine, 3, "2.10").evaluation.fired) == 0  # still below: once
    mails = _alert_mails(handler)
    assert len(mails) == 1
    text = mails[0].get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "USD per GPU-hour at or below 2.20" in text
    assert "value now: 2.1" in text
    assert "8x H100-SXM5-80GB at alpha" in text
    assert "x MFU" in text and "scaling" in text
    assert "/v1/alerts/" in text and "/v1/subscriptions/unsubscribe?token=" in text
    assert mails[0]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    (firing,) = firings(engine, alert_id)
    assert firing.value == pytest.approx(2.10)
    assert json.loads(firing.offer_json)["offer_id"] == "o1"
    assert firing.settled


def test_a_wobble_inside_the_band_does_not_refire_and_rearming_works(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    alert_id = _create(settings, engine, handler, quiet_minutes=0)
    assert len(_run(settings, engine, 1, "2.10").evaluation.fired) == 1
    # 2.20 x (1 + 5 %) = 2.31: below it the alert stays disarmed
    for hour, price in ((2, "2.25"), (3, "2.15"), (4, "2.30"), (5, "2.19")):
        report = _run(settings, engine, hour, price)
        assert (len(report.evaluation.fired), report.evaluation.rearmed) == (0, 0), price
    assert _run(settings, engine, 6, "2.35").evaluation.rearmed == 1
    assert get_alert(engine, alert_id).armed  # type: ignore[union-attr]
    assert [f.seq for f in _run(settings, engine, 7, "2.05").evaluation.fired] == [2]
    assert len(_alert_mails(handler)) == 2


def test_a_quiet_period_holds_a_rearmed_alert_back(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    _create(settings, engine, handler, quiet_minutes=120)
    assert len(_run(settings, engine, 1, "2.10").evaluation.fired) == 1
    assert _run(settings, engine, 1.5, "2.50").evaluation.rearmed == 1
    assert _run(settings, engine, 2, "2.10").evaluation.quiet == 1  # 60 min after: quiet
    assert len(_run(settings, engine, 3.5, "2.10").evaluation.fired) == 1  # past 120 min
    assert len(_alert_mails(handler)) == 2


def test_comes_into_stock(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    _create(settings, engine, handler, AlertCondition(kind="in_stock"), quiet_minutes=0)
    assert len(_run(settings, engine, 1, "2.10", available=False).evaluation.fired) == 0
    assert len(_run(settings, engine, 2, "2.10", available=True).evaluation.fired) == 1
    assert _run(settings, engine, 3, "2.10", available=False).evaluation.rearmed == 1
    assert len(_alert_mails(handler)) == 1


def test_drop_from_the_seven_day_median(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    settings = settings.model_copy(update={"alert_drop_min_observations": 3})
    condition = AlertCondition(kind="drop", drop_pct=10)
    _create(settings, engine, handler, condition, quiet_minutes=0)
    for hour in (1, 2, 3):  # the baseline: a median of 2.50
        assert len(_run(settings, engine, hour, "2.50").evaluation.fired) == 0
    assert len(_run(settings, engine, 4, "2.30").evaluation.fired) == 0  # 8 % below
    (firing,) = _run(settings, engine, 5, "2.20").evaluation.fired  # 12 % below
    assert firing.baseline == pytest.approx(2.50)


def test_a_restart_between_sending_and_sent_does_not_duplicate(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    alert_id = _create(settings, engine, handler)
    alert = get_alert(engine, alert_id)
    assert alert is not None
    now = T0 + timedelta(hours=1)
    (firing,) = evaluate_alerts(settings, engine, state("2.10"), now=now).fired
    lease = timedelta(minutes=settings.digest_lease_minutes)
    # a scheduler claims the mail, records "sending" and dies before "sent"
    claim = claim_delivery(
        engine,
        alert.subscription_id,
        mail_label(firing.id),
        holder="dead",
        now=now,
        lease=lease,
        message_id=lambda: "<first@gpuscout.test>",
    )
    assert claim is not None and mark_sending(engine, claim, now=now, lease=lease)
    later = now + lease + timedelta(minutes=1)
    with httpx.Client() as http:
        # two schedulers after the restart: the one that claims it sends it, once
        for holder in ("restarted", "second"):
            deliver_firings(
                settings,
                engine,
                transport=smtp_transport(settings),
                http=http,
                now=later,
                holder=holder,
            )
    mails = _alert_mails(handler)
    assert [m["Message-ID"] for m in mails] == ["<first@gpuscout.test>"]
    row = delivery_row(engine, alert.subscription_id, mail_label(firing.id))
    assert row is not None and row["status"] == "sent" and row["possible_duplicate"]
    assert firings(engine, alert_id)[0].settled


def test_a_signed_webhook_call(
    settings: Settings,
    engine: Engine,
    smtp_server: tuple[RecordingHandler, int],
    webhook_server: WebhookServer,
) -> None:
    handler, _ = smtp_server
    manager = SubscriptionManager(settings, engine, smtp_transport(settings), clock=lambda: T0)
    request = AlertRequest(
        email="ada@example.com",
        name="hook",
        requirement=H100x8,
        condition=BELOW,
        webhooks=(webhook_server.url,),
    )
    created = create_alert(manager, request)
    manager.confirm(_token(handler.messages[-1]))
    _run(settings, engine, 1, "2.10")
    (headers, body) = webhook_server.calls[0]
    assert len(webhook_server.calls) == 1
    secret = created.webhook_secrets[webhook_server.url]
    signed = f"{headers[TIMESTAMP_HEADER]}.".encode() + body
    expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers[SIGNATURE_HEADER], expected)
    payload = json.loads(body)
    assert payload["alert_id"] == created.alert_id and payload["value"] == pytest.approx(2.1)
    assert payload["offer"]["gpu_model"] == "H100-SXM5-80GB"
    _run(settings, engine, 2, "2.10")
    assert len(webhook_server.calls) == 1  # delivered: not again


def test_a_failing_webhook_is_retried_then_disabled(
    settings: Settings,
    engine: Engine,
    smtp_server: tuple[RecordingHandler, int],
    webhook_server: WebhookServer,
) -> None:
    handler, _ = smtp_server
    settings = settings.model_copy(
        update={"alert_webhook_attempts": 3, "alert_webhook_max_failures": 2}
    )
    webhook_server.status = 503
    alert_id = _create(settings, engine, handler, webhooks=(webhook_server.url,))
    (hook,) = webhooks_of(engine, alert_id)
    alert = get_alert(engine, alert_id)
    assert alert is not None
    report = _run(settings, engine, 1, "2.10")
    (firing,) = report.evaluation.fired
    assert len(webhook_server.calls) == 3  # retried within the delivery
    ids = {h["X-Gpuscout-Delivery"] for h, _ in webhook_server.calls}
    assert len(ids) == 1  # one delivery id across retries
    assert report.delivery.webhooks == [(firing.id, hook.id, "failed")]
    assert not firings(engine, alert_id)[0].settled
    _run(settings, engine, 1.5, "2.10")  # backing off: not retried yet
    assert len(webhook_server.calls) == 3
    report = _run(settings, engine, 2.5, "2.10")
    assert len(webhook_server.calls) == 6
    assert report.delivery.webhooks == [(firing.id, hook.id, "disabled")]
    (hook,) = webhooks_of(engine, alert_id)
    assert hook.disabled_at is not None and hook.failures == 2
    assert "503" in (hook.last_error or "")
    _run(settings, engine, 8, "2.10")
    assert len(webhook_server.calls) == 6  # disabled: never called again
    assert firings(engine, alert_id)[0].settled
    row = delivery_row(engine, alert.subscription_id, hook_label(firing.id, hook.id))
    assert row is not None and row["status"] == "failed"
    assert len(_alert_mails(handler)) == 1  # the mail went out regardless


def test_alerts_per_address_are_limited(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    settings = settings.model_copy(update={"alerts_per_address": 1})
    _create(settings, engine, handler)
    sent = len(handler.messages)
    manager = SubscriptionManager(settings, engine, smtp_transport(settings), clock=lambda: T0)
    request = AlertRequest(email="ada@example.com", name="two", condition=BELOW)
    with pytest.raises(AlertLimitExceeded):
        create_alert(manager, request)
    assert len(handler.messages) == sent  # nothing sent, nothing stored
    with pytest.raises(ValueError, match="at most 2 per alert"):
        create_alert(
            manager,
            AlertRequest(
                email="bob@example.com",
                name="hooks",
                condition=BELOW,
                webhooks=("http://127.0.0.1/a", "http://127.0.0.1/b", "http://127.0.0.1/c"),
            ),
        )


def test_unsubscribing_stops_the_alert(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    _create(settings, engine, handler)
    manager = SubscriptionManager(settings, engine, smtp_transport(settings), clock=lambda: T0)
    (mail,) = [m for m in handler.messages if "Confirm" in str(m["Subject"])]
    del mail
    _run(settings, engine, 1, "2.10")
    link = _alert_mails(handler)[0]["List-Unsubscribe"].strip("<>")
    manager.clock = lambda: T0 + timedelta(hours=1)
    manager.unsubscribe(unquote(link.split("token=", 1)[1]))
    assert _run(settings, engine, 2, "2.50").evaluation.alerts == 0
    assert len(_alert_mails(handler)) == 1


def test_a_firing_left_undelivered_for_days_is_given_up(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    alert_id = _create(settings, engine, handler)
    now = T0 + timedelta(hours=1)
    evaluate_alerts(settings, engine, state("2.10"), now=now)  # fired, nothing delivered yet
    with httpx.Client() as http:
        report = deliver_firings(
            settings,
            engine,
            transport=smtp_transport(settings),
            http=http,
            now=now + timedelta(days=3),
        )
    assert report.settled == 1 and report.mails == []
    assert firings(engine, alert_id)[0].settled
    assert _alert_mails(handler) == []
