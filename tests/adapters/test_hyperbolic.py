"""Hyperbolic adapter: parse the recorded marketplace listing; fetch it through respx."""

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
from gpuscout.adapters.hyperbolic import MARKETPLACE_URL, HyperbolicAdapter
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm

FIXTURES = Path(__file__).parent.parent / "fixtures" / "hyperbolic"
NOW = datetime(2026, 10, 1, tzinfo=UTC)
FAST = RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0)


def recorded() -> dict[str, Any]:
    return json.loads((FIXTURES / "marketplace.reconstructed.json").read_text())


def parse(*payloads: Any) -> Any:
    return HyperbolicAdapter(policy=FAST).parse(list(payloads), fetched_at=NOW)


def node(node_id: str, **changes: Any) -> dict[str, Any]:
    record = copy.deepcopy(next(n for n in recorded()["instances"] if n["id"] == node_id))
    record.update(changes)
    return record


def test_recorded_listing_gives_one_offer_per_free_gpu_count() -> None:
    result = parse(recorded())
    assert result.skipped == []  # a reserved node or one not ready is no error
    assert sorted(o.offer_id for o in result.offers) == [
        "korea-amd14-78/1",
        *(f"us-h100-8x-01/{n}" for n in range(1, 6)),  # 8 GPUs, 3 reserved
    ]
    assert all(get_gpu(o.gpu_model or "") is not None for o in result.offers)


def test_an_offer_field_by_field() -> None:
    o = next(o for o in parse(recorded()).offers if o.offer_id == "us-h100-8x-01/2")
    assert o.provider == "hyperbolic"
    assert (o.gpu_raw_name, o.gpu_model, o.gpu_count) == (
        "NVIDIA-H100-80GB-HBM3",
        "H100-SXM5-80GB",
        2,
    )
    assert o.gpu_memory_gb == pytest.approx(81559 / 1024)
    assert o.vcpus is None and o.ram_gb is None  # a part's share is not published
    assert (o.instance_name, o.region) == ("sturdy-oak-heron", "region-1")
    assert (o.available_now, o.available_count) == (True, 2)  # 5 free GPUs hold two pairs
    assert o.term is RentalTerm.ON_DEMAND
    assert (o.price_amount, o.price_currency) == (Decimal("1.29"), "USD")  # 129 cents
    assert (o.price_unit, o.price_basis) == (PriceUnit.HOUR, PriceBasis.GPU)
    assert o.usd_per_hour == Decimal("2.58")


def test_the_whole_node_carries_its_shape() -> None:
    (o,) = [o for o in parse(recorded()).offers if o.offer_id == "korea-amd14-78/1"]
    assert (o.gpu_model, o.vcpus, o.ram_gb, o.storage_gb) == ("RTX-3070", 32, 1070, 80)
    assert o.cpu_model == "AMD-23-49"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"pricing": {"price": {"amount": "n/a"}}}, "pricing.price.amount"),
        ({"pricing": {}}, "pricing.price.amount"),
        ({"gpus_total": 0}, "bad gpus_total 0"),
        ({"id": None}, "node without an id"),
    ],
)
def test_a_bad_node_is_skipped_with_its_reason(changes: dict[str, Any], reason: str) -> None:
    result = parse({"instances": [node("korea-amd14-78", **changes)]})
    assert result.offers == []
    assert reason in result.skipped[0].reason


def test_an_answer_without_instances_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError, match="'instances'"):
        parse({"nodes": []})


@respx.mock
def test_fetch_posts_the_empty_filter_and_a_key_only_when_set() -> None:
    route = respx.post(MARKETPLACE_URL).mock(return_value=httpx.Response(200, json=recorded()))

    async def run(key: str | None) -> list[Any]:
        async with httpx.AsyncClient() as client:
            adapter = HyperbolicAdapter({"hyperbolic_api_key": key}, policy=FAST)
            return await adapter.fetch(client)

    assert asyncio.run(run(None)) == [recorded()]
    assert json.loads(route.calls.last.request.content) == {"filters": {}}
    assert "authorization" not in route.calls.last.request.headers
    asyncio.run(run("hk"))
    assert route.calls.last.request.headers["authorization"] == "Bearer hk"


@respx.mock
def test_fetch_error_names_the_status() -> None:
    respx.post(MARKETPLACE_URL).mock(return_value=httpx.Response(502))

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await HyperbolicAdapter(policy=FAST).fetch(client)

    with pytest.raises(ProviderError, match="HTTP 502"):
        asyncio.run(run())
