"""Availability shares in ``/v1/offers/{id}`` and on the offer page, from stored snapshots."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import Engine

from gpuscout.adapters.sample import replay_sample
from gpuscout.db.availability import stock_of
from gpuscout.service.api.offer_ids import offer_id

from .conftest import database_client, store_sample_then_live

pytestmark = pytest.mark.anyio


def _lambda_offer() -> tuple[str, bool]:
    """A lambda sample offer's key and whether its listing says it is available."""
    (run,) = replay_sample(["lambda"])
    o = next(o for o in run.offers if o.gpu_model is not None)
    return o.key, stock_of(o.available_now, o.available_count)[0]


async def test_an_offer_carries_its_shares_over_7_and_30_days(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    store_sample_then_live(engine, live=("lambda",))  # lambda: two successful snapshots
    key, available = _lambda_offer()
    async with database_client(tmp_path, db_url) as client:
        body = (await client.get(f"/v1/offers/{offer_id(key)}")).json()
        page = await client.get("/offer", params={"key": key})
    shares = body["in_stock"]
    assert [s["days"] for s in shares] == [7, 30]
    for share in shares:
        assert share["snapshots"] == 2
        assert share["available_snapshots"] == (2 if available else 0)
        assert share["share"] == share["available_snapshots"] / 2
    assert page.status_code == 200
    assert "How often it was in stock" in page.text
    assert f"{shares[0]['available_snapshots']} of 2" in page.text


async def test_without_a_database_there_are_no_shares(client: httpx.AsyncClient) -> None:
    first = (await client.get("/v1/offers", params={"limit": 1})).json()["offers"][0]
    body = (await client.get(f"/v1/offers/{first['id']}")).json()
    assert body["in_stock"] == []


async def test_the_index_page_shows_stock_beside_price(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    store_sample_then_live(engine, live=("lambda",))
    (run,) = replay_sample(["lambda"])
    offer = next(o for o in run.offers if o.gpu_model is not None)
    async with database_client(tmp_path, db_url) as client:
        page = await client.get("/index", params={"gpus": offer.gpu_model, "term": "on_demand"})
    assert page.status_code == 200
    assert "In stock, 7 days" in page.text
    assert "over all of them" in page.text


async def test_min_availability_keeps_offers_in_stock_often_enough(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    from datetime import UTC, datetime, timedelta

    from gpuscout.db.snapshots import store_snapshot
    from tests.db.factories import offer, ok

    steady, flaky = offer("alpha", "steady"), offer("alpha", "flaky", price="1.00")
    sold_out = flaky.model_copy(update={"available_now": False})
    start = datetime.now(UTC) - timedelta(hours=5)
    for hour, listed in enumerate(([steady, sold_out], [steady, sold_out], [steady, flaky])):
        at = start + timedelta(hours=hour)
        store_snapshot(engine, [ok("alpha", listed, at)], started_at=at, finished_at=at)
    async with database_client(tmp_path, db_url) as client:
        every = (await client.get("/v1/offers")).json()["offers"]
        often = (await client.get("/v1/offers", params={"min_availability": 0.8})).json()
        sometimes = (await client.get("/v1/offers", params={"min_availability": 0.3})).json()
    assert {o["offer_id"] for o in every} == {"steady", "flaky"}
    assert [o["offer_id"] for o in often["offers"]] == ["steady"]  # flaky: 1 of 3
    assert {o["offer_id"] for o in sometimes["offers"]} == {"steady", "flaky"}


async def test_min_availability_without_a_database_is_unknown(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/offers", params={"min_availability": 0.5})).json()
    assert body["offers"] == []  # no stored snapshot: nobody's stock is known
    unknown = {"min_availability": 0.5, "allow_unknown": "true"}
    assert (await client.get("/v1/offers", params=unknown)).json()["offers"]


def test_the_cli_filters_on_availability(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from typer.testing import CliRunner

    from gpuscout.db.engine import make_engine, sqlite_url
    from gpuscout.db.migrate import upgrade
    from gpuscout.db.snapshots import store_snapshot
    from gpuscout.service.cli import app
    from gpuscout.service.settings import get_settings
    from tests.db.factories import offer, ok

    url = sqlite_url(tmp_path / "cli.db")
    upgrade(url)
    engine = make_engine(url)
    steady, flaky = offer("alpha", "steady"), offer("alpha", "flaky", price="1.00")
    start = datetime.now(UTC) - timedelta(hours=3)
    for hour, listed in enumerate(
        ([steady, flaky.model_copy(update={"available_now": False})], [steady, flaky])
    ):
        at = start + timedelta(hours=hour)
        store_snapshot(engine, [ok("alpha", listed, at)], started_at=at, finished_at=at)
    engine.dispose()
    get_settings.cache_clear()
    env = {"GPUSCOUT_DATABASE_URL": url, "GPUSCOUT_DATA_DIR": str(tmp_path), "COLUMNS": "200"}
    runner = CliRunner()
    both = runner.invoke(app, ["offers", "--format", "json"], env=env)
    kept = runner.invoke(app, ["offers", "--min-availability", "0.8", "--format", "json"], env=env)
    get_settings.cache_clear()
    assert both.exit_code == 0 and kept.exit_code == 0, (both.output, kept.output)
    assert "flaky" in both.output and "steady" in both.output
    assert "flaky" not in kept.output and "steady" in kept.output
