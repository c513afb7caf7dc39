"""FluidStack adapter: parse the available-configurations list; fetch through respx."""

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
from gpuscout.adapters.fluidstack import CONFIGURATIONS_URL, FluidStackAdapter
from gpuscout.adapters.schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm, Vendor

FIXTURES = Path(__file__).parent.parent / "fixtures" / "fluidstack"
NOW = datetime(2025, 6, 1, tzinfo=UTC)
FAST = RetryPolicy(base_wait_s=0, max_wait_s=0)


def recorded() -> list[Any]:
    return json.loads((FIXTURES / "list_available_configurations.reconstructed.json").read_text())


def adapter(key: str | None = "k") -> FluidStackAdapter:
    return FluidStackAdapter({"fluidstack_api_key": key}, policy=FAST)


def parse(payload: Any) -> Any:
    return adapter().parse([payload], fetched_at=NOW)


def record(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(recorded()[0])
    out.update(changes)
    return out


def test_h100_one_offer_per_count_and_region() -> None:
    result = parse(recorded())
    assert result.skipped == []
    h100 = [o for o in result.offers if o.gpu_raw_name == "H100_SXM5_80GB"]
    assert [(o.gpu_count, o.region) for o in h100] == [
        (n, r) for n in (1, 2, 4, 8) for r in ("norway_4_eu", "canada_2_na")
    ]
    o = h100[-2]  # 8 GPUs in Norway
    assert o.provider == "fluidstack"
    assert o.offer_id == "H100_SXM5_80GBx8"
    assert o.raw_ref == "fluidstack:gpu_type/H100_SXM5_80GB"
    assert o.gpu_model == "H100-SXM5-80GB"
    assert o.gpu_vendor is Vendor.NVIDIA
    assert o.gpu_form_factor is GpuFormFactor.SXM
    assert o.gpu_count == 8
    assert o.gpu_memory_gb == 80
    assert o.vcpus is None and o.ram_gb is None and o.storage_gb is None  # not published
    assert o.region == "norway_4_eu"
    assert o.country == "NO"
    assert o.term is RentalTerm.ON_DEMAND
    assert o.price_amount == Decimal("2.89")
    assert o.price_currency == "USD"
    assert o.price_unit is PriceUnit.HOUR
    assert o.price_basis is PriceBasis.GPU
    assert o.usd_per_hour == Decimal("23.12")
    assert o.usd_per_gpu_hour == Decimal("2.89")
    assert o.available_now is True


def test_other_types_and_unavailable_l40() -> None:
    offers = parse(recorded()).offers
    a100 = next(o for o in offers if o.offer_id == "A100_PCIE_80GBx4")
    assert a100.gpu_model == "A100-PCIE-80GB"
    assert a100.country == "IS"
    assert a100.usd_per_hour == Decimal("6.6")
    a6000 = next(o for o in offers if o.offer_id == "RTX_A6000_48GBx1")
    assert a6000.gpu_model == "RTX-A6000"
    assert a6000.gpu_memory_gb == 48
    l40 = [o for o in offers if o.gpu_raw_name == "L40_48GB"]
    assert [o.gpu_count for o in l40] == [1, 2, 4, 8]
    assert all(o.region is None and o.available_now is False for o in l40)
    assert len(offers) == 20


@pytest.mark.parametrize("price", [None, 0, "-2", "abc"])
def test_bad_prices_are_skipped(price: Any) -> None:
    result = parse([record(price_per_gpu_hr=price)])
    assert result.offers == []
    assert len(result.skipped) == 1


def test_price_below_the_floor_is_skipped_per_offer() -> None:
    # the contract's floor judges each offer: 4 counts x 2 regions
    result = parse([record(price_per_gpu_hr="0.001")])
    assert result.offers == []
    assert result.skip_reasons() == {"absurd price: 0.00100 USD per GPU-hour (on_demand)": 8}


def test_numeric_price_and_messy_counts() -> None:
    result = parse([record(price_per_gpu_hr=2.89, gpu_counts=["2", 2, 0, 1.5, "x", 8])])
    assert {o.gpu_count for o in result.offers} == {2, 8}
    assert result.offers[0].price_amount == Decimal("2.89")


def test_unknown_gpu_is_kept() -> None:
    [o, *_] = parse([record(gpu_type="QPU_9000_64GB")]).offers
    assert o.gpu_model is None
    assert o.gpu_raw_name == "QPU_9000_64GB"
    assert o.gpu_memory_gb == 64


def test_broken_records_are_skipped() -> None:
    result = parse([None, {"gpu_type": None}, record(gpu_counts=[]), record(gpu_type="X")])
    assert len(result.skipped) == 3
    assert {o.gpu_raw_name for o in result.offers} == {"X"}


@pytest.mark.parametrize("payload", [{"configs": []}, "text", None, 42])
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_error_envelope_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="invalid"):
        parse({"error": "invalid api key"})


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        adapter().decode(b'[{"gpu_type": "H100_', "truncated.json")


def run_fetch(a: FluidStackAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await a.fetch(client)

    return asyncio.run(go())


@respx.mock
def test_fetch_sends_api_key_header() -> None:
    route = respx.get(CONFIGURATIONS_URL).mock(return_value=httpx.Response(200, json=recorded()))
    assert run_fetch(adapter()) == [recorded()]
    assert route.calls.last.request.headers["api-key"] == "k"


@respx.mock
def test_fetch_retries_429_and_5xx_then_succeeds() -> None:
    route = respx.get(CONFIGURATIONS_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(504),
            httpx.Response(200, json=[]),
        ]
    )
    assert run_fetch(adapter()) == [[]]
    assert route.call_count == 3


@respx.mock
def test_fetch_gives_up_after_repeated_500() -> None:
    route = respx.get(CONFIGURATIONS_URL).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500"):
        run_fetch(adapter())
    assert route.call_count == FAST.attempts


@respx.mock
def test_fetch_401_is_a_provider_error() -> None:
    respx.get(CONFIGURATIONS_URL).mock(return_value=httpx.Response(401, json={"detail": "no"}))
    with pytest.raises(ProviderError, match="401"):
        run_fetch(adapter())


def test_fetch_without_key_is_missing_credentials() -> None:
    with pytest.raises(MissingCredentials):
        run_fetch(adapter(None))


@pytest.mark.parametrize(
    ("region", "country"),
    [("norway_4_eu", "NO"), ("TEXAS_USA", "US"), ("NORTH_DAKOTA_USA", "US"), ("ISRAEL", "IL")],
)
def test_a_region_names_its_country_by_its_first_or_last_word(region: str, country: str) -> None:
    """FluidStack's API documents regions such as ``TEXAS_USA`` (fern-config's OpenAPI
    Region enum) beside the recorded ``norway_4_eu``."""
    from gpuscout.adapters.fluidstack import _country

    assert _country(region) == country
