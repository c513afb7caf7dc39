"""Seeweb adapter: parse the recorded plan list; fetch it through respx with the token."""

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
from gpuscout.adapters.gpus import get_gpu
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm, Vendor
from gpuscout.adapters.seeweb import PLANS_URL, SeewebAdapter

FIXTURES = Path(__file__).parent.parent / "fixtures" / "seeweb"
NOW = datetime(2026, 10, 1, tzinfo=UTC)
FAST = RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0)


def recorded() -> dict[str, Any]:
    return json.loads((FIXTURES / "plans.reconstructed.json").read_text())


def adapter(token: str | None = "tok") -> SeewebAdapter:
    return SeewebAdapter({"seeweb_api_token": token}, policy=FAST)


def parse(*payloads: Any) -> Any:
    return adapter().parse(list(payloads), fetched_at=NOW)


def plan(plan_name: str, **changes: Any) -> dict[str, Any]:
    record = copy.deepcopy(next(p for p in recorded()["plans"] if p["name"] == plan_name))
    record.update(changes)
    return record


def test_recorded_plans_give_one_offer_per_gpu_plan_and_region() -> None:
    result = parse(recorded())
    assert [(o.offer_id, o.region) for o in result.offers] == [
        ("ECS1GPU7", "it-fr2"),
        ("ECS4GPU7", None),
        ("ECS1GPU10", "it-fr2"),
        ("ECS8GPU10", None),
        ("ECS1GPU3", "it-fr2"),
        ("ECS1GPU11", "it-fr2"),
        ("ECS1GPU12", None),
        ("ECS1GPU6", "it-fr2"),
        ("ECS1GPU6", "it-mi2"),
        ("ECS1GPU9", "it-fr2"),
    ]  # the CPU plan is no offer
    assert result.skip_reasons() == {"plan not available (withdrawn)": 1}
    assert all(get_gpu(o.gpu_model or "") is not None for o in result.offers)


def test_a_plan_field_by_field() -> None:
    o = next(o for o in parse(recorded()).offers if o.offer_id == "ECS1GPU10")
    assert o.provider == "seeweb"
    assert o.instance_name == "ECS1GPU10 (1x H200 141GB)"
    assert (o.gpu_raw_name, o.gpu_model, o.gpu_count, o.gpu_memory_gb) == (
        "H200 141GB",
        "H200-SXM-141GB",
        1,
        141,
    )
    assert o.vcpus == 32
    assert o.ram_gb == pytest.approx(256 * 1.073741824)  # 262144 MB (MiB)
    assert o.storage_gb == 1000
    assert (o.region, o.country, o.available_now) == ("it-fr2", "IT", True)
    assert o.term is RentalTerm.ON_DEMAND
    assert (o.price_amount, o.price_currency) == (Decimal("2.6"), "EUR")
    assert (o.price_unit, o.price_basis) == (PriceUnit.HOUR, PriceBasis.INSTANCE)
    assert o.raw_ref == "seeweb:plan/ECS1GPU10"


def test_labels_resolve_to_the_catalog() -> None:
    models = {o.gpu_raw_name: o.gpu_model for o in parse(recorded()).offers}
    assert models == {
        "L40s 48GB": "L40S",
        "H200 141GB": "H200-SXM-141GB",
        "A100 80GB": "A100-PCIE-80GB",
        "A30": "A30",
        "RTX PRO 6000 96GB": "RTX-PRO-6000",
        "L4 24GB": "L4",
        "MI300X": "MI300X",
    }
    amd = next(o for o in parse(recorded()).offers if o.gpu_model == "MI300X")
    assert amd.gpu_vendor is Vendor.AMD


def test_a_plan_in_no_region_is_priced_but_not_available_now() -> None:
    o = next(o for o in parse(recorded()).offers if o.offer_id == "ECS8GPU10")
    assert (o.region, o.available_now, o.gpu_count) == (None, False, 8)


def test_windows_plans_are_not_read() -> None:
    assert parse({"plans": [plan("ECS1GPU7", windows=True)]}).offers == []


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"hourly_price": None}, "hourly_price"),
        ({"hourly_price": "free"}, "hourly_price"),
        ({"gpu": "two"}, "bad gpu 'two'"),
        ({"name": None}, "GPU plan without a name"),
    ],
)
def test_a_bad_plan_is_skipped_with_its_reason(changes: dict[str, Any], reason: str) -> None:
    result = parse({"plans": [plan("ECS1GPU7", **changes)]})
    assert result.offers == []
    assert reason in result.skipped[0].reason


def test_an_answer_without_plans_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError, match="'plans'"):
        parse({"status": "ok"})


def test_fetch_without_a_token_skips_the_provider() -> None:
    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter(None).fetch(client)

    with pytest.raises(MissingCredentials, match="GPUSCOUT_SEEWEB_API_TOKEN"):
        asyncio.run(run())


@respx.mock
def test_fetch_sends_the_token() -> None:
    route = respx.get(PLANS_URL).mock(return_value=httpx.Response(200, json=recorded()))

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter("s3cret").fetch(client)

    assert asyncio.run(run()) == [recorded()]
    sent = route.calls.last.request.headers
    assert (sent["x-apitoken"], sent["authorization"]) == ("s3cret", "Bearer s3cret")


@respx.mock
def test_a_refused_token_is_a_provider_error() -> None:
    respx.get(PLANS_URL).mock(return_value=httpx.Response(401, json={"status": "error"}))

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter("bad").fetch(client)

    with pytest.raises(ProviderError, match="HTTP 401"):
        asyncio.run(run())
