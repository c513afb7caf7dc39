"""Lium adapter: parse the recorded public nodes feed; fetch through respx."""

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
from gpuscout.adapters.lium import NODES_URL, LiumAdapter
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm

FIXTURES = Path(__file__).parent.parent / "fixtures" / "lium"
NOW = datetime(2026, 9, 10, 8, tzinfo=UTC)
FAST = RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0)
H200 = "f092246d-5704-4c9e-b57f-7c0710a06deb"


def recorded() -> dict[str, Any]:
    return json.loads((FIXTURES / "public_nodes.gpuhunt_fixture.verbatim.json").read_text())


def parse(*payloads: Any) -> Any:
    return LiumAdapter(policy=FAST).parse(list(payloads), fetched_at=NOW)


def node(**changes: Any) -> dict[str, Any]:
    record = copy.deepcopy(recorded()["nodes"][1])
    record.update(changes)
    return record


def test_recorded_feed_gives_one_offer_per_rentable_count() -> None:
    result = parse(recorded())
    assert result.skipped == []
    # 8x RTX 5090 whole (min 8) -> 1; 8x H200, 5 free, min 1 -> 5; 1x RTX 5090 -> 1; 8x A100 -> 1
    assert len(result.offers) == 8
    assert sorted(o.offer_id for o in result.offers if o.offer_id.startswith(H200)) == [
        f"{H200}/{n}" for n in range(1, 6)
    ]
    assert {o.gpu_model for o in result.offers} == {"RTX-5090", "H200-SXM-141GB", "A100-SXM4-80GB"}
    assert all(get_gpu(o.gpu_model or "") is not None for o in result.offers)


def test_a_partial_rental_field_by_field() -> None:
    o = next(o for o in parse(recorded()).offers if o.offer_id == f"{H200}/2")
    assert o.provider == "lium"
    assert o.instance_name == "2x H200"
    assert (o.gpu_raw_name, o.gpu_model, o.gpu_count, o.gpu_memory_gb) == (
        "H200",
        "H200-SXM-141GB",
        2,
        140,
    )
    assert (o.vcpus, o.ram_gb, o.storage_gb) == (48, 503.75, 893.75)  # a quarter of the host
    assert (o.region, o.country) == ("US-MS", "US")
    assert o.term is RentalTerm.ON_DEMAND
    assert (o.price_amount, o.price_currency) == (Decimal("3.99"), "USD")
    assert (o.price_unit, o.price_basis) == (PriceUnit.HOUR, PriceBasis.GPU)
    assert o.usd_per_hour == Decimal("7.98")
    assert (o.available_now, o.available_count) == (True, 2)  # 5 free GPUs hold two of it
    assert o.raw_ref == f"lium:node/{H200}"
    assert o.fetched_at == NOW


def test_a_whole_node_and_a_spot_node() -> None:
    offers = {o.offer_id: o for o in parse(recorded()).offers}
    whole = offers["ebdfdbe2-875a-4caa-8eea-1ab5c2a763e1/8"]
    assert (whole.vcpus, whole.ram_gb, whole.storage_gb, whole.region) == (384, 251, 935, "JP-13")
    assert whole.usd_per_hour == Decimal("4.0")  # price_per_node_hour of the feed
    spot = offers["45af0308-a13c-497f-93ea-ab06144eee29/1"]
    assert spot.term is RentalTerm.INTERRUPTIBLE and spot.region == "US-MN"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"price_per_gpu_hour": None}, "price_per_gpu_hour"),
        ({"gpu_count": 0}, "bad gpu_count 0"),
        ({"available_gpu_count": "many"}, "bad available_gpu_count 'many'"),
        ({"tier": "community"}, "unknown tier 'community'"),
        ({"country_code": None}, "node without a country_code"),
        ({"available_gpu_count": 2, "min_rentable_gpu_count": 4}, "fewer GPUs free"),
        ({"id": None}, "node without an id"),
    ],
)
def test_a_bad_node_is_skipped_with_its_reason(changes: dict[str, Any], reason: str) -> None:
    result = parse({"nodes": [node(**changes), recorded()["nodes"][0]]})
    assert len(result.offers) == 1
    assert [s.reason for s in result.skipped if reason in s.reason], result.skipped


def test_a_node_without_a_subdivision_is_in_its_country() -> None:
    (o, *_) = parse({"nodes": [node(region=None, min_rentable_gpu_count=5)]}).offers
    assert (o.region, o.country) == ("US", "US")


def test_an_answer_without_nodes_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError, match="'nodes'"):
        parse({"nodes": {}})
    with pytest.raises(ResponseFormatError, match="no 'nodes' list"):
        parse({"generated_at": "2026-09-10"})


@respx.mock
def test_fetch_reads_the_feed_without_a_key() -> None:
    route = respx.get(NODES_URL).mock(return_value=httpx.Response(200, json=recorded()))

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await LiumAdapter(policy=FAST).fetch(client)

    assert asyncio.run(run()) == [recorded()]
    assert "authorization" not in route.calls.last.request.headers


@respx.mock
def test_fetch_on_a_configured_base_url_and_an_http_error() -> None:
    respx.get("http://127.0.0.1:9/lium/nodes").mock(return_value=httpx.Response(503))

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            adapter = LiumAdapter(policy=FAST, base_url="http://127.0.0.1:9/lium")
            return await adapter.fetch(client)

    with pytest.raises(ProviderError, match="HTTP 503"):
        asyncio.run(run())
