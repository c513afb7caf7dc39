"""JarvisLabs adapter: the server_meta response, fetch through respx, and bad input."""

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
    DUPLICATE_REASON,
    MissingCredentials,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
)
from gpuscout.adapters.jarvislabs import SERVER_META_URL, JarvisLabsAdapter, instance_gpu_counts
from gpuscout.adapters.schema import Offer, PriceBasis, PriceUnit, RentalTerm, Vendor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "jarvislabs"
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)
KEY = {"jarvislabs_api_key": "jl-key"}


def meta() -> Any:
    return json.loads((FIXTURES / "server_meta.gpuhunt_fixture.verbatim.json").read_text())


def parse(*payloads: Any) -> Any:
    return JarvisLabsAdapter().parse(list(payloads), fetched_at=NOW)


def one(offers: list[Offer], offer_id: str, term: RentalTerm) -> Offer:
    [offer] = [o for o in offers if o.offer_id == offer_id and o.term is term]
    return offer


def rows(*changed: dict[str, Any]) -> dict[str, Any]:
    return {"server_meta": list(changed)}


def l4_vm(**changes: Any) -> dict[str, Any]:
    row = copy.deepcopy(meta()["server_meta"][1])
    row.update(changes)
    return row


def fetch(adapter: JarvisLabsAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter.fetch(client)

    return asyncio.run(go())


def test_instance_gpu_counts() -> None:
    assert instance_gpu_counts(1) == [1]
    assert instance_gpu_counts(8) == [1, 2, 4, 8]
    assert instance_gpu_counts(3) == [1, 2, 3]


# --- parse: recorded response ------------------------------------------------------------


def test_recorded_server_meta() -> None:
    result = parse(meta())
    # only the row of a region JarvisLabs does not provision
    assert [s.ref for s in result.skipped] == ["jarvislabs:unknown-region/H100"]
    ids = {(o.offer_id, o.term) for o in result.offers}
    # L4 noida: VM and container rows merged; on-demand 1/2/4/8 + spot from the container row
    assert {i for i in ids if i[0].startswith("india-noida-01:L4:")} == {
        (f"india-noida-01:L4:{n}x", t)
        for n in (1, 2, 4, 8)
        for t in (RentalTerm.ON_DEMAND, RentalTerm.INTERRUPTIBLE)
    }
    # cpu_meta (CPU-only machines) gives no offers
    assert all(o.gpu_count >= 1 for o in result.offers)
    assert len(result.offers) == 8 + 3 + 4 + 4 + 1  # unknown-region: skipped


def test_l4_on_demand_field_by_field() -> None:
    offer = one(parse(meta()).offers, "india-noida-01:L4:2x", RentalTerm.ON_DEMAND)
    assert offer.provider == "jarvislabs"
    assert offer.raw_ref == "jarvislabs:india-noida-01/L4/vm"
    assert offer.instance_name == "2x L4 (vm)"
    assert offer.region == "india-noida-01"
    assert offer.country == "IN"  # data/region_countries.csv
    assert offer.gpu_model == "L4"
    assert offer.gpu_raw_name == "L4"
    assert offer.gpu_vendor is Vendor.NVIDIA
    assert offer.gpu_count == 2
    assert offer.gpu_memory_gb == 24
    assert offer.vcpus == 56 and offer.ram_gb == 248  # 28 vCPU and 124 GB per GPU
    assert offer.price_amount == Decimal("0.44")
    assert offer.price_currency == "USD"
    assert offer.price_unit is PriceUnit.HOUR
    assert offer.price_basis is PriceBasis.GPU
    assert offer.usd_per_hour == Decimal("0.880000")
    assert offer.available_count == 1  # 3 free GPUs hold one 2-GPU instance
    assert offer.available_now is True


def test_spot_comes_from_the_container_row() -> None:
    offers = parse(meta()).offers
    spot = one(offers, "india-noida-01:L4:1x", RentalTerm.INTERRUPTIBLE)
    assert spot.price_amount == Decimal("0.29")
    assert spot.instance_name == "1x L4 (container)"
    assert spot.raw_ref == "jarvislabs:india-noida-01/L4/container"
    assert spot.available_count == 2
    assert one(offers, "india-noida-01:L4:4x", RentalTerm.INTERRUPTIBLE).available_now is False
    # the A100 has only a VM row: its spot_price is not sold to VMs
    a100 = [o for o in offers if o.gpu_raw_name == "A100-80GB"]
    assert {o.term for o in a100} == {RentalTerm.ON_DEMAND}


def test_gpu_names() -> None:
    offers = parse(meta()).offers
    pro = one(offers, "india-chennai-01:RTX-PRO6000:8x", RentalTerm.ON_DEMAND)
    assert pro.gpu_model == "RTX-PRO-6000" and pro.gpu_memory_gb == 96
    assert pro.ram_gb == 1280 and pro.usd_per_hour == Decimal("15.120000")
    spaced = one(offers, "india-noida-01:RTX PRO 6000:1x", RentalTerm.ON_DEMAND)
    assert spaced.gpu_model == "RTX-PRO-6000"
    # "A100-80GB" and "H100" do not say SXM or PCIe: the slower variant, form factor unstated
    a100 = one(offers, "india-noida-01:A100-80GB:4x", RentalTerm.ON_DEMAND)
    assert a100.gpu_model == "A100-PCIE-80GB" and a100.gpu_raw_name == "A100-80GB"
    assert a100.gpu_form_factor is None
    assert a100.gpu_memory_gb == 80


def test_a100_80gb_and_h100_are_the_slower_variants_in_every_offer() -> None:
    # No JarvisLabs document found that states the form factor of these two, and the rows
    # carry only vram (80 GB for SXM and PCIe alike): no hint is passed, so each is ranked as
    # its family's slower (PCIe) variant and its form factor stays unstated (#13).
    offers = [o for o in parse(meta()).offers if o.gpu_raw_name in ("A100-80GB", "H100")]
    assert {(o.gpu_raw_name, o.region) for o in offers} == {
        ("A100-80GB", "india-noida-01"),
        ("H100", "europe-01"),
    }
    assert len(offers) == 3 + 1  # A100: 1/2/4x on demand; H100: 1x in europe-01
    slower = {"A100-80GB": "A100-PCIE-80GB", "H100": "H100-PCIE-80GB"}
    for o in offers:
        assert (o.gpu_model, o.gpu_form_factor) == (slower[o.gpu_raw_name or ""], None)
        assert o.gpu_memory_gb == 80


def test_rows_without_workload_or_gpu_count() -> None:
    offers = parse(meta()).offers
    # workload_type null is a VM row; num_gpus absent means single-GPU instances
    [h100] = [o for o in offers if o.region == "europe-01"]
    assert h100.offer_id == "europe-01:H100:1x"
    assert h100.term is RentalTerm.ON_DEMAND
    assert h100.vcpus == 16 and h100.ram_gb == 200
    assert h100.price_amount == Decimal("2.99")
    assert h100.available_count == 25


# --- parse: bad input -------------------------------------------------------------------


@pytest.mark.parametrize("payload", [None, [], {"cpu_meta": {}}, {"server_meta": {"a": 1}}])
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        JarvisLabsAdapter().decode(b'{"server_meta": [{"gpu_type": "L4", "pri', "meta.json")


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"price_per_hour": None}, "no positive price_per_hour (None)"),
        ({"price_per_hour": -0.44}, "no positive price_per_hour (-0.44)"),
        ({"price_per_hour": 0}, "no positive price_per_hour (0)"),
        ({"price_per_hour": "n/a"}, "bad price_per_hour"),
        ({"gpu_type": None}, "row without gpu_type"),
        ({"region": ""}, "row without region"),
    ],
)
def test_broken_row_is_skipped(changes: dict[str, Any], reason: str) -> None:
    result = parse(rows(l4_vm(**changes)))
    assert result.offers == []
    [skipped] = result.skipped
    assert reason in skipped.reason


def test_string_numbers_are_read() -> None:
    offers = parse(rows(l4_vm(price_per_hour="0.44", cpus_per_gpu="28", num_gpus="2"))).offers
    assert [(o.gpu_count, o.price_amount, o.vcpus) for o in offers] == [
        (1, Decimal("0.44"), 28),
        (2, Decimal("0.44"), 56),
    ]


def test_unknown_gpu_is_kept_unmapped() -> None:
    offers = parse(rows(l4_vm(gpu_type="Imaginary RTX 9999", num_gpus="1"))).offers
    [offer] = offers
    assert offer.gpu_model is None and offer.gpu_vendor is None
    assert offer.gpu_raw_name == "Imaginary RTX 9999"


def test_absurd_price_is_rejected() -> None:
    result = parse(rows(l4_vm(price_per_hour=0.001, num_gpus="1")))
    assert result.offers == []
    assert "absurd price" in result.skipped[0].reason


def test_duplicate_rows_are_skipped() -> None:
    result = parse(rows(l4_vm(num_gpus="1"), l4_vm(num_gpus="1", price_per_hour=9)))
    assert [o.price_amount for o in result.offers] == [Decimal("0.44")]  # the first wins
    assert result.skip_reasons() == {DUPLICATE_REASON: 1}


# --- fetch -------------------------------------------------------------------------------


def test_missing_key_skips_the_provider() -> None:
    with pytest.raises(MissingCredentials, match="GPUSCOUT_JARVISLABS_API_KEY"):
        fetch(JarvisLabsAdapter(policy=FAST))


@respx.mock
def test_fetch_sends_the_key() -> None:
    route = respx.get(SERVER_META_URL).mock(return_value=httpx.Response(200, json=meta()))
    assert fetch(JarvisLabsAdapter(KEY, policy=FAST)) == [meta()]
    assert route.calls.last.request.headers["Authorization"] == "Bearer jl-key"


@respx.mock
def test_fetch_retries_429_and_5xx_then_succeeds() -> None:
    route = respx.get(SERVER_META_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(504),
            httpx.Response(200, json=rows()),
        ]
    )
    assert fetch(JarvisLabsAdapter(KEY, policy=FAST)) == [rows()]
    assert route.call_count == 3


@pytest.mark.parametrize("status", [401, 500])
@respx.mock
def test_fetch_failure_is_a_provider_error(status: int) -> None:
    respx.get(SERVER_META_URL).mock(return_value=httpx.Response(status))
    with pytest.raises(ProviderError, match=f"HTTP {status}"):
        fetch(JarvisLabsAdapter(KEY, policy=FAST))


@respx.mock
def test_non_json_body_is_a_format_error() -> None:
    respx.get(SERVER_META_URL).mock(return_value=httpx.Response(200, text="<html>oops"))
    with pytest.raises(ResponseFormatError):
        fetch(JarvisLabsAdapter(KEY, policy=FAST))


def test_a_region_jarvislabs_does_not_provision_is_skipped_by_name() -> None:
    """server_meta lists an H100 in ``unknown-region``, which no JarvisLabs client can create
    an instance in: it is skipped with its reason, never an offer."""
    from gpuscout.adapters.jarvislabs import NOT_PROVISIONED

    result = parse(meta())
    assert not [o for o in result.offers if o.region == "unknown-region"]
    reasons = [s for s in result.skipped if s.reason.startswith(NOT_PROVISIONED)]
    assert reasons and all("unknown-region" in s.reason for s in reasons)


def test_india_01_takes_no_new_instances_and_is_skipped() -> None:
    """india-01 (IN1's old backend) stopped taking new instances in 2026-04: a row of it, as
    server_meta lists rows, is skipped by name; the same row in india-chennai-01 ranks."""
    from gpuscout.adapters.jarvislabs import NOT_PROVISIONED

    row = next(r for r in meta()["server_meta"] if r["region"] == "india-chennai-01")
    result = parse({"server_meta": [{**row, "region": "india-01"}, row]})
    assert {o.region for o in result.offers} == {"india-chennai-01"}
    assert {s.reason for s in result.skipped} == {f"{NOT_PROVISIONED} (india-01)"}
