"""Azure Retail Prices adapter: recorded pages parsed field by field, fetch through respx."""

from __future__ import annotations

import asyncio
import copy
import json
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from gpuscout.adapters.azure import API_URL, AzureAdapter, azure_gpu_size, gpu_sizes
from gpuscout.adapters.base import DUPLICATE_REASON, ProviderError, ResponseFormatError, RetryPolicy
from gpuscout.adapters.schema import (
    GpuFormFactor,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    StorageType,
    Vendor,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "azure"
NOW = datetime(2025, 9, 15, 12, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def page(*items: dict[str, Any], next_link: str | None = None) -> dict[str, Any]:
    return {
        "BillingCurrency": "USD",
        "CustomerEntityId": "Default",
        "CustomerEntityType": "Retail",
        "Items": list(items),
        "NextPageLink": next_link,
        "Count": len(items),
    }


def a100_item(**changes: Any) -> dict[str, Any]:
    item = copy.deepcopy(load("retail_prices_gpu_page.reconstructed.json")["Items"][0])
    item.pop("savingsPlan", None)
    item.update(changes)
    return item


def parse(*payloads: Any) -> Any:
    return AzureAdapter().parse(list(payloads), fetched_at=NOW)


def label(o: Any) -> str:
    """A readable id: the VM size, with the term's variant (and length) when there is one."""
    if o.term_variant is None:
        return str(o.offer_id)
    if o.term is RentalTerm.INTERRUPTIBLE:
        return f"{o.offer_id}:{o.term_variant}"
    years = {RentalTerm.COMMIT_1Y: "1y", RentalTerm.COMMIT_3Y: "3y"}[o.term]
    return f"{o.offer_id}:{o.term_variant}-{years}"


def by_id(result: Any) -> dict[str, Any]:
    return {label(o): o for o in result.offers}


# --- parse: the reconstructed GPU page ---------------------------------------------------


@pytest.fixture(scope="module")
def gpu_page() -> Any:
    return parse(load("retail_prices_gpu_page.reconstructed.json"))


def test_gpu_page_offers_and_skips(gpu_page: Any) -> None:
    assert sorted(by_id(gpu_page)) == [
        "Standard_NC24ads_A100_v4",
        "Standard_NC24ads_A100_v4:low-priority",
        "Standard_NC24ads_A100_v4:reservation-1y",
        "Standard_NC24ads_A100_v4:reservation-3y",
        "Standard_NC24ads_A100_v4:savings-plan-1y",
        "Standard_NC24ads_A100_v4:savings-plan-3y",
        "Standard_NC24ads_A100_v4:spot",
        "Standard_ND96isr_H100_v5",
        "Standard_ND96isr_H100_v5:savings-plan-1y",
        "Standard_ND96isr_H100_v5:savings-plan-3y",
    ]
    reasons = gpu_page.skip_reasons()
    assert reasons["Windows price (Linux only)"] == 1
    assert reasons["price type 'DevTestConsumption' not offered publicly"] == 1


def test_on_demand_a100(gpu_page: Any) -> None:
    o = by_id(gpu_page)["Standard_NC24ads_A100_v4"]
    assert o.provider == "azure"
    assert o.instance_name == "Standard_NC24ads_A100_v4"
    assert o.region == "eastus"
    assert o.country == "US"  # data/region_countries.csv
    assert o.fetched_at == NOW
    assert o.raw_ref == "azure:sku/DZH318Z08M22/00CL"
    assert o.gpu_model == "A100-PCIE-80GB"
    assert o.gpu_raw_name == "NVIDIA A100 80GB PCIe"
    assert o.gpu_vendor is Vendor.NVIDIA
    assert o.gpu_count == 1 and o.gpu_fraction is None
    assert o.gpu_memory_gb == 80
    assert o.gpu_form_factor is GpuFormFactor.PCIE
    assert o.vcpus == 24
    assert o.ram_gb == 220  # the docs column says GB for this series
    assert o.storage_gb == pytest.approx(64 * 1024**3 / 1e9)  # 64 GiB temp disk
    # the series' specs include: "AMD EPYC 7V13 (Milan) [x86-64]"
    assert (o.cpu_model, o.cpu_vendor, o.cpu_arch) == ("AMD EPYC 7V13 (Milan)", "amd", "x86_64")
    assert o.storage_type is None and o.cpu_sockets is None  # not stated
    assert o.term is RentalTerm.ON_DEMAND
    assert o.price_amount == Decimal("3.673")
    assert o.price_currency == "USD"
    assert o.price_unit is PriceUnit.HOUR
    assert o.price_basis is PriceBasis.INSTANCE
    assert o.usd_per_hour == Decimal("3.673000")
    assert o.prepaid is False


def test_spot_and_low_priority_are_separate_interruptible_offers(gpu_page: Any) -> None:
    offers = by_id(gpu_page)
    spot = offers["Standard_NC24ads_A100_v4:spot"]
    low = offers["Standard_NC24ads_A100_v4:low-priority"]
    for o in (spot, low):
        assert o.term is RentalTerm.INTERRUPTIBLE
        assert o.price_amount == Decimal("0.7346")
        assert o.price_unit is PriceUnit.HOUR
        assert o.gpu_model == "A100-PCIE-80GB"
    assert spot.instance_name == "Standard_NC24ads_A100_v4 (Spot)"
    assert low.instance_name == "Standard_NC24ads_A100_v4 (Low Priority)"
    assert spot.key != low.key


def test_reservations_are_whole_term_prices(gpu_page: Any) -> None:
    offers = by_id(gpu_page)
    one = offers["Standard_NC24ads_A100_v4:reservation-1y"]
    three = offers["Standard_NC24ads_A100_v4:reservation-3y"]
    assert one.term is RentalTerm.COMMIT_1Y and three.term is RentalTerm.COMMIT_3Y
    assert one.price_unit is PriceUnit.TERM and three.price_unit is PriceUnit.TERM
    assert one.price_amount == Decimal("19306.0")
    assert three.price_amount == Decimal("38611.0")
    # the whole-term price spread over the term's hours, never read as an hourly price
    assert one.usd_per_hour == (Decimal("19306") / 8760).quantize(Decimal("0.000001"))
    assert three.usd_per_hour == (Decimal("38611") / 26280).quantize(Decimal("0.000001"))
    assert one.prepaid is None  # Azure lets the buyer pay up front or monthly


def test_savings_plans_are_hourly_commitments(gpu_page: Any) -> None:
    o = by_id(gpu_page)["Standard_NC24ads_A100_v4:savings-plan-3y"]
    assert o.term is RentalTerm.COMMIT_3Y
    assert o.price_unit is PriceUnit.HOUR
    assert o.price_amount == Decimal("1.469195")
    assert o.raw_ref == "azure:sku/DZH318Z08M22/00CL/savings-plan/3 years"


def test_h100_eight_gpus(gpu_page: Any) -> None:
    o = by_id(gpu_page)["Standard_ND96isr_H100_v5"]
    assert o.gpu_model == "H100-SXM5-80GB"
    assert o.gpu_count == 8
    assert o.gpu_memory_gb == 80
    assert o.gpu_form_factor is GpuFormFactor.SXM
    assert o.vcpus == 96 and o.ram_gb == 1900
    assert o.cpu_model == "Intel Xeon (Sapphire Rapids)" and o.cpu_arch == "x86_64"
    assert o.storage_type is StorageType.NVME  # "temp disk 1024 GiB + 8 NVMe"
    assert o.price_amount == Decimal("98.32")
    assert o.usd_per_gpu_hour == Decimal("12.29")


def test_duplicate_pages_do_not_duplicate_offers() -> None:
    first = load("retail_prices_page1_with_nextlink.reconstructed.json")
    result = parse(first, load("retail_prices_gpu_page.reconstructed.json"))
    keys = [o.key for o in result.offers]
    assert len(keys) == len(set(keys)) == 10
    assert result.skip_reasons()[DUPLICATE_REASON] == 4


# --- parse: the verbatim doc examples (non-GPU sizes, Windows, EUR) ----------------------


def test_doc_examples_are_all_skipped_with_reasons() -> None:
    items = load("retail_price_items.docs.verbatim.json")
    result = parse(page(*items))
    assert result.offers == []
    reasons = result.skip_reasons()
    assert reasons["Windows price (Linux only)"] == 2  # the two F16s Spot meters
    assert reasons["not a known GPU VM size: Standard_E64_v4"] == 1


def test_currency_is_kept_exact() -> None:
    result = parse(page(a100_item(currencyCode="EUR", retailPrice=3.3894, unitPrice=3.3894)))
    (o,) = result.offers
    assert o.price_currency == "EUR"
    assert o.price_amount == Decimal("3.3894")


# --- parse: awkward and broken input -----------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"retailPrice": None}, "no price"),
        ({"retailPrice": "abc"}, "price is not a number: 'abc'"),
        ({"retailPrice": -1.0}, "invalid price_amount: Input should be greater than 0"),
        ({"retailPrice": 0}, "invalid price_amount: Input should be greater than 0"),
        ({"retailPrice": 0.001}, "absurd price: 0.00100 USD per GPU-hour (on_demand)"),
        ({"armSkuName": "Standard_NX99ads_Z9_v9"}, "not a known GPU VM size"),
        ({"armSkuName": ""}, "not a known GPU VM size: (none)"),
        ({"type": "Reservation", "reservationTerm": "5 Years"}, "unknown reservationTerm"),
        ({"type": "SomethingNew"}, "price type 'SomethingNew' not offered publicly"),
        ({"currencyCode": "XYZ"}, "invalid price_currency"),
        ({"isPrimaryMeterRegion": False}, "non-primary meter region"),
    ],
)
def test_bad_records_are_skipped(changes: dict[str, Any], reason: str) -> None:
    result = parse(page(a100_item(**changes)))
    assert result.offers == []
    (skipped,) = result.skipped
    assert skipped.reason.startswith(reason)
    assert skipped.ref == "azure:sku/DZH318Z08M22/00CL"


def test_string_price_is_read_exactly() -> None:
    (o,) = parse(page(a100_item(retailPrice="3.6730"))).offers
    assert o.price_amount == Decimal("3.6730")


def test_item_that_is_not_an_object_is_skipped() -> None:
    result = parse(page(a100_item(), "junk", None))  # type: ignore[arg-type]
    assert len(result.offers) == 1
    assert result.skip_reasons()["item is not an object"] == 2


def test_unknown_gpu_is_kept_without_a_model() -> None:
    item = a100_item(armSkuName="Standard_NV12s_v3", meterName="NV12s v3", retailPrice=1.14)
    (o,) = parse(page(item)).offers
    assert o.gpu_model is None
    assert o.gpu_raw_name == "NVIDIA Tesla M60"
    assert o.gpu_count == 1
    assert o.gpu_memory_gb == 8


def test_fractional_gpu_size() -> None:
    item = a100_item(armSkuName="Standard_NV6ads_A10_v5", meterName="NV6ads A10 v5")
    item["retailPrice"] = 0.454
    (o,) = parse(page(item)).offers
    assert o.gpu_count == 1
    assert o.gpu_fraction == pytest.approx(1 / 6)
    assert o.gpu_model == "A10"  # resolved with the whole board's 24 GB
    assert o.gpu_memory_gb == 4  # the slice's share, as the size table lists it
    assert o.ram_gb == pytest.approx(55 * 1024**3 / 1e9)  # the docs column says GiB


@pytest.mark.parametrize(
    "payload", [[], {"Items": "nope"}, {"items": []}, None, "text", [{"Items": []}]]
)
def test_wrong_shape_is_a_response_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_response_format_error() -> None:
    data = (FIXTURES / "retail_prices_gpu_page.reconstructed.json").read_bytes()[:500]
    with pytest.raises(ResponseFormatError):
        AzureAdapter().decode(data, "page.json")


def test_size_table_loads_with_a_source_per_row() -> None:
    sizes = gpu_sizes()
    assert len(sizes) == 41
    for size, spec in sizes.items():
        assert size.startswith("Standard_N"), size
        assert spec.vcpus > 0 and spec.ram > 0 and spec.gpu_memory_gb > 0, size
        assert spec.ram_unit in ("GB", "GiB"), size
        assert spec.gpus > 0 and (spec.gpus < 1 or spec.gpus.denominator == 1), size
        assert spec.source.startswith("https://learn.microsoft.com/"), size
        # a CPU only with the include it is transcribed from, its arch only as stated
        assert (spec.cpu_model is None) is (spec.cpu_source is None), size
        if spec.cpu_source is not None:
            assert spec.cpu_source.startswith("github:MicrosoftDocs/azure-docs@"), size
            quoted = spec.cpu_source.replace("®", "")  # the model as written, marks dropped
            assert spec.cpu_model is not None and spec.cpu_model in quoted, size
            assert spec.cpu_arch is None or "[x86-64]" in spec.cpu_source, size
    h100 = sizes["Standard_ND96isr_H100_v5"]
    assert (h100.vcpus, h100.gpus, h100.gpu_memory_gb) == (96, 8, 80)
    assert h100.form_factor is GpuFormFactor.SXM
    assert sizes["Standard_NV6ads_A10_v5"].gpus == Fraction(1, 6)
    assert azure_gpu_size("standard_nd96isr_h100_v5") is h100
    assert gpu_sizes() is sizes  # read once


# --- fetch -------------------------------------------------------------------------------

NEXT = (
    "https://prices.azure.com:443/api/retail/prices?api-version=2023-01-01-preview"
    "&$filter=serviceName%20eq%20%27Virtual%20Machines%27&$skip=1000"
)


def fetch(policy: RetryPolicy = FAST) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await AzureAdapter(policy=policy).fetch(client)

    return asyncio.run(go())


@respx.mock
def test_fetch_follows_next_page_link() -> None:
    first = load("retail_prices_page1_with_nextlink.reconstructed.json")
    last = load("retail_prices_gpu_page.reconstructed.json")
    route = respx.get(url__startswith="https://prices.azure.com").mock(
        side_effect=[httpx.Response(200, json=first), httpx.Response(200, json=last)]
    )
    pages = fetch()
    assert pages == [first, last]
    assert route.call_count == 2
    query = route.calls[0].request.url.params
    assert query["api-version"] == "2023-01-01-preview"
    assert "serviceName eq 'Virtual Machines'" in query["$filter"]
    assert "contains(armSkuName, 'Standard_N')" in query["$filter"]
    assert query["meterRegion"] == "'primary'"
    assert route.calls[1].request.url.params["$skip"] == "1000"
    # public API: no credentials are sent
    assert "authorization" not in route.calls[0].request.headers
    assert len(AzureAdapter().parse(pages, fetched_at=NOW).offers) == 10


@respx.mock
def test_fetch_stops_on_an_empty_page_even_with_a_link() -> None:
    route = respx.get(url__startswith=API_URL).mock(
        return_value=httpx.Response(200, json=page(next_link=NEXT))
    )
    assert len(fetch()) == 1
    assert route.call_count == 1


@respx.mock
def test_fetch_retries_429_and_5xx_then_succeeds() -> None:
    last = load("retail_prices_gpu_page.reconstructed.json")
    route = respx.get(url__startswith=API_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(503),
            httpx.Response(200, json=last),
        ]
    )
    assert fetch() == [last]
    assert route.call_count == 3


@respx.mock
def test_fetch_fails_after_repeated_500() -> None:
    route = respx.get(url__startswith=API_URL).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500"):
        fetch()
    assert route.call_count == 3


@respx.mock
def test_fetch_client_error_is_not_retried() -> None:
    route = respx.get(url__startswith=API_URL).mock(
        return_value=httpx.Response(400, json={"Error": {"Message": "Invalid OData"}})
    )
    with pytest.raises(ProviderError, match="HTTP 400"):
        fetch()
    assert route.call_count == 1


@respx.mock
def test_fetch_wrong_shape_is_a_response_format_error() -> None:
    respx.get(url__startswith=API_URL).mock(return_value=httpx.Response(200, json={"x": 1}))
    with pytest.raises(ResponseFormatError):
        fetch()


@respx.mock
def test_fetch_not_json_is_a_response_format_error() -> None:
    respx.get(url__startswith=API_URL).mock(return_value=httpx.Response(200, text="<html>"))
    with pytest.raises(ResponseFormatError):
        fetch()


def test_needs_no_credentials() -> None:
    assert AzureAdapter.credential_names == ()
