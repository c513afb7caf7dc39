"""After a snapshot of the offline sample, every answer still says "sample" (issue 13):
the offers' header, one offer's (``/v1/offers/{id}``: ``offer_origin`` too, of its own
provider in a mixed database), ``/v1/estimate``, and ``/v1/providers`` per provider."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import Engine

from gpuscout.adapters.sample import SAMPLE_NOTE, replay_sample
from gpuscout.service.api import create_app
from gpuscout.service.api.hooks import default_hooks
from gpuscout.service.api.offer_ids import offer_id
from gpuscout.service.settings import Settings

from .conftest import ADMIN_TOKEN, database_client, store_sample_then_live

pytestmark = pytest.mark.anyio


@pytest.fixture
async def stored_sample(db_url: str, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """An app on a database that holds one snapshot, taken of the sample (as
    ``gpuscout snapshot --sample`` takes it), through ``POST /v1/snapshots``."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        database_url=db_url,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
    )
    app = create_app(settings, **default_hooks(settings, fetch=replay_sample))
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
            r = await client.post("/v1/snapshots?wait=true", headers=auth)
            assert r.status_code == 200, r.text
            yield client
    finally:
        app.state.context.history.dispose()  # type: ignore[attr-defined]


async def test_offers_from_a_stored_sample_say_sample(stored_sample: httpx.AsyncClient) -> None:
    body = (await stored_sample.get("/v1/offers?limit=3")).json()
    assert body["count"] == 3
    assert body["source"] == "database"  # read from the database...
    assert body["sample"] is True and body["origin"] == "sample"  # ...and still the sample
    assert "verda" in body["sample_providers"] and "aws" in body["sample_providers"]
    assert body["note"].startswith(SAMPLE_NOTE)
    assert "verda capture date unknown (on record by 2023-11-24)" in body["note"]
    assert "aws 2025-09-15" in body["note"]
    assert body["warnings"][0] == body["note"]
    # the sheet's CNY prices were converted: the answer names the FX table's date
    assert body["fx_as_of"]
    assert any(
        w.startswith("prices in CNY converted to USD at the FX table of " + body["fx_as_of"])
        for w in body["warnings"]
    )


async def test_an_offer_of_a_stored_sample_says_sample(stored_sample: httpx.AsyncClient) -> None:
    (first,) = (await stored_sample.get("/v1/offers?limit=1")).json()["offers"]
    r = await stored_sample.get(f"/v1/offers/{first['id']}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["source"] == "database" and body["record_from"] == "database"
    assert body["sample"] is True and body["origin"] == "sample"
    assert body["offer_origin"] == "sample"
    assert body["note"].startswith(SAMPLE_NOTE)


async def test_in_a_mixed_database_an_offer_says_its_own_origin(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    store_sample_then_live(engine, live=("lambda",))
    by_provider = {
        run.provider: next(o.key for o in run.offers if o.gpu_model is not None)
        for run in replay_sample(["aws", "lambda"])
    }
    async with database_client(tmp_path, db_url) as client:
        aws = (await client.get(f"/v1/offers/{offer_id(by_provider['aws'])}")).json()
        lam = (await client.get(f"/v1/offers/{offer_id(by_provider['lambda'])}")).json()
    for body in (aws, lam):  # the state's provenance, as /v1/offers gives it
        assert body["sample"] is True and body["origin"] == "mixed"
        assert body["sample_providers"] == ["aws"]
    assert aws["offer_origin"] == "sample" and lam["offer_origin"] == "live"


async def test_an_estimate_on_a_stored_sample_says_sample(
    stored_sample: httpx.AsyncClient,
) -> None:
    r = await stored_sample.post("/v1/estimate", json={"params": 1e9, "tokens": 1e10})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["sample"] is True and body["note"].startswith(SAMPLE_NOTE)


async def test_providers_of_a_stored_sample_are_sample_and_never_fresh(
    stored_sample: httpx.AsyncClient,
) -> None:
    body = (await stored_sample.get("/v1/providers")).json()
    assert body["sample"] is True and body["note"].startswith(SAMPLE_NOTE)
    held = [p for p in body["providers"] if p["offer_count"]]
    assert held and all(p["origin"] == "sample" and p["fresh"] is False for p in held)
    by_name = {p["provider"]: p for p in body["providers"]}
    assert by_name["verda"]["capture_date_known"] is False
    assert by_name["verda"]["last_fetch_at"].startswith("2023-11-24")
    assert by_name["aws"]["capture_date_known"] is True
