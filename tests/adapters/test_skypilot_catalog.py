"""SkyPilot's published catalog: parse the recorded vms.csv files; fetch through respx."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from gpuscout.adapters.base import ProviderError, ResponseFormatError, RetryPolicy
from gpuscout.adapters.schema import PriceBasis, RentalTerm, Vendor
from gpuscout.adapters.skypilot_catalog import API_BASE, CLOUDS, SkyPilotCatalogAdapter

FIXTURES = Path(__file__).parent.parent / "fixtures" / "catalogs" / "skypilot" / "v8"
NOW = datetime(2026, 12, 1, tzinfo=UTC)
FAST = RetryPolicy(attempts=1, base_wait_s=0, max_wait_s=0)


def adapter() -> SkyPilotCatalogAdapter:
    return SkyPilotCatalogAdapter(policy=FAST)


def recorded() -> list[Any]:
    return [
        adapter().decode(path.read_bytes(), str(path.relative_to(FIXTURES)))
        for path in sorted(FIXTURES.glob("*/vms.csv"))
    ]


def offers_of(provider: str) -> list[Any]:
    return [o for o in adapter().parse(recorded(), fetched_at=NOW).offers if o.provider == provider]


def test_nebius_h100_row_is_two_offers_of_the_real_provider() -> None:
    found = {
        o.term: o for o in offers_of("nebius") if o.offer_id == "gpu-h100-sxm_8gpu-128vcpu-1600gb"
    }
    assert set(found) == {RentalTerm.ON_DEMAND, RentalTerm.INTERRUPTIBLE}
    o = found[RentalTerm.ON_DEMAND]
    assert o.provider == "nebius"
    assert o.region == "eu-north1"
    assert o.gpu_raw_name == "H100"
    assert o.gpu_model == "H100-SXM5-80GB"  # the instance type says SXM
    assert o.gpu_count == 8
    assert o.vcpus == 128
    assert o.ram_gb == pytest.approx(1600 * 1024**3 / 1000**3)  # MemoryGiB
    assert o.price_amount == Decimal("23.60")
    assert o.price_currency == "USD"
    assert o.price_basis is PriceBasis.INSTANCE
    assert found[RentalTerm.INTERRUPTIBLE].price_amount == Decimal("10.00")
    assert o.via_catalog == "skypilot-catalog v8"
    assert o.catalog_licence == "NOASSERTION"
    assert o.fetched_at == NOW
    assert o.raw_ref == "skypilot:nebius/vms.csv:4"


def test_oci_mi300x_is_amd_and_without_spot_price_is_on_demand_only() -> None:
    mi300x = [o for o in offers_of("oci") if o.offer_id == "BM.GPU.MI300X.8"]
    assert [(o.term, o.price_amount) for o in mi300x] == [(RentalTerm.ON_DEMAND, Decimal("48"))]
    assert mi300x[0].gpu_vendor is Vendor.AMD
    assert mi300x[0].gpu_model == "MI300X"


def test_every_recorded_cloud_gives_offers_and_cpu_rows_none() -> None:
    result = adapter().parse(recorded(), fetched_at=NOW)
    assert {o.provider for o in result.offers} == {
        "hyperbolic", "hyperstack", "jarvislabs", "lambda", "lium", "mithril", "nebius", "oci",
        "primeintellect", "runpod", "seeweb", "shadeform", "vastai", "verda",
    }  # fmt: skip
    assert all(o.gpu_count > 0 for o in result.offers)
    # RunPod's second zone of the same region repeats its offer: kept once, counted
    assert result.skip_reasons() == {
        "duplicate offer (same provider, id, region, term and variant as an earlier record)": 2
    }


def test_unknown_cloud_is_skipped_with_its_reason() -> None:
    payload = {"cloud": "cudo", "version": None, "csv": "InstanceType\n"}
    result = adapter().parse([payload], fetched_at=NOW)
    assert result.offers == []
    assert result.skip_reasons() == {"cloud 'cudo' is not a provider gpuscout lists": 1}


def test_a_missing_column_is_a_format_error_naming_it() -> None:
    payload = {"cloud": "lambda", "version": None, "csv": "InstanceType,Region\nx,y\n"}
    with pytest.raises(ResponseFormatError, match="lambda/vms.csv: no column AcceleratorName"):
        adapter().parse([payload], fetched_at=NOW)


def test_a_zero_spot_price_is_no_spot_offer_and_a_spot_only_row_is_spot_only() -> None:
    vast = offers_of("vastai")
    assert {o.term for o in vast} == {RentalTerm.ON_DEMAND}  # SpotPrice 0.00
    verda = [o for o in offers_of("verda") if o.offer_id == "2B200.60V"]
    assert [(o.term, o.price_amount) for o in verda] == [
        (RentalTerm.INTERRUPTIBLE, Decimal("3.423"))
    ]


def test_a_bad_price_skips_the_row() -> None:
    csv_text = "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\nt,L4,1,n/a,r\n"
    result = adapter().parse([{"cloud": "lambda", "csv": csv_text}], fetched_at=NOW)
    assert result.offers == []
    assert result.skip_reasons() == {"bad on_demand price 'n/a'": 1}


@respx.mock
def test_fetch_reads_each_cloud_at_its_published_path_and_reports_failures() -> None:
    body = (FIXTURES / "nebius" / "vms.csv").read_bytes()
    respx.get(f"{API_BASE}/nebius/vms.csv").respond(200, content=body, headers={"ETag": '"abc"'})
    for cloud in CLOUDS:
        if cloud != "nebius":
            respx.get(f"{API_BASE}/{cloud}/vms.csv").respond(404, text="404: Not Found")

    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter().fetch(client)

    payloads = asyncio.run(go())
    result = adapter().parse(payloads, fetched_at=NOW)
    assert {o.provider for o in result.offers} == {"nebius"}
    assert {o.catalog_version for o in result.offers} == {"abc"}
    failed = [s for s in result.skipped if s.reason.startswith("HTTP 404")]
    assert len(failed) == len(CLOUDS) - 1


@respx.mock
def test_fetch_with_every_cloud_failing_is_a_provider_error() -> None:
    respx.get(url__startswith=API_BASE).mock(side_effect=httpx.ConnectError("refused"))

    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter().fetch(client)

    with pytest.raises(ProviderError, match="network error"):
        asyncio.run(go())


def test_decode_refuses_a_file_that_is_not_a_cloud_vms_csv() -> None:
    with pytest.raises(ResponseFormatError, match="not a <cloud>/vms.csv"):
        adapter().decode(b"x", "images.csv")


@pytest.mark.parametrize(
    ("provider", "region", "country"),
    [
        ("runpod", "CA", "CA"),
        ("runpod", "US", "US"),
        ("vastai", "France, FR, EU", "FR"),
        ("vastai", "Texas, US, NA", "US"),
        ("hyperstack", "CANADA-1", "CA"),
        ("hyperstack", "US-1", "US"),
        ("jarvislabs", "IN2", "IN"),
        ("lambda", "us-east-1", "US"),
        ("verda", "FIN-02", "FI"),
        ("verda", "FIN-03", None),  # no recorded source names FIN-03's country
        ("nebius", "eu-north1", "FI"),
        ("nebius", "us-central1", None),  # nor this one's
        ("seeweb", "it-fr2", "IT"),
        ("seeweb", None, None),  # a row without a region
        ("lium", "RO", "RO"),
        ("shadeform", "warsaw-poland-1", "PL"),
    ],
)
def test_an_offer_carries_its_regions_country(
    provider: str, region: str | None, country: str | None
) -> None:
    found = {o.country for o in offers_of(provider) if o.region == region}
    assert found == {country}
