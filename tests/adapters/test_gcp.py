"""GCP: machine prices assembled from Cloud Billing Catalog SKUs; fetch paging and errors."""

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
from gpuscout.adapters.gcp import SKUS_URL, GcpAdapter, accelerators, machine_shapes, sku_label
from gpuscout.adapters.schema import (
    GpuFormFactor,
    GpuInterconnect,
    PriceBasis,
    PriceUnit,
    RentalTerm,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gcp"
NOW = datetime(2026, 1, 2, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)
KEY = {"gcp_api_key": "test-key"}


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def parse(*pages: Any) -> Any:
    return GcpAdapter().parse(list(pages), fetched_at=NOW)


def offers_by(result: Any) -> dict[tuple[str, str | None, RentalTerm], Any]:
    return {(o.offer_id, o.region, o.term): o for o in result.offers}


def sku(
    sku_id: str,
    description: str,
    group: str,
    usage: str,
    units: Any,
    nanos: Any,
    *,
    unit: str = "h",
    regions: tuple[str, ...] = ("us-central1",),
) -> dict[str, Any]:
    """A SKU in the catalog's shape (field set of the verbatim opencost page)."""
    return {
        "name": f"services/6F81-5844-456A/skus/{sku_id}",
        "skuId": sku_id,
        "description": description,
        "category": {
            "serviceDisplayName": "Compute Engine",
            "resourceFamily": "Compute",
            "resourceGroup": group,
            "usageType": usage,
        },
        "serviceRegions": list(regions),
        "pricingInfo": [
            {
                "pricingExpression": {
                    "usageUnit": unit,
                    "tieredRates": [
                        {
                            "startUsageAmount": 0,
                            "unitPrice": {"currencyCode": "USD", "units": units, "nanos": nanos},
                        }
                    ],
                }
            }
        ],
    }


# --- parse: the verbatim page ----------------------------------------------------------------


def test_verbatim_a2_page_assembles_machine_prices() -> None:
    result = parse(load("skus_page_a100_a2.opencost.verbatim.json"))
    assert result.skipped == []
    offers = offers_by(result)
    # 5 A2 Standard shapes x 3 regions; no A2 Ultra (no A100 80GB SKU on this page).
    assert len(offers) == 15
    one = offers[("a2-highgpu-1g", "us-central1", RentalTerm.ON_DEMAND)]
    # 1 x 2.933908 (GPU) + 12 x 0.031611 (vCPU) + 85 GiB x 0.004237 (RAM)
    assert one.price_amount == Decimal("3.673385")
    assert {(o.region, o.country) for o in offers.values()} == {
        ("us-central1", "US"),
        ("us-east1", "US"),
        ("us-west1", "US"),
    }
    assert one.price_currency == "USD"
    assert one.price_unit is PriceUnit.HOUR
    assert one.price_basis is PriceBasis.INSTANCE
    assert one.usd_per_hour == Decimal("3.673385")
    assert one.gpu_model == "A100-SXM4-40GB"
    assert one.gpu_raw_name == "Nvidia Tesla A100 GPU"
    assert one.gpu_vendor == "nvidia"
    assert (one.gpu_count, one.gpu_memory_gb) == (1, 40)
    assert one.gpu_form_factor is GpuFormFactor.SXM
    assert one.gpu_interconnect is GpuInterconnect.NVLINK
    assert one.vcpus == 12
    # two vCPUs per core (cloud.google.com/compute/docs/cpu-platforms); the model is unknown
    assert one.cpu_cores == 6 and one.cpu_model is None and one.cpu_sockets is None
    assert one.ram_gb == pytest.approx(91.268, abs=0.001)  # 85 GiB
    assert one.storage_gb is None
    assert one.raw_ref == "gcp:sku/039F-D0DA-4055+2922-40C5-B19F+2390-DCAF-DA38"
    assert one.fetched_at == NOW
    assert one.billing_increment_s == 1

    mega = offers[("a2-megagpu-16g", "us-west1", RentalTerm.ON_DEMAND)]
    assert mega.gpu_count == 16 and mega.vcpus == 96
    expected = 16 * Decimal("2.933908") + 96 * Decimal("0.031611") + 1360 * Decimal("0.004237")
    assert mega.price_amount == expected


def test_reconstructed_page_terms_regions_and_slices() -> None:
    result = parse(load("skus_page_gpu.reconstructed.json"))
    offers = offers_by(result)
    a3 = offers[("a3-highgpu-8g", "us-east4", RentalTerm.ON_DEMAND)]
    assert a3.gpu_model == "H100-SXM5-80GB"
    assert (a3.gpu_count, a3.vcpus, a3.cpu_cores) == (8, 208, 104)
    assert a3.price_amount == 8 * Decimal("9.79655") + 208 * Decimal("0.02232") + 1872 * Decimal(
        "0.002992"
    )
    assert a3.storage_gb == pytest.approx(6442.451, abs=0.001)  # 6000 GiB bundled Local SSD
    # the 1/2/4-GPU A3 High types are Spot-only: no on-demand offers for them
    assert ("a3-highgpu-1g", "us-east4", RentalTerm.ON_DEMAND) not in offers

    g2 = offers[("g2-standard-24", "us-central1", RentalTerm.ON_DEMAND)]
    assert (g2.gpu_model, g2.gpu_count, g2.vcpus) == ("L4", 2, 24)
    assert g2.gpu_interconnect is None
    assert g2.price_amount == 2 * Decimal("0.56004") + 24 * Decimal("0.024988") + 96 * Decimal(
        "0.002928"
    )

    # A4 bills only per GPU slice, here Spot: 8 x 3.84
    a4 = offers[("a4-highgpu-8g", "us-east4", RentalTerm.INTERRUPTIBLE)]
    assert a4.gpu_model == "B200" and a4.gpu_count == 8
    assert a4.price_amount == Decimal("30.72")
    assert a4.billing_increment_s == 1

    # Spot GPU / 1-year commitment rates without matching vCPU/RAM rates: skipped, once each
    reasons = result.skip_reasons()
    assert reasons["no a3 vCPU/RAM price in us-central1 (commit_1y)"] == 1
    assert reasons["no g2 vCPU/RAM price in us-west1 (interruptible)"] == 1
    assert reasons["no n1 vCPU/RAM price in europe-west4 (on_demand)"] == 1
    assert not any(o.term is RentalTerm.COMMIT_1Y for o in result.offers)


def test_pages_combine_and_commitments_and_n1_gpus() -> None:
    extra = {
        "skus": [
            sku(
                "C1", "Commitment v1: A3 Cpu in Americas for 1 Year", "CPU", "Commit1Yr", "0", 14e6
            ),
            sku(
                "C2",
                "Commitment v1: A3 Ram in Americas for 1 Year",
                "RAM",
                "Commit1Yr",
                "0",
                1875000,
                unit="GiBy.h",
            ),
            sku(
                "N1",
                "N1 Predefined Instance Core running in Netherlands",
                "CPU",
                "OnDemand",
                "0",
                34802000,
                regions=("europe-west4",),
            ),
            sku(
                "N2",
                "N1 Predefined Instance Ram running in Netherlands",
                "RAM",
                "OnDemand",
                "0",
                4664000,
                unit="GiBy.h",
                regions=("europe-west4",),
            ),
        ],
        "nextPageToken": "",
    }
    result = parse(load("skus_page_gpu.reconstructed.json"), extra)
    offers = offers_by(result)
    commit = offers[("a3-highgpu-8g", "us-central1", RentalTerm.COMMIT_1Y)]
    assert commit.price_amount == 8 * Decimal("6.858") + 208 * Decimal("0.014") + 1872 * Decimal(
        "0.001875"
    )
    assert commit.price_unit is PriceUnit.HOUR
    assert commit.billing_increment_s is None

    t4 = offers[("n1-standard-4+1xnvidia-tesla-t4", "europe-west4", RentalTerm.ON_DEMAND)]
    assert (t4.gpu_model, t4.gpu_count, t4.vcpus) == ("T4", 1, 4)
    assert t4.price_amount == Decimal("0.41") + 4 * Decimal("0.034802") + 15 * Decimal("0.004664")
    # T4 on N1: 1 GPU allows at most 48 vCPUs (n1-standard-64 is out)
    assert ("n1-standard-64+1xnvidia-tesla-t4", "europe-west4", RentalTerm.ON_DEMAND) not in offers
    assert ("n1-standard-96+4xnvidia-tesla-t4", "europe-west4", RentalTerm.ON_DEMAND) in offers


def test_sku_label_strips_prefixes_and_location() -> None:
    assert sku_label("Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in Americas") == (
        "A4 Nvidia B200 (1 gpu slice)"
    )
    assert sku_label("Commitment v1: A2 Cpu in Americas for 3 Years") == "A2 Cpu"


def test_machine_data_files_load_with_the_documented_rows() -> None:
    shapes = {s.name: s for s in machine_shapes()}
    assert len(shapes) == 103  # 24 documented A2/A3/A4/G2 types + 79 N1 + GPU combinations
    assert sum(not name.startswith("n1-") for name in shapes) == 24
    a3 = shapes["a3-highgpu-8g"]
    assert (a3.accelerator, a3.gpu_count, a3.vcpus, a3.ram_gib) == (
        "nvidia-h100-80gb",
        8,
        208,
        1872,
    )
    assert (a3.series, a3.local_ssd_gib, a3.spot_only) == ("a3", 6000, False)
    assert shapes["a3-highgpu-1g"].spot_only
    assert shapes["a4-highgpu-8g"].series is None  # billed per GPU slice only
    assert shapes["n1-standard-96+4xnvidia-tesla-t4"].ram_gib == 360
    assert "n1-standard-64+1xnvidia-tesla-t4" not in shapes  # over the 1-GPU T4 vCPU limit
    found = accelerators()
    assert len(found) == 11
    assert {s.accelerator for s in shapes.values()} <= set(found)
    b200 = found["nvidia-b200"]
    assert (b200.memory_gb, b200.form_factor, b200.nvlink) == (180, GpuFormFactor.SXM, True)
    assert b200.sku_label.fullmatch("A4 Nvidia B200 (1 gpu slice)")
    assert found["nvidia-tesla-v100"].form_factor is None
    assert machine_shapes() is machine_shapes()  # read once


# --- parse: bad records and bad responses ------------------------------------------------------


def a2_page(gpu_units: Any, gpu_nanos: Any) -> dict[str, Any]:
    page = copy.deepcopy(load("skus_page_a100_a2.opencost.verbatim.json"))
    price = page["skus"][0]["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]
    price["units"], price["nanos"] = gpu_units, gpu_nanos
    return page


@pytest.mark.parametrize(
    ("units", "nanos", "reason"),
    [
        ("0", 0, "bad price: price 0 <= 0"),
        ("-2", -5, "bad price: price -2.000000005 <= 0"),
        ("two", 0, "bad price: not a number: 'two'"),
    ],
)
def test_bad_gpu_price_is_skipped(units: Any, nanos: Any, reason: str) -> None:
    result = parse(a2_page(units, nanos))
    assert result.offers == []
    assert result.skip_reasons()[reason] == 1  # one SKU, skipped once


def test_string_and_missing_price_parts_are_read() -> None:
    result = parse(a2_page(2, "933908000"))  # int units, string nanos
    assert offers_by(result)[("a2-highgpu-1g", "us-east1", RentalTerm.ON_DEMAND)].price_amount == (
        Decimal("3.673385")
    )
    result = parse(a2_page(None, None))  # both absent = 0 -> skipped, not a crash
    assert result.offers == []


def test_absurdly_cheap_gpu_is_rejected() -> None:
    page = {
        "skus": [
            sku("G", "Nvidia L4 GPU running in Americas", "GPU", "OnDemand", "0", 100),
            sku("C", "G2 Instance Core running in Americas", "CPU", "OnDemand", "0", 100),
            sku(
                "R",
                "G2 Instance Ram running in Americas",
                "RAM",
                "OnDemand",
                "0",
                100,
                unit="GiBy.h",
            ),
        ]
    }
    result = parse(page)
    assert result.offers == []
    assert all(s.reason.startswith("absurd price") for s in result.skipped)


def test_unknown_gpu_and_odd_records_never_crash() -> None:
    page = {
        "skus": [
            sku("X", "Nvidia Quantum Q9000 GPU running in Americas", "GPU", "OnDemand", "1", 0),
            sku("Y", "Nvidia L4 GPU running in Americas", "GPU", "Commit5Yr", "1", 0),
            sku("Z", "Nvidia L4 GPU running in Americas", "GPU", "OnDemand", "1", 0, unit="mo"),
            sku(
                "S", "Spot Preemptible Nvidia L4 GPU running in Americas", "GPU", "OnDemand", "1", 0
            ),
            {"skuId": "N", "description": None, "category": None},
            "not a sku",
            sku(
                "D",
                "DWS Calendar Mode Nvidia L4 GPU running in Americas",
                "GPU",
                "OnDemand",
                "1",
                0,
            ),
        ]
    }
    result = parse(page)
    assert result.offers == []
    reasons = result.skip_reasons()
    assert reasons["GPU SKU with no known machine shape: 'Nvidia Quantum Q9000 GPU'"] == 1
    assert reasons["unknown usageType 'Commit5Yr'"] == 1
    assert reasons["bad price: usageUnit 'mo' for a gpu SKU"] == 1
    assert reasons["description and usageType disagree on spot"] == 1
    assert reasons["SKU without category or description"] == 1
    assert reasons["SKU is not an object"] == 1
    assert len(result.skipped) == 6  # the DWS SKU is not a plain machine price: ignored


@pytest.mark.parametrize("payload", [[], {"nextPageToken": "x"}, {"skus": {"a": 1}}, "text"])
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        GcpAdapter().decode(b'{"skus": [{"skuId": "1', "page.json")


# --- fetch ----------------------------------------------------------------------------------


def fetch(adapter: GcpAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter.fetch(client)

    return asyncio.run(go())


@respx.mock
def test_fetch_follows_page_tokens_with_the_key() -> None:
    first = load("skus_page_a100_a2.opencost.verbatim.json")
    last = load("skus_page_gpu.reconstructed.json")
    route = respx.get(SKUS_URL).mock(
        side_effect=[httpx.Response(200, json=first), httpx.Response(200, json=last)]
    )
    pages = fetch(GcpAdapter(KEY, policy=FAST))
    assert pages == [first, last]
    assert route.call_count == 2
    params = [dict(call.request.url.params) for call in route.calls]
    assert params[0]["key"] == "test-key" and "pageToken" not in params[0]
    assert params[0]["pageSize"] == "5000" and params[0]["currencyCode"] == "USD"
    assert params[1]["pageToken"] == first["nextPageToken"]


@respx.mock
def test_fetch_retries_429_and_5xx(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuscout.adapters import base

    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(base.asyncio, "sleep", fake_sleep)
    page = {"skus": []}
    route = respx.get(SKUS_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "3"}),
            httpx.Response(503),
            httpx.Response(200, json=page),
        ]
    )
    policy = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=10)
    assert fetch(GcpAdapter(KEY, policy=policy)) == [page]
    assert route.call_count == 3
    assert waits[0] == 3.0


@respx.mock
@pytest.mark.parametrize(("status", "calls"), [(500, 3), (401, 1)])
def test_fetch_failure_is_a_provider_error(status: int, calls: int) -> None:
    route = respx.get(SKUS_URL).mock(return_value=httpx.Response(status, text="nope"))
    with pytest.raises(ProviderError, match=f"HTTP {status}") as info:
        fetch(GcpAdapter(KEY, policy=FAST))
    assert "test-key" not in str(info.value)
    assert route.call_count == calls


@respx.mock
def test_fetch_rejects_a_token_loop() -> None:
    respx.get(SKUS_URL).mock(
        return_value=httpx.Response(200, json={"skus": [], "nextPageToken": "t"})
    )
    with pytest.raises(ProviderError, match="same page token"):
        fetch(GcpAdapter(KEY, policy=FAST))


def test_missing_key_skips_the_provider() -> None:
    with pytest.raises(MissingCredentials, match="GPUSCOUT_GCP_API_KEY"):
        fetch(GcpAdapter({}, policy=FAST))
