"""Hyperstack adapter: flavors joined with the pricebook; fetch through respx."""

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
    ACCOUNT_PRICE_VARIANT,
    DUPLICATE_REASON,
    MissingCredentials,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
)
from gpuscout.adapters.hyperstack import FLAVORS_URL, PRICEBOOK_URL, HyperstackAdapter
from gpuscout.adapters.schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm, Vendor

FIXTURES = Path(__file__).parent.parent / "fixtures" / "hyperstack"
NOW = datetime(2025, 6, 1, tzinfo=UTC)
FAST = RetryPolicy(base_wait_s=0, max_wait_s=0)


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def flavors() -> dict[str, Any]:
    return load("core_flavors.reconstructed.json")


def gpu_prices() -> list[Any]:
    return load("pricebook.gpu_keyed.reconstructed.json")


def flavor_prices() -> list[Any]:
    return load("pricebook.reconstructed.json")


def adapter(key: str | None = "k") -> HyperstackAdapter:
    return HyperstackAdapter({"hyperstack_api_key": key}, policy=FAST)


def parse(*payloads: Any) -> Any:
    return adapter().parse(list(payloads), fetched_at=NOW)


def by(offers: list[Any], offer_id: str) -> Any:
    return next(o for o in offers if o.offer_id == offer_id)


def test_a_flavor_listed_twice_in_a_region_is_one_offer() -> None:
    doubled = flavors()
    group = doubled["data"][0]
    group["flavors"].append(copy.deepcopy(group["flavors"][-1]))
    result = parse(doubled, gpu_prices())
    assert len(result.offers) == 4
    assert result.skip_reasons() == {DUPLICATE_REASON: 1}


def test_gpu_keyed_pricebook_gives_per_gpu_prices() -> None:
    result = parse(flavors(), gpu_prices())
    assert result.skipped == []
    assert len(result.offers) == 4  # the CPU flavor is not an offer
    o = by(result.offers, "n3-H100x8")
    assert o.provider == "hyperstack"
    assert o.gpu_model == "H100-PCIE-80GB"
    assert o.gpu_vendor is Vendor.NVIDIA
    assert o.gpu_form_factor is GpuFormFactor.PCIE
    assert o.gpu_raw_name == "H100-80G-PCIe"
    assert o.gpu_count == 8
    assert o.gpu_memory_gb == 80
    assert o.vcpus == 252
    assert o.ram_gb == 1440
    assert o.storage_gb == 100 + 6500
    assert o.region == "NORWAY-1"
    assert o.country == "NO"
    assert o.term is RentalTerm.ON_DEMAND
    assert o.price_amount == Decimal("1.90")
    assert o.price_currency == "USD"
    assert o.price_unit is PriceUnit.HOUR
    assert o.price_basis is PriceBasis.GPU
    assert o.usd_per_hour == Decimal("15.2")
    assert o.available_now is False
    assert o.raw_ref == "hyperstack:flavor/103"


def test_sxm_and_l40_flavors() -> None:
    offers = parse(flavors(), gpu_prices()).offers
    sxm = by(offers, "n3-H100-SXM5x8")
    assert sxm.gpu_model == "H100-SXM5-80GB"
    assert sxm.country == "CA"
    assert sxm.usd_per_hour == Decimal("19.2")
    assert sxm.available_now is True
    l40 = by(offers, "n2-L40x1")
    assert l40.gpu_model == "L40"
    assert l40.gpu_memory_gb is None  # the name "L40" does not carry it
    assert l40.usd_per_hour == Decimal("1")


def test_flavor_keyed_pricebook_basis_is_proven_by_a_1_vs_8_pair() -> None:
    # n3-H100x1 at 1.90 and n3-H100x8 at 15.20 = 8 x 1.90: whole-VM prices.
    result = parse(flavors(), flavor_prices())
    assert result.skipped == []
    o = by(result.offers, "n3-H100x8")
    assert o.price_amount == Decimal("15.20")
    assert o.price_basis is PriceBasis.INSTANCE
    assert o.usd_per_gpu_hour == Decimal("1.9")
    assert by(result.offers, "n3-H100-SXM5x8").usd_per_hour == Decimal("19.12")


def test_flavor_keyed_equal_pair_means_per_gpu() -> None:
    prices = flavor_prices()
    prices[2].update(value="1.90", original_value="1.90")  # n3-H100x8 priced like n3-H100x1
    o = by(parse(flavors(), prices).offers, "n3-H100x8")
    assert o.price_basis is PriceBasis.GPU
    assert o.usd_per_hour == Decimal("15.2")


def test_flavor_keyed_without_a_pair_is_skipped_not_guessed() -> None:
    prices = [p for p in flavor_prices() if p["name"] != "n3-H100x1"]
    result = parse(flavors(), prices)
    assert result.offers == []
    reasons = {s.ref: s.reason for s in result.skipped}
    assert "no pricebook entry" in reasons.pop("hyperstack:flavor/102")
    assert len(reasons) == 3
    assert all("not proven" in reason for reason in reasons.values())


def test_flavor_without_price_is_skipped() -> None:
    prices = [p for p in gpu_prices() if p["name"] != "L40"]
    result = parse(flavors(), prices)
    assert [s.ref for s in result.skipped] == ["hyperstack:flavor/201"]
    assert len(result.offers) == 3


@pytest.mark.parametrize("value", [None, "0", "-1.0", "abc", "0.001"])
def test_bad_prices_are_skipped(value: Any) -> None:
    prices = gpu_prices()
    prices[2].update(value=value, original_value=value)  # L40
    result = parse(flavors(), prices)
    assert len(result.offers) == 3
    assert [s.ref for s in result.skipped] == ["hyperstack:flavor/201"]


def test_list_price_is_the_offer_and_an_account_discount_a_labelled_variant() -> None:
    """The pricebook's ``original_value`` is the list price, ``value`` what the key's
    account pays (``discount_applied``, Hyperstack's pricebook fields): the list price is the
    offer, the account's a second offer labelled "account price"."""
    prices = gpu_prices()
    prices[2].update(value=None, original_value="1.10")
    assert by(parse(flavors(), prices).offers, "n2-L40x1").price_amount == Decimal("1.10")
    prices[2].update(value="0.90", original_value="1.00", discount_applied=True)
    l40 = [o for o in parse(flavors(), prices).offers if o.offer_id == "n2-L40x1"]
    assert [(o.price_amount, o.term_variant) for o in l40] == [
        (Decimal("1.00"), None),
        (Decimal("0.90"), ACCOUNT_PRICE_VARIANT),
    ]
    assert l40[0].key != l40[1].key and l40[1].term is RentalTerm.ON_DEMAND
    prices[2].update(value="1.00", original_value=None)  # no list price: value, unlabelled
    l40 = [o for o in parse(flavors(), prices).offers if o.offer_id == "n2-L40x1"]
    assert [(o.price_amount, o.term_variant) for o in l40] == [(Decimal("1.00"), None)]


def test_unknown_gpu_is_kept_and_strings_read() -> None:
    data = flavors()
    flavor = copy.deepcopy(data["data"][2]["flavors"][0])
    flavor.update(
        name="n9-X", region_name="US-1", gpu="QPU-9000", gpu_count="2", cpu="16", ram="64"
    )
    data["data"].append({"gpu": "QPU-9000", "region_name": "US-1", "flavors": [flavor]})
    prices = [*gpu_prices(), {"name": "QPU-9000", "value": "3.00"}]
    o = by(parse(data, prices).offers, "n9-X")
    assert o.gpu_model is None
    assert o.gpu_raw_name == "QPU-9000"
    assert o.gpu_count == 2
    assert o.vcpus == 16
    assert o.country == "US"
    assert o.usd_per_hour == Decimal("6")


def test_broken_records_are_skipped() -> None:
    data = {"status": True, "data": [None, {"gpu": "L40", "flavors": [None, {"id": 5}]}]}
    result = parse(data, gpu_prices())
    assert result.offers == []
    assert len(result.skipped) == 3


def test_status_false_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="Unauthorized"):
        parse({"status": False, "message": "Unauthorized"}, gpu_prices())


@pytest.mark.parametrize(
    "payloads", [[gpu_prices()], [{"data": {}}], ["text"], [None, gpu_prices()], [42]]
)
def test_wrong_shape_is_a_format_error(payloads: list[Any]) -> None:
    with pytest.raises(ResponseFormatError):
        parse(*payloads)


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        adapter().decode(b'[{"name": "H100-80G', "truncated.json")


def run_fetch(a: HyperstackAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await a.fetch(client)

    return asyncio.run(go())


@respx.mock
def test_fetch_sends_api_key_header_to_both_endpoints() -> None:
    f = respx.get(FLAVORS_URL).mock(return_value=httpx.Response(200, json=flavors()))
    p = respx.get(PRICEBOOK_URL).mock(return_value=httpx.Response(200, json=gpu_prices()))
    payloads = run_fetch(adapter())
    assert payloads == [flavors(), gpu_prices()]
    for route in (f, p):
        assert route.calls.last.request.headers["api_key"] == "k"
        assert "Authorization" not in route.calls.last.request.headers
    assert len(adapter().parse(payloads, fetched_at=NOW).offers) == 4


@respx.mock
def test_fetch_retries_429_and_5xx_then_succeeds() -> None:
    respx.get(FLAVORS_URL).mock(return_value=httpx.Response(200, json=flavors()))
    route = respx.get(PRICEBOOK_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(503),
            httpx.Response(200, json=gpu_prices()),
        ]
    )
    assert run_fetch(adapter())[1] == gpu_prices()
    assert route.call_count == 3


@respx.mock
def test_fetch_gives_up_after_repeated_500() -> None:
    route = respx.get(FLAVORS_URL).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500"):
        run_fetch(adapter())
    assert route.call_count == FAST.attempts


@respx.mock
def test_fetch_401_is_a_provider_error() -> None:
    body = {"status": False, "message": "Invalid API key"}
    respx.get(FLAVORS_URL).mock(return_value=httpx.Response(401, json=body))
    with pytest.raises(ProviderError, match="401"):
        run_fetch(adapter())


def test_fetch_without_key_is_missing_credentials() -> None:
    with pytest.raises(MissingCredentials):
        run_fetch(adapter(None))
