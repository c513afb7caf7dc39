from __future__ import annotations

import httpx
import pytest

from db.current import CurrentState
from service.api import create_app
from service.settings import Settings

from .conftest import FakeSource

pytestmark = pytest.mark.anyio


async def test_healthz(client: httpx.AsyncClient) -> None:
    r = await client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


async def test_readyz_with_offers(client: httpx.AsyncClient) -> None:
    r = await client.get("/readyz")
    assert r.status_code == 200 and r.json()["offers"] == 5


async def test_readyz_database_down(
    settings: Settings, source: FakeSource, caplog: pytest.LogCaptureFixture
) -> None:
    def down() -> None:
        raise ConnectionError("connection refused")

    app = create_app(settings, offers_loader=source, ready_check=down)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        r = await c.get("/readyz")
        # the driver's detail is logged, not told to the client
        assert r.status_code == 503 and "refused" not in r.json()["detail"]
        assert "unavailable" in r.json()["detail"]
        assert "connection refused" in caplog.text
        assert (await c.get("/healthz")).status_code == 200


async def test_offers_unloadable_is_503_not_500(settings: Settings) -> None:
    def broken() -> CurrentState:
        raise RuntimeError("no such table: current_offer")

    app = create_app(settings, offers_loader=broken)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        assert (await c.get("/readyz")).status_code == 503
        assert (await c.get("/v1/offers")).status_code == 503


async def test_cors_from_settings(client: httpx.AsyncClient) -> None:
    r = await client.options(
        "/v1/offers",
        headers={"Origin": "https://example.org", "Access-Control-Request-Method": "GET"},
    )
    assert r.headers["access-control-allow-origin"] == "https://example.org"
    other = await client.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
