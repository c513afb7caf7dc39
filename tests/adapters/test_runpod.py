"""RunPod adapter: GraphQL gpuTypes responses, fetch through respx, and bad input."""

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
from gpuscout.adapters.calls import query_payload
from gpuscout.adapters.runpod import (
    BID_VARIANT,
    CATALOG_URL,
    GPU_TYPES_QUERY,
    GRAPHQL_URL,
    RunPodAdapter,
    datacenter_country,
)
from gpuscout.adapters.schema import Offer, PriceBasis, PriceUnit, RentalTerm, Vendor
from gpuscout.adapters.units import power_of_two_counts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runpod"
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)
H100 = "NVIDIA H100 80GB HBM3"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def pricing() -> Any:
    return load("graphql_gpuTypes_pricing.reconstructed.json")


def parse(*payloads: Any) -> Any:
    return RunPodAdapter().parse(list(payloads), fetched_at=NOW)


def one(offers: list[Offer], offer_id: str, term: RentalTerm, region: str | None = None) -> Offer:
    [offer] = [
        o for o in offers if o.offer_id == offer_id and o.term is term and o.region == region
    ]
    return offer


def gpu_type(type_id: str, **changes: Any) -> dict[str, Any]:
    [record] = [g for g in pricing()["data"]["gpuTypes"] if g["id"] == type_id]
    record = copy.deepcopy(record)
    record.update(changes)
    return record


def wrap(*records: Any) -> dict[str, Any]:
    return {"data": {"gpuTypes": list(records)}}


def fetch(adapter: RunPodAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter.fetch(client)

    return asyncio.run(go())


# --- parse: recorded responses -----------------------------------------------------------


def test_pod_gpu_counts() -> None:
    assert power_of_two_counts(8, low=1) == [1, 2, 4, 8]
    assert power_of_two_counts(10, low=1) == [1, 2, 4, 8, 10]
    assert power_of_two_counts(3, low=2) == [2, 3]
    assert power_of_two_counts(1, low=2) == []


def test_datacenter_country() -> None:
    assert datacenter_country("US-KS-2") == "US"
    assert datacenter_country("EUR-IS-1") == "IS"
    assert datacenter_country("EU-RO-1") == "RO"
    assert datacenter_country("weird") is None


def test_secure_on_demand_h100_field_by_field() -> None:
    result = parse(pricing())
    assert result.skipped == []
    offer = one(result.offers, f"{H100}:secure:8x", RentalTerm.ON_DEMAND)
    assert offer.provider == "runpod"
    assert offer.raw_ref == f"runpod:gpuType/{H100}"
    assert offer.instance_name == "8x H100 SXM"
    assert offer.gpu_model == "H100-SXM5-80GB"
    assert offer.gpu_raw_name == H100
    assert offer.gpu_vendor is Vendor.NVIDIA
    assert offer.gpu_count == 8
    assert offer.gpu_memory_gb == 80
    assert offer.region is None  # list prices are not per location
    # disk is not in the API: the documented $0.10/GB-month, the 20 GB container disk
    assert offer.storage_price_per_gb_month == Decimal("0.10")
    assert offer.storage_included_gb == 0 and offer.boot_disk_min_gb == 20
    assert offer.datacenter is True
    assert offer.price_amount == Decimal("2.69")
    assert offer.price_currency == "USD"
    assert offer.price_unit is PriceUnit.HOUR
    assert offer.price_basis is PriceBasis.GPU
    assert offer.usd_per_hour == Decimal("21.520000")
    assert offer.vcpus is None and offer.ram_gb is None  # only lowestPrice has them


def test_clouds_and_spot_follow_the_published_prices() -> None:
    offers = parse(pricing()).offers
    a100 = "NVIDIA A100-SXM4-80GB"
    community = one(offers, f"{a100}:community:1x", RentalTerm.ON_DEMAND)
    assert community.price_amount == Decimal("1.39") and community.datacenter is False
    spot = one(offers, f"{a100}:community:4x", RentalTerm.INTERRUPTIBLE)
    assert spot.price_amount == Decimal("0.79")
    assert spot.usd_per_hour == Decimal("3.160000")
    # H100 PCIe: communityCloud false and communityPrice 0 -> no community offers
    pcie = [o for o in offers if o.gpu_raw_name == "NVIDIA H100 PCIe"]
    assert pcie and all(":community:" not in o.offer_id for o in pcie)
    # H100 SXM: communitySpotPrice null -> no community spot
    assert not [
        o
        for o in offers
        if o.offer_id.startswith(f"{H100}:community") and o.term is RentalTerm.INTERRUPTIBLE
    ]


def test_savings_plan_commitments() -> None:
    offers = parse(pricing()).offers
    plans = {o.term: o.price_amount for o in offers if o.offer_id == f"{H100}:savings-plan:1x"}
    assert plans == {
        RentalTerm.COMMIT_1W: Decimal("2.57"),
        RentalTerm.COMMIT_1MO: Decimal("2.45"),
        RentalTerm.COMMIT_3MO: Decimal("2.35"),
        RentalTerm.COMMIT_6MO: Decimal("2.25"),
    }
    month = one(offers, f"{H100}:savings-plan:8x", RentalTerm.COMMIT_1MO)
    assert month.price_unit is PriceUnit.HOUR and month.price_basis is PriceBasis.GPU
    assert month.usd_per_hour == Decimal("19.600000")
    assert month.datacenter is None  # the API does not say which cloud
    # H100 PCIe has only a one-month plan
    pcie_terms = {o.term for o in offers if o.offer_id.startswith("NVIDIA H100 PCIe:savings")}
    assert pcie_terms == {RentalTerm.COMMIT_1MO}


def test_instant_cluster_nodes_per_datacenter() -> None:
    offers = parse(pricing()).offers
    clusters = [o for o in offers if o.multi_node]
    assert {o.region for o in clusters} == {"US-KS-2", "US-GA-2", "EUR-IS-1"}
    iceland = one(offers, f"{H100}:cluster:8x", RentalTerm.ON_DEMAND, region="EUR-IS-1")
    assert iceland.country == "IS"
    assert iceland.gpu_count == 8
    assert iceland.price_amount == Decimal("2.39")
    assert iceland.usd_per_hour == Decimal("19.120000")


def test_amd_gpu() -> None:
    offers = parse(pricing()).offers
    mi300x = one(offers, "AMD Instinct MI300X OAM:secure:8x", RentalTerm.INTERRUPTIBLE)
    assert mi300x.gpu_model == "MI300X"
    assert mi300x.gpu_vendor is Vendor.AMD
    assert mi300x.gpu_memory_gb == 192
    assert mi300x.price_amount == Decimal("1.99")


def test_per_cloud_lowest_price_gives_vcpus_ram_and_stock_for_one_gpu() -> None:
    # The adapter's query asks lowestPrice once per cloud under GraphQL aliases.
    record = gpu_type(H100)
    lowest = record.pop("lowestPrice")
    record["secureLowestPrice"] = lowest
    record["communityLowestPrice"] = {**lowest, "stockStatus": None, "minVcpu": 8}
    offers = parse(wrap(record)).offers
    secure = one(offers, f"{H100}:secure:1x", RentalTerm.ON_DEMAND)
    assert secure.vcpus == 20 and secure.ram_gb == 125
    assert secure.available_now is True
    community = one(offers, f"{H100}:community:1x", RentalTerm.ON_DEMAND)
    assert community.vcpus == 8 and community.available_now is False
    bigger = one(offers, f"{H100}:secure:8x", RentalTerm.ON_DEMAND)
    assert bigger.vcpus is None and bigger.ram_gb is None
    assert bigger.available_now is True


def test_mig_slice_is_a_gpu_fraction() -> None:
    record = {
        "id": "NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb",
        "displayName": "PRO 6000 MIG 24GB",
        "manufacturer": "Nvidia",
        "memoryInGb": 24,
        "secureCloud": True,
        "communityCloud": False,
        "maxGpuCount": 4,
        "securePrice": 0.5,
    }
    [offer] = parse(wrap(record)).offers
    assert offer.gpu_model == "RTX-PRO-6000"
    assert offer.gpu_mig_profile == "1g.24gb"
    assert offer.gpu_fraction == pytest.approx(0.25)
    assert offer.gpu_count == 1
    assert offer.usd_per_hour == Decimal("0.500000")
    assert offer.usd_per_gpu_hour == Decimal("2")


def test_docs_list_without_prices_gives_no_offers() -> None:
    result = parse(load("graphql_gpuTypes_list.docs.verbatim.json"))
    assert result.offers == []
    assert result.skip_reasons() == {"no price in any cloud or term": 3}


def test_docs_detail_lowest_price_is_the_on_demand_price_of_its_only_cloud() -> None:
    # the docs' "Get GPU type details" answer: no list price, lowestPrice.uninterruptablePrice
    # 0.3 for 1 GPU, and the type is in Community Cloud only
    [offer] = parse(load("graphql_gpuType_detail_rtx3090.docs.verbatim.json")).offers
    assert offer.offer_id == "NVIDIA GeForce RTX 3090:community:1x"
    assert (offer.term, offer.term_variant) == (RentalTerm.ON_DEMAND, None)
    assert offer.price_amount == Decimal("0.3") and offer.price_basis is PriceBasis.GPU
    assert offer.gpu_count == 1 and offer.datacenter is False


def test_minimum_bid_price_is_an_interruptible_offer_labelled_a_bid() -> None:
    # runpod-python docs, get_gpu("NVIDIA A100 80GB PCIe"): minimumBidPrice 1.158, in both
    # clouds, an unaliased quote: a bid of either cloud
    offers = parse(wrap(load("sdk_get_gpu_a100.docs.verbatim.json"))).offers
    [bid] = [o for o in offers if o.term_variant == BID_VARIANT]
    assert bid.offer_id == "NVIDIA A100 80GB PCIe:any-cloud:1x"
    assert bid.term is RentalTerm.INTERRUPTIBLE and bid.price_amount == Decimal("1.158")
    assert bid.price_basis is PriceBasis.GPU and bid.gpu_count == 1
    assert bid.datacenter is None
    # per cloud under the adapter's aliases: one bid per cloud, beside the listed spot price
    record = gpu_type(H100)
    lowest = record.pop("lowestPrice")
    record["secureLowestPrice"] = {**lowest, "minimumBidPrice": 1.49}
    record["communityLowestPrice"] = {**lowest, "minimumBidPrice": None}
    offers = parse(wrap(record)).offers
    bids = [o for o in offers if o.term_variant == BID_VARIANT]
    assert [(o.offer_id, o.price_amount, o.datacenter) for o in bids] == [
        (f"{H100}:secure:1x", Decimal("1.49"), True)
    ]
    assert bids[0].vcpus == 20 and bids[0].available_now is True
    [spot] = [
        o
        for o in offers
        if o.offer_id == f"{H100}:secure:1x"
        and o.term is RentalTerm.INTERRUPTIBLE
        and o.term_variant is None
    ]
    assert spot.price_amount == Decimal("1.75")  # secureSpotPrice, a listed spot price
    # the reconstructed listing: types in both clouds with a bid in their quote
    listing = parse(pricing()).offers
    any_cloud = {o.offer_id: o.price_amount for o in listing if o.term_variant == BID_VARIANT}
    assert any_cloud == {
        "NVIDIA A100-SXM4-80GB:any-cloud:1x": Decimal("0.79"),
        "NVIDIA GeForce RTX 4090:any-cloud:1x": Decimal("0.2"),
    }


# --- parse: bad input -------------------------------------------------------------------


def test_graphql_errors_are_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="Cannot query field"):
        parse({"errors": [{"message": 'Cannot query field "bogus" on type "GpuType".'}]})


@pytest.mark.parametrize(
    "payload", [None, [], {"data": None}, {"data": {"gpuTypes": {"id": "x"}}}, {"x": 1}]
)
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        RunPodAdapter().decode(b'{"data": {"gpuTypes": [{"id": "NVIDIA', "gpus.json")


def test_bad_prices_are_skipped_with_reasons() -> None:
    record = gpu_type(
        "NVIDIA GeForce RTX 4090",
        securePrice="abc",
        communityPrice=-0.34,
        secureSpotPrice=None,
        communitySpotPrice="0.2",
        lowestPrice=None,  # no quote: only the list prices
    )
    result = parse(wrap(record))
    terms = {(o.offer_id.split(":")[1], o.term) for o in result.offers}
    assert terms == {("community", RentalTerm.INTERRUPTIBLE)}
    assert {o.price_amount for o in result.offers} == {Decimal("0.2")}
    reasons = result.skip_reasons()
    assert reasons["bad securePrice: not a number: 'abc'"] == 1
    assert reasons["negative communityPrice (-0.34)"] == 1


def test_absurd_price_is_rejected() -> None:
    result = parse(wrap(gpu_type(H100, securePrice=0.001)))
    assert not [
        o
        for o in result.offers
        if o.offer_id.startswith(f"{H100}:secure") and o.term is RentalTerm.ON_DEMAND
    ]
    assert any("absurd price" in s.reason for s in result.skipped)


def test_unknown_gpu_is_kept_unmapped() -> None:
    record = gpu_type("NVIDIA GeForce RTX 4090", id="NVIDIA Imaginary RTX 9999")
    offers = parse(wrap(record)).offers
    assert offers
    assert {o.gpu_model for o in offers} == {None}
    assert {o.gpu_raw_name for o in offers} == {"NVIDIA Imaginary RTX 9999"}
    assert {o.gpu_vendor for o in offers} == {Vendor.NVIDIA}  # from manufacturer


def test_record_without_id_is_skipped() -> None:
    result = parse(wrap({"displayName": "x", "securePrice": 1}, "not an object"))
    assert result.offers == []
    assert result.skip_reasons() == {"gpuType without id": 1, "gpuType is not an object": 1}


# --- fetch -------------------------------------------------------------------------------


def catalog(cloud: str) -> Any:
    """REST v2 ``GET /v2/catalog/gpus?include=AVAILABILITY&product=POD&count=1&cloud=...``
    (reconstructed: field names from runpod/docs api-reference-v2/openapi.json)."""
    return load(f"rest_v2_catalog_gpus_pod_{cloud}.reconstructed.json")


def catalog_payload(cloud: str) -> Any:
    query = {"include": "AVAILABILITY", "product": "POD", "count": 1, "cloud": cloud.upper()}
    return query_payload(query, catalog(cloud))


def test_catalog_cuda_versions_on_the_1_gpu_offers_of_their_cloud() -> None:
    offers = parse(pricing(), catalog_payload("secure"), catalog_payload("community")).offers
    # the newest version offered (12.8; 12.6 is offered but full now), numerically compared
    assert one(offers, f"{H100}:secure:1x", RentalTerm.ON_DEMAND).cuda_version == "12.8"
    assert one(offers, "NVIDIA H100 PCIe:secure:1x", RentalTerm.ON_DEMAND).cuda_version == "12.4"
    rtx = one(offers, "NVIDIA GeForce RTX 4090:community:1x", RentalTerm.ON_DEMAND)
    assert rtx.cuda_version == "12.10"  # not "12.2": 12.10 is newer
    # an 8-GPU pod may be another machine; the community H100 lists none; AMD has no CUDA
    assert one(offers, f"{H100}:secure:8x", RentalTerm.ON_DEMAND).cuda_version is None
    assert one(offers, f"{H100}:community:1x", RentalTerm.ON_DEMAND).cuda_version is None
    mi300 = one(offers, "AMD Instinct MI300X OAM:secure:1x", RentalTerm.ON_DEMAND)
    assert mi300.cuda_version is None
    # the catalog is asked for 1-GPU pods: the savings plans' machines are not stated
    plans = [o for o in offers if ":savings-plan:" in o.offer_id]
    assert plans and all(o.cuda_version is None for o in plans)
    # without the catalog (no key): unknown
    assert all(o.cuda_version is None for o in parse(pricing()).offers)


def test_catalog_answer_of_another_shape_is_a_format_error() -> None:
    query = {"include": "AVAILABILITY", "product": "POD", "count": 2, "cloud": "SECURE"}
    with pytest.raises(ResponseFormatError, match="catalog"):
        parse(pricing(), query_payload(query, catalog("secure")))
    with pytest.raises(ResponseFormatError, match="catalog"):
        parse(pricing(), query_payload({**query, "count": 1}, {"data": []}))


@respx.mock
def test_fetch_with_a_key_asks_the_catalog_per_cloud() -> None:
    respx.post(GRAPHQL_URL).mock(return_value=httpx.Response(200, json=pricing()))
    route = respx.get(CATALOG_URL).mock(
        side_effect=[
            httpx.Response(200, json=catalog("secure")),
            httpx.Response(200, json=catalog("community")),
        ]
    )
    payloads = fetch(RunPodAdapter({"runpod_api_key": "rk"}, policy=FAST))
    assert payloads == [pricing(), catalog_payload("secure"), catalog_payload("community")]
    params = [dict(c.request.url.params) for c in route.calls]
    assert params == [
        {"include": "AVAILABILITY", "product": "POD", "count": "1", "cloud": cloud}
        for cloud in ("SECURE", "COMMUNITY")
    ]
    assert route.calls.last.request.headers["Authorization"] == "Bearer rk"


@respx.mock
def test_failed_catalog_call_keeps_the_prices() -> None:
    respx.post(GRAPHQL_URL).mock(return_value=httpx.Response(200, json=pricing()))

    def answer(request: httpx.Request) -> httpx.Response:
        secure = request.url.params["cloud"] == "SECURE"
        return httpx.Response(200, json=catalog("secure")) if secure else httpx.Response(500)

    respx.get(CATALOG_URL).mock(side_effect=answer)
    payloads = fetch(RunPodAdapter({"runpod_api_key": "rk"}, policy=FAST))
    result = RunPodAdapter().parse(payloads, fetched_at=NOW)
    assert one(result.offers, f"{H100}:secure:1x", RentalTerm.ON_DEMAND).cuda_version == "12.8"
    assert [s.ref for s in result.skipped if s.ref and "catalog" in s.ref] == [
        "runpod:catalog/community"
    ]


@respx.mock
def test_fetch_posts_the_query_with_the_key() -> None:
    route = respx.post(GRAPHQL_URL).mock(return_value=httpx.Response(200, json=pricing()))
    respx.get(CATALOG_URL).mock(return_value=httpx.Response(200, json={"gpus": []}))
    payloads = fetch(RunPodAdapter({"runpod_api_key": "rk"}, policy=FAST))
    assert payloads[0] == pricing()
    request = route.calls.last.request
    assert request.headers["Authorization"] == "Bearer rk"
    body = json.loads(request.content)
    assert body == {"query": GPU_TYPES_QUERY}
    assert (
        "secureLowestPrice: lowestPrice(input: {gpuCount: 1, secureCloud: true})" in (body["query"])
    )


@respx.mock
def test_fetch_without_key_sends_no_auth() -> None:
    route = respx.post(GRAPHQL_URL).mock(return_value=httpx.Response(200, json=wrap()))
    fetch(RunPodAdapter(policy=FAST))
    assert "Authorization" not in route.calls.last.request.headers


@respx.mock
def test_graphql_errors_with_http_200_fail_the_fetch() -> None:
    respx.post(GRAPHQL_URL).mock(
        return_value=httpx.Response(200, json={"errors": [{"message": "Unauthorized"}]})
    )
    with pytest.raises(ProviderError, match="GraphQL errors: Unauthorized"):
        fetch(RunPodAdapter(policy=FAST))


@respx.mock
def test_fetch_retries_429_and_5xx_then_succeeds() -> None:
    route = respx.post(GRAPHQL_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "1"}),
            httpx.Response(503),
            httpx.Response(200, json=wrap()),
        ]
    )
    assert fetch(RunPodAdapter(policy=FAST)) == [wrap()]
    assert route.call_count == 3


@pytest.mark.parametrize("status", [401, 500])
@respx.mock
def test_fetch_failure_is_a_provider_error(status: int) -> None:
    """Neither API answers: the provider fails (a rejected key, a server error)."""
    respx.post(GRAPHQL_URL).mock(return_value=httpx.Response(status))
    respx.get(CATALOG_URL).mock(return_value=httpx.Response(status))
    with pytest.raises(ProviderError, match=f"HTTP {status}"):
        fetch(RunPodAdapter({"runpod_api_key": "bad"}, policy=FAST))


@respx.mock
def test_with_a_key_the_rest_catalog_prices_stand_when_graphql_is_gone() -> None:
    """RunPod's supported API is REST v2: with a key its catalog gives the list prices and
    pod sizes, and the deprecated GraphQL answering 410 Gone costs only what REST v2 does
    not publish (spot, savings plans), named in a skipped record."""
    respx.post(GRAPHQL_URL).mock(return_value=httpx.Response(410, text="Gone"))
    respx.get(CATALOG_URL).mock(
        side_effect=[
            httpx.Response(200, json=catalog("secure")),
            httpx.Response(200, json=catalog("community")),
        ]
    )
    payloads = fetch(RunPodAdapter({"runpod_api_key": "rk"}, policy=FAST))
    result = RunPodAdapter().parse(payloads, fetched_at=NOW)
    h100 = catalog("secure")["gpus"][0]
    one_gpu = one(result.offers, f"{H100}:secure:1x", RentalTerm.ON_DEMAND)
    assert one_gpu.price_amount == Decimal(str(h100["price"]["secure"]))
    assert one_gpu.price_basis is PriceBasis.GPU and one_gpu.cuda_version == "12.8"
    eight = one(result.offers, f"{H100}:secure:8x", RentalTerm.ON_DEMAND)
    assert eight.gpu_count == h100["maxCount"]["secure"] == 8
    assert {o.term for o in result.offers} == {RentalTerm.ON_DEMAND}
    [gone] = [s for s in result.skipped if s.ref == "runpod:graphql"]
    assert gone.reason.startswith("GraphQL prices not fetched: HTTP 410")


def test_the_rest_catalog_list_price_wins_over_graphql() -> None:
    """Where both APIs price a type, the supported one's list price is taken; GraphQL adds
    what REST v2 does not publish (here the secure spot price, 1.75)."""
    listed = copy.deepcopy(catalog("secure"))
    listed["gpus"][0]["price"]["secure"] = 2.49  # GraphQL's securePrice is 2.69
    query = {"include": "AVAILABILITY", "product": "POD", "count": 1, "cloud": "SECURE"}
    offers = parse(pricing(), query_payload(query, listed)).offers
    on_demand = one(offers, f"{H100}:secure:1x", RentalTerm.ON_DEMAND)
    assert on_demand.price_amount == Decimal("2.49")
    assert one(offers, f"{H100}:secure:1x", RentalTerm.INTERRUPTIBLE).price_amount == Decimal(
        "1.75"
    )
    # the community cloud was not asked of the catalog: GraphQL's price stands
    assert one(offers, f"{H100}:community:1x", RentalTerm.ON_DEMAND).price_amount == Decimal("2.69")
