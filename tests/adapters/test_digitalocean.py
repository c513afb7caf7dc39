"""DigitalOcean adapter: parse the recorded sizes page; fetch through respx."""

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
from gpuscout.adapters.digitalocean import SIZES_URL, DigitalOceanAdapter
from gpuscout.adapters.schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm, Vendor

FIXTURES = Path(__file__).parent.parent / "fixtures" / "digitalocean"
NOW = datetime(2025, 6, 1, tzinfo=UTC)
FAST = RetryPolicy(base_wait_s=0, max_wait_s=0)


def recorded() -> dict[str, Any]:
    return json.loads((FIXTURES / "sizes.gpuhunt_fixture.verbatim.json").read_text())


def adapter(token: str | None = "tok") -> DigitalOceanAdapter:
    return DigitalOceanAdapter({"digitalocean_token": token}, policy=FAST)


def parse(*payloads: Any) -> Any:
    return adapter().parse(list(payloads), fetched_at=NOW)


def size(**changes: Any) -> dict[str, Any]:
    record = copy.deepcopy(recorded()["sizes"][2])
    record.update(changes)
    return record


def test_mi300x_droplet_field_by_field() -> None:
    result = parse(recorded())
    o = next(o for o in result.offers if o.offer_id == "gpu-mi300x8-1536gb")
    assert o.provider == "digitalocean"
    assert o.instance_name == "AMD MI300X - 8X"
    assert o.gpu_model == "MI300X"
    assert o.gpu_vendor is Vendor.AMD
    assert o.gpu_form_factor is GpuFormFactor.OAM
    assert o.gpu_raw_name == "amd_mi300x"
    assert o.gpu_count == 8
    assert o.gpu_memory_gb == 192  # 1536 GiB total over 8 GPUs, nominal
    assert o.vcpus == 160
    assert o.ram_gb == pytest.approx(1966080 * 1024**2 / 1e9)  # MiB -> GB (1920 GiB)
    assert o.storage_gb == pytest.approx((2046 + 40960) * 1.073741824)
    assert o.region == "nyc1"
    assert o.country == "US"
    assert o.term is RentalTerm.ON_DEMAND
    assert o.price_amount == Decimal("15.92")
    assert o.price_currency == "USD"
    assert o.price_unit is PriceUnit.HOUR
    assert o.price_basis is PriceBasis.INSTANCE
    assert o.usd_per_hour == Decimal("15.92")
    assert o.usd_per_gpu_hour == Decimal("1.99")
    assert o.available_now is True
    assert o.raw_ref == "digitalocean:size/gpu-mi300x8-1536gb"


def test_h100_without_form_factor_is_the_slower_variant_form_factor_unstated() -> None:
    o = next(o for o in parse(recorded()).offers if o.offer_id == "gpu-h100x8-640gb")
    # SXM or PCIe is not published: ranked as the slower PCIe part, the form factor not stated
    assert (o.gpu_model, o.gpu_form_factor) == ("H100-PCIE-80GB", None)
    assert o.gpu_raw_name == "nvidia_h100"
    assert o.gpu_memory_gb == 80
    assert o.price_amount == Decimal("23.92")
    assert o.usd_per_gpu_hour == Decimal("2.99")


@pytest.mark.parametrize(
    ("slug", "count", "vram_gib"), [("gpu-h100x1-80gb", 1, 80), ("gpu-h100x8-640gb", 8, 640)]
)
def test_nvidia_h100_sizes_state_no_form_factor(slug: str, count: int, vram_gib: int) -> None:
    # No DigitalOcean document found that says SXM or PCIe for its H100 Droplets, and the size
    # record carries nothing that tells them apart (80 GB each): no form-factor hint is passed.
    vram = {"amount": vram_gib, "unit": "gib"}
    record = size(slug=slug, gpu_info={"count": count, "vram": vram, "model": "nvidia_h100"})
    [o] = parse({"sizes": [record]}).offers
    assert o.gpu_raw_name == "nvidia_h100" and o.gpu_memory_gb == 80
    assert (o.gpu_model, o.gpu_vendor, o.gpu_form_factor) == ("H100-PCIE-80GB", "nvidia", None)


def test_cpu_sizes_are_not_offers_nor_skips() -> None:
    result = parse(recorded())
    assert len(result.offers) == 2
    assert result.skipped == []


def test_one_offer_per_region_and_unavailable_size_is_regionless() -> None:
    page = {"sizes": [size(regions=["nyc1", "tor1", "ams3"]), size(slug="gpu-x", regions=[])]}
    offers = parse(page).offers
    assert [(o.region, o.country) for o in offers[:3]] == [
        ("nyc1", "US"),
        ("tor1", "CA"),
        ("ams3", "NL"),
    ]
    assert offers[3].offer_id == "gpu-x"
    assert offers[3].region is None
    assert offers[3].available_now is False


def test_string_numbers_are_read() -> None:
    record = size(price_hourly="15.92", vcpus="160")
    record["gpu_info"]["count"] = "8"
    [o] = parse({"sizes": [record]}).offers
    assert o.price_amount == Decimal("15.92")
    assert o.gpu_count == 8
    assert o.vcpus == 160


@pytest.mark.parametrize("price", [None, 0, -1, "abc", 0.05, True])
def test_bad_prices_are_skipped(price: Any) -> None:
    result = parse({"sizes": [size(price_hourly=price)]})
    assert result.offers == []
    assert len(result.skipped) == 1


@pytest.mark.parametrize("count", [0, None, "x", 1.5])
def test_bad_gpu_counts_are_skipped(count: Any) -> None:
    record = size()
    record["gpu_info"]["count"] = count
    result = parse({"sizes": [record]})
    assert result.offers == []
    assert len(result.skipped) == 1


def test_unknown_gpu_is_kept_with_raw_name() -> None:
    record = size()
    record["gpu_info"]["model"] = "nvidia_quantum_9000"
    [o] = parse({"sizes": [record]}).offers
    assert o.gpu_model is None
    assert o.gpu_vendor is None
    assert o.gpu_raw_name == "nvidia_quantum_9000"


def test_broken_records_are_skipped() -> None:
    result = parse({"sizes": [None, 3, {"gpu_info": {"count": 1}, "price_hourly": 1}]})
    assert result.offers == []
    assert len(result.skipped) == 3


@pytest.mark.parametrize("payload", [[], {"sizes": {}}, {"nosizes": []}, "text", None])
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        adapter().decode(b'{"sizes": [{"slug": "gpu-', "truncated.json")


def run_fetch(a: DigitalOceanAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await a.fetch(client)

    return asyncio.run(go())


NEXT = f"{SIZES_URL}?page=2&per_page=200"


@respx.mock
def test_fetch_follows_next_links_with_bearer_token() -> None:
    page1 = {**recorded(), "links": {"pages": {"next": NEXT, "last": NEXT}}}
    page2 = {"sizes": [size(slug="gpu-y")], "links": {"pages": {"prev": SIZES_URL}}}
    route = respx.get(SIZES_URL).mock(
        side_effect=lambda request: httpx.Response(
            200, json=page2 if request.url.params.get("page") == "2" else page1
        )
    )
    payloads = run_fetch(adapter())
    assert payloads == [page1, page2]
    assert route.call_count == 2
    first, second = route.calls[0].request, route.calls[1].request
    assert first.headers["Authorization"] == "Bearer tok"
    assert first.url.params["per_page"] == "200"
    assert second.url.params["page"] == "2"
    assert second.headers["Authorization"] == "Bearer tok"
    offers = adapter().parse(payloads, fetched_at=NOW).offers
    assert {o.offer_id for o in offers} == {"gpu-h100x8-640gb", "gpu-mi300x8-1536gb", "gpu-y"}


@respx.mock
def test_fetch_retries_429_and_5xx_then_succeeds() -> None:
    route = respx.get(SIZES_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(502),
            httpx.Response(200, json={"sizes": [], "links": {}}),
        ]
    )
    assert run_fetch(adapter()) == [{"sizes": [], "links": {}}]
    assert route.call_count == 3


@respx.mock
def test_fetch_gives_up_after_repeated_500() -> None:
    route = respx.get(SIZES_URL).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500"):
        run_fetch(adapter())
    assert route.call_count == FAST.attempts


@respx.mock
def test_fetch_401_is_a_provider_error() -> None:
    body = {"id": "unauthorized", "message": "Unable to authenticate you"}
    respx.get(SIZES_URL).mock(return_value=httpx.Response(401, json=body))
    with pytest.raises(ProviderError, match="401"):
        run_fetch(adapter())


def test_fetch_without_token_is_missing_credentials() -> None:
    with pytest.raises(MissingCredentials):
        run_fetch(adapter(None))
