"""OCI: GPU shapes from the Cost Estimator shapes, priced per GPU from the product lists."""

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
from gpuscout.adapters.oci import PRODUCTS_URL, SHAPES_URL, OciAdapter
from gpuscout.adapters.schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "oci"
NOW = datetime(2026, 1, 2, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


SHAPES = "cost_estimator_shapes_gpu.reconstructed.json"
PRODUCTS = "cost_estimator_products_excerpt.reconstructed.json"
PRICE_LIST = "price_list_products.reconstructed.json"
CPU_SHAPES = "cost_estimator_shapes_excerpt.gpuhunt_fixture.verbatim.json"


def parse(*payloads: Any) -> Any:
    return OciAdapter().parse(list(payloads), fetched_at=NOW)


def test_gpu_shapes_priced_per_gpu() -> None:
    result = parse(load(CPU_SHAPES), load(SHAPES), load(PRODUCTS))
    assert result.skipped == []
    offers = {o.offer_id: o for o in result.offers if o.term is RentalTerm.ON_DEMAND}
    assert set(offers) == {"BM.GPU.H100.8", "VM.GPU.A10.1"}  # CPU shapes are not offers

    h100 = offers["BM.GPU.H100.8"]
    assert h100.gpu_model == "H100-SXM5-80GB"
    assert h100.gpu_raw_name == "H100"
    assert h100.gpu_vendor == "nvidia"
    assert (h100.gpu_count, h100.gpu_memory_gb) == (8, 80)
    assert h100.gpu_form_factor is GpuFormFactor.SXM
    assert h100.cpu_cores == 112 and h100.vcpus == 224  # Intel: 2 vCPUs per OCPU
    assert h100.cpu_vendor == "intel"
    assert h100.ram_gb == 2048
    assert h100.region is None  # OCI list prices are global
    assert h100.term is RentalTerm.ON_DEMAND
    assert h100.price_amount == Decimal("10")
    assert h100.price_currency == "USD"
    assert h100.price_unit is PriceUnit.HOUR
    assert h100.price_basis is PriceBasis.GPU
    assert h100.usd_per_hour == Decimal("80")
    assert h100.raw_ref == "oci:shape/BM.GPU.H100.8+part/B98415"

    a10 = offers["VM.GPU.A10.1"]
    assert (a10.gpu_model, a10.gpu_count, a10.gpu_memory_gb) == ("A10", 1, 24)
    assert a10.cpu_cores == 15
    assert a10.vcpus is None and a10.cpu_vendor is None  # data says "arm": not trusted
    assert a10.ram_gb == 240
    assert a10.usd_per_hour == Decimal("2")
    # allowPreemptible: the A10 VM also runs preemptible, at half the on-demand price (OCI
    # docs: "Preemptible capacity costs 50% less"); the H100 bare metal does not
    [spot] = [o for o in result.offers if o.term is RentalTerm.INTERRUPTIBLE]
    assert (spot.offer_id, spot.term_variant) == ("VM.GPU.A10.1", "preemptible")
    assert spot.price_amount == Decimal("1.0") and spot.price_basis is PriceBasis.GPU
    assert spot.usd_per_hour == Decimal("1")
    assert spot.gpu_model == a10.gpu_model and spot.ram_gb == a10.ram_gb


def test_preemptible_only_where_allowed_and_never_on_bare_metal() -> None:
    shapes = copy.deepcopy(load(SHAPES))
    by_name = {s["name"]: s for s in shapes["items"]}
    by_name["BM.GPU.H100.8"]["allowPreemptible"] = True  # data against the docs: not offered
    by_name["VM.GPU.A10.1"]["allowPreemptible"] = False
    result = parse(shapes, load(PRODUCTS))
    assert {o.term for o in result.offers} == {RentalTerm.ON_DEMAND}


def test_price_list_api_items_read_as_products() -> None:
    """The Price List API's items have the products' fields: they price shapes the same."""
    result = parse(load(SHAPES), load(PRICE_LIST))
    offers = {o.offer_id: o for o in result.offers if o.term is RentalTerm.ON_DEMAND}
    assert offers["BM.GPU.H100.8"].usd_per_hour == Decimal("80")
    assert offers["VM.GPU.A10.1"].usd_per_hour == Decimal("2")
    assert offers["VM.GPU.A10.1"].gpu_raw_name == "A10"  # from the shape name


def test_missing_and_bad_prices_are_skipped() -> None:
    products = copy.deepcopy(load(PRODUCTS))
    h100 = next(i for i in products["items"] if i["partNumber"] == "B98415")
    h100["currencyCodeLocalizations"][0]["prices"][0]["value"] = "ten"
    a10 = next(i for i in products["items"] if i["partNumber"] == "B95909")
    a10["currencyCodeLocalizations"][0]["prices"][0]["value"] = -2
    result = parse(load(SHAPES), products)
    assert result.offers == []
    reasons = result.skip_reasons()
    assert reasons["bad price for B98415: not a number: 'ten'"] == 1
    assert reasons["invalid price_amount: Input should be greater than 0"] == 1

    a10["currencyCodeLocalizations"][0]["prices"][0]["value"] = "0.005"  # per GPU-hour
    result = parse(load(SHAPES), products)
    assert result.skip_reasons()["absurd price: 0.00500 USD per GPU-hour (on_demand)"] == 1

    result = parse(load(SHAPES), {"items": []})
    assert result.skip_reasons()["no USD pay-as-you-go price for part B98415"] == 1


def test_string_numbers_nulls_and_unknown_gpus() -> None:
    shapes = copy.deepcopy(load(SHAPES))
    shapes["items"][0]["gpuQty"] = "8"
    shapes["items"][0]["products"][0]["qty"] = "112"
    shapes["items"][1]["gpuMemoryQty"] = None
    shapes["items"].append(
        {
            "name": "BM.GPU.X9.4",
            "hidden": False,
            "status": "ACTIVE",
            "gpuQty": 4,
            "gpuMemoryQty": None,
            "bundleMemoryQty": None,
            "processorType": None,
            "products": [{"partNumber": "B95909", "qty": 64, "type": {"value": "ocpu"}}],
        }
    )
    shapes["items"].append({"name": "BM.GPU.Y.2", "gpuQty": 2, "products": []})
    shapes["items"].append({"name": "BM.GPU.Z.2", "gpuQty": -2, "products": []})
    shapes["items"].append({"name": "BM.GPU.H.8", "gpuQty": 8, "hidden": True, "products": []})
    shapes["items"].append("junk")
    result = parse(shapes, load(PRODUCTS))
    offers = {o.offer_id: o for o in result.offers if o.term is RentalTerm.ON_DEMAND}
    assert offers["BM.GPU.H100.8"].vcpus == 224
    assert offers["VM.GPU.A10.1"].gpu_memory_gb is None
    unknown = offers["BM.GPU.X9.4"]
    assert unknown.gpu_model is None and unknown.gpu_raw_name == "X9"
    assert unknown.gpu_count == 4 and unknown.ram_gb is None
    reasons = result.skip_reasons()
    assert reasons["GPU shape without an ocpu (GPU SKU) product"] == 1
    assert reasons["bad gpuQty -2"] == 1
    assert reasons["shape hidden or not active"] == 1
    assert reasons["shape without a name"] == 1


@pytest.mark.parametrize("payloads", [[{"items": "x"}], [[1, 2]], [{"items": []}], [None]])
def test_wrong_shape_is_a_format_error(payloads: list[Any]) -> None:
    with pytest.raises(ResponseFormatError):
        OciAdapter().parse(payloads, fetched_at=NOW)


def test_products_without_shapes_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError, match="no shapes payload"):
        parse(load(PRICE_LIST))


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        OciAdapter().decode(b'{"items": [{"name": "BM.GP', "shapes.json")


# --- fetch ----------------------------------------------------------------------------------


def fetch(adapter: OciAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter.fetch(client)

    return asyncio.run(go())


@respx.mock
def test_fetch_reads_shapes_and_products_without_auth() -> None:
    shapes_route = respx.get(SHAPES_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(200, json=load(SHAPES)),
        ]
    )
    respx.get(PRODUCTS_URL).mock(
        side_effect=[httpx.Response(502), httpx.Response(200, json=load(PRODUCTS))]
    )
    payloads = fetch(OciAdapter(policy=FAST))
    assert payloads == [load(SHAPES), load(PRODUCTS)]
    assert shapes_route.call_count == 2
    assert "authorization" not in shapes_route.calls[-1].request.headers
    assert len(OciAdapter().parse(payloads, fetched_at=NOW).offers) == 3  # A10 preemptible


@respx.mock
@pytest.mark.parametrize(("status", "calls"), [(500, 3), (403, 1)])
def test_fetch_failure_is_a_provider_error(status: int, calls: int) -> None:
    route = respx.get(SHAPES_URL).mock(return_value=httpx.Response(status))
    with pytest.raises(ProviderError, match=f"HTTP {status}"):
        fetch(OciAdapter(policy=FAST))
    assert route.call_count == calls


@respx.mock
def test_fetch_rejects_an_html_page() -> None:
    respx.get(SHAPES_URL).mock(return_value=httpx.Response(200, text="<html>moved</html>"))
    with pytest.raises(ResponseFormatError, match="not JSON"):
        fetch(OciAdapter(policy=FAST))
