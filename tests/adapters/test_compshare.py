"""优云智算 (CompShare) adapter: the documented answers, signing, fetch through respx."""

from __future__ import annotations

import asyncio
import copy
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
import respx

from gpuscout.adapters.base import ACCOUNT_PRICE_VARIANT, ResponseFormatError, RetryPolicy
from gpuscout.adapters.compshare import (
    CompShareAdapter,
    price_requests,
    signature,
    signed_params,
)
from gpuscout.adapters.gpus import get_gpu
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "compshare"
NOW = datetime(2026, 6, 26, tzinfo=UTC)
FAST = RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0)
KEYS = {"compshare_public_key": "pub", "compshare_private_key": "priv"}


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text("utf-8"))


def zones() -> dict[str, Any]:
    return load("describe_support_zone.docs_example.verbatim.json")


def types() -> dict[str, Any]:
    return load("describe_available_instance_types.docs_example.verbatim.json")


def priced() -> dict[str, Any]:
    return load("instance_price_4090_1x.docs_example.paired.json")


def parse(*payloads: Any) -> Any:
    return CompShareAdapter().parse(list(payloads), fetched_at=NOW)


def test_signature_matches_ucloud_documented_example() -> None:
    params = {
        "Action": "DescribeUHostInstance",
        "Region": "cn-bj2",
        "Limit": 10,
        "PublicKey": "ucloudsomeone@example.com1296235120854146120",
    }
    key = "46f09bb9fab4f12dfc160dae12273d5332b5debe"
    assert signature(params, key) == "cba5cf5ec4d4233d206b1b54951e3787350a642f"
    form = signed_params({"Action": "X", "Flag": True, "N": 42.0}, "pub", "priv")
    assert form["Flag"] == "true" and form["N"] == "42" and form["PublicKey"] == "pub"


def test_documented_answers_give_a_monthly_cny_offer_whose_gpu_resolves() -> None:
    result = parse(zones(), types(), priced())
    assert result.skipped == []
    [offer] = result.offers
    assert offer.offer_id == "cn-wlcb-01:4090:1x"
    assert offer.gpu_model == "RTX-4090" and get_gpu(offer.gpu_model) is not None
    assert offer.gpu_memory_gb == 24
    assert offer.price_amount == Decimal("1068.0") and offer.price_currency == "CNY"
    assert (offer.price_unit, offer.price_basis) == (PriceUnit.MONTH, PriceBasis.INSTANCE)
    assert offer.term is RentalTerm.COMMIT_1MO and offer.prepaid is True
    assert offer.vcpus == 16 and offer.ram_gb == 64
    assert offer.region == "cn-wlcb" and "华北二A" in (offer.instance_name or "")
    assert offer.available_now is True


def test_every_billing_mode_and_the_account_price() -> None:
    entry = priced()
    details = [
        {"ChargeType": "Postpay", "Instance": 1.66},
        {"ChargeType": "Spot", "Instance": 0.8},
        {"ChargeType": "Day", "Instance": 38.0},
        {"ChargeType": "Month", "Instance": 1068.0},
        {"ChargeType": "Dynamic", "Instance": 1.9},
    ]
    entry["response"]["ListPriceDetails"] = details
    entry["response"]["PriceDetails"] = [{"ChargeType": "Month", "Instance": 999.0}]
    result = parse(types(), entry)
    got = {(o.term, o.term_variant, o.price_unit, o.price_amount) for o in result.offers}
    assert got == {
        (RentalTerm.ON_DEMAND, None, PriceUnit.HOUR, Decimal("1.66")),
        (RentalTerm.INTERRUPTIBLE, None, PriceUnit.HOUR, Decimal("0.8")),
        (RentalTerm.COMMIT_1D, None, PriceUnit.DAY, Decimal("38.0")),
        (RentalTerm.COMMIT_1MO, None, PriceUnit.MONTH, Decimal("1068.0")),
        (RentalTerm.COMMIT_1MO, ACCOUNT_PRICE_VARIANT, PriceUnit.MONTH, Decimal("999.0")),
    }
    [hourly] = [o for o in result.offers if o.term is RentalTerm.ON_DEMAND]
    assert hourly.billing_increment_s == 1 and hourly.prepaid is False


def test_the_48gb_4090_resolves() -> None:
    entry = priced()
    entry["request"]["GpuType"] = "4090_48G"
    kinds = types()
    kinds["AvailableInstanceTypes"][0].update(Name="4090_48G", GraphicsMemory={"Value": 48})
    [offer] = parse(kinds, entry).offers
    assert offer.gpu_model == "RTX-4090-48GB"


def test_price_requests_ask_the_first_combination_per_gpu_count() -> None:
    asks = price_requests("cn-wlcb", "cn-wlcb-01", types())
    assert asks == [
        {
            "Region": "cn-wlcb",
            "Zone": "cn-wlcb-01",
            "GpuType": "4090",
            "Gpu": 1,
            "Cpu": 16,
            "Memory": 65536,
        },
        {
            "Region": "cn-wlcb",
            "Zone": "cn-wlcb-01",
            "GpuType": "4090",
            "Gpu": 2,
            "Cpu": 32,
            "Memory": 131072,
        },
    ]


def test_a_price_answer_without_prices_is_skipped() -> None:
    entry = priced()
    entry["response"]["ListPriceDetails"] = [
        {"ChargeType": "Month", "Instance": 0},
        {"ChargeType": "Day", "Instance": "n/a"},
    ]
    entry["response"]["PriceDetails"] = []
    result = parse(types(), entry)
    assert result.offers == []
    assert [s.reason for s in result.skipped] == [
        "no positive Instance price in ListPriceDetails or PriceDetails"
    ]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"RetCode": 171, "Message": "Signature VerifyAC Error"}, "RetCode 171 Signature"),
        ({"RetCode": 0, "AvailableInstanceTypes": {}}, "not a list"),
        ({"RetCode": 0}, "no instance types and no prices"),
    ],
)
def test_a_broken_answer_is_a_named_error(payload: Any, message: str) -> None:
    with pytest.raises(ResponseFormatError, match=message):
        parse(payload)


@respx.mock
def test_fetch_signs_each_call_and_pairs_prices_with_their_request() -> None:
    answers = {
        "DescribeCompShareSupportZone": zones(),
        "DescribeAvailableCompShareInstanceTypes": types(),
        "GetCompShareInstancePrice": priced()["response"],
    }
    calls: list[dict[str, str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
        calls.append(form)
        return httpx.Response(200, json=answers[form["Action"]])

    respx.post("https://api.compshare.cn/").mock(side_effect=answer)

    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await CompShareAdapter(KEYS, policy=FAST).fetch(client)

    payloads = asyncio.run(go())
    # one zone list, the types of both zones, a price per type and GPU count of each zone
    assert [c["Action"] for c in calls].count("GetCompShareInstancePrice") == 4
    for form in calls:
        unsigned = {k: v for k, v in form.items() if k != "Signature"}
        assert form["Signature"] == signature(unsigned, "priv")
        assert form["PublicKey"] == "pub"
    paired = [p for p in payloads if "request" in p]
    assert {p["request"]["Zone"] for p in paired} == {"cn-wlcb-01", "cn-sh2-02"}
    result = parse(*payloads)
    assert {o.offer_id for o in result.offers} >= {"cn-wlcb-01:4090:1x", "cn-wlcb-01:4090:2x"}


def test_answers_are_not_altered_by_parse() -> None:
    payloads = [zones(), types(), priced()]
    before = copy.deepcopy(payloads)
    parse(*payloads)
    assert payloads == before
