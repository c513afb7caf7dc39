"""gpuhunt's published catalog: parse a catalog CSV; fetch version and zip through respx."""

from __future__ import annotations

import asyncio
import io
import zipfile
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from gpuscout.adapters.base import ProviderError, ResponseFormatError, RetryPolicy
from gpuscout.adapters.gpuhunt_catalog import (
    API_BASE,
    PROVIDERS,
    GpuhuntCatalogAdapter,
    read_catalog_zip,
)
from gpuscout.adapters.schema import PriceBasis, RentalTerm

FIXTURES = Path(__file__).parent.parent / "fixtures" / "catalogs" / "gpuhunt" / "v3"
NOW = datetime(2026, 12, 7, tzinfo=UTC)
FAST = RetryPolicy(attempts=1, base_wait_s=0, max_wait_s=0)


def adapter() -> GpuhuntCatalogAdapter:
    return GpuhuntCatalogAdapter(policy=FAST)


def csv_text() -> str:
    return (FIXTURES / "lambdalabs" / "lambdalabs.csv").read_text()


def zipped(name: str, text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, text)
    return buffer.getvalue()


def parse(*payloads: Any) -> Any:
    return adapter().parse(list(payloads), fetched_at=NOW)


def test_h100_row_field_by_field() -> None:
    payload = {"provider": "lambdalabs", "version": "20261207-4711", "csv": csv_text()}
    result = parse(payload)
    o = next(o for o in result.offers if o.offer_id == "gpu_8x_h100_sxm5")
    assert o.provider == "lambda"  # gpuhunt's lambdalabs is gpuscout's lambda
    assert o.region == "us-east-1"
    assert o.country == "US"  # Lambda's "Virginia, USA": data/region_countries.csv
    assert o.gpu_model == "H100-SXM5-80GB"
    assert o.gpu_memory_gb == 80
    assert o.gpu_count == 8
    assert o.vcpus == 208
    assert o.ram_gb == pytest.approx(1933.2)  # gpuhunt's memory is GB
    assert o.storage_gb == pytest.approx(24195.072)
    assert o.term is RentalTerm.ON_DEMAND
    assert o.price_amount == Decimal("23.92")
    assert o.price_basis is PriceBasis.INSTANCE
    assert (o.via_catalog, o.catalog_version, o.catalog_licence) == (
        "gpuhunt v3",
        "20261207-4711",
        "MPL-2.0",
    )
    assert len(result.offers) == 3 and result.skipped == []


def test_a_spot_row_is_interruptible() -> None:
    text = csv_text().replace(",False,", ",True,")
    result = parse({"provider": "lambdalabs", "version": None, "csv": text})
    assert {o.term for o in result.offers} == {RentalTerm.INTERRUPTIBLE}


def test_a_bad_spot_value_skips_the_row() -> None:
    text = csv_text().replace(",False,", ",maybe,", 1)
    result = parse({"provider": "lambdalabs", "version": None, "csv": text})
    assert result.skip_reasons() == {"bad spot 'maybe'": 1}
    assert len(result.offers) == 2


def test_read_catalog_zip_names_what_is_wrong() -> None:
    assert read_catalog_zip(zipped("aws.csv", "x"), "aws", adapter="g") == "x"
    with pytest.raises(ResponseFormatError, match="no aws.csv"):
        read_catalog_zip(zipped("gcp.csv", "x"), "aws", adapter="g")
    with pytest.raises(ResponseFormatError, match="bad catalog.zip"):
        read_catalog_zip(b"not a zip", "aws", adapter="g")


@respx.mock
def test_fetch_follows_version_then_zip_and_reports_failed_providers() -> None:
    version = (FIXTURES / "lambdalabs" / "version").read_text()
    respx.get(f"{API_BASE}/lambdalabs/version").respond(200, text=version)
    respx.get(f"{API_BASE}/lambdalabs/20261207-4711/catalog.zip").respond(
        200, content=zipped("lambdalabs.csv", csv_text())
    )
    for source in PROVIDERS:
        if source != "lambdalabs":
            respx.get(f"{API_BASE}/{source}/version").respond(403, text="AccessDenied")

    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter().fetch(client)

    result = parse(*asyncio.run(go()))
    assert {o.provider for o in result.offers} == {"lambda"}
    assert {o.catalog_version for o in result.offers} == {"20261207-4711"}
    assert len([s for s in result.skipped if s.reason.startswith("HTTP 403")]) == 7


@respx.mock
def test_a_version_not_in_the_published_format_is_refused() -> None:
    respx.get(url__startswith=API_BASE).respond(200, text="<html>")

    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await adapter().fetch(client)

    with pytest.raises(ProviderError, match="is not YYYYMMDD-N"):
        asyncio.run(go())
