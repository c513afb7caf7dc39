"""The helpers the small clouds' adapters share (adapters/units.py, "small clouds"), and the
data table they read (adapters/data/region_countries.csv)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from gpuscout.adapters import tables
from gpuscout.adapters.base import (
    MissingCredentials,
    ParseResult,
    ResponseFormatError,
    add_per_region,
    key_headers,
    payload_list,
)
from gpuscout.adapters.digitalocean import DigitalOceanAdapter
from gpuscout.adapters.schema import OfferFields, PriceBasis, PriceUnit, RentalTerm, Vendor
from gpuscout.adapters.shadeform import ShadeformAdapter
from gpuscout.adapters.tables import data_rows, read_table, region_countries
from gpuscout.adapters.units import gpu_vendor, lenient_decimal, non_negative, text


def test_text() -> None:
    assert text("  H100 ") == "H100"
    assert [text(v) for v in (None, "", "   ", 3, ["x"])] == [None] * 5


def test_non_negative_and_lenient_decimal() -> None:
    assert [non_negative(v) for v in (0.0, 2.5, -1.0, None)] == [0.0, 2.5, None, None]
    assert lenient_decimal("0.10") == Decimal("0.10")
    assert lenient_decimal(0.1) == Decimal("0.1")
    assert [lenient_decimal(v) for v in (None, "", "n/a", True)] == [None] * 4


def test_gpu_vendor() -> None:
    assert gpu_vendor(" NVIDIA") is Vendor.NVIDIA
    assert gpu_vendor("amd") is Vendor.AMD
    assert [gpu_vendor(v) for v in ("other", "acme", None, 1)] == [None] * 4


def test_payload_list() -> None:
    assert payload_list({"sizes": [1, 2]}, "sizes", "p") == [1, 2]
    with pytest.raises(ResponseFormatError, match="p: expected a JSON object, got list"):
        payload_list([], "sizes", "p")
    with pytest.raises(ResponseFormatError, match="no 'sizes' list"):
        payload_list({}, "sizes", "p")
    with pytest.raises(ResponseFormatError, match="'sizes' is dict, not a list"):
        payload_list({"sizes": {}}, "sizes", "p")


def test_key_headers() -> None:
    assert key_headers(DigitalOceanAdapter({"digitalocean_token": "t"})) == {
        "Authorization": "Bearer t",
        "Accept": "application/json",
    }
    bare = key_headers(ShadeformAdapter({"shadeform_api_key": "k"}), "X-API-KEY", scheme="")
    assert bare == {"X-API-KEY": "k", "Accept": "application/json"}
    with pytest.raises(MissingCredentials, match="GPUSCOUT_DIGITALOCEAN_TOKEN"):
        key_headers(DigitalOceanAdapter())


def _fields() -> OfferFields:
    fields: OfferFields = {
        "provider": "p",
        "offer_id": "t",
        "fetched_at": datetime(2026, 1, 1, tzinfo=UTC),
        "gpu_count": 1,
        "price_amount": Decimal("1"),
        "price_currency": "USD",
        "price_unit": PriceUnit.HOUR,
        "price_basis": PriceBasis.INSTANCE,
        "term": RentalTerm.ON_DEMAND,
    }
    return fields


def test_add_per_region() -> None:
    result = ParseResult()
    regions: list[OfferFields] = [
        {"region": "nyc1", "country": "US", "available_now": True},
        {"region": "ams3", "country": "NL", "available_now": None},
    ]
    add_per_region(result, "p:t", _fields(), regions)
    assert [(o.region, o.country, o.available_now) for o in result.offers] == [
        ("nyc1", "US", True),
        ("ams3", "NL", None),
    ]
    unlisted = ParseResult()
    add_per_region(unlisted, "p:t", _fields(), [])
    [offer] = unlisted.offers
    assert (offer.region, offer.available_now) == (None, False)


def test_region_countries_file_loads_with_a_source_per_row() -> None:
    rows = data_rows("region_countries.csv")
    assert {row["provider"] for row in rows} == {
        "aws",
        "azure",
        "digitalocean",
        "fluidstack",
        "gcp",
        "hyperstack",
        "jarvislabs",
        "lambda",
        "lium",
        "nebius",
        "oci",
        "runpod",
        "scaleway",
        "seeweb",
        "shadeform",
        "verda",
    }
    assert all(len(row["country"]) == 2 and row["country"].isupper() for row in rows)
    assert region_countries("digitalocean")["nyc"] == "US"
    assert region_countries("lambda")["Germany"] == "DE"
    assert region_countries("fluidstack")["norway"] == "NO"
    assert region_countries("nobody") == {}


@pytest.mark.parametrize(
    "row", ["lambda,USA,US,", "lambda,USA,US", "lambda,USA,US,src,extra"], ids=str
)
def test_a_table_row_without_source_or_cells_is_an_error(row: str) -> None:
    with pytest.raises(ValueError, match="t.csv line 3"):
        read_table(f"provider,name,country,source\nlambda,India,IN,src\n{row}\n", "t.csv")


DATA = Path(tables.__file__).parent / tables.DATA_DIR


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.csv")))
def test_every_data_file_loads_with_a_source_per_row(name: str) -> None:
    rows = data_rows(name)
    assert rows, name
    assert all(row["source"].strip() for row in rows), name
    assert data_rows(name) is rows  # read once


def test_typed_row_reads_each_cell_as_its_field_says() -> None:
    from gpuscout.adapters.azure import AzureGpuSize
    from gpuscout.adapters.gcp import Accelerator, MachineShape
    from gpuscout.adapters.schema import GpuFormFactor, StorageType

    row = dict.fromkeys(("cpu_model", "cpu_vendor", "cpu_arch", "cpu_source"), "")
    row |= {"vcpus": "36", "ram": "440", "ram_unit": "GiB", "temp_disk_gib": "720"}
    row |= {"gpus": "1/6", "gpu_raw_name": "NVIDIA A10", "gpu_memory_gb": "4"}
    row |= {"form_factor": "", "source": "page", "storage_type": "nvme", "size": "unused"}
    size = tables.typed_row(AzureGpuSize, row)
    assert (size.vcpus, size.ram, size.gpus.denominator, size.form_factor) == (36, 440.0, 6, None)
    assert (size.storage_type, size.cpu_model) == (StorageType.NVME, None)
    gpu = {"type_id": "t", "memory_gb": "80", "form_factor": "sxm", "nvlink": "true"}
    accelerator = tables.typed_row(Accelerator, gpu | {"sku_label": "nvidia a100 gpu"})
    assert accelerator.form_factor is GpuFormFactor.SXM and accelerator.nvlink
    assert accelerator.sku_label.fullmatch("NVIDIA A100 GPU")  # patterns ignore case
    shape = {"name": "a", "accelerator": "t", "gpu_count": "1", "vcpus": "12", "series": ""}
    whole = tables.typed_row(MachineShape, shape | {"ram_gib": "85"})
    assert (whole.ram_gib, type(whole.ram_gib), whole.series, whole.spot_only) == (
        85,
        int,
        None,
        False,
    )
    assert tables.typed_row(MachineShape, shape | {"ram_gib": "7.5"}).ram_gib == 7.5
    with pytest.raises(ValueError):
        tables.typed_row(Accelerator, gpu | {"sku_label": "x", "form_factor": "socket"})
