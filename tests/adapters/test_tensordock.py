"""TensorDock adapter: v2 locations/hostnodes responses, fetch through respx, bad input."""

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
from gpuscout.adapters.schema import Offer, PriceBasis, PriceUnit, RentalTerm, Vendor
from gpuscout.adapters.tables import country_code, data_rows
from gpuscout.adapters.tensordock import API_URL, TensorDockAdapter, iso_country
from gpuscout.adapters.units import power_of_two_counts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tensordock"
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)
TOKEN = {"tensordock_api_token": "td-token"}
AUSTIN = "loc-uuid-12345"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def parse(*payloads: Any) -> Any:
    return TensorDockAdapter().parse(list(payloads), fetched_at=NOW)


def by_id(offers: list[Offer]) -> dict[str, Offer]:
    return {o.offer_id: o for o in offers}


def fetch(adapter: TensorDockAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter.fetch(client)

    return asyncio.run(go())


def test_helpers() -> None:
    assert power_of_two_counts(1) == [1]  # the GPU counts of one VM
    assert power_of_two_counts(8) == [1, 2, 4, 8]
    assert power_of_two_counts(6) == [1, 2, 4, 6]
    assert iso_country("United States") == "US"
    assert iso_country("USA") == "US"
    assert iso_country("Atlantis") is None and iso_country(None) is None


def test_country_names_file_loads_with_a_source_per_row() -> None:
    rows = data_rows("country_names.csv")
    assert len({r["name"] for r in rows}) == len(rows) > 50
    assert all(len(r["iso"]) == 2 and r["iso"].isupper() and r["source"] for r in rows)
    assert country_code(" Norway ") == "NO" and country_code("UK") == "GB"


# --- parse: recorded responses -----------------------------------------------------------


def test_locations_give_one_priced_vm_per_gpu_count() -> None:
    result = parse(load("v2_locations.docs_plus_reconstructed.json"))
    assert result.skipped == []
    offers = by_id(result.offers)
    assert sorted(offers) == sorted(
        [f"{AUSTIN}:h100-sxm5-80gb:{n}x" for n in (1, 2, 4, 8)]
        + [f"{AUSTIN}:geforcertx4090-pcie-24gb:{n}x" for n in (1, 2, 4)]
        + [f"c6e6ce65-b799-47e7-a465-aa0beb60d099:rtxa6000-pcie-48gb:{n}x" for n in (1, 2)]
    )


def test_h100_vm_field_by_field() -> None:
    offers = by_id(parse(load("v2_locations.docs_plus_reconstructed.json")).offers)
    one = offers[f"{AUSTIN}:h100-sxm5-80gb:1x"]
    assert one.provider == "tensordock"
    assert one.raw_ref == f"tensordock:location/{AUSTIN}/h100-sxm5-80gb"
    assert one.gpu_model == "H100-SXM5-80GB"
    assert one.gpu_raw_name == "h100-sxm5-80gb"
    assert one.gpu_vendor is Vendor.NVIDIA
    assert one.gpu_count == 1
    assert one.gpu_memory_gb == 80
    # the per-GPU share of the location's ceilings (128 vCPU, 300 GB RAM, 1000 GB for 8 GPUs)
    assert one.vcpus == 16 and one.ram_gb == 37 and one.storage_gb == 125
    assert one.region == "Austin, Texas" and one.country == "US"
    # 2.20 GPU + 16 x 0.003 vCPU + 37 x 0.002 RAM, per hour; storage apart
    assert one.price_amount == Decimal("2.322")
    assert one.price_currency == "USD"
    assert one.price_unit is PriceUnit.HOUR
    assert one.price_basis is PriceBasis.INSTANCE
    assert one.term is RentalTerm.ON_DEMAND
    assert one.usd_per_hour == Decimal("2.322000")
    assert one.storage_price_per_gb_month == Decimal("0.03650")  # 0.00005 x 730
    assert one.storage_included_gb == 0 and one.boot_disk_min_gb == 100  # minimum storage
    assert one.available_count is None  # no hostnodes fetched
    eight = offers[f"{AUSTIN}:h100-sxm5-80gb:8x"]
    assert (eight.vcpus, eight.ram_gb, eight.storage_gb) == (128, 300, 1000)
    assert eight.price_amount == Decimal("18.584")  # 8 x 2.2 + 128 x 0.003 + 300 x 0.002


def test_consumer_card_vm() -> None:
    offers = by_id(parse(load("v2_locations.docs_plus_reconstructed.json")).offers)
    rtx = offers[f"{AUSTIN}:geforcertx4090-pcie-24gb:2x"]
    assert rtx.gpu_model == "RTX-4090" and rtx.gpu_memory_gb == 24
    assert (rtx.vcpus, rtx.ram_gb) == (16, 64)
    assert rtx.price_amount == Decimal("0.876")  # 2 x 0.35 + 16 x 0.003 + 64 x 0.002
    assert rtx.instance_name == "2x RTX 4090 24GB, 16 vCPU, 64 GB RAM"
    a6000 = offers["c6e6ce65-b799-47e7-a465-aa0beb60d099:rtxa6000-pcie-48gb:1x"]
    assert a6000.gpu_model == "RTX-A6000" and a6000.region == "Chubbuck, Idaho"


def test_hostnodes_add_stock_to_locations() -> None:
    result = parse(
        load("v2_locations.terraform_test.verbatim.json"),
        load("v2_hostnodes.terraform_test.verbatim.json"),
    )
    [one, two] = sorted(result.offers, key=lambda o: o.gpu_count)
    assert one.offer_id == "loc-1:geforcertx4090-pcie-24gb:1x"
    assert one.country == "US" and one.region == "Ashburn, VA"
    assert one.price_amount == Decimal("1.278")  # 0.99 + 16 x 0.01 + 64 x 0.002
    # the only host at loc-1 has a V100 free, no RTX 4090
    assert one.available_count == 0 and one.available_now is False
    assert two.gpu_count == 2


def test_hostnodes_alone_give_per_host_offers() -> None:
    [offer] = parse(load("v2_hostnodes.terraform_test.verbatim.json")).offers
    assert offer.offer_id == "host-host-1:teslav100-pcie-16gb:1x"
    assert offer.raw_ref == "tensordock:hostnode/host-1/teslav100-pcie-16gb"
    assert offer.gpu_model == "V100-PCIE-16GB" and offer.gpu_memory_gb == 16
    assert (offer.vcpus, offer.ram_gb, offer.storage_gb) == (64, 256, 4000)
    assert offer.price_amount == Decimal("1.852")  # 0.7 + 64 x 0.01 + 256 x 0.002
    assert offer.storage_price_per_gb_month == Decimal("0.0730")
    assert offer.reliability == pytest.approx(0.999)
    assert offer.public_bandwidth_down_mbps == 2500
    assert offer.public_bandwidth_up_mbps == 10500
    assert offer.available_count == 1 and offer.available_now is True


# --- parse: bad input -------------------------------------------------------------------


def test_v0_legacy_format_is_rejected() -> None:
    with pytest.raises(ResponseFormatError, match="v0"):
        parse(load("v0_hostnodes_legacy.reconstructed.json"))


@pytest.mark.parametrize(
    "payload",
    [None, [], {"data": None}, {"data": {"locations": {}}}, {"data": {"other": []}}],
)
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        TensorDockAdapter().decode(b'{"data": {"locations": [{"id": "x", "gp', "locations.json")


def _locations(**gpu_changes: Any) -> dict[str, Any]:
    payload = copy.deepcopy(load("v2_locations.terraform_test.verbatim.json"))
    payload["data"]["locations"][0]["gpus"][0].update(gpu_changes)
    return payload


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"price_per_hr": None}, "no positive price_per_hr"),
        ({"price_per_hr": -1}, "no positive price_per_hr"),
        ({"price_per_hr": "lots"}, "bad price_per_hr"),
        ({"max_count": 0}, "bad max_count"),
        ({"v0Name": None}, "gpu without v0Name"),
    ],
)
def test_broken_gpu_is_skipped(changes: dict[str, Any], reason: str) -> None:
    result = parse(_locations(**changes))
    assert result.offers == []
    [skipped] = result.skipped
    assert reason in skipped.reason


def test_string_numbers_are_read() -> None:
    offers = parse(_locations(price_per_hr="0.99", max_count="1")).offers
    assert [o.price_amount for o in offers] == [Decimal("1.566")]  # + 32 vCPU + 128 GB


def test_without_add_on_rates_the_price_is_per_gpu() -> None:
    [one, two] = parse(_locations(pricing=None)).offers
    assert one.price_basis is PriceBasis.GPU and one.price_amount == Decimal("0.99")
    assert two.usd_per_hour == Decimal("1.980000")
    assert one.vcpus is None and one.ram_gb is None
    assert one.storage_price_per_gb_month is None


def test_unknown_gpu_is_kept_unmapped() -> None:
    offers = parse(_locations(v0Name="imaginaryrtx9999-pcie-32gb")).offers
    assert offers and {o.gpu_model for o in offers} == {None}
    assert {o.gpu_raw_name for o in offers} == {"imaginaryrtx9999-pcie-32gb"}
    assert {o.gpu_memory_gb for o in offers} == {32}


def test_absurd_price_is_rejected() -> None:
    result = parse(_locations(price_per_hr=0.0001, pricing=None))
    assert result.offers == []
    assert all("absurd price" in s.reason for s in result.skipped)


# --- fetch -------------------------------------------------------------------------------


def test_missing_token_skips_the_provider() -> None:
    with pytest.raises(MissingCredentials, match="GPUSCOUT_TENSORDOCK_API_TOKEN"):
        fetch(TensorDockAdapter(policy=FAST))


@respx.mock
def test_fetch_gets_locations_and_hostnodes_with_the_token() -> None:
    locations = respx.get(f"{API_URL}/locations").mock(
        return_value=httpx.Response(200, json=load("v2_locations.terraform_test.verbatim.json"))
    )
    hostnodes = respx.get(f"{API_URL}/hostnodes").mock(
        return_value=httpx.Response(200, json=load("v2_hostnodes.terraform_test.verbatim.json"))
    )
    payloads = fetch(TensorDockAdapter(TOKEN, policy=FAST))
    assert [list(p["data"]) for p in payloads] == [["locations"], ["hostnodes"]]
    for route in (locations, hostnodes):
        assert route.calls.last.request.headers["Authorization"] == "Bearer td-token"


@respx.mock
def test_fetch_retries_429_and_5xx_then_succeeds() -> None:
    route = respx.get(f"{API_URL}/locations").mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(500),
            httpx.Response(200, json={"data": {"locations": []}}),
        ]
    )
    respx.get(f"{API_URL}/hostnodes").mock(
        return_value=httpx.Response(200, json={"data": {"hostnodes": []}})
    )
    payloads = fetch(TensorDockAdapter(TOKEN, policy=FAST))
    assert route.call_count == 3
    assert parse(*payloads).offers == []


@pytest.mark.parametrize("status", [401, 500])
@respx.mock
def test_fetch_failure_is_a_provider_error(status: int) -> None:
    respx.get(f"{API_URL}/locations").mock(return_value=httpx.Response(status))
    with pytest.raises(ProviderError, match=f"HTTP {status}"):
        fetch(TensorDockAdapter(TOKEN, policy=FAST))
