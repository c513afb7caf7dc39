"""AutoDL adapter: the console's machine list, its paging through respx, and bad answers."""

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

from gpuscout.adapters.autodl import AutoDLAdapter, answer_data, li_to_yuan
from gpuscout.adapters.base import MissingCredentials, ResponseFormatError, RetryPolicy
from gpuscout.adapters.gpus import get_gpu
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "autodl"
NOW = datetime(2024, 3, 4, tzinfo=UTC)
FAST = RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0)
TOKEN = {"autodl_token": "console-token"}


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.gpuhunter_docstring.reconstructed.json").read_text())


def parse(*payloads: Any) -> Any:
    return AutoDLAdapter().parse(list(payloads), fetched_at=NOW)


def machine(**changes: Any) -> dict[str, Any]:
    record = copy.deepcopy(load("machine_list")["data"]["list"][0])
    record.update(changes)
    return {"code": "Success", "data": {"list": [record], "max_page": 1}}


def test_li_are_exact_yuan() -> None:
    assert li_to_yuan(2720) == Decimal("2.72")
    for bad in (0, -1, 2.72, "2720", None, False):
        assert li_to_yuan(bad) is None


def test_recorded_machine_is_a_cny_per_gpu_offer() -> None:
    result = parse(load("machine_list"))
    assert result.skipped == []
    [offer] = result.offers  # no GPU orderable now: the one-GPU offer, marked not available
    assert offer.offer_id == "2dd949a4cf:1x"
    assert offer.gpu_model == "RTX-4090" and get_gpu(offer.gpu_model) is not None
    assert offer.price_amount == Decimal("2.72") and offer.price_currency == "CNY"
    assert (offer.price_unit, offer.price_basis) == (PriceUnit.HOUR, PriceBasis.GPU)
    assert offer.term is RentalTerm.ON_DEMAND
    assert offer.region == "西北B区" and offer.country == "CN"
    assert offer.vcpus == 22 and offer.ram_gb == pytest.approx(96.637)
    assert offer.cuda_version == "12.2"
    assert offer.available_count == 0 and offer.available_now is False
    assert "063机" in (offer.instance_name or "")


def test_gpus_orderable_give_offers_up_to_that_count() -> None:
    result = parse(machine(gpu_order_num=6))
    counts = [(o.gpu_count, o.available_count, o.vcpus) for o in result.offers]
    assert counts == [(1, 6, 22), (2, 3, 44), (4, 1, 88), (6, 1, 132)]
    # per GPU: the instance costs count x 2.72 yuan an hour
    assert {o.usd_per_hour / o.gpu_count for o in result.offers} == {result.offers[0].usd_per_hour}


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"payg_price": None}, "bad payg_price None"),
        ({"payg_price": "2720"}, "bad payg_price '2720'"),
        ({"payg": False}, "pay-as-you-go not sold"),
        ({"gpu_name": ""}, "machine without gpu_name"),
        ({"machine_id": None}, "machine without machine_id"),
    ],
)
def test_a_broken_machine_is_skipped_with_its_reason(changes: dict[str, Any], reason: str) -> None:
    result = parse(machine(**changes))
    assert result.offers == []
    assert result.skipped[0].reason.startswith(reason)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"code": "AuthorizeFailed", "msg": "请登录"}, "API error code 'AuthorizeFailed': 请登录"),
        ({"code": "Success"}, "no 'data'"),
        ({"code": "Success", "data": {"rows": []}}, "no 'data.list'"),
        ("<html>", "expected a JSON object"),
    ],
)
def test_a_broken_answer_is_a_named_error(payload: Any, message: str) -> None:
    with pytest.raises(ResponseFormatError, match=message):
        parse(payload)


def test_answer_data() -> None:
    assert answer_data({"code": "OK", "data": [1]}) == [1]


def test_fetch_needs_the_token() -> None:
    async def go() -> None:
        async with httpx.AsyncClient() as client:
            await AutoDLAdapter().fetch(client)

    with pytest.raises(MissingCredentials):
        asyncio.run(go())


@respx.mock
def test_fetch_walks_regions_gpu_types_and_pages() -> None:
    respx.get("https://fe-config-backend.autodl.com/api/v1/autodl/region/tag").mock(
        return_value=httpx.Response(200, json=load("region_tag"))
    )
    kinds = respx.post("https://api.autodl.com/api/v1/machine/region/gpu_type").mock(
        return_value=httpx.Response(200, json=load("region_gpu_type"))
    )
    page_one = copy.deepcopy(load("machine_list"))
    page_one["data"]["max_page"] = 2
    listing = respx.post("https://api.autodl.com/api/v1/user/machine/list").mock(
        side_effect=[
            httpx.Response(200, json=page_one),
            httpx.Response(200, json={"code": "Success", "data": {"list": [], "max_page": 2}}),
        ]
    )

    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await AutoDLAdapter(TOKEN, policy=FAST).fetch(client)

    pages = asyncio.run(go())
    assert len(pages) == 2 and parse(*pages).offers
    assert json.loads(kinds.calls[0].request.content) == {"region_sign_list": ["west-B", "west-C"]}
    bodies = [json.loads(call.request.content) for call in listing.calls]
    assert [b["page_index"] for b in bodies] == [1, 2]
    assert bodies[0]["gpu_type_name"] == ["RTX 3090", "RTX 4090"]
    assert bodies[0]["charge_type"] == "payg"
    assert listing.calls[0].request.headers["authorization"] == "console-token"
