"""The price index page says where its prices come from, with the banner the explorer uses:
"Sample data" over a history of the offline sample, with its dates and what its days mean."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import Engine

from gpuscout.adapters.sample import replay_sample
from gpuscout.db.engine import make_engine, sqlite_url
from gpuscout.db.history import SAMPLE_DAYS_NOTE
from gpuscout.db.migrate import upgrade
from gpuscout.db.snapshots import store_snapshot
from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings
from tests.service.api.conftest import FakeSource, database_state, sample_offers

pytestmark = pytest.mark.anyio


def _engine(tmp_path: Path, sample: bool) -> Iterator[Engine]:
    url = sqlite_url(tmp_path / "index.db")
    upgrade(url)
    engine = make_engine(url)
    at = datetime.now(UTC) - timedelta(minutes=1)
    if sample:  # as `gpuscout snapshot --sample` stores it
        store_snapshot(engine, replay_sample(["aws", "lambda"]), started_at=at, finished_at=at)
    yield engine
    engine.dispose()


async def _client(tmp_path: Path, engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    source = FakeSource(database_state(sample_offers()))  # live current offers
    app = create_app(settings, offers_loader=source, history=engine)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c


@pytest.fixture
async def sample_client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    for engine in _engine(tmp_path, sample=True):
        async for client in _client(tmp_path, engine):
            yield client


@pytest.fixture
async def live_client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    for engine in _engine(tmp_path, sample=False):
        async for client in _client(tmp_path, engine):
            yield client


async def test_index_of_the_sample_has_the_sample_banner(
    sample_client: httpx.AsyncClient,
) -> None:
    page = await sample_client.get("/index?gpus=H100")
    assert page.status_code == 200, page.text
    text = html.unescape(page.text)
    banner = text.split('<p class="banner sample" role="status">', 1)[1].split("</p>", 1)[0]
    assert banner.startswith("<strong>Sample data.</strong> offline sample: recorded prices")
    assert "aws 2025-09-15" in banner and SAMPLE_DAYS_NOTE in banner
    api = (await sample_client.get("/v1/history/index?gpus=H100")).json()
    assert api["note"] in text  # the page says what the API says
    today = datetime.now(UTC).date().isoformat()
    assert f'<td data-label="Day">{today}</td>' in text
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    assert f'<td data-label="Day">{yesterday}</td>' not in text  # nothing before it was stored


async def test_index_of_live_prices_has_no_sample_banner(live_client: httpx.AsyncClient) -> None:
    page = await live_client.get("/index?gpus=H100")
    assert page.status_code == 200 and "Sample data" not in page.text


async def test_index_of_an_unknown_gpu_is_refused(sample_client: httpx.AsyncClient) -> None:
    page = await sample_client.get("/index?gpus=H10")
    assert page.status_code == 422
    assert "unknown GPU model, family or vendor: &#39;H10&#39; (did you mean" in page.text


async def test_the_index_of_one_region_class_is_the_apis(sample_client: httpx.AsyncClient) -> None:
    """A region class chosen on the page: its title, the API's days for it (offers and the
    share in stock), the JSON link keeping it, and the form showing it chosen."""
    page = await sample_client.get("/index?gpus=H100&region_class=north-america")
    assert page.status_code == 200, page.text
    text = html.unescape(page.text)
    assert "<h1>Price index: H100, on_demand, north-america</h1>" in text
    assert '<option value="north-america" selected>' in text
    assert "&region_class=north-america" in text  # the JSON link
    api = await sample_client.get("/v1/history/index?gpus=H100&region_class=north-america")
    priced = [d for d in api.json()["days"] if d["offers"]]
    assert priced, api.json()
    row = text.split(f'<td data-label="Day">{priced[-1]["day"]}</td>', 1)[1].split("</tr>", 1)[0]
    assert f'<td data-label="Offers" class="num">{priced[-1]["offers"]}</td>' in row
    assert 'data-label="In stock"' in row
    everywhere = (await sample_client.get("/v1/history/index?gpus=H100")).json()["days"]
    assert priced[-1]["offers"] <= [d for d in everywhere if d["offers"]][-1]["offers"]


def test_in_region_keeps_the_offers_of_the_class_by_country() -> None:
    import polars as pl

    from gpuscout.adapters.regions import RegionClass
    from gpuscout.service.web.index_page import in_region

    frame = pl.DataFrame({"country": ["US", "de", None, "CN", "ZZ"], "n": [1, 2, 3, 4, 5]})
    assert in_region(frame, None)["n"].to_list() == [1, 2, 3, 4, 5]
    assert in_region(frame, RegionClass.EUROPE)["n"].to_list() == [2]
    assert in_region(frame, RegionClass.UNKNOWN)["n"].to_list() == [3, 5]
    assert in_region(frame, RegionClass.CHINA)["n"].to_list() == [4]
