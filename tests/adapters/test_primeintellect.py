"""Prime Intellect adapter: parse the recorded availability page; fetch its pages via respx."""

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

from gpuscout.adapters.base import (
    MissingCredentials,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
)
from gpuscout.adapters.gpus import get_gpu
from gpuscout.adapters.primeintellect import (
    AVAILABILITY_URL,
    PAGE_SIZE,
    PrimeIntellectAdapter,
)
from gpuscout.adapters.schema import Fabric, GpuFormFactor, PriceBasis, PriceUnit, RentalTerm

FIXTURES = Path(__file__).parent.parent / "fixtures" / "primeintellect"
NOW = datetime(2026, 10, 6, tzinfo=UTC)
FAST = RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0)


def recorded() -> dict[str, Any]:
    return json.loads((FIXTURES / "availability_gpus.reconstructed.json").read_text())


def adapter(key: str | None = "pit_key") -> PrimeIntellectAdapter:
    return PrimeIntellectAdapter({"primeintellect_api_key": key}, policy=FAST)


def parse(*payloads: Any) -> Any:
    return adapter().parse(list(payloads), fetched_at=NOW)


def item(cloud_id: str, **changes: Any) -> dict[str, Any]:
    record = copy.deepcopy(next(i for i in recorded()["items"] if i["cloudId"] == cloud_id))
    record.update(changes)
    return record


def offers() -> dict[str, Any]:
    return {o.offer_id: o for o in parse(recorded()).offers}


def test_recorded_page_gives_one_offer_per_item_all_in_the_catalog() -> None:
    result = parse(recorded())
    assert result.skipped == []
    assert len(result.offers) == 8
    assert all(get_gpu(o.gpu_model or "") is not None for o in result.offers)
    assert {o.seller for o in result.offers} == {
        "lambdalabs",
        "hyperstack",
        "datacrunch",
        "crusoecloud",
        "runpod",
        "primecompute",
    }


def test_an_item_field_by_field() -> None:
    o = offers()["lambdalabs/gpu_8x_a100_80gb_sxm4"]
    assert (o.provider, o.seller) == ("primeintellect", "lambdalabs")
    assert (o.gpu_raw_name, o.gpu_model, o.gpu_count, o.gpu_memory_gb) == (
        "A100_80GB",
        "A100-SXM4-80GB",
        8,
        80,
    )
    assert o.gpu_form_factor is GpuFormFactor.SXM  # socket SXM4
    assert (o.vcpus, o.ram_gb) == (240, 1800)
    assert (o.region, o.country, o.available_now) == ("us-midwest-1", "US", True)
    assert o.os_images == ("ubuntu_22_cuda_12",)
    assert o.term is RentalTerm.ON_DEMAND and o.term_variant is None
    assert (o.price_amount, o.price_currency) == (Decimal("14.32"), "USD")
    assert (o.price_unit, o.price_basis) == (PriceUnit.HOUR, PriceBasis.INSTANCE)
    assert o.usd_per_gpu_hour == Decimal("1.79")
    assert o.raw_ref == "primeintellect:lambdalabs/gpu_8x_a100_80gb_sxm4"


def test_the_socket_tells_pcie_from_sxm_and_infiniband_is_the_fabric() -> None:
    pcie, sxm = offers()["hyperstack/n3-H100x8"], offers()["hyperstack/n3-H100-SXM5x8"]
    assert (pcie.gpu_model, sxm.gpu_model) == ("H100-PCIE-80GB", "H100-SXM5-80GB")
    assert (sxm.fabric, sxm.fabric_gbps) == (Fabric.INFINIBAND, 3200)
    assert pcie.fabric is None


def test_spot_community_stock_and_prepaid_hours() -> None:
    found = offers()
    spot = found["datacrunch/1H200.141S.44V_SPOT"]
    assert spot.term is RentalTerm.INTERRUPTIBLE and spot.price_amount == Decimal("0.94")
    community = found["runpod/NVIDIA GeForce RTX 4090"]
    assert community.term_variant == "community cloud"
    assert (community.price_amount, community.storage_gb) == (Decimal("0.34"), 40)
    assert community.public_bandwidth_down_mbps == 1000
    assert found["crusoecloud/l40s-48gb.1x"].available_now is False
    assert found["primecompute/NVIDIA H100 80GB HBM3_8"].min_rental_hours == 8


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"prices": {"onDemand": None, "currency": "USD"}}, "prices.onDemand"),
        ({"prices": {"onDemand": 1.2}}, "no prices.currency"),
        ({"security": "shared"}, "unknown security 'shared'"),
        ({"gpuCount": 0}, "bad gpuCount 0"),
        ({"cloudId": None}, "item without a provider or cloudId"),
    ],
)
def test_a_bad_item_is_skipped_with_its_reason(changes: dict[str, Any], reason: str) -> None:
    result = parse({"items": [item("1L40S.20V", **changes)], "totalCount": 1})
    assert result.offers == []
    assert reason in result.skipped[0].reason


def test_an_answer_without_items_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError, match="'items'"):
        parse({"totalCount": 0})


def test_fetch_without_a_key_skips_the_provider() -> None:
    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter(None).fetch(client)

    with pytest.raises(MissingCredentials, match="GPUSCOUT_PRIMEINTELLECT_API_KEY"):
        asyncio.run(run())


@respx.mock
def test_fetch_reads_every_page_with_the_key() -> None:
    one = recorded()["items"][0]
    first = {"items": [one] * PAGE_SIZE, "totalCount": PAGE_SIZE + 1}
    second = {"items": [one], "totalCount": PAGE_SIZE + 1}
    route = respx.get(AVAILABILITY_URL).mock(
        side_effect=[httpx.Response(200, json=first), httpx.Response(200, json=second)]
    )

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter("pit_s3cret").fetch(client)

    assert asyncio.run(run()) == [first, second]
    assert [call.request.url.params["page"] for call in route.calls] == ["1", "2"]
    assert route.calls.last.request.headers["authorization"] == "Bearer pit_s3cret"


@respx.mock
def test_a_refused_key_is_a_provider_error() -> None:
    respx.get(AVAILABILITY_URL).mock(return_value=httpx.Response(401))

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter().fetch(client)

    with pytest.raises(ProviderError, match="HTTP 401"):
        asyncio.run(run())
