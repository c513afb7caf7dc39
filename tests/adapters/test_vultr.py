"""Vultr: Cloud GPU plans (whole GPUs and slices) and bare-metal GPU plans; cursor paging."""

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

import gpuscout.adapters
from gpuscout.adapters.base import ProviderError, ResponseFormatError, RetryPolicy
from gpuscout.adapters.sample import sample_entries
from gpuscout.adapters.schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm, StorageType
from gpuscout.adapters.tables import data_rows
from gpuscout.adapters.vultr import METAL_URL, PLANS_URL, VultrAdapter, card_memory_gb

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vultr"
NOW = datetime(2026, 1, 2, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def parse(*payloads: Any) -> Any:
    return VultrAdapter().parse(list(payloads), fetched_at=NOW)


def by_key(result: Any) -> dict[tuple[str, str | None, RentalTerm], Any]:
    return {(o.offer_id, o.region, o.term): o for o in result.offers}


def test_verbatim_cloud_gpu_plans_and_slices() -> None:
    result = parse(load("plans_vcg.gpuhunt_fixture.verbatim.json"))
    assert result.skipped == []
    offers = by_key(result)
    assert len(offers) == 3
    slice_ = offers[("vcg-a100-1c-6g-4vram", "ewr", RentalTerm.ON_DEMAND)]
    assert slice_.gpu_raw_name == "NVIDIA_A100"
    # "A100" 80 GB without a form factor: the slower PCIe part, form factor unstated (#13)
    assert (slice_.gpu_model, slice_.gpu_form_factor) == ("A100-PCIE-80GB", None)
    assert (slice_.gpu_count, slice_.gpu_fraction, slice_.gpu_memory_gb) == (1, 0.05, 4)
    assert slice_.vcpus == 1
    assert slice_.ram_gb == pytest.approx(6.442, abs=0.001)  # 6144 MiB
    assert slice_.storage_gb == 70
    assert slice_.price_amount == Decimal("0.123")
    assert slice_.price_currency == "USD"
    assert slice_.price_unit is PriceUnit.HOUR
    assert slice_.price_basis is PriceBasis.INSTANCE
    assert slice_.usd_per_hour == Decimal("0.123")
    assert slice_.usd_per_gpu_hour == Decimal("2.46")  # per whole GPU
    assert slice_.raw_ref == "vultr:plan/vcg-a100-1c-6g-4vram"

    half = offers[("vcg-a100-6c-60g-40vram", "ewr", RentalTerm.ON_DEMAND)]
    assert (half.gpu_fraction, half.gpu_memory_gb) == (0.5, 40)
    whole = offers[("vcg-a100-12c-120g-80vram", "ewr", RentalTerm.ON_DEMAND)]
    assert (whole.gpu_count, whole.gpu_fraction, whole.gpu_memory_gb) == (1, None, 80)


def test_verbatim_bare_metal_plans() -> None:
    result = parse(load("plans_metal.gpuhunt_fixture.verbatim.json"))
    offers = by_key(result)
    h100 = offers[("vbm-112c-2048gb-8-h100-gpu", "sea", RentalTerm.ON_DEMAND)]
    assert h100.gpu_model == "H100-SXM5-80GB"
    assert h100.gpu_raw_name == "h100"
    assert h100.gpu_form_factor is GpuFormFactor.SXM
    assert (h100.gpu_count, h100.gpu_memory_gb) == (8, 80)
    assert h100.cpu_model == "Platinum 8480+"
    assert (h100.cpu_sockets, h100.cpu_cores, h100.vcpus) == (2, 112, 224)
    assert h100.ram_gb == pytest.approx(2199.023, abs=0.001)  # 2 TiB in MiB
    assert h100.storage_gb == 1920 and h100.storage_type is StorageType.NVME
    assert h100.price_amount == Decimal("23.92")
    assert h100.usd_per_hour == Decimal("23.92")
    spot = offers[("vbm-112c-2048gb-8-h100-gpu", "sea", RentalTerm.INTERRUPTIBLE)]
    assert spot.price_amount == Decimal("18.4")
    mi300x = offers[("vbm-256c-2048gb-8-mi300x-gpu", "ord", RentalTerm.ON_DEMAND)]
    assert (mi300x.gpu_model, mi300x.gpu_vendor, mi300x.gpu_count) == ("MI300X", "amd", 8)
    assert mi300x.usd_per_hour == Decimal("17.52")


def test_reconstructed_all_types_locations_and_preemptible() -> None:
    result = parse(load("plans_type_all.reconstructed.json"))
    offers = by_key(result)
    assert not any(o.offer_id.startswith("vc2-") for o in result.offers)
    l40s = [o for o in result.offers if o.offer_id == "vcg-l40s-16c-180g-48vram"]
    assert sorted(o.region for o in l40s) == ["ewr", "lax", "sjc"]
    assert all(o.gpu_model == "L40S" and o.gpu_count == 1 for o in l40s)
    a16 = offers[("vcg-a16-2c-16g-4vram", "ord", RentalTerm.ON_DEMAND)]
    assert (a16.gpu_model, a16.gpu_fraction) == ("A16", 0.25)
    h100_spot = offers[("vcg-h100-8c-240g-80vram", "ewr", RentalTerm.INTERRUPTIBLE)]
    assert h100_spot.price_amount == Decimal("2.39")
    # deploy_preemptible false: no interruptible offer even though the term exists elsewhere
    assert ("vcg-l40s-16c-180g-48vram", "ewr", RentalTerm.INTERRUPTIBLE) not in offers


def test_cloud_gpu_a100_and_h100_plans_are_the_slower_variants() -> None:
    # No Vultr document found that states SXM or PCIe for Cloud GPU (vcg) A100/H100 plans, and
    # the plan record (id, gpu_type, gpu_vram_gb) does not tell them apart: each is ranked as
    # its family's slower (PCIe) part and its form factor stays unstated (#13).
    vcg = parse(load("plans_vcg.gpuhunt_fixture.verbatim.json")).offers
    every = parse(load("plans_type_all.reconstructed.json")).offers
    offers = [o for o in vcg + every if o.gpu_raw_name in ("NVIDIA_A100", "NVIDIA_H100")]
    assert {o.offer_id for o in offers} == {
        "vcg-a100-1c-6g-4vram",
        "vcg-a100-6c-60g-40vram",
        "vcg-a100-12c-120g-80vram",
        "vcg-h100-8c-240g-80vram",
    }
    slower = {"NVIDIA_A100": "A100-PCIE-80GB", "NVIDIA_H100": "H100-PCIE-80GB"}
    for o in offers:
        assert (o.gpu_model, o.gpu_form_factor) == (slower[o.gpu_raw_name or ""], None)
    # the catalog does know the other Cloud GPU types of the same listing
    assert {o.gpu_model for o in every if o.gpu_raw_name not in ("NVIDIA_A100", "NVIDIA_H100")} == {
        "A16",
        "L40S",
        "MI300X",
    }


def test_card_memory_file_loads_with_a_source_per_row() -> None:
    rows = data_rows("vultr_gpu_cards.csv")
    assert all(row["source"].startswith("Vultr Cloud GPU page") for row in rows)
    assert card_memory_gb()["NVIDIA_A100"] == 80 and card_memory_gb()["AMD_MI300X"] == 192
    assert len(card_memory_gb()) == len(rows) == 6


def test_monthly_price_when_hourly_is_absent() -> None:
    plans = copy.deepcopy(load("plans_vcg.gpuhunt_fixture.verbatim.json"))
    del plans["plans"][1]["hourly_cost"]
    offer = by_key(parse(plans))[("vcg-a100-12c-120g-80vram", "ewr", RentalTerm.ON_DEMAND)]
    assert offer.price_amount == Decimal("1750")
    assert offer.price_unit is PriceUnit.MONTH
    assert offer.usd_per_hour == (Decimal("1750") / 730).quantize(Decimal("0.000001"))


def test_bad_records_are_skipped_or_kept_as_specified() -> None:
    plans = copy.deepcopy(load("plans_type_all.reconstructed.json"))
    items = {p["id"]: p for p in plans["plans"]}
    items["vcg-l40s-16c-180g-48vram"]["hourly_cost"] = None
    items["vcg-l40s-16c-180g-48vram"]["monthly_cost"] = None
    items["vcg-a16-2c-16g-4vram"]["hourly_cost"] = "-0.1"
    items["vcg-a100-1c-6g-4vram"]["hourly_cost"] = "0.123"  # string number: read
    items["vcg-a100-1c-6g-4vram"]["locations"] = []
    items["vcg-mi300x-8c-256g-192vram"]["hourly_cost"] = 0.000001
    items["vcg-h100-8c-240g-80vram"]["gpu_type"] = "NVIDIA_X9000"
    plans["plans"].append(
        {
            "id": "vcg-x",
            "type": "vcg",
            "gpu_type": "NVIDIA_A100",
            "gpu_vram_gb": 120,
            "hourly_cost": 1,
            "locations": ["ewr"],
        }
    )
    plans["plans"].append({"id": "vcg-y", "type": "vcg", "gpu_vram_gb": "lots"})
    plans["plans"].append(None)
    result = parse(plans)
    reasons = result.skip_reasons()
    assert reasons["plan without a price"] == 1
    assert reasons["hourly_cost is -0.1"] == 1
    assert reasons["plan not deployable in any location"] == 1
    assert reasons["absurd price: 0.000001 USD per GPU-hour (on_demand)"] == 1  # the contract's
    assert reasons["120.0 GB VRAM is not a whole number of 80 GB cards"] == 1
    assert reasons["Cloud GPU plan without gpu_type"] == 1
    assert reasons["plan without an id"] == 1
    unknown = [o for o in result.offers if o.offer_id == "vcg-h100-8c-240g-80vram"]
    assert unknown and all(o.gpu_model is None for o in unknown)
    assert {o.gpu_raw_name for o in unknown} == {"NVIDIA_X9000"}
    assert all(o.gpu_count == 1 and o.gpu_memory_gb is None for o in unknown)


@pytest.mark.parametrize("payload", [{"plans": None}, {"meta": {}}, [1], "x", None])
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        VultrAdapter().decode(b'{"plans": [{"id": "vcg-a1', "plans.json")


# --- fetch ----------------------------------------------------------------------------------


def fetch(adapter: VultrAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter.fetch(client)

    return asyncio.run(go())


@respx.mock
def test_the_offline_sample_is_what_fetch_returns() -> None:
    """The sample replays the live path: fetch hands parse exactly the sample's payloads."""
    [entry] = [e for e in sample_entries() if e.provider == "vultr"]
    samples = Path(gpuscout.adapters.__file__).parent / "samples"
    recorded = [json.loads((samples / f).read_text()) for f in entry.files]
    respx.get(PLANS_URL).mock(return_value=httpx.Response(200, json=recorded[0]))
    respx.get(METAL_URL).mock(return_value=httpx.Response(200, json=recorded[1]))
    assert fetch(VultrAdapter(policy=FAST)) == recorded


@respx.mock
def test_fetch_follows_cursors_and_sends_an_optional_key() -> None:
    page1 = load("plans_page1_cursor.reconstructed.json")
    page2 = load("plans_vcg.gpuhunt_fixture.verbatim.json")
    metal = load("plans_metal.gpuhunt_fixture.verbatim.json")
    plans = respx.get(PLANS_URL).mock(
        side_effect=[httpx.Response(200, json=page1), httpx.Response(200, json=page2)]
    )
    metal_route = respx.get(METAL_URL).mock(return_value=httpx.Response(200, json=metal))
    pages = fetch(VultrAdapter({"vultr_api_key": "k"}, policy=FAST))
    assert pages == [page1, page2, metal]
    first, second = (dict(c.request.url.params) for c in plans.calls)
    assert first == {"type": "vcg", "per_page": "500"}
    assert second["cursor"] == page1["meta"]["links"]["next"]
    assert plans.calls[0].request.headers["authorization"] == "Bearer k"
    assert metal_route.call_count == 1
    assert len(VultrAdapter().parse(pages, fetched_at=NOW).offers) == 3 + 3 + 4


@respx.mock
def test_fetch_without_key_and_with_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuscout.adapters import base

    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(base.asyncio, "sleep", fake_sleep)
    empty = {"plans": [], "meta": {"total": 0, "links": {"next": "", "prev": ""}}}
    route = respx.get(PLANS_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "2"}),
            httpx.Response(500),
            httpx.Response(200, json=empty),
        ]
    )
    respx.get(METAL_URL).mock(return_value=httpx.Response(200, json={"plans_metal": []}))
    policy = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=10)
    assert fetch(VultrAdapter(policy=policy)) == [empty, {"plans_metal": []}]
    assert route.call_count == 3
    assert waits[0] == 2.0
    assert "authorization" not in route.calls[-1].request.headers


@respx.mock
@pytest.mark.parametrize(("status", "calls"), [(500, 3), (401, 1)])
def test_fetch_failure_is_a_provider_error(status: int, calls: int) -> None:
    route = respx.get(PLANS_URL).mock(return_value=httpx.Response(status, json={"error": "x"}))
    with pytest.raises(ProviderError, match=f"HTTP {status}"):
        fetch(VultrAdapter(policy=FAST))
    assert route.call_count == calls


@respx.mock
def test_fetch_rejects_a_cursor_loop_and_a_wrong_envelope() -> None:
    loop = {"plans": [], "meta": {"links": {"next": "c"}}}
    respx.get(PLANS_URL).mock(return_value=httpx.Response(200, json=loop))
    with pytest.raises(ProviderError, match="same cursor"):
        fetch(VultrAdapter(policy=FAST))
    respx.get(PLANS_URL).mock(return_value=httpx.Response(200, json={"error": "x"}))
    with pytest.raises(ResponseFormatError, match="'plans' list"):
        fetch(VultrAdapter(policy=FAST))


def test_location_cost_overrides_the_plan_prices_where_it_names_a_location() -> None:
    # location_cost {location: {monthly_cost, hourly_cost, *_preemptible}}: govultr's
    # PlanLocationCost; the fixture's "sea" override of the H100 plan
    offers = by_key(parse(load("plans_type_all.reconstructed.json")))
    ewr = offers[("vcg-h100-8c-240g-80vram", "ewr", RentalTerm.ON_DEMAND)]
    sea = offers[("vcg-h100-8c-240g-80vram", "sea", RentalTerm.ON_DEMAND)]
    sea_spot = offers[("vcg-h100-8c-240g-80vram", "sea", RentalTerm.INTERRUPTIBLE)]
    assert ewr.price_amount == Decimal("2.99")
    assert sea.price_amount == Decimal("2.56")
    assert sea_spot.price_amount == Decimal("2.05")
    # the cap follows the prices of the location: monthly / hourly
    assert ewr.billing_cap_hours_per_month == pytest.approx(1740 / 2.99)
    assert sea.billing_cap_hours_per_month == pytest.approx(1869 / 2.56)
    assert sea_spot.billing_cap_hours_per_month == pytest.approx(1496.4 / 2.05)
    assert ewr.billing_increment_s == 3600  # "the minimum billing unit is one hour"


def test_deploy_ondemand_false_offers_only_the_preemptible_term() -> None:
    offers = by_key(parse(load("plans_type_all.reconstructed.json")))
    duo = {k: o for k, o in offers.items() if k[0] == "vcg-l40s-32c-375g-96vram"}
    assert sorted(duo) == [
        ("vcg-l40s-32c-375g-96vram", "ewr", RentalTerm.INTERRUPTIBLE),
        ("vcg-l40s-32c-375g-96vram", "lax", RentalTerm.INTERRUPTIBLE),
    ]
    assert all(o.gpu_count == 2 and o.price_amount == Decimal("2.68") for o in duo.values())


def test_no_deployable_term_or_bad_location_cost_is_a_skip() -> None:
    plans = copy.deepcopy(load("plans_type_all.reconstructed.json"))
    items = {p["id"]: p for p in plans["plans"]}
    items["vcg-l40s-32c-375g-96vram"]["deploy_preemptible"] = False
    items["vcg-h100-8c-240g-80vram"]["location_cost"] = {"sea": 3.1}
    items["vcg-mi300x-8c-256g-192vram"]["location_cost"] = [1]
    result = parse(plans)
    reasons = result.skip_reasons()
    assert reasons["plan deployable neither on demand nor preemptible"] == 1
    assert reasons["location_cost of sea is not an object"] == 1
    assert reasons["location_cost is not an object: [1]"] == 1
    ids = {(o.offer_id, o.region) for o in result.offers}
    assert ("vcg-h100-8c-240g-80vram", "ewr") in ids
    assert ("vcg-h100-8c-240g-80vram", "sea") not in ids


def test_bare_metal_month_is_capped_at_672_hours() -> None:
    """The issue's 8x H100 bare-metal plan (gpuhunt's verbatim capture): $23.92/h, billed at
    most $16,074.24 = 672 h a month; ranked, a 730 h job costs the monthly price."""
    from gpuscout.pricing.frame import offers_to_frame
    from gpuscout.pricing.job import Job
    from gpuscout.pricing.rank import RankOptions, rank
    from gpuscout.pricing.requirement import Requirement

    result = parse(load("plans_metal.gpuhunt_fixture.verbatim.json"))
    h100 = by_key(result)[("vbm-112c-2048gb-8-h100-gpu", "sea", RentalTerm.ON_DEMAND)]
    assert h100.billing_cap_hours_per_month == 672
    ranked = rank(offers_to_frame([h100]), Requirement(), Job.for_hours(730), RankOptions(now=NOW))
    assert ranked["billed_hours"].to_list() == [672]
    assert ranked["job_cost_usd"].to_list() == [pytest.approx(16074.24)]
