"""OVHcloud adapter: parse the recorded public cloud catalog; fetch it through respx."""

from __future__ import annotations

import asyncio
import copy
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from gpuscout.adapters.base import ProviderError, ResponseFormatError, RetryPolicy
from gpuscout.adapters.gpus import get_gpu
from gpuscout.adapters.ovhcloud import CATALOG_URL, OvhCloudAdapter
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ovhcloud"
NOW = datetime(2026, 9, 26, tzinfo=UTC)
FAST = RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0)


def recorded() -> dict[str, Any]:
    return json.loads((FIXTURES / "catalog_public_cloud_fr.reconstructed.json").read_text())


def parse(*payloads: Any) -> Any:
    return OvhCloudAdapter(policy=FAST).parse(list(payloads), fetched_at=NOW)


def catalog(*addons: dict[str, Any]) -> dict[str, Any]:
    return {**recorded(), "addons": list(addons)}


def addon(plan: str) -> dict[str, Any]:
    return copy.deepcopy(next(a for a in recorded()["addons"] if a["planCode"] == plan))


def test_recorded_catalog_gives_hourly_and_monthly_gpu_offers() -> None:
    result = parse(recorded())
    assert result.skipped == []
    assert sorted((o.offer_id, o.term.value) for o in result.offers) == [
        ("a100-180", "on_demand"),
        ("h100-1520", "on_demand"),
        ("h100-380", "commit_1mo"),
        ("h100-380", "on_demand"),
        ("h200-1920", "on_demand"),
        ("l4-90", "commit_1mo"),
        ("l4-90", "on_demand"),
        ("l40s-90", "commit_1mo"),
        ("l40s-90", "on_demand"),
    ]  # no CPU flavour, volume, Windows flavour or 3AZ plan
    assert all(get_gpu(o.gpu_model or "") is not None for o in result.offers)
    assert {o.gpu_model for o in result.offers} == {
        "L4",
        "L40S",
        "A100-PCIE-80GB",
        "H100-PCIE-80GB",
        "H200-SXM-141GB",
    }


def test_an_hourly_offer_field_by_field() -> None:
    o = next(o for o in parse(recorded()).offers if o.offer_id == "h100-1520")
    assert o.provider == "ovhcloud"
    assert (o.gpu_raw_name, o.gpu_count, o.gpu_memory_gb, o.ram_gb) == ("H100", 4, 80, 1520)
    assert o.term is RentalTerm.ON_DEMAND
    assert (o.price_amount, o.price_currency) == (Decimal("11.2"), "EUR")
    assert (o.price_unit, o.price_basis) == (PriceUnit.HOUR, PriceBasis.INSTANCE)
    assert o.billing_increment_s == 3600  # every commenced hour
    assert o.region is None and o.available_now is None  # the catalog names no region
    assert o.raw_ref == "ovhcloud:h100-1520.consumption"


def test_the_monthly_rate_is_a_months_commitment_priced_per_month() -> None:
    offers = [o for o in parse(recorded()).offers if o.offer_id == "h100-380"]
    monthly = next(o for o in offers if o.term is RentalTerm.COMMIT_1MO)
    hourly = next(o for o in offers if o.term is RentalTerm.ON_DEMAND)
    assert (monthly.price_amount, monthly.price_unit) == (Decimal("1940"), PriceUnit.MONTH)
    assert monthly.billing_increment_s is None
    assert monthly.usd_per_hour < hourly.usd_per_hour  # cheaper run for a whole month


def test_local_disks_are_summed_with_their_kind() -> None:
    record = addon("l4-90.consumption")
    record["blobs"]["technical"]["storage"] = {
        "disks": [{"number": 2, "capacity": 200, "technology": "NVMe"}]
    }
    (o,) = parse(catalog(record)).offers
    assert (o.storage_gb, o.storage_type.value if o.storage_type else None) == (400, "nvme")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda a: a["pricings"].clear(), "no pricing per hour"),
        (lambda a: a["pricings"][0].update(price=-5), "bad price -5"),
        (lambda a: a["pricings"][0].update(price="cheap"), "bad price 'cheap'"),
        (lambda a: a["blobs"]["technical"]["gpu"].update(number=0), "bad technical.gpu.number"),
    ],
)
def test_a_bad_plan_is_skipped_with_its_reason(change: Any, reason: str) -> None:
    record = addon("l4-90.consumption")
    change(record)
    result = parse(catalog(record))
    assert result.offers == []
    assert reason in result.skipped[0].reason


def test_a_catalog_without_currency_or_addons_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError, match="locale.currencyCode"):
        parse({"addons": []})
    with pytest.raises(ResponseFormatError, match="'addons' list"):
        parse({"locale": {"currencyCode": "EUR"}, "addons": {}})


@respx.mock
def test_fetch_asks_the_french_subsidiary_without_a_key() -> None:
    route = respx.get(CATALOG_URL).mock(return_value=httpx.Response(200, json=recorded()))

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await OvhCloudAdapter(policy=FAST).fetch(client)

    assert asyncio.run(run()) == [recorded()]
    assert dict(route.calls.last.request.url.params) == {"ovhSubsidiary": "FR"}
    assert "authorization" not in route.calls.last.request.headers


@respx.mock
def test_fetch_error_names_the_status() -> None:
    respx.get(CATALOG_URL).mock(return_value=httpx.Response(404))

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await OvhCloudAdapter(policy=FAST).fetch(client)

    with pytest.raises(ProviderError, match="HTTP 404"):
        asyncio.run(run())
