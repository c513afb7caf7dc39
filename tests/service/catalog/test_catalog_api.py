"""``/v1/catalog/``: the published files, cacheable, with ETags; nothing outside them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from gpuscout.adapters.schema import default_fx
from gpuscout.db.current import state_from_offers
from gpuscout.service.api import create_app

from .conftest import Collector, settings_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _client(settings) -> AsyncIterator[httpx.AsyncClient]:  # type: ignore[no-untyped-def]
    state = state_from_offers([], fx=default_fx(), source="database")
    app = create_app(settings, offers_loader=lambda: state)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c


@pytest.fixture
async def client(collector: Collector, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = settings_of(tmp_path, publish_dir=collector.catalog, cache_max_age_s=30)
    async for c in _client(settings):
        yield c


async def test_the_manifest_is_revalidated_by_its_etag(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/catalog/manifest.json")
    assert r.status_code == 200 and r.json()["signed"]["schema_version"] == 1
    assert r.headers["cache-control"] == "public, max-age=30"
    etag = {"If-None-Match": r.headers["etag"]}
    again = await client.get("/v1/catalog/manifest.json", headers=etag)
    assert again.status_code == 304 and again.content == b""


async def test_a_versions_files_are_immutable(
    client: httpx.AsyncClient, collector: Collector
) -> None:
    entry = (await client.get("/v1/catalog/manifest.json")).json()["signed"]["providers"][0]
    r = await client.get(f"/v1/catalog/{entry['file']}")
    assert r.status_code == 200 and r.content == (collector.catalog / entry["file"]).read_bytes()
    assert r.headers["etag"] == f'"{entry["sha256"]}"'
    assert "immutable" in r.headers["cache-control"]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/catalog/20261201T120000000000Z/nothing.parquet",
        "/v1/catalog/latest/aws.parquet",
        "/v1/catalog/20261201T120000000000Z/..%2F..%2Fkey.pem",
        "/v1/catalog/../key.pem",
    ],
)
async def test_nothing_but_catalog_files_is_served(client: httpx.AsyncClient, path: str) -> None:
    assert (await client.get(path)).status_code == 404


async def test_an_instance_that_publishes_nothing_says_so(tmp_path: Path) -> None:
    async for c in _client(settings_of(tmp_path)):
        r = await c.get("/v1/catalog/manifest.json")
        assert r.status_code == 404 and "GPUSCOUT_PUBLISH_DIR" in r.json()["detail"]
