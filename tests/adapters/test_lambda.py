"""Lambda adapter: parse the recorded instance-types response; fetch through respx."""

from __future__ import annotations

import asyncio
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
from gpuscout.adapters.lambdalabs import API_URL, IMAGES_URL, LambdaAdapter
from gpuscout.adapters.schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm, Vendor

FIXTURES = Path(__file__).parent.parent / "fixtures" / "lambda"
NOW = datetime(2025, 12, 1, tzinfo=UTC)
FAST = RetryPolicy(base_wait_s=0, max_wait_s=0)


def recorded() -> dict[str, Any]:
    return json.loads((FIXTURES / "instance_types_response.verbatim.json").read_text())


def recorded_images() -> dict[str, Any]:
    """``GET /api/v1/images`` as recorded (verbatim, beside the instance types)."""
    return json.loads((FIXTURES / "images_response.verbatim.json").read_text())


def adapter(key: str | None = "secret") -> LambdaAdapter:
    return LambdaAdapter({"lambda_api_key": key}, policy=FAST)


def parse(payload: Any) -> Any:
    return adapter().parse([payload], fetched_at=NOW)


def by(offers: list[Any], offer_id: str, region: str | None) -> Any:
    return next(o for o in offers if o.offer_id == offer_id and o.region == region)


def test_8x_h100_one_offer_per_region_with_capacity() -> None:
    result = parse(recorded())
    offers = [o for o in result.offers if o.offer_id == "gpu_8x_h100_sxm5"]
    assert [o.region for o in offers] == ["us-west-3", "us-south-2", "us-south-3"]
    o = offers[0]
    assert o.provider == "lambda"
    assert o.gpu_model == "H100-SXM5-80GB"
    assert o.gpu_vendor is Vendor.NVIDIA
    assert o.gpu_form_factor is GpuFormFactor.SXM
    assert o.gpu_raw_name == "H100 (80 GB SXM5)"
    assert o.gpu_count == 8
    assert o.gpu_memory_gb == 80
    assert o.vcpus == 208
    assert o.ram_gb == pytest.approx(1800 * 1.073741824)
    assert o.storage_gb == pytest.approx(22528 * 1.073741824)
    assert o.country == "US"
    assert o.term is RentalTerm.ON_DEMAND
    assert o.price_amount == Decimal("23.92")
    assert o.price_currency == "USD"
    assert o.price_unit is PriceUnit.HOUR
    assert o.price_basis is PriceBasis.INSTANCE
    assert o.usd_per_hour == Decimal("23.92")
    assert o.usd_per_gpu_hour == Decimal("2.99")
    assert o.available_now is True
    assert o.raw_ref == "lambda:instance-type/gpu_8x_h100_sxm5"


def test_pcie_and_regions_outside_us() -> None:
    offers = parse(recorded()).offers
    pcie = by(offers, "gpu_1x_h100_pcie", "us-west-3")
    assert pcie.gpu_model == "H100-PCIE-80GB"
    assert pcie.price_amount == Decimal("2.49")
    a100 = by(offers, "gpu_8x_a100", "europe-central-1")
    assert a100.country == "DE"
    assert a100.gpu_model == "A100-SXM4-40GB"
    assert a100.gpu_memory_gb == 40
    assert by(offers, "gpu_1x_a100_sxm4", "asia-south-1").country == "IN"


def test_sold_out_type_is_one_unavailable_regionless_offer() -> None:
    offers = [o for o in parse(recorded()).offers if o.offer_id == "gpu_1x_gh200"]
    assert len(offers) == 1
    assert offers[0].region is None
    assert offers[0].available_now is False
    assert offers[0].price_amount == Decimal("1.49")


def test_v100_without_form_factor_is_the_slower_variant_and_cpu_type_skipped() -> None:
    result = parse(recorded())
    v100 = next(o for o in result.offers if o.offer_id == "gpu_8x_v100")
    assert v100.gpu_raw_name == "Tesla V100 (16 GB)"
    # "(16 GB)" has no SXM2/PCIe word and no Lambda page found states one: ranked as the
    # slower PCIe part, the form factor left unstated (#13)
    assert (v100.gpu_model, v100.gpu_vendor, v100.gpu_form_factor) == (
        "V100-PCIE-16GB",
        "nvidia",
        None,
    )
    assert v100.gpu_memory_gb == 16
    assert v100.gpu_count == 8
    assert [s.ref for s in result.skipped] == ["lambda:instance-type/cpu_4x_general"]
    assert len(result.offers) == 36


def item(price: Any, gpus: Any = 1, desc: str = "H100 (80 GB SXM5)") -> dict[str, Any]:
    return {
        "instance_type": {
            "name": "t",
            "description": "x",
            "gpu_description": desc,
            "price_cents_per_hour": price,
            "specs": {"vcpus": 8, "memory_gib": 64, "storage_gib": 100, "gpus": gpus},
        },
        "regions_with_capacity_available": [{"name": "us-east-1", "description": "Virginia, USA"}],
    }


@pytest.mark.parametrize("price", [None, 0, -5, "abc", 0.5])
def test_bad_prices_are_skipped(price: Any) -> None:
    result = parse({"data": {"t": item(price)}})
    assert result.offers == []
    assert len(result.skipped) == 1


def test_string_price_and_counts_are_read() -> None:
    [o] = parse({"data": {"t": item("329", gpus="1")}}).offers
    assert o.price_amount == Decimal("3.29")
    assert o.gpu_count == 1


def test_broken_records_are_skipped() -> None:
    result = parse({"data": {"a": None, "b": {"instance_type": {"name": "b"}}}})
    assert result.offers == []
    assert len(result.skipped) == 2


@pytest.mark.parametrize("payload", [[], {"nodata": 1}, {"data": [1]}, "text"])
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_error_envelope_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="invalid"):
        parse({"error": {"code": "global/invalid-api-key", "message": "API key was invalid"}})


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        adapter().decode(b'{"data": {"gpu_1x', "truncated.json")


def run_fetch(a: LambdaAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await a.fetch(client)

    return asyncio.run(go())


@respx.mock
def test_fetch_sends_bearer_key_and_returns_payload() -> None:
    route = respx.get(API_URL).mock(return_value=httpx.Response(200, json=recorded()))
    images = respx.get(IMAGES_URL).mock(return_value=httpx.Response(200, json=recorded_images()))
    payloads = run_fetch(adapter())
    assert payloads == [recorded(), recorded_images()]
    assert route.calls.last.request.headers["Authorization"] == "Bearer secret"
    assert images.calls.last.request.headers["Authorization"] == "Bearer secret"


@respx.mock
def test_failed_images_call_keeps_the_prices_and_is_reported() -> None:
    respx.get(API_URL).mock(return_value=httpx.Response(200, json=recorded()))
    respx.get(IMAGES_URL).mock(return_value=httpx.Response(500))
    payloads = run_fetch(adapter())
    result = adapter().parse(payloads, fetched_at=NOW)
    assert len(result.offers) == 36
    assert all(o.os_images is None for o in result.offers)
    assert [s.ref for s in result.skipped if s.ref == "lambda:images"] == ["lambda:images"]


def test_offers_carry_their_regions_os_images() -> None:
    result = adapter().parse([recorded(), recorded_images()], fetched_at=NOW)
    h100 = by(result.offers, "gpu_8x_h100_sxm5", "us-south-2")
    assert h100.os_images == (
        "GPU Base 22.04",
        "GPU Base 24.04",
        "Lambda Stack (Legacy) 22.04",
        "Lambda Stack (Legacy) on Ubuntu 22.04.5 LTS (1459)",
        "Lambda Stack 22.04",
        "Lambda Stack 24.04",
        "Ubuntu 22.04.5 LTS",
        "Ubuntu 24.04.2 LTS",
    )
    # no legacy V100 image in Germany
    assert by(result.offers, "gpu_8x_a100", "europe-central-1").os_images == (
        "GPU Base 22.04",
        "GPU Base 24.04",
        "Lambda Stack 22.04",
        "Lambda Stack 24.04",
        "Ubuntu 22.04.5 LTS",
        "Ubuntu 24.04.2 LTS",
    )
    # sold out everywhere: where it would run is not known, nor its images
    assert by(result.offers, "gpu_1x_gh200", None).os_images is None
    assert all(o.frameworks is None and o.cuda_version is None for o in result.offers)


def test_region_with_images_of_several_architectures_leaves_them_unknown() -> None:
    region = {"name": "us-east-1", "description": "Virginia, USA"}
    images = {
        "data": [
            {"name": "Ubuntu 22.04", "architecture": "x86_64", "region": region},
            {"name": "Lambda Stack 22.04", "architecture": "arm64", "region": region},
            {"name": "no region", "architecture": "arm64"},
        ]
    }
    result = adapter().parse([{"data": {"t": item(329)}}, images], fetched_at=NOW)
    [o] = result.offers
    assert o.region == "us-east-1" and o.os_images is None
    assert [s.reason for s in result.skipped] == ["image without a name or region"]


@respx.mock
def test_fetch_retries_429_and_5xx_then_succeeds() -> None:
    route = respx.get(API_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(503),
            httpx.Response(200, json={"data": {}}),
        ]
    )
    respx.get(IMAGES_URL).mock(return_value=httpx.Response(200, json={"data": []}))
    assert run_fetch(adapter()) == [{"data": {}}, {"data": []}]
    assert route.call_count == 3


@respx.mock
def test_fetch_gives_up_after_repeated_500() -> None:
    route = respx.get(API_URL).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500"):
        run_fetch(adapter())
    assert route.call_count == FAST.attempts


@respx.mock
def test_fetch_401_is_a_provider_error() -> None:
    body = {"error": {"code": "global/invalid-api-key", "message": "bad", "suggestion": "x"}}
    respx.get(API_URL).mock(return_value=httpx.Response(401, json=body))
    with pytest.raises(ProviderError, match="401"):
        run_fetch(adapter())


def test_fetch_without_key_is_missing_credentials() -> None:
    with pytest.raises(MissingCredentials):
        run_fetch(adapter(None))
