from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from adapters.collect import ProviderRun, RunStatus
from db.engine import make_engine, sqlite_url
from db.migrate import upgrade
from db.snapshots import store_snapshot
from service.api import create_app
from service.settings import Settings

from .conftest import FakeSource, error_locs, offer

pytestmark = pytest.mark.anyio


@pytest.fixture
def engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    url = sqlite_url(tmp_path / "history.db")
    upgrade(url)
    engine = make_engine(url)
    now = datetime.now(UTC).replace(microsecond=0)
    for days_ago, price in ((3, "16"), (1, "14")):
        at = now - timedelta(days=days_ago)
        run = ProviderRun(
            "acme",
            RunStatus.OK,
            at,
            0.1,
            offers=[offer(fetched_at=at, price_amount=Decimal(price))],
        )
        store_snapshot(engine, [run], started_at=at, finished_at=at)
    yield engine
    engine.dispose()


@pytest.fixture
async def db_client(settings: Settings, source: FakeSource, engine):  # type: ignore[no-untyped-def]
    app = create_app(settings, offers_loader=source, history=engine)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c


async def test_price_index(db_client: httpx.AsyncClient) -> None:
    r = await db_client.get("/v1/history/index", params={"gpus": "H100", "days": 5})
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["days"]) == 5 and body["term"] == "on_demand"
    priced = [d for d in body["days"] if d["offers"]]
    assert priced[0]["median_usd_per_gpu_hour"] == pytest.approx(2.0)
    assert priced[-1]["median_usd_per_gpu_hour"] == pytest.approx(1.75)


async def test_offer_history(db_client: httpx.AsyncClient) -> None:
    key = offer().key
    r = await db_client.get(f"/v1/history/offers/{quote(key, safe='')}")
    assert r.status_code == 200, r.text
    prices = r.json()["prices"]
    assert [p["price_amount"] for p in prices] == ["16", "14"]
    assert prices[0]["valid_to"] is not None and prices[1]["valid_to"] is None


async def test_unknown_offer_is_404(db_client: httpx.AsyncClient) -> None:
    assert (await db_client.get("/v1/history/offers/nobody%7Cx")).status_code == 404


async def test_invalid_index_parameters(db_client: httpx.AsyncClient) -> None:
    assert error_locs(await db_client.get("/v1/history/index?gpus=H100&days=0")) == [
        ["query", "days"]
    ]
    assert error_locs(await db_client.get("/v1/history/index?gpus=H9000")) == [["query", "gpus"]]
    assert error_locs(await db_client.get("/v1/history/index?gpus=H100&term=x")) == [
        ["query", "term"]
    ]
    assert error_locs(await db_client.get("/v1/history/index?gpus=H100&day=1")) == [
        ["query", "day"]
    ]


async def test_without_database_is_503(client: httpx.AsyncClient) -> None:
    assert (await client.get("/v1/history/index?gpus=H100")).status_code == 503


async def test_deprecated_history_gpu(db_client: httpx.AsyncClient) -> None:
    new = await db_client.get("/v1/history/index?gpus=H100&days=3")
    old = await db_client.get("/v1/history/index?gpu=H100&days=3")
    assert new.status_code == old.status_code == 200, old.text
    assert old.json() == new.json() and "gpus" in old.headers["warning"]
