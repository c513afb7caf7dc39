"""Cudo adapter: composed VM offers, bare-metal offers, commitment terms; fetch via respx."""

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
from gpuscout.adapters.cudo import API_BASE, CudoAdapter
from gpuscout.adapters.schema import Fabric, PriceBasis, PriceUnit, RentalTerm

FIXTURES = Path(__file__).parent.parent / "fixtures" / "cudo"
NOW = datetime(2024, 6, 1, tzinfo=UTC)
FAST = RetryPolicy(base_wait_s=0, max_wait_s=0)
VMS = f"{API_BASE}/vms/machine-types-2"
METAL = f"{API_BASE}/machine-types"


def adapter(key: str | None = "k") -> CudoAdapter:
    return CudoAdapter({"cudo_api_key": key}, policy=FAST)


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def parse(*payloads: Any) -> Any:
    return adapter().parse(list(payloads), fetched_at=NOW)


def find(offers: list[Any], offer_id: str, term: RentalTerm = RentalTerm.ON_DEMAND) -> Any:
    return next(o for o in offers if o.offer_id == offer_id and o.term is term)


def test_verbatim_vm_family_composed_per_gpu_count() -> None:
    offers = parse(load("vms_machine_types.gpuhunt_fixture.verbatim.json")).offers
    a5000 = [o for o in offers if o.offer_id.startswith("epyc-rome-rtx-a5000/")]
    assert [o.gpu_count for o in a5000] == [1, 2, 3, 4]  # maxGpuFree = 4
    o = a5000[0]
    assert o.gpu_model == "RTX-A5000"
    assert o.gpu_raw_name == "RTX A5000"
    assert o.region == "no-luster-1" and o.country == "NO"
    assert o.cpu_model == "EPYC-Rome"
    # smallest VM: 1 vCPU (minVcpuPerGpu 1), ceil(1 / 1.036437) = 1 GiB RAM
    assert o.vcpus == 1
    assert o.ram_gb == pytest.approx(1.073741824)
    assert o.price_amount == Decimal("0.002100") + Decimal("0.003400") + Decimal("0.520000")
    assert o.price_currency == "USD"
    assert o.price_unit is PriceUnit.HOUR
    assert o.price_basis is PriceBasis.INSTANCE
    assert o.usd_per_hour == Decimal("0.525500")
    assert o.storage_gb == pytest.approx(1170 * 1.073741824)  # maxStorageGibFree
    assert o.storage_included_gb == 0
    assert o.boot_disk_min_gb == pytest.approx(107.3741824)  # 100 GiB
    assert o.ipv4_price_per_hour == Decimal("0.003500")
    assert o.storage_price_per_gb_month == Decimal("0.07274561")
    assert o.available_now is True
    assert len(offers) == 5 + 4


def test_commitment_prices_become_terms() -> None:
    offers = parse(load("vms_machine_types.reconstructed.json")).offers
    od = find(offers, "sapphire-rapids-h100/8gpu")
    month = find(offers, "sapphire-rapids-h100/8gpu", RentalTerm.COMMIT_1MO)
    assert od.gpu_model == "H100-SXM5-80GB" and od.gpu_memory_gb == 80
    assert od.vcpus == 8 and od.ram_gb == pytest.approx(8 * 1.073741824)
    assert od.price_amount == Decimal("0.0022") * 8 + Decimal("0.003") * 8 + Decimal("2.25") * 8
    assert month.price_amount == Decimal("0.002") * 8 + Decimal("0.0027") * 8 + Decimal("1.99") * 8
    assert month.usd_per_gpu_hour < od.usd_per_gpu_hour


def test_cpu_only_family_skipped_with_infinity_bound() -> None:
    result = parse(load("vms_machine_types.reconstructed.json"))
    assert "cudo:vm/se-smedjebacken-1/epyc-milan" in [s.ref for s in result.skipped]


def test_bare_metal_machine() -> None:
    [o] = parse(load("baremetal_machine_types.reconstructed.json")).offers
    assert o.offer_id == "8x-h100-sxm-nvlink"
    assert o.gpu_model == "H100-SXM5-80GB"
    assert o.gpu_raw_name == "nvidia-h100-sxm"
    assert o.gpu_count == 8
    assert o.cpu_model == "Intel Xeon Platinum 8480+"
    assert o.cpu_cores == 112
    assert o.ram_gb == pytest.approx(2048 * 1.073741824)
    assert o.storage_gb == pytest.approx(8 * 3840 * 1.073741824)
    assert o.fabric is Fabric.INFINIBAND
    assert o.region == "us-santaclara-1" and o.country == "US"
    assert o.price_amount == Decimal("19.920000")
    assert o.term is RentalTerm.ON_DEMAND
    assert o.available_count == 2 and o.available_now is True


def test_unmapped_commitment_and_bad_prices_skipped() -> None:
    metal = load("baremetal_machine_types.reconstructed.json")
    prices = metal["machineTypes"][0]["prices"]
    prices.append({**prices[0], "commitmentTerm": "COMMITMENT_TERM_24_MONTHS"})
    prices.append({**prices[0], "commitmentTerm": "COMMITMENT_TERM_12_MONTHS", "priceHr": None})
    prices.append({**prices[0], "commitmentTerm": "COMMITMENT_TERM_3_MONTHS", "priceHr": "-3"})
    prices.append({**prices[0], "commitmentTerm": "COMMITMENT_TERM_6_MONTHS", "priceHr": "x"})
    prices.append({**prices[0], "commitmentTerm": "COMMITMENT_TERM_36_MONTHS", "priceHr": "0.0001"})
    result = parse(metal)
    assert [o.term for o in result.offers] == [RentalTerm.ON_DEMAND]
    assert len(result.skipped) == 5


def test_vm_with_string_or_null_gpu_price() -> None:
    data = load("vms_machine_types.gpuhunt_fixture.verbatim.json")
    bad = copy.deepcopy(data)
    bad["machineTypes"][0]["gpuPriceHr"] = {"value": None}
    bad["machineTypes"][1]["gpuPriceHr"] = {"value": "lots"}
    result = parse(bad)
    assert result.offers == []
    assert len(result.skipped) == 2


def test_unknown_gpu_kept() -> None:
    data = load("vms_machine_types.gpuhunt_fixture.verbatim.json")
    data["machineTypes"][1]["gpuModel"] = "Quantum Frobnicator"
    offers = [o for o in parse(data).offers if o.offer_id.startswith("epyc-rome")]
    assert offers and all(o.gpu_model is None for o in offers)
    assert offers[0].gpu_raw_name == "Quantum Frobnicator"


@pytest.mark.parametrize("payload", [[], {"machineTypes": {}}, {"other": []}])
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        adapter().decode(b'{"machineTypes": [{"data', "vms.json")


def run_fetch(a: CudoAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await a.fetch(client)

    return asyncio.run(go())


@respx.mock
def test_fetch_both_catalogues_with_bearer_key() -> None:
    vms = load("vms_machine_types.gpuhunt_fixture.verbatim.json")
    metal = load("baremetal_machine_types.reconstructed.json")
    r1 = respx.get(VMS).mock(return_value=httpx.Response(200, json=vms))
    r2 = respx.get(METAL).mock(return_value=httpx.Response(200, json=metal))
    assert run_fetch(adapter()) == [vms, metal]
    assert r1.calls.last.request.headers["Authorization"] == "Bearer k"
    assert r2.calls.last.request.headers["Authorization"] == "Bearer k"


@respx.mock
def test_fetch_retries_then_succeeds() -> None:
    route = respx.get(VMS).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(504),
            httpx.Response(200, json={"machineTypes": []}),
        ]
    )
    respx.get(METAL).mock(return_value=httpx.Response(200, json={"machineTypes": []}))
    assert run_fetch(adapter()) == [{"machineTypes": []}, {"machineTypes": []}]
    assert route.call_count == 3


@respx.mock
def test_fetch_failures() -> None:
    respx.get(VMS).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500"):
        run_fetch(adapter())
    respx.get(VMS).mock(return_value=httpx.Response(401, json={"code": 16}))
    with pytest.raises(ProviderError, match="401"):
        run_fetch(adapter())


@respx.mock
def test_fetch_without_key_reads_the_public_vm_catalogue_only() -> None:
    vms = load("vms_machine_types.gpuhunt_fixture.verbatim.json")
    r1 = respx.get(VMS).mock(return_value=httpx.Response(200, json=vms))
    r2 = respx.get(METAL).mock(return_value=httpx.Response(200, json={"machineTypes": []}))
    assert run_fetch(adapter(None)) == [vms]
    assert "Authorization" not in r1.calls.last.request.headers
    assert not r2.called
