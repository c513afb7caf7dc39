"""``/v1/subscriptions`` in-process, with a real SMTP server (aiosmtpd) for the mails."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from db.engine import make_engine, sqlite_url
from db.subscriptions import get_subscription
from db.migrate import upgrade
from service.api import create_app
from service.current import CurrentOffers
from service.settings import Settings
from tests.service.digest.conftest import RecordingHandler, smtp_server  # noqa: F401

from .conftest import FakeSource, sample_offers


@pytest.fixture
async def client(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> AsyncIterator[httpx.AsyncClient]:
    url = sqlite_url(tmp_path / "api.db")
    upgrade(url)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        database_url=url,
        smtp_host="127.0.0.1",
        smtp_port=smtp_server[1],
        smtp_security="none",
        mail_from="gpuscout <digest@gpuscout.test>",
        public_base_url="https://gpuscout.test",
        token_secret="api-test-secret-0123456789",  # type: ignore[arg-type]
    )
    engine = make_engine(url)
    app = create_app(
        settings,
        offers_loader=FakeSource(CurrentOffers(sample_offers(), "database")),
        history=engine,
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gpuscout") as c:
        yield c
    engine.dispose()


def _path(link: str) -> str:
    parts = urlsplit(link)
    return f"{parts.path}?{parts.query}"


@pytest.mark.anyio
async def test_double_opt_in_and_one_click_unsubscribe(
    client: httpx.AsyncClient,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    handler, _ = smtp_server
    body = {
        "email": "ada@example.com",
        "name": "8x H100",
        "time_zone": "Europe/Berlin",
        "requirement": {"gpus": ["H100"], "min_gpus": 8},
        "job": {"hours": 100},
    }
    response = await client.post("/v1/subscriptions", json=body)
    assert response.status_code == 202, response.text
    subscription_id = response.json()["id"]
    assert response.json()["status"] == "pending" and response.json()["confirmation_sent"]
    assert len(handler.messages) == 1
    text = handler.messages[0].get_body(preferencelist=("plain",)).get_content()  # type: ignore[union-attr]
    confirm = re.search(r"https://gpuscout\.test/v1/subscriptions/confirm\?token=\S+", text)
    assert confirm

    # a forged or altered token does nothing
    forged = _path(confirm.group(0))[:-2] + "xx"
    assert (await client.get(forged)).status_code == 400
    assert (await client.post(forged)).status_code == 400
    # a GET (a mail scanner prefetching the link) shows a button and confirms nothing
    for _ in range(2):
        page = await client.get(_path(confirm.group(0)))
        assert page.status_code == 200 and "confirmed" not in page.text
        assert 'method="post"' in page.text and ">Confirm</button>" in page.text
    manager = client._transport.app.state.subscriptions  # type: ignore[attr-defined]
    stored = get_subscription(manager.engine, subscription_id)
    assert stored is not None and stored.status.value == "pending"
    # the button posts to the same URL: that confirms
    response = await client.post(_path(confirm.group(0)))
    assert response.status_code == 200 and "confirmed" in response.text
    stored = get_subscription(manager.engine, subscription_id)
    assert stored is not None and stored.status.value == "active"

    # unsubscribe: GET shows a button and changes nothing; POST (RFC 8058) unsubscribes
    from service.digest.compose import unsubscribe_url

    settings = client._transport.app.state.context.settings  # type: ignore[attr-defined]
    link = _path(unsubscribe_url(settings, subscription_id, "ada@example.com"))
    page = await client.get(link)
    assert page.status_code == 200 and 'method="post"' in page.text
    done = await client.post(
        link,
        content=b"List-Unsubscribe=One-Click",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert done.status_code == 200 and "Unsubscribed" in done.text
    # confirming again does not resurrect it
    assert (await client.get(_path(confirm.group(0)))).status_code == 409
    assert (await client.post(_path(confirm.group(0)))).status_code == 409
    for action in ("confirm", "unsubscribe"):
        other = await client.put(f"/v1/subscriptions/{action}?token=x")
        assert other.status_code == 405 and other.headers["Allow"] == "GET, POST"


@pytest.mark.anyio
async def test_injection_and_bad_input_are_422(client: httpx.AsyncClient) -> None:
    for body in (
        {"email": "ada@example.com\r\nBcc: eve@example.com", "name": "x"},
        {"email": "ada@example.com", "name": "x\r\nBcc: eve@example.com"},
        {"email": "ada@example.com", "name": "x", "time_zone": "Mars/Olympus"},
    ):
        assert (await client.post("/v1/subscriptions", json=body)).status_code == 422


@pytest.mark.anyio
async def test_too_many_requests_for_one_address_are_429_and_send_nothing(
    client: httpx.AsyncClient,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    handler, _ = smtp_server
    body = {"email": "ada@example.com", "name": "8x H100"}
    settings = client._transport.app.state.context.settings  # type: ignore[attr-defined]
    limit = settings.subscriptions_per_address_per_day
    for _ in range(limit):
        assert (await client.post("/v1/subscriptions", json=body)).status_code == 202
    refused = await client.post("/v1/subscriptions", json=body)
    assert refused.status_code == 429
    assert "ada@example.com" in refused.json()["detail"]
    assert 0 < int(refused.headers["Retry-After"]) <= 24 * 3600
    assert len(handler.messages) == limit
