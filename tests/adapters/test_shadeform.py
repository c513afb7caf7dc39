"""Shadeform adapter: parse the documented instance-types example; fetch through respx."""

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
from gpuscout.adapters.schema import (
    GpuFormFactor,
    GpuInterconnect,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    Vendor,
)
from gpuscout.adapters.shadeform import TYPES_URL, ShadeformAdapter

FIXTURES = Path(__file__).parent.parent / "fixtures" / "shadeform"
NOW = datetime(2025, 6, 1, tzinfo=UTC)
FAST = RetryPolicy(base_wait_s=0, max_wait_s=0)


def recorded() -> dict[str, Any]:
    return json.loads((FIXTURES / "instances_types.docs_example.verbatim.json").read_text())


def adapter(key: str | None = "k") -> ShadeformAdapter:
    return ShadeformAdapter({"shadeform_api_key": key}, policy=FAST)


def parse(payload: Any) -> Any:
    return adapter().parse([payload], fetched_at=NOW)


def h100x8(**changes: Any) -> dict[str, Any]:
    """A consistent 8x H100 SXM type, built from the documented record's keys."""
    record = copy.deepcopy(recorded()["instance_types"][0])
    record.update(
        cloud="lambdalabs",
        shade_instance_type="H100_sxm5x8",
        cloud_instance_type="gpu_8x_h100_sxm5",
        hourly_price=2392,
        availability=[{"region": "us-east-1", "available": True, "display_name": "US, Virginia"}],
    )
    record["configuration"].update(
        gpu_type="H100",
        num_gpus=8,
        vram_per_gpu_in_gb=80,
        interconnect="sxm",
        nvlink=True,
        vcpus=208,
        memory_in_gb=1800,
        storage_in_gb=24780,
    )
    record.update(changes)
    return record


def test_documented_example_field_by_field() -> None:
    result = parse(recorded())
    assert result.skipped == []
    first, second = result.offers
    assert first.provider == "shadeform"
    assert first.offer_id == "hyperstack:gpu_1x_a6000"
    assert first.seller == "hyperstack"  # the cloud behind the marketplace
    assert first.instance_name == "A6000"
    assert first.raw_ref == "shadeform:hyperstack/gpu_1x_a6000"
    # The docs example says gpu_type "A100" with 48 GB: contradictory, so left unmapped.
    assert first.gpu_model is None
    assert first.gpu_raw_name == "A100"
    assert first.gpu_vendor is Vendor.NVIDIA  # from gpu_manufacturer
    assert first.gpu_form_factor is GpuFormFactor.PCIE  # from interconnect
    assert first.gpu_interconnect is None  # one GPU: no GPU-to-GPU link
    assert first.gpu_count == 1
    assert first.gpu_memory_gb == 48
    assert first.vcpus == 6
    assert first.ram_gb == 12
    assert first.storage_gb == 256
    assert first.os_images == ("ubuntu22.04_cuda12.2_shade_os", "ubuntu20.04_cuda12.0_shade_os")
    assert first.region == "us-central-1"
    assert first.country == "US"
    assert first.term is RentalTerm.ON_DEMAND
    assert first.price_amount == Decimal("2.10")  # 210 cents
    assert first.price_currency == "USD"
    assert first.price_unit is PriceUnit.HOUR
    assert first.price_basis is PriceBasis.INSTANCE
    assert first.usd_per_hour == Decimal("2.1")
    assert first.available_now is True
    assert second.region == "us-central-2"
    assert second.available_now is False


def test_consistent_h100_resolves_with_nvlink() -> None:
    [o] = parse({"instance_types": [h100x8()]}).offers
    assert o.offer_id == "lambdalabs:gpu_8x_h100_sxm5"
    assert o.gpu_model == "H100-SXM5-80GB"
    assert o.gpu_form_factor is GpuFormFactor.SXM
    assert o.gpu_interconnect is GpuInterconnect.NVLINK
    assert o.gpu_count == 8
    assert o.price_amount == Decimal("23.92")
    assert o.usd_per_gpu_hour == Decimal("2.99")


def test_type_without_regions_is_one_unavailable_offer() -> None:
    [o] = parse({"instance_types": [h100x8(availability=[])]}).offers
    assert o.region is None
    assert o.available_now is False


@pytest.mark.parametrize("price", [None, 0, -210, "abc", "0.5"])
def test_bad_prices_are_skipped(price: Any) -> None:
    result = parse({"instance_types": [h100x8(hourly_price=price)]})
    assert result.offers == []
    assert len(result.skipped) == 1


def test_string_price_in_cents_is_read() -> None:
    [o] = parse({"instance_types": [h100x8(hourly_price="2392")]}).offers
    assert o.price_amount == Decimal("23.92")


def test_unknown_gpu_is_kept() -> None:
    record = h100x8()
    record["configuration"]["gpu_type"] = "Z9000"
    [o] = parse({"instance_types": [record]}).offers
    assert o.gpu_model is None
    assert o.gpu_raw_name == "Z9000"


def test_broken_records_are_skipped() -> None:
    no_config = h100x8(cloud_instance_type="other", configuration=None)
    zero_gpus = h100x8(cloud_instance_type="zero")
    zero_gpus["configuration"]["num_gpus"] = 0
    result = parse({"instance_types": [None, {"cloud": "x"}, no_config, zero_gpus]})
    assert result.offers == []
    assert len(result.skipped) == 4


@pytest.mark.parametrize("payload", [[], {"instance_types": {}}, {"types": []}, "text", None])
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        adapter().decode(b'{"instance_types": [{"cloud": "aws', "truncated.json")


def run_fetch(a: ShadeformAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await a.fetch(client)

    return asyncio.run(go())


@respx.mock
def test_fetch_sends_x_api_key() -> None:
    route = respx.get(TYPES_URL).mock(return_value=httpx.Response(200, json=recorded()))
    assert run_fetch(adapter()) == [recorded()]
    assert route.calls.last.request.headers["X-API-KEY"] == "k"


@respx.mock
def test_fetch_retries_429_and_5xx_then_succeeds() -> None:
    route = respx.get(TYPES_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(500),
            httpx.Response(200, json={"instance_types": []}),
        ]
    )
    assert run_fetch(adapter()) == [{"instance_types": []}]
    assert route.call_count == 3


@respx.mock
def test_fetch_gives_up_after_repeated_500() -> None:
    route = respx.get(TYPES_URL).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500"):
        run_fetch(adapter())
    assert route.call_count == FAST.attempts


@respx.mock
def test_fetch_401_is_a_provider_error() -> None:
    respx.get(TYPES_URL).mock(return_value=httpx.Response(401, json={"error": "unauthorized"}))
    with pytest.raises(ProviderError, match="401"):
        run_fetch(adapter())


def test_fetch_without_key_is_missing_credentials() -> None:
    with pytest.raises(MissingCredentials):
        run_fetch(adapter(None))
