"""``/v1/alerts``: created pending, confirmed by the digest's link, the firing history."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import pytest

from gpuscout.db.engine import make_engine
from gpuscout.db.subscriptions import get_subscription
from gpuscout.service.alerts.run import run_alerts
from gpuscout.service.digest.schedule import smtp_transport
from gpuscout.service.settings import Settings
from tests.service.alerts.conftest import state
from tests.service.digest.conftest import RecordingHandler, smtp_server  # noqa: F401

from .conftest import mail_app

BODY: dict[str, Any] = {
    "email": "ada@example.com",
    "name": "8x H100 under 2.20",
    "requirement": {"gpus": ["H100"], "min_gpus": 8},
    "condition": {"kind": "below", "metric": "usd_per_gpu_hour", "threshold": "2.20"},
    "webhooks": ["http://127.0.0.1:9/hook"],
}


@contextlib.asynccontextmanager
async def _client(
    tmp_path: Path, smtp_port: int, **overrides: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Settings]]:
    async with mail_app(tmp_path, smtp_port, **overrides) as pair:
        yield pair


def _path(link: str) -> str:
    parts = urlsplit(link)
    return f"{parts.path}?{parts.query}"


def _link(handler: RecordingHandler, pattern: str) -> str:
    body = handler.messages[-1].get_body(("plain",))
    assert body is not None
    match = re.search(pattern, body.get_content())
    assert match, body.get_content()
    return match.group(0)


@pytest.mark.anyio
async def test_create_confirm_fire_and_read_the_history(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    handler, port = smtp_server
    async with _client(tmp_path, port) as (client, settings):
        answer = await client.post("/v1/alerts", json=BODY)
        assert answer.status_code == 202, answer.text
        created = answer.json()
        assert created["status"] == "pending" and created["confirmation_sent"]
        assert set(created["webhook_secrets"]) == {"http://127.0.0.1:9/hook"}
        assert "price alert" in str(handler.messages[-1]["Subject"])
        confirm = _path(_link(handler, r"https://gpuscout\.test/v1/subscriptions/confirm\S+"))
        page = await client.get(confirm)
        assert "price alert" in page.text and "Confirm" in page.text
        assert (await client.post(confirm)).status_code == 200
        engine = make_engine(settings.database_url)
        with httpx.Client(timeout=1) as http:
            run_alerts(
                settings.model_copy(update={"alert_webhook_attempts": 1}),
                engine,
                now=datetime.now(UTC),
                current=state("2.10"),
                transport=smtp_transport(settings),
                http=http,
                sleep=lambda _s: None,
            )
        engine.dispose()
        history = _path(_link(handler, r"https://gpuscout\.test/v1/alerts/\d+/firings\S+"))
        answer = await client.get(history)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["alert_id"] == created["id"] and body["armed"] is False
        (firing,) = body["firings"]
        assert firing["seq"] == 1 and firing["value"] == pytest.approx(2.1)
        assert firing["offer"]["gpu_model"] == "H100-SXM5-80GB"
        # another alert's id with this token, or an altered token: refused
        bad = history.replace(f"/alerts/{created['id']}/", f"/alerts/{created['id'] + 1}/")
        assert (await client.get(bad)).status_code == 400
        assert (await client.get(unquote(history) + "x")).status_code == 400


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("change", "code", "message"),
    [
        ({"condition": {"kind": "below"}}, 422, "needs a threshold"),
        ({"webhooks": ["http://127.0.0.1:9/a"] * 2}, 422, "given twice"),
        ({"webhooks": [f"http://127.0.0.1:9/{i}" for i in range(3)]}, 422, "at most 2"),
        (
            {"condition": {"kind": "below", "metric": "usd_per_m_tokens", "threshold": "0.5"}},
            422,
            "usd_per_m_tokens needs a serve request",
        ),
        ({"serve": {"serve": "no-such-model"}}, 422, "no-such-model"),
    ],
)
async def test_bad_requests_say_what_is_wrong(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
    change: dict[str, Any],
    code: int,
    message: str,
) -> None:
    handler, port = smtp_server
    async with _client(tmp_path, port) as (client, _settings):
        answer = await client.post("/v1/alerts", json={**BODY, **change})
        assert answer.status_code == code and message in answer.text
        assert handler.messages == []


@pytest.mark.anyio
@pytest.mark.parametrize("environment", ["development", "production"])
async def test_a_private_webhook_is_refused_in_every_environment(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
    environment: str,
) -> None:
    _handler, port = smtp_server
    guarded = {
        "environment": environment,
        "admin_token": "a-real-admin-token-0123456789abcdef",
        "alert_webhook_allow_private": False,
    }
    async with _client(tmp_path, port, **guarded) as (client, _settings):
        body = {**BODY, "webhooks": ["https://10.0.0.5/hook"]}
        answer = await client.post("/v1/alerts", json=body)
        assert answer.status_code == 422 and "non-public" in answer.text


@pytest.mark.anyio
async def test_alerts_per_address(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    _handler, port = smtp_server
    async with _client(tmp_path, port, alerts_per_address=1) as (client, _settings):
        assert (await client.post("/v1/alerts", json=BODY)).status_code == 202
        answer = await client.post("/v1/alerts", json={**BODY, "name": "second"})
        assert answer.status_code == 409 and "limit" in answer.text


@pytest.mark.anyio
async def test_an_unknown_provider_is_422_as_offers_refuses_it(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    """An alert on a provider no offer has would never fire, and nobody be told."""
    handler, port = smtp_server
    async with _client(tmp_path, port) as (client, _settings):
        body = {**BODY, "requirement": {"gpus": ["H100"], "providers": ["blot"]}}
        answer = await client.post("/v1/alerts", json=body)
        offers = await client.get("/v1/offers", params={"providers": "blot"})
    assert answer.status_code == offers.status_code == 422, answer.text
    (error,) = answer.json()["errors"]
    assert error["loc"] == ["body", "requirement", "providers"]
    assert error["msg"] == offers.json()["errors"][0]["msg"]
    assert error["msg"].startswith("unknown provider 'blot' (did you mean 'bolt'?); known: ")
    assert handler.messages == []


@pytest.mark.anyio
async def test_a_provider_in_another_case_is_stored_as_the_offers_spell_it(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    _handler, port = smtp_server
    async with _client(tmp_path, port) as (client, settings):
        body = {**BODY, "requirement": {"gpus": ["H100"], "exclude_providers": ["ACME"]}}
        answer = await client.post("/v1/alerts", json=body)
        assert answer.status_code == 202, answer.text
        engine = make_engine(settings.database_url)
        try:
            stored = get_subscription(engine, answer.json()["subscription_id"])
        finally:
            engine.dispose()
    assert stored is not None
    assert json.loads(stored.requirement_json)["exclude_providers"] == ["acme"]


@pytest.mark.anyio
async def test_a_serving_alert_stores_its_serve_request(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    _handler, port = smtp_server
    body = {
        **BODY,
        "serve": {"serve": "llama-3.1-70b", "precision": "fp8"},
        "condition": {"kind": "below", "metric": "usd_per_m_tokens", "threshold": "0.48"},
    }
    async with _client(tmp_path, port) as (client, settings):
        answer = await client.post("/v1/alerts", json=body)
        assert answer.status_code == 202, answer.text
        record = get_subscription(
            make_engine(settings.database_url), answer.json()["subscription_id"]
        )
    assert record is not None
    assert json.loads(record.job_json)["serve"] == {"serve": "llama-3.1-70b", "precision": "fp8"}
