"""Alerts on USD per million tokens (a serving search), on SQLite and PostgreSQL: stored
with their serve request, fired on the serving ranking's first row, refused without one.

The offers are 8x H100 at a price per GPU-hour; llama-3.1-70b in fp8 costs 0.4647 USD per
million output tokens at 2.10 and 0.5089 at 2.30 (the roofline's figure, as
``rank_serving`` computes it: checked below, so the thresholds stay meaningful)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from pydantic import ValidationError
from sqlalchemy.engine import Engine

from gpuscout.db.alerts import firings, get_alert
from gpuscout.db.subscriptions import get_subscription
from gpuscout.pricing import Job, Requirement
from gpuscout.pricing.serve_rank import ServeRequest, rank_serving
from gpuscout.service.alerts.condition import AlertCondition
from gpuscout.service.alerts.evaluate import evaluate_alerts
from gpuscout.service.alerts.manager import AlertRequest, create_alert
from gpuscout.service.digest.compose import subscription_view
from gpuscout.service.digest.saved_search import load_search, load_serve
from gpuscout.service.digest.schedule import smtp_transport
from gpuscout.service.digest.subscriptions import SubscriptionManager
from gpuscout.service.settings import Settings
from tests.db.factories import T0

from .conftest import RecordingHandler, state
from .test_flow import _alert_mails, _run, _token

H100x8 = Requirement(gpus=("H100",), min_gpus=8)
SERVE = ServeRequest(serve="llama-3.1-70b", precision="fp8")
BELOW = AlertCondition(kind="below", metric="usd_per_m_tokens", threshold=Decimal("0.48"))


def _request(**fields: object) -> AlertRequest:
    values: dict[str, object] = {
        "email": "ada@example.com",
        "name": "70B for less",
        "requirement": H100x8,
        "serve": SERVE,
        "condition": BELOW,
    }
    return AlertRequest.model_validate(values | fields)


def _create(settings: Settings, engine: Engine, handler: RecordingHandler) -> int:
    manager = SubscriptionManager(settings, engine, smtp_transport(settings), clock=lambda: T0)
    created = create_alert(manager, _request(quiet_minutes=0))
    manager.confirm(_token(handler.messages[-1]))
    return created.alert_id


def test_the_thresholds_sit_between_the_two_prices() -> None:
    for price, expected in (("2.10", 0.4647), ("2.30", 0.5089)):
        rows = rank_serving(state(price).frame, SERVE, H100x8, now=T0).rows
        assert rows["usd_per_m_tokens"][0] == pytest.approx(expected, abs=1e-4)


def test_the_serve_request_is_stored_with_the_search(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    alert_id = _create(settings, engine, smtp_server[0])
    alert = get_alert(engine, alert_id)
    assert alert is not None
    record = get_subscription(engine, alert.subscription_id)
    assert record is not None
    assert load_serve(record) == SERVE
    assert load_search(record)[0] == H100x8  # the job reads back without the serve key
    assert subscription_view(record).serve == SERVE  # what the digest ranks by


def test_a_serving_alert_fires_on_usd_per_m_tokens_and_rearms(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    alert_id = _create(settings, engine, handler)

    def fired(hour: int, *prices: str) -> int:
        report = evaluate_alerts(settings, engine, state(*prices), now=T0.replace(hour=hour))
        return len(report.fired)

    assert fired(1, "2.30") == 0  # 0.5089 > 0.48
    assert fired(2, "2.30", "2.10") == 1  # 0.4647 <= 0.48
    assert fired(3, "2.10") == 0  # still below: fired once
    assert evaluate_alerts(settings, engine, state("2.30"), now=T0.replace(hour=4)).rearmed == 1
    (firing,) = firings(engine, alert_id)
    assert firing.value == pytest.approx(0.4647, abs=1e-4)
    offer = json.loads(firing.offer_json)
    assert offer["offer_id"] == "o1" and offer["replicas"] == 1
    assert offer["throughput_source"].startswith("predicted: roofline")


def test_the_condition_and_offer_read_in_tokens() -> None:
    from gpuscout.service.alerts.message import _offer_lines, describe_condition
    from gpuscout.service.alerts.serve_best import serve_best_per_search

    assert describe_condition(BELOW) == "USD per million output tokens at or below 0.48"
    searches = {"k": (H100x8, Job(hours=730), SERVE)}
    best = serve_best_per_search(state("2.10").frame, searches, T0)["k"]
    lines = dict(_offer_lines(best.offers["usd_per_m_tokens"]))
    assert lines["USD per million output tokens"] == "0.4647"
    assert lines["throughput source"].startswith("predicted: roofline")


def test_usd_per_m_tokens_without_a_serve_request_is_refused() -> None:
    with pytest.raises(ValidationError, match="usd_per_m_tokens needs a serve request"):
        _request(serve=None)


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ({"kind": "below", "threshold": "2"}, "compares usd_per_m_tokens, not usd_per_gpu_hour"),
        ({"kind": "drop", "metric": "usd_per_m_tokens", "drop_pct": 10}, "'drop' alert"),
    ],
)
def test_a_serving_alert_takes_below_on_usd_per_m_tokens(
    condition: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        _request(condition=condition)


def test_an_in_stock_serving_alert_counts_offers_that_serve(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    manager = SubscriptionManager(settings, engine, smtp_transport(settings), clock=lambda: T0)
    created = create_alert(manager, _request(condition={"kind": "in_stock"}))
    manager.confirm(_token(smtp_server[0].messages[-1]))
    report = evaluate_alerts(settings, engine, state("2.30", available=None), now=T0)
    assert report.fired == []
    report = evaluate_alerts(settings, engine, state("2.30"), now=T0.replace(hour=1))
    assert [f.alert_id for f in report.fired] == [created.alert_id]
    assert _alert_mails(smtp_server[0]) == []  # evaluation alone mails nothing


def test_the_firing_mail_names_the_serving_offer(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    _create(settings, engine, handler)
    assert len(_run(settings, engine, 1, "2.10").evaluation.fired) == 1
    (mail,) = _alert_mails(handler)
    text = mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "USD per million output tokens at or below 0.48" in text
    assert "8x H100-SXM5-80GB at alpha" in text
    assert "throughput source" in text and "predicted: roofline" in text
    assert "effective TFLOP" not in text
