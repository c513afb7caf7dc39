"""An answer on offers read from a published catalog says so: which providers (the
stored records carry the catalog itself: tests/service/test_catalog_snapshot.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal

import httpx
import pytest
from fastapi import FastAPI

from gpuscout.adapters.collect import RunStatus
from gpuscout.adapters.run import Origin
from gpuscout.adapters.schema import Offer, PriceBasis, PriceUnit, RentalTerm
from gpuscout.db.current import ProviderState
from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings

from .conftest import FakeSource, database_state

FETCHED_AT = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)

pytestmark = pytest.mark.anyio


def nebius_from_skypilot() -> Offer:
    return Offer(
        provider="nebius",
        offer_id="gpu-h100-sxm_8gpu-128vcpu-1600gb",
        region="eu-north1",
        fetched_at=FETCHED_AT,
        via_catalog="skypilot-catalog v8",
        catalog_licence="NOASSERTION",
        gpu_model="H100-SXM5-80GB",
        gpu_count=8,
        price_amount=Decimal("23.60"),
        price_currency="USD",
        price_unit=PriceUnit.HOUR,
        price_basis=PriceBasis.INSTANCE,
        term=RentalTerm.ON_DEMAND,
    )


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    offer = nebius_from_skypilot()
    held = ProviderState("nebius", RunStatus.OK, 1, FETCHED_AT, FETCHED_AT, origin=Origin.CATALOG)
    app: FastAPI = create_app(settings, offers_loader=FakeSource(database_state([offer], held)))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


async def test_offers_answer_names_the_catalog_providers(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/offers", params={"gpus": "H100"})).json()
    assert body["catalog_providers"] == ["nebius"]
    assert body["sample"] is False
    assert any(w.startswith("prices from published catalogs") for w in body["warnings"])
    [row] = body["offers"]
    detail = (await client.get(f"/v1/offers/{row['id']}")).json()
    assert detail["offer_origin"] == "catalog"
    assert detail["catalog_providers"] == ["nebius"]


async def test_providers_say_catalog_and_the_price_age(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/providers")).json()
    nebius = next(p for p in body["providers"] if p["provider"] == "nebius")
    assert nebius["origin"] == "catalog"
    assert nebius["price_age_hours"] is not None
