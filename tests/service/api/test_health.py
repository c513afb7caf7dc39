from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from gpuscout.db.current import CurrentState
from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings

from .conftest import FakeSource, started

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


async def test_a_failed_first_load_is_logged_and_readyz_says_so(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> CurrentState:
        raise RuntimeError("no such table: current_offer")

    app = create_app(settings, offers_loader=broken)
    async with started(app) as client:
        assert (await client.get("/readyz")).status_code == 503
    assert "could not load the current offers" in caplog.text
    assert "no such table: current_offer" in caplog.text


def test_building_the_app_loads_no_snapshot_or_http_client_code(tmp_path: Path) -> None:
    """A worker builds its app before it can answer: the snapshot runner (migrations,
    adapters), the HTTP client (webhooks, providers), the pages' and mails' templates
    (Jinja2) and numpy load when first used, not then."""
    code = (
        "import sys\n"
        "from gpuscout.service.api import create_app\n"
        "from gpuscout.service.settings import Settings\n"
        f"create_app(Settings(_env_file=None, data_dir={str(tmp_path)!r}))\n"
        "heavy = ('httpx', 'alembic', 'gpuscout.service.snapshots', 'gpuscout.adapters.base',"
        " 'gpuscout.adapters.collect', 'jinja2', 'numpy')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    env.pop("GPUSCOUT_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
