"""Scaleway adapter: parse the recorded Product Catalog page; fetch its pages through respx."""

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
from gpuscout.adapters.scaleway import PAGE_SIZE, PRODUCTS_URL, ScalewayAdapter
from gpuscout.adapters.schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm

FIXTURES = Path(__file__).parent.parent / "fixtures" / "scaleway"
NOW = datetime(2026, 9, 26, tzinfo=UTC)
FAST = RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0)


def recorded() -> dict[str, Any]:
    return json.loads((FIXTURES / "products_instance_gpu.reconstructed.json").read_text())


def parse(*payloads: Any) -> Any:
    return ScalewayAdapter(policy=FAST).parse(list(payloads), fetched_at=NOW)


def product(offer: str, **changes: Any) -> dict[str, Any]:
    found = next(p for p in recorded()["products"] if p["product"] == f"{offer} Instance")
    record = copy.deepcopy(found)
    record.update(changes)
    return record


def test_recorded_page_gives_the_gpu_instances_sold() -> None:
    result = parse(recorded())
    assert [o.offer_id for o in result.offers] == [
        "L4-1-24G",
        "L40S-1-48G",
        "H100-1-80G",
        "H100-SXM-8-80G",
        "B300-SXM-8-288G",
    ]  # the CPU Instance is no offer; RENDER-S is no longer sold
    assert [s.reason for s in result.skipped] == ["not sold any more (status end_of_sale)"]
    assert all(get_gpu(o.gpu_model or "") is not None for o in result.offers)
    assert [o.gpu_model for o in result.offers] == [
        "L4",
        "L40S",
        "H100-PCIE-80GB",
        "H100-SXM5-80GB",
        "B300",
    ]


def test_an_sxm_instance_field_by_field() -> None:
    o = next(o for o in parse(recorded()).offers if o.offer_id == "H100-SXM-8-80G")
    assert o.provider == "scaleway"
    assert o.instance_name == "H100-SXM-8-80G Instance"
    assert (o.gpu_raw_name, o.gpu_count, o.gpu_memory_gb) == ("H100-SXM", 8, 80)
    assert o.gpu_form_factor is GpuFormFactor.SXM  # the offer's name says SXM
    assert (o.vcpus, o.cpu_model, o.cpu_arch) == (128, "Xeon Platinum 8452Y", "x64")
    assert o.ram_gb == pytest.approx(960 * 1.073741824)  # 960 GiB in bytes
    assert o.storage_gb is None  # boot on Block storage: no local disk
    assert o.public_bandwidth_up_mbps == o.public_bandwidth_down_mbps == 20_000
    assert (o.region, o.country) == ("fr-par-2", "FR")
    assert o.term is RentalTerm.ON_DEMAND
    assert (o.price_amount, o.price_currency) == (Decimal("25.330800000"), "EUR")
    assert (o.price_unit, o.price_basis) == (PriceUnit.HOUR, PriceBasis.INSTANCE)
    assert o.billing_increment_s == 60  # GPU Instances are billed by the minute
    assert o.raw_ref == "scaleway:/compute/h100_sxm_8_80g/run_fr-par-2"


def test_an_h100_without_sxm_in_its_name_is_the_pcie_card_and_poland_is_known() -> None:
    offers = {o.offer_id: o for o in parse(recorded()).offers}
    assert offers["H100-1-80G"].gpu_form_factor is None  # not stated: the slower variant
    assert (offers["L40S-1-48G"].region, offers["L40S-1-48G"].country) == ("pl-waw-2", "PL")


def test_render_s_is_billed_by_the_hour() -> None:
    (o,) = parse({"products": [product("RENDER-S", status="general_availability")]}).offers
    assert o.billing_increment_s == 3600
    # a P100 of 12 or 16 GB: its name states no memory, so the catalog is not guessed
    assert (o.gpu_raw_name, o.gpu_model) == ("P100", None)


def test_the_unit_of_measure_may_sit_inside_the_price_as_the_docs_show_it() -> None:
    record = product("L4-1-24G")
    record["price"]["unit_of_measure"] = record.pop("unit_of_measure")
    (o,) = parse({"products": [record]}).offers
    assert o.price_amount == Decimal("0.787500000")


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"unit_of_measure": {"unit": "month", "size": 1}}, "not a price per hour"),
        ({"price": {}}, "no price.retail_price"),
        ({"price": {"retail_price": {"currency_code": "EUR", "units": 1, "nanos": -5}}}, "bad"),
        ({"price": {"retail_price": {"currency_code": "EUR", "units": 0, "nanos": 0}}}, "bad"),
        ({"status": "retired"}, "not sold any more (status retired)"),
    ],
)
def test_a_bad_product_is_skipped_with_its_reason(changes: dict[str, Any], reason: str) -> None:
    result = parse({"products": [product("L4-1-24G", **changes)]})
    assert result.offers == []
    assert reason in result.skipped[0].reason


def test_a_gpu_count_that_is_not_a_count_is_skipped() -> None:
    record = product("L4-1-24G")
    record["properties"]["hardware"]["gpu"]["count"] = 0
    assert parse({"products": [record]}).skip_reasons() == {"bad hardware.gpu.count 0": 1}


def test_an_answer_without_products_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError, match="'products'"):
        parse({"total_count": 3})


@respx.mock
def test_fetch_asks_every_page_without_a_key() -> None:
    products = recorded()["products"]
    first = {"products": [products[0]] * PAGE_SIZE, "total_count": PAGE_SIZE + 2}
    second = {"products": products[1:3], "total_count": PAGE_SIZE + 2}
    route = respx.get(PRODUCTS_URL).mock(
        side_effect=[httpx.Response(200, json=first), httpx.Response(200, json=second)]
    )

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await ScalewayAdapter(policy=FAST).fetch(client)

    assert asyncio.run(run()) == [first, second]
    asked = [dict(call.request.url.params) for call in route.calls]
    assert asked == [
        {"page": "1", "page_size": str(PAGE_SIZE), "product_types": "instance"},
        {"page": "2", "page_size": str(PAGE_SIZE), "product_types": "instance"},
    ]
    assert "authorization" not in route.calls.last.request.headers


@respx.mock
def test_fetch_error_names_the_status() -> None:
    respx.get(PRODUCTS_URL).mock(return_value=httpx.Response(500))

    async def run() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await ScalewayAdapter(policy=FAST).fetch(client)

    with pytest.raises(ProviderError, match="HTTP 500"):
        asyncio.run(run())
