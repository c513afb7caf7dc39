from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.adapters.schema import default_fx
from gpuscout.db.current import state_from_offers
from gpuscout.db.engine import make_engine, sqlite_url
from gpuscout.db.migrate import upgrade
from gpuscout.db.snapshots import store_snapshot
from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings

from .conftest import FakeSource, error_locs, offer, sample_offers

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


async def test_price_index_by_region_class_with_the_share_in_stock(
    db_client: httpx.AsyncClient,
) -> None:
    params = {"gpus": "H100", "days": 5}
    every = (await db_client.get("/v1/history/index", params=params)).json()
    here = await db_client.get(
        "/v1/history/index", params=params | {"region_class": "north-america"}
    )
    there = await db_client.get("/v1/history/index", params=params | {"region_class": "europe"})
    assert here.status_code == there.status_code == 200, here.text
    assert here.json()["region_class"] == "north-america"
    assert [d["offers"] for d in here.json()["days"]] == [d["offers"] for d in every["days"]]
    assert sum(d["offers"] for d in there.json()["days"]) == 0
    # the offer is listed, with no stock stated: in stock each day it is priced
    assert [d["availability_share"] for d in every["days"] if d["offers"]] == [1.0] * 4
    refused = await db_client.get(
        "/v1/history/index", params={"gpus": "A100 80GB", "region_class": "europe"}
    )
    assert refused.status_code == 422 and "rollups" in refused.text


async def test_hourly_price_index_holds_the_kept_hours(db_client: httpx.AsyncClient) -> None:
    params = {"gpus": "H100", "interval": "hour"}
    r = await db_client.get("/v1/history/index", params=params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["interval"] == "hour" and body["days"] == []
    # no snapshot in the last day: every hour holds the prices the last one left
    assert [h["median_usd_per_gpu_hour"] for h in body["hours"]] == [pytest.approx(1.75)] * 24
    hours = [datetime.fromisoformat(h["hour"]) for h in body["hours"]]
    assert hours == [hours[0] + timedelta(hours=n) for n in range(24)]
    beyond = await db_client.get("/v1/history/index", params=params | {"days": 8})
    assert beyond.status_code == 422 and "last 7 days" in beyond.text


async def test_price_index(db_client: httpx.AsyncClient) -> None:
    r = await db_client.get("/v1/history/index", params={"gpus": "H100", "days": 5})
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["days"]) == 5 and body["term"] == "on_demand"
    priced = [d for d in body["days"] if d["offers"]]
    assert priced[0]["median_usd_per_gpu_hour"] == pytest.approx(2.0)
    assert priced[-1]["median_usd_per_gpu_hour"] == pytest.approx(1.75)


async def test_offer_history_on_the_sample_says_nothing_is_stored(
    settings: Settings,
    engine,  # type: ignore[no-untyped-def]
) -> None:
    """The offline sample's answers link each offer's history, which nothing stored: the
    404 says so rather than leave a reader to wonder which offer is wrong."""
    sample = state_from_offers(sample_offers(), fx=default_fx(), source="sample")
    app = create_app(settings, offers_loader=FakeSource(sample), history=engine)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        ranked = await c.get("/v1/offers", params={"providers": "cirrus"})
        link = ranked.json()["offers"][0]["links"]["history"]
        answer = await c.get(link)
    assert answer.status_code == 404
    assert "offline sample, which stores nothing (`gpuscout snapshot`" in answer.json()["detail"]


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


@pytest.fixture
def sample_engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A database filled as ``gpuscout snapshot --sample`` fills it, a minute ago."""
    from gpuscout.adapters.sample import replay_sample

    url = sqlite_url(tmp_path / "sample.db")
    upgrade(url)
    engine = make_engine(url)
    at = datetime.now(UTC) - timedelta(minutes=1)
    store_snapshot(engine, replay_sample(["aws", "lambda"]), started_at=at, finished_at=at)
    yield engine
    engine.dispose()


@pytest.fixture
async def sample_client(settings: Settings, source: FakeSource, sample_engine):  # type: ignore[no-untyped-def]
    app = create_app(settings, offers_loader=source, history=sample_engine)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c


async def test_live_history_says_live(db_client: httpx.AsyncClient) -> None:
    body = (await db_client.get("/v1/history/index", params={"gpus": "H100", "days": 5})).json()
    assert (body["sample"], body["origin"], body["note"], body["sample_providers"]) == (
        False,
        "live",
        None,
        [],
    )
    assert all(d["sample_offers"] == 0 for d in body["days"])
    history = (await db_client.get(f"/v1/history/offers/{quote(offer().key, safe='')}")).json()
    assert not history["sample"] and {p["origin"] for p in history["prices"]} == {"live"}


async def test_sample_history_starts_when_stored_and_says_sample(
    sample_client: httpx.AsyncClient,
) -> None:
    """The sample's prices were captured in 2023-2025: the index counts them from the day
    they were stored, and says they are the sample's, with their dates."""
    from gpuscout.db.history import SAMPLE_DAYS_NOTE

    body = (await sample_client.get("/v1/history/index", params={"gpus": "H100"})).json()
    priced = [d for d in body["days"] if d["offers"]]
    assert [d["day"] for d in priced] == [datetime.now(UTC).date().isoformat()]
    assert priced[0]["sample_offers"] == priced[0]["offers"] > 0
    assert body["sample"] is True and body["origin"] == "sample"
    assert body["sample_providers"] == ["aws", "lambda"]
    assert "aws 2025-09-15" in body["note"] and body["note"].endswith(SAMPLE_DAYS_NOTE)


def _aws_history_path(engine) -> str:  # type: ignore[no-untyped-def]
    """The history path of one stored aws offer of the sample."""
    import sqlalchemy as sa

    with engine.connect() as c:
        key = c.execute(
            sa.text("SELECT offer_key FROM price_history WHERE provider = 'aws'")
        ).first()
    return f"/v1/history/offers/{quote(key[0], safe='')}"


async def test_sample_offer_history_says_sample(
    sample_client: httpx.AsyncClient, sample_engine
) -> None:  # type: ignore[no-untyped-def]
    body = (await sample_client.get(_aws_history_path(sample_engine))).json()
    assert body["sample"] is True and body["origin"] == "sample"
    assert body["sample_providers"] == ["aws"] and "aws 2025-09-15" in body["note"]
    assert [p["origin"] for p in body["prices"]] == ["sample"]


async def test_history_answers_match_their_openapi_schema(
    sample_client: httpx.AsyncClient, sample_engine
) -> None:  # type: ignore[no-untyped-def]
    from .test_answer_schema import _mismatches, _response_schema

    spec = (await sample_client.get("/openapi.json")).json()
    index = (await sample_client.get("/v1/history/index?gpus=H100")).json()
    schema = _response_schema(spec, "/v1/history/index", "get")
    assert _mismatches(schema, index, spec, "$") == []
    for name in ("sample", "origin", "note", "sample_providers"):
        assert name in _resolve_props(schema, spec)
    history = (await sample_client.get(_aws_history_path(sample_engine))).json()
    schema = _response_schema(spec, "/v1/history/offers/{key}", "get")
    assert _mismatches(schema, history, spec, "$") == []
    assert "origin" in _resolve_props(_resolve_props(schema, spec)["prices"]["items"], spec)


def _resolve_props(schema: dict, spec: dict) -> dict:  # type: ignore[type-arg]
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema["properties"]


async def test_unknown_gpu_is_refused_as_offers_refuses_it(db_client: httpx.AsyncClient) -> None:
    history = await db_client.get("/v1/history/index?gpus=H10")
    offers = await db_client.get("/v1/offers?gpus=H10")
    assert history.status_code == offers.status_code == 422
    (h,) = history.json()["errors"]
    (o,) = offers.json()["errors"]
    assert h["msg"] == o["msg"]
    assert "unknown GPU model, family or vendor: 'H10' (did you mean 'H100'" in h["msg"]
    assert h["parameter"] == o["parameter"] == "gpus"
    assert history.json()["detail"] == offers.json()["detail"]


@pytest.mark.parametrize("name", ["H100 SXM", "h100 sxm5", "H100-SXM5-80GB", "H100", "nvidia"])
async def test_a_gpu_spelling_the_offers_take_is_taken(
    db_client: httpx.AsyncClient, name: str
) -> None:
    """Each names the stored H100-SXM5-80GB offer, as ``/v1/offers`` reads it."""
    history = await db_client.get("/v1/history/index", params={"gpus": name, "days": 5})
    offers = await db_client.get("/v1/offers", params={"gpus": name})
    assert history.status_code == offers.status_code == 200, history.text
    assert "H100-SXM5-80GB" in {o["hardware"]["gpu_model"] for o in offers.json()["offers"]}
    priced = [d["median_usd_per_gpu_hour"] for d in history.json()["days"] if d["offers"]]
    assert priced[0] == pytest.approx(2.0) and priced[-1] == pytest.approx(1.75)
    assert history.json()["gpus"] == name


@pytest.mark.parametrize("name", ["4090", "RTX 4090", "A100 80GB"])
async def test_a_gpu_the_history_lacks_is_an_empty_index_not_a_refusal(
    db_client: httpx.AsyncClient, name: str
) -> None:
    history = await db_client.get("/v1/history/index", params={"gpus": name, "days": 5})
    offers = await db_client.get("/v1/offers", params={"gpus": name})
    assert history.status_code == offers.status_code == 200, history.text
    assert [d["offers"] for d in history.json()["days"]] == [0] * 5


@pytest.mark.parametrize("name", ["H10", "H9000", "4090X"])
async def test_a_gpu_the_offers_refuse_is_refused_alike(
    db_client: httpx.AsyncClient, name: str
) -> None:
    history = await db_client.get("/v1/history/index", params={"gpus": name})
    offers = await db_client.get("/v1/offers", params={"gpus": name})
    assert history.status_code == offers.status_code == 422
    assert history.json()["errors"][0]["msg"] == offers.json()["errors"][0]["msg"]


async def test_the_index_is_cached_per_snapshot_with_an_etag(
    settings: Settings,
    source: FakeSource,
    engine,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gpuscout.db.history

    reads: list[str] = []
    daily_index = gpuscout.db.history.daily_index

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(kwargs["gpu"])
        return daily_index(*args, **kwargs)

    monkeypatch.setattr(gpuscout.db.history, "daily_index", counted)
    app = create_app(settings, offers_loader=source, history=engine)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        await c.get("/v1/offers")  # the state is loaded
        first = await c.get("/v1/history/index", params={"gpus": "H100", "days": 5})
        etag = first.headers["etag"]
        again = await c.get("/v1/history/index", params={"gpus": "H100", "days": 5})
        held = await c.get(
            "/v1/history/index", params={"gpus": "H100", "days": 5}, headers={"If-None-Match": etag}
        )
        other = await c.get("/v1/history/index", params={"gpus": "A100", "days": 5})
        assert reads == ["H100", "A100"]  # the same query again: the cache's answer
        app.state.context.refresh_state()  # a new snapshot: a new cache
        reread = await c.get("/v1/history/index", params={"gpus": "H100", "days": 5})
        page = await c.get("/index", params={"gpus": "H100", "days": 5})
    assert reads == ["H100", "A100", "H100"]  # the page reads the API's cached answer
    assert first.status_code == again.status_code == other.status_code == 200
    assert again.content == first.content and again.headers["etag"] == etag
    assert held.status_code == 304 and held.content == b""
    assert other.headers["etag"] != etag
    assert reread.json() == first.json()
    assert page.status_code == 200 and "1.75" in page.text
