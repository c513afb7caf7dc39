"""``/v1/subscriptions`` in-process, with a real SMTP server (aiosmtpd) for the mails."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from gpuscout.db.subscriptions import get_subscription
from tests.service.digest.conftest import RecordingHandler, smtp_server  # noqa: F401

from .conftest import mail_app


@contextlib.asynccontextmanager
async def _client(
    tmp_path: Path, smtp_port: int, *, peer: str = "127.0.0.1", **overrides: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """The app on a fresh SQLite file; requests come from ``peer``."""
    async with mail_app(tmp_path, smtp_port, peer=peer, **overrides) as (c, _settings):
        yield c


@pytest.fixture
async def client(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(tmp_path, smtp_server[1]) as c:
        yield c


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
    # one changed character before the last (the last may carry unused padding bits)
    real = _path(confirm.group(0))
    forged = real[:-2] + ("y" if real[-2] == "x" else "x") + real[-1]
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
    from gpuscout.service.digest.compose import unsubscribe_url

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


@pytest.mark.anyio
async def test_the_per_client_limit_counts_the_peer_or_what_a_trusted_proxy_forwarded(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    handler, port = smtp_server

    async def post(c: httpx.AsyncClient, i: int, forwarded: str | None = None) -> httpx.Response:
        headers = {"X-Forwarded-For": forwarded} if forwarded else {}
        body = {"email": f"a{i}@example.com", "name": "x"}
        return await c.post("/v1/subscriptions", json=body, headers=headers)

    # no trusted proxy: a forged X-Forwarded-For does not make a new client
    async with _client(
        tmp_path / "direct", port, peer="203.0.113.9", subscriptions_per_client_per_hour=2
    ) as c:
        assert (await post(c, 1, "198.51.100.1")).status_code == 202
        assert (await post(c, 2, "198.51.100.2")).status_code == 202
        refused = await post(c, 3, "198.51.100.3")
        assert refused.status_code == 429
        assert refused.json()["detail"].startswith("this client: already 2")
        assert 0 < int(refused.headers["Retry-After"]) <= 3600
    # behind a trusted proxy: each forwarded client has its own count
    async with _client(
        tmp_path / "proxied",
        port,
        peer="10.0.0.2",
        subscriptions_per_client_per_hour=2,
        trusted_proxies=["10.0.0.0/8"],
    ) as c:
        for i in range(2):
            assert (await post(c, 10 + i, "198.51.100.1")).status_code == 202
        assert (await post(c, 12, "198.51.100.1")).status_code == 429
        assert (await post(c, 13, "6.6.6.6, 198.51.100.1")).status_code == 429  # spoof
        assert (await post(c, 14, "198.51.100.2")).status_code == 202
    assert len(handler.messages) == 5


@pytest.mark.anyio
async def test_the_global_limit_is_429_with_retry_after(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    handler, port = smtp_server
    async with _client(tmp_path, port, subscriptions_per_hour=2) as c:
        for i in range(2):
            body = {"email": f"g{i}@example.com", "name": "x"}
            assert (await c.post("/v1/subscriptions", json=body)).status_code == 202
        body = {"email": "g9@example.com", "name": "x"}
        refused = await c.post("/v1/subscriptions", json=body)
    assert refused.status_code == 429 and refused.json()["detail"].startswith("gpuscout:")
    assert 0 < int(refused.headers["Retry-After"]) <= 3600
    assert len(handler.messages) == 2


@pytest.mark.anyio
async def test_a_non_finite_number_in_the_saved_search_is_422_naming_the_field(
    client: httpx.AsyncClient,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    """Stored, it would have become null: a constraint silently gone. A bare ``Infinity``
    token is refused the same way, with a 422 that names the field."""
    handler, _ = smtp_server
    for section, field, value in (
        ("requirement", "max_usd_per_hour", "Infinity"),
        ("requirement", "max_usd_per_gpu_hour", "inf"),
        ("job", "hours", "Infinity"),
    ):
        body = {"email": "ada@example.com", "name": "x", section: {field: value}}
        response = await client.post("/v1/subscriptions", json=body)
        assert response.status_code == 422, response.text
        (error,) = response.json()["errors"]
        assert error["loc"] == ["body", section, field] and "finite" in error["msg"]
    bare = b'{"email": "ada@example.com", "name": "x", "job": {"hours": Infinity}}'
    response = await client.post(
        "/v1/subscriptions", content=bare, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422, response.text
    assert handler.messages == []


@pytest.mark.anyio
@pytest.mark.parametrize("field", ["providers", "exclude_providers"])
async def test_an_unknown_provider_is_422_as_offers_refuses_it(
    client: httpx.AsyncClient,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
    field: str,
) -> None:
    """A digest of a provider no offer has would never list anything, and nobody be told."""
    handler, _ = smtp_server
    body = {"email": "ada@example.com", "name": "x", "requirement": {field: ["blot"]}}
    response = await client.post("/v1/subscriptions", json=body)
    offers = await client.get("/v1/offers", params={field: "blot"})
    assert response.status_code == offers.status_code == 422, response.text
    (error,) = response.json()["errors"]
    (refused,) = offers.json()["errors"]
    assert error["loc"] == ["body", "requirement", field]
    assert error["msg"] == refused["msg"]
    assert error["msg"].startswith("unknown provider 'blot' (did you mean 'bolt'?); known: ")
    assert handler.messages == []


@pytest.mark.anyio
async def test_a_provider_in_another_case_is_stored_as_the_offers_spell_it(
    client: httpx.AsyncClient,
) -> None:
    requirement = {"providers": ["BOLT", "acme"], "exclude_providers": ["Cirrus"]}
    body = {"email": "ada@example.com", "name": "x", "requirement": requirement}
    response = await client.post("/v1/subscriptions", json=body)
    assert response.status_code == 202, response.text
    manager = client._transport.app.state.subscriptions  # type: ignore[attr-defined]
    stored = get_subscription(manager.engine, response.json()["id"])
    assert stored is not None
    saved = json.loads(stored.requirement_json)
    assert saved["providers"] == ["bolt", "acme"] and saved["exclude_providers"] == ["cirrus"]


@pytest.mark.anyio
async def test_offers_that_cannot_be_loaded_leave_the_names_unchecked(
    client: httpx.AsyncClient,
) -> None:
    """Where ``/v1/offers`` answers 503 nothing tells a seller from a typo: stored as given."""

    def broken() -> None:
        raise RuntimeError("database down")

    context = client._transport.app.state.context  # type: ignore[attr-defined]
    context.holder.loader = broken
    assert (await client.get("/v1/offers")).status_code == 503
    body = {"email": "ada@example.com", "name": "x", "requirement": {"providers": ["blot"]}}
    response = await client.post("/v1/subscriptions", json=body)
    assert response.status_code == 202, response.text
    manager = client._transport.app.state.subscriptions  # type: ignore[attr-defined]
    stored = get_subscription(manager.engine, response.json()["id"])
    assert stored is not None and json.loads(stored.requirement_json)["providers"] == ["blot"]


@pytest.mark.anyio
async def test_a_serving_search_is_stored_and_a_bad_serve_request_is_422(
    client: httpx.AsyncClient,
) -> None:
    body: dict[str, Any] = {"email": "ada@example.com", "name": "70B weekly"}
    serve = {"serve": "llama-3.1-70b", "precision": "fp8", "tokens_per_day": 1e9}
    response = await client.post("/v1/subscriptions", json={**body, "serve": serve})
    assert response.status_code == 202, response.text
    manager = client._transport.app.state.subscriptions  # type: ignore[attr-defined]
    stored = get_subscription(manager.engine, response.json()["id"])
    assert stored is not None
    assert json.loads(stored.job_json) == {"hours": 1.0, "serve": serve}
    bad = await client.post("/v1/subscriptions", json={**body, "serve": {"serve": "gpt-9"}})
    assert bad.status_code == 422 and "unknown model 'gpt-9'" in bad.text
