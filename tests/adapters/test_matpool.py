"""矩池云 (Matpool) adapter: the market's pools, paging through respx, and bad answers."""

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
from gpuscout.adapters.matpool import MARKET_URL, MatpoolAdapter, millicent_to_yuan, page_count
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "matpool"
NOW = datetime(2026, 9, 7, tzinfo=UTC)
FAST = RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0)


def pools() -> dict[str, Any]:
    return json.loads((FIXTURES / "machine_pools.reconstructed.json").read_text("utf-8"))


def parse(*payloads: Any) -> Any:
    return MatpoolAdapter().parse(list(payloads), fetched_at=NOW)


def fetch(adapter: MatpoolAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter.fetch(client)

    return asyncio.run(go())


def test_millicents_are_exact_yuan() -> None:
    assert millicent_to_yuan(135000) == Decimal("1.35")
    assert millicent_to_yuan(1) == Decimal("0.00001")
    for bad in (0, -5, 1.5, "135000", True, None):
        assert millicent_to_yuan(bad) is None


def test_recorded_pools_become_cny_offers_whose_gpus_resolve() -> None:
    result = parse(pools())
    [offer] = result.offers
    assert offer.offer_id == "pool-t4-example"
    assert offer.gpu_model == "T4" and get_gpu(offer.gpu_model) is not None
    assert offer.gpu_raw_name == "NVIDIA Tesla T4"
    assert offer.gpu_count == 1 and offer.gpu_memory_gb == 16
    # the discounted price is what the market charges; 1/100000 yuan exact
    assert offer.price_amount == Decimal("1.35") and offer.price_currency == "CNY"
    assert (offer.price_unit, offer.price_basis) == (PriceUnit.HOUR, PriceBasis.INSTANCE)
    assert offer.term is RentalTerm.ON_DEMAND
    assert offer.region == "1区" and offer.country == "CN"
    assert offer.ram_gb == 32 and offer.storage_gb == 100
    assert offer.available_count == 3 and offer.available_now is True
    assert offer.driver_version == "535.104.05"
    assert 0 < offer.usd_per_hour < offer.price_amount  # converted at the FX table
    # the A2000 pool states no price: skipped with its reason, not priced at zero
    assert [(s.reason, s.ref) for s in result.skipped] == [
        ("bad priceMillicent None", "matpool:pool-a2000-example")
    ]


def test_list_price_is_used_without_a_discount() -> None:
    page = pools()
    del page["pools"][0]["machine"]["hardware"]["discountPriceMillicent"]
    [offer] = parse(page).offers
    assert offer.price_amount == Decimal("1.5")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda p: p.pop("resource_pool_id"), "pool without resource_pool_id"),
        (lambda p: p["machine"]["hardware"]["gpu"].update(gpuIds=[]), "pool without the GPUs"),
        (lambda p: p.pop("machine"), "pool without machine.hardware"),
        (
            lambda p: p["machine"]["hardware"].update(discountPriceMillicent="1.35"),
            "bad discountPriceMillicent '1.35'",
        ),
    ],
)
def test_a_broken_pool_is_skipped_with_its_reason(change: Any, reason: str) -> None:
    page = pools()
    pool = copy.deepcopy(page["pools"][0])
    change(pool)
    result = parse({"pools": [pool]})
    assert result.offers == []
    assert result.skipped[0].reason.startswith(reason)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"code": 401, "msg": "bad"}, "market API error code 401: bad"),
        ({"pagination": {}}, "no 'pools' list"),
        ([], "expected a JSON object"),
    ],
)
def test_a_broken_answer_is_a_named_error(payload: Any, message: str) -> None:
    with pytest.raises(ResponseFormatError, match=message):
        parse(payload)


def test_page_count() -> None:
    assert page_count({"pools": []}) == 1
    assert page_count({"pagination": {"num_pages": 3}}) == 3
    for bad in (0, "2", 101, True):
        with pytest.raises(ResponseFormatError, match="num_pages"):
            page_count({"pagination": {"num_pages": bad}})


@respx.mock
def test_fetch_reads_every_page_without_a_token() -> None:
    first = {**pools(), "pagination": {"num_pages": 2}}
    second = {"pools": [], "pagination": {"num_pages": 2}}
    route = respx.get(MARKET_URL).mock(
        side_effect=[httpx.Response(200, json=first), httpx.Response(200, json=second)]
    )
    pages = fetch(MatpoolAdapter(policy=FAST))
    assert pages == [first, second]
    asked = [dict(call.request.url.params) for call in route.calls]
    assert asked == [
        {"machine_category": "0", "page": "1", "per_page": "100"},
        {"machine_category": "0", "page": "2", "per_page": "100"},
    ]
    assert all("authorization" not in call.request.headers for call in route.calls)


@respx.mock
def test_fetch_error_is_a_provider_error() -> None:
    respx.get(MARKET_URL).mock(return_value=httpx.Response(503))
    with pytest.raises(ProviderError, match="HTTP 503"):
        fetch(MatpoolAdapter(policy=FAST))
