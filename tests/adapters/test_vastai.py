"""Vast.ai adapter: recorded bundles responses, fetch through respx, and bad input."""

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

from gpuscout.adapters.base import DUPLICATE_REASON, ProviderError, ResponseFormatError, RetryPolicy
from gpuscout.adapters.schema import Offer, PriceBasis, PriceUnit, RentalTerm, Vendor
from gpuscout.adapters.vastai import BUNDLES_URL, SEARCH_LIMIT, VastAiAdapter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vastai"
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def cli_capture() -> dict[str, Any]:
    """The verbatim CLI capture in the answer it was printed from: the CLI prints the
    ``offers`` list of the bundles answer, so the envelope is all that differs."""
    return {"offers": load("offers_cli_raw_rtx4090_2024.verbatim.json")}


def parse(*payloads: Any) -> Any:
    return VastAiAdapter().parse(list(payloads), fetched_at=NOW)


def one(offers: list[Offer], offer_id: str, term: RentalTerm) -> Offer:
    [offer] = [o for o in offers if o.offer_id == offer_id and o.term is term]
    return offer


def fetch(adapter: VastAiAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter.fetch(client)

    return asyncio.run(go())


# --- parse: recorded responses -----------------------------------------------------------


def test_reconstructed_bundles_give_on_demand_and_interruptible_offers() -> None:
    result = parse(load("bundles_response.reconstructed.json"))
    assert result.skipped == []
    assert len(result.offers) == 6
    assert {o.term for o in result.offers} == {RentalTerm.ON_DEMAND, RentalTerm.INTERRUPTIBLE}


def test_h100_datacenter_offer_field_by_field() -> None:
    offers = parse(load("bundles_response.reconstructed.json")).offers
    h100 = one(offers, "m31478-8x", RentalTerm.ON_DEMAND)
    assert h100.provider == "vastai"
    assert h100.raw_ref == "vastai:offer/20157342"
    assert h100.gpu_model == "H100-SXM5-80GB"
    assert h100.gpu_raw_name == "H100 SXM"
    assert h100.gpu_vendor is Vendor.NVIDIA
    assert h100.gpu_count == 8
    assert h100.gpu_memory_gb == 80  # 81559 MiB usable: the 80 GB it is sold by
    assert h100.gpu_nvlink_gbs == pytest.approx(370.6)
    assert h100.gpu_pcie_gen == 5
    assert h100.cpu_model == "Xeon® Platinum 8480+" and h100.cpu_vendor == "intel"
    assert h100.vcpus == 224
    assert h100.ram_gb is None  # cpu_ram's meaning is undocumented: not guessed
    assert h100.storage_gb == 8192
    assert h100.region == "Texas, US" and h100.country == "US"
    assert h100.public_bandwidth_up_mbps == pytest.approx(4810.7)
    assert h100.cuda_version == "12.8" and h100.driver_version == "570.124.06"
    # price: dph_base (compute only), storage kept apart per GB-month
    assert h100.price_amount == Decimal("16.0")
    assert h100.price_currency == "USD"
    assert h100.price_unit is PriceUnit.HOUR
    assert h100.price_basis is PriceBasis.INSTANCE
    assert h100.usd_per_hour == Decimal("16.000000")
    assert h100.usd_per_gpu_hour == Decimal("2")
    # storage_cost per 30-day month, given per 730-hour month
    assert h100.storage_price_per_gb_month == Decimal("0.4266666666666667") / 720 * 730
    assert h100.storage_included_gb == 0 and h100.boot_disk_min_gb == 10
    assert h100.egress_price_per_gb == Decimal("0.005")
    assert h100.reliability == pytest.approx(0.9981)
    assert h100.verified is True and h100.datacenter is True
    assert h100.available_now is True
    assert h100.fetched_at == NOW


def test_interruptible_offer_is_the_min_bid() -> None:
    offers = parse(load("bundles_response.reconstructed.json")).offers
    spot = one(offers, "m31478-8x", RentalTerm.INTERRUPTIBLE)
    assert spot.price_amount == Decimal("11.2")
    assert spot.price_basis is PriceBasis.INSTANCE
    assert spot.usd_per_hour == Decimal("11.200000")
    a100 = one(offers, "m14203-2x", RentalTerm.INTERRUPTIBLE)
    assert a100.gpu_model == "A100-PCIE-80GB"
    assert a100.gpu_count == 2
    assert a100.price_amount == Decimal("0.9")
    assert a100.datacenter is False
    assert a100.region == "Quebec, CA" and a100.country == "CA"


def test_verbatim_cli_capture_in_its_envelope() -> None:
    result = parse(cli_capture())
    assert len(result.offers) == 2
    offer = one(result.offers, "m22990-1x", RentalTerm.ON_DEMAND)
    assert offer.gpu_model == "RTX-4090"
    assert offer.gpu_count == 1
    assert offer.gpu_memory_gb == 24  # 24564 MiB usable: a 24 GB card, as others state it
    assert offer.vcpus == 24
    assert offer.storage_gb == pytest.approx(1607.875)
    assert offer.price_amount == Decimal("0.24666666666666665")
    assert offer.usd_per_hour == Decimal("0.246667")
    assert offer.storage_price_per_gb_month == Decimal("0.0013333333333333335") / 720 * 730
    assert offer.country == "CN"
    assert offer.gpu_nvlink_gbs is None  # bw_nvlink 0.0 means none
    assert offer.egress_price_per_gb == Decimal("0.0")
    bid = one(result.offers, "m22990-1x", RentalTerm.INTERRUPTIBLE)
    assert bid.price_amount == Decimal("0.2")


def test_verbatim_capture_seed_groups() -> None:
    """What the real record states for the seed's groups, and what it leaves unknown."""
    offer = one(parse(cli_capture()).offers, "m22990-1x", RentalTerm.ON_DEMAND)
    # compute: cpu_name and its brand, cpu_arch; cpu_cores is the host's 96 vCPUs: not cores
    assert (offer.cpu_model, offer.cpu_vendor, offer.cpu_arch) == (
        "AMD EPYC 7642 48-Core Processor",
        "amd",
        "amd64",
    )
    assert offer.cpu_cores is None and offer.cpu_sockets is None
    # memory and storage: disk_bw in MB/s; disk_name is a drive model, not a type
    assert offer.disk_bandwidth_mbps == pytest.approx(2545.294)
    assert offer.storage_type is None and offer.ram_gb is None
    # network: measured inet_up / inet_down
    assert (offer.public_bandwidth_up_mbps, offer.public_bandwidth_down_mbps) == (77.7, 105.9)
    # software: cuda_max_good and driver_version; os_version 20.04 is the host's, not an image
    assert (offer.cuda_version, offer.driver_version) == ("12.2", "535.183.01")
    assert offer.os_images is None and offer.frameworks is None
    # support: reliability2, verification, hosting_type 0 (a consumer host)
    assert offer.reliability == pytest.approx(0.9700835)
    assert (offer.verified, offer.datacenter) == (True, False)
    # power and chassis: the bundle says nothing
    assert (offer.psu_watts, offer.cooling, offer.chassis_form_factor) == (None, None, None)


def test_same_machine_twice_is_one_offer() -> None:
    raw = cli_capture()
    result = parse(raw, raw)
    assert len(result.offers) == 2
    # the contract's dedupe: the second listing's on-demand and interruptible offers
    assert result.skip_reasons() == {DUPLICATE_REASON: 2}
    assert result.skipped[0].ref == "vastai:offer/11684738 (first: vastai:offer/11684738)"


def test_the_cli_bare_list_is_not_the_live_format() -> None:
    # fetch gets {"offers": [...]}; a bare list is not what the provider answers
    with pytest.raises(ResponseFormatError, match="expected a JSON object"):
        parse(load("offers_cli_raw_rtx4090_2024.verbatim.json"))


# --- parse: bad input -------------------------------------------------------------------


def test_openapi_example_with_offers_as_object_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError, match="not a list"):
        parse(load("bundles_response.openapi_example.json"))


@pytest.mark.parametrize("payload", [None, 42, "x", {"data": []}])
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        VastAiAdapter().decode(b'{"offers": [{"id": 1, "dph', "bundles.json")


def _offer(**changes: Any) -> dict[str, Any]:
    base = copy.deepcopy(cli_capture()["offers"][0])
    base.update(changes)
    return base


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"dph_base": None}, "no positive dph_base"),
        ({"dph_base": -0.5}, "no positive dph_base"),
        ({"dph_base": "cheap"}, "bad dph_base: not a number"),
        ({"num_gpus": 0}, "bad num_gpus"),
        ({"num_gpus": None}, "bad num_gpus"),
        ({"gpu_name": None}, "no gpu_name"),
    ],
)
def test_broken_record_is_skipped(changes: dict[str, Any], reason: str) -> None:
    result = parse({"offers": [_offer(**changes)]})
    assert result.offers == []
    [skipped] = result.skipped
    assert reason in skipped.reason
    assert skipped.ref == "vastai:offer/11684738"


def test_string_numbers_are_read() -> None:
    result = parse({"offers": [_offer(dph_base="0.5", min_bid="0.3", num_gpus="1")]})
    prices = {o.term: o.price_amount for o in result.offers}
    assert prices == {
        RentalTerm.ON_DEMAND: Decimal("0.5"),
        RentalTerm.INTERRUPTIBLE: Decimal("0.3"),
    }


@pytest.mark.parametrize("bid", [None, 0])
def test_missing_bid_gives_only_on_demand(bid: Any) -> None:
    result = parse({"offers": [_offer(min_bid=bid)]})
    assert [o.term for o in result.offers] == [RentalTerm.ON_DEMAND]
    assert result.skipped == []


@pytest.mark.parametrize(("bid", "reason"), [("n/a", "bad min_bid"), (-0.2, "no positive min_bid")])
def test_bad_bid_skips_only_the_interruptible_offer(bid: Any, reason: str) -> None:
    result = parse({"offers": [_offer(min_bid=bid)]})
    assert [o.term for o in result.offers] == [RentalTerm.ON_DEMAND]
    [skipped] = result.skipped
    assert reason in skipped.reason


def test_unknown_gpu_is_kept_unmapped() -> None:
    result = parse({"offers": [_offer(gpu_name="Imaginary RTX 9999")]})
    offer = result.offers[0]
    assert offer.gpu_model is None
    assert offer.gpu_raw_name == "Imaginary RTX 9999"
    assert offer.gpu_vendor is Vendor.NVIDIA  # from gpu_arch


def test_absurd_price_is_rejected() -> None:
    result = parse({"offers": [_offer(dph_base=0.001, min_bid=0.0001)]})
    assert result.offers == []
    assert all("absurd price" in s.reason for s in result.skipped)


def test_garbage_optional_fields_do_not_drop_the_offer() -> None:
    result = parse(
        {"offers": [_offer(inet_up=0, reliability2=7, cpu_cores_effective="n/a", pci_gen=9)]}
    )
    offer = one(result.offers, "m22990-1x", RentalTerm.ON_DEMAND)
    assert offer.public_bandwidth_up_mbps is None
    assert offer.reliability is None
    assert offer.vcpus is None
    assert offer.gpu_pcie_gen is None


# --- fetch -------------------------------------------------------------------------------


@respx.mock
def test_fetch_posts_the_search_body_with_the_key() -> None:
    route = respx.post(BUNDLES_URL).mock(
        return_value=httpx.Response(200, json=load("bundles_response.reconstructed.json"))
    )
    payloads = fetch(VastAiAdapter({"vastai_api_key": "k123"}, policy=FAST))
    assert len(payloads[0]["offers"]) == 3
    request = route.calls.last.request
    assert request.headers["Authorization"] == "Bearer k123"
    body = json.loads(request.content)
    assert body["limit"] == SEARCH_LIMIT
    assert body["type"] == "on-demand"
    assert body["rentable"] == {"eq": True} and body["rented"] == {"eq": False}


@respx.mock
def test_fetch_without_key_sends_no_auth() -> None:
    route = respx.post(BUNDLES_URL).mock(return_value=httpx.Response(200, json={"offers": []}))
    assert fetch(VastAiAdapter(policy=FAST)) == [{"offers": []}]
    assert "Authorization" not in route.calls.last.request.headers


@respx.mock
def test_fetch_retries_429_and_5xx_then_succeeds() -> None:
    route = respx.post(BUNDLES_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(502),
            httpx.Response(200, json={"offers": []}),
        ]
    )
    assert fetch(VastAiAdapter(policy=FAST)) == [{"offers": []}]
    assert route.call_count == 3


@respx.mock
def test_fetch_fails_after_500s() -> None:
    respx.post(BUNDLES_URL).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500"):
        fetch(VastAiAdapter(policy=FAST))


@respx.mock
def test_invalid_key_404_is_a_provider_error() -> None:
    respx.post(BUNDLES_URL).mock(
        return_value=httpx.Response(404, json={"error": "not_found", "msg": "Invalid user key"})
    )
    with pytest.raises(ProviderError, match="404"):
        fetch(VastAiAdapter({"vastai_api_key": "bad"}, policy=FAST))


def test_doctests() -> None:
    import doctest

    from gpuscout.adapters import vastai

    assert doctest.testmod(vastai).failed == 0
