from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from gpuscout.adapters.collect import RunStatus
from gpuscout.adapters.gpus import catalog
from gpuscout.adapters.sample import replay_sample
from gpuscout.adapters.schema import (
    Cooling,
    Fabric,
    FxTable,
    GpuFormFactor,
    GpuInterconnect,
    Offer,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    StorageType,
    Vendor,
    default_fx,
    fx_context,
)
from gpuscout.db.records import record_jsons
from gpuscout.pricing.efficiency import default_efficiency
from gpuscout.pricing.frame import (
    ENUM_COLUMNS,
    FABRIC_DTYPE,
    FORM_FACTOR_DTYPE,
    OFFER_SCHEMA,
    PRICE_SCALE,
    catalog_frame,
    held_lightly,
    offers_to_frame,
    record_chunks_to_frame,
    records_to_frame,
)
from gpuscout.pricing.offer_facts import FACT_COLUMNS

from .factories import make_offer


def test_one_row_per_offer_exact_price_and_config_id() -> None:
    offers = [
        make_offer(price_amount=Decimal("2.123456789"), price_basis=PriceBasis.GPU),
        make_offer(term=RentalTerm.INTERRUPTIBLE, price_basis=PriceBasis.GPU),
        make_offer(offer_id="other"),
    ]
    frame = offers_to_frame(offers)
    assert frame.height == 3
    assert list(frame.columns) == [*OFFER_SCHEMA, "config_id", *FACT_COLUMNS]
    assert frame["price_amount"][0] == Decimal("2.123456789")
    assert frame["usd_per_hour"][0] == float(offers[0].usd_per_hour)
    ids = frame["config_id"].to_list()
    assert ids[0] == ids[1] != ids[2]


def test_empty() -> None:
    assert offers_to_frame([]).height == 0


# --- the stored-records builder gives the same frame ------------------------------------


def _stored(offers: list[Offer], fx: FxTable) -> pl.DataFrame:
    """The frame of the offers as the database holds them: record JSON text, fetch time."""
    records = [r.decode() for r in record_jsons(offers)]
    return records_to_frame(records, [o.fetched_at for o in offers], fx)


#: A table other than the shipped one, so that a builder ignoring ``fx`` fails.
OTHER_FX = FxTable(
    as_of="test",
    source="test",
    units_per_usd={"USD": Decimal(1), "EUR": Decimal("0.5")},
)


def _every_field_kind() -> list[Offer]:
    """Offers with every kind of field the frame holds: enums, exact and awkward prices,
    tuples the frame leaves out, slices, ``None``s, commitments, non-USD currencies."""
    full = make_offer(
        seller="coreweave",
        instance_name="gpu-8x",
        gpu_raw_name="NVIDIA H100 80GB HBM3",
        gpu_vendor=Vendor.NVIDIA,
        gpu_form_factor=GpuFormFactor.SXM,
        gpu_interconnect=GpuInterconnect.NVLINK,
        gpu_nvlink_gbs=900.0,
        cpu_model="Xeon 8480+",
        cpu_sockets=2,
        cpu_cores=112.0,
        vcpus=224.0,
        ram_gb=2048.0,
        ram_ecc=True,
        storage_gb=30720.0,
        storage_type=StorageType.NVME,
        public_bandwidth_up_mbps=10000.0,
        public_bandwidth_down_mbps=10000.0,
        fabric=Fabric.INFINIBAND,
        fabric_gbps=3200.0,
        multi_node=True,
        cooling=Cooling.LIQUID,
        os_images=("ubuntu-22.04", "ubuntu-24.04"),
        frameworks=("pytorch",),
        disk_bandwidth_mbps=3500.0,
        psu_watts=8000.0,
        psu_redundancy="2+2",
        chassis_form_factor="4U",
        cuda_version="12.4",
        driver_version="550.54.15",
        backup_service=True,
        support_tier="Enterprise",
        price_amount=Decimal("21.123456789012345"),
        price_basis=PriceBasis.GPU,
        term_variant="spot-zone-a",
        min_rental_hours=0.1 + 0.2,
        billing_increment_s=60,
        prepaid=False,
        storage_price_per_gb_month=Decimal("0.0727456116"),
        storage_included_gb=0.0,
        boot_disk_min_gb=107.3741824,
        ipv4_price_per_hour=Decimal("0.0055"),
        egress_price_per_gb=Decimal("0.01"),
        sla_uptime_pct=99.9,
        reliability=0.987654321,
        verified=True,
        datacenter=True,
        available_now=False,
        available_count=3,
    )
    return [
        full,
        make_offer(offer_id="bare"),
        make_offer(offer_id="slice", gpu_count=1, gpu_fraction=0.25, price_amount=Decimal("0.1")),
        make_offer(
            offer_id="yearly",
            price_amount=Decimal("1E+5"),
            price_unit=PriceUnit.TERM,
            term=RentalTerm.COMMIT_1Y,
            prepaid=True,
        ),
        make_offer(
            offer_id="monthly-eur",
            price_amount=Decimal("7123.45"),
            price_currency="EUR",
            storage_price_per_gb_month=Decimal("0.08"),  # EUR: converted like the price
            ipv4_price_per_hour=Decimal("0"),
            price_unit=PriceUnit.MONTH,
            term=RentalTerm.COMMIT_3MO,
        ),
        # half-way at the 12th place: rounded to even, like Decimal.quantize
        make_offer(
            offer_id="tie-down", price_amount=Decimal("0.0000000000125"), price_currency="CNY"
        ),
        make_offer(offer_id="tie-up", price_amount=Decimal("0.0000000000135")),
        make_offer(offer_id="weekly", price_unit=PriceUnit.WEEK, term=RentalTerm.COMMIT_1W),
        make_offer(offer_id="daily", price_unit=PriceUnit.DAY, term=RentalTerm.INTERRUPTIBLE),
    ]


def _sample_offers() -> list[Offer]:
    return [o for run in replay_sample() if run.status is RunStatus.OK for o in run.offers]


@pytest.mark.parametrize("fx", [default_fx(), OTHER_FX], ids=["shipped-fx", "other-fx"])
@pytest.mark.parametrize("offers", [_every_field_kind, _sample_offers], ids=["kinds", "sample"])
def test_stored_records_frame_equals_the_offers_frame(
    offers: Callable[[], list[Offer]], fx: FxTable
) -> None:
    chosen = offers()
    if fx is OTHER_FX:  # the other table converts only the currencies it has
        chosen = [o for o in chosen if o.price_currency in fx.units_per_usd]
    expected = offers_to_frame(chosen, fx)
    assert_frame_equal(_stored(chosen, fx), expected, check_exact=True)
    assert expected.height == len(chosen) > 3


def test_records_framed_a_chunk_at_a_time_make_the_frame_of_all_at_once() -> None:
    """Chunks of records (as the database streams them) frame as all of them at once:
    config_id and the offer facts, which compare offers, are over every chunk."""
    offers = _sample_offers()
    records = [r.decode() for r in record_jsons(offers)]
    times = [o.fetched_at for o in offers]
    fx = default_fx()
    size = len(offers) // 4 + 1
    chunks = [(records[i : i + size], times[i : i + size]) for i in range(0, len(offers), size)]
    framed = record_chunks_to_frame(chunks, fx)
    assert len(chunks) == 4 and framed.n_chunks() == 1
    assert_frame_equal(framed, records_to_frame(records, times, fx), check_exact=True)
    assert_frame_equal(framed, offers_to_frame(offers, fx), check_exact=True)
    assert_frame_equal(record_chunks_to_frame([], fx), records_to_frame([], [], fx))


def test_prices_are_exact_and_usd_follows_the_table_passed_in() -> None:
    offers = _every_field_kind()
    for fx in (default_fx(), OTHER_FX):
        usable = [o for o in offers if o.price_currency in fx.units_per_usd]
        frame = offers_to_frame(usable, fx)
        validated = [
            Offer.model_validate(o.model_dump(exclude={"usd_per_hour"}), context=fx_context(fx))
            for o in usable
        ]
        assert frame["usd_per_hour"].to_list() == [float(o.usd_per_hour) for o in validated]
    frame = offers_to_frame(offers)
    quantum = Decimal(1).scaleb(-PRICE_SCALE)
    assert frame["price_amount"].to_list() == [o.price_amount.quantize(quantum) for o in offers]
    assert frame["price_amount"][5] == Decimal("0.000000000012")  # half-even
    assert frame["price_amount"][6] == Decimal("0.000000000014")
    assert frame["commitment_hours"].to_list()[3] == 8760.0
    assert frame["gpus"].to_list()[:3] == [8.0, 8.0, 0.25]


def test_extras_become_usd_per_gb_hour_per_hour_and_per_gb() -> None:
    full, bare, *_ = _every_field_kind()
    (eur,) = [o for o in _every_field_kind() if o.offer_id == "monthly-eur"]
    frame = offers_to_frame([full, bare, eur], OTHER_FX)  # 1 USD = 0.5 EUR
    assert frame["storage_usd_per_gb_hour"].to_list() == pytest.approx(
        [0.0727456116 / 730, None, 0.08 / 0.5 / 730], nan_ok=True
    )
    assert frame["ipv4_usd_per_hour"].to_list() == [0.0055, None, 0.0]
    assert frame["egress_usd_per_gb"].to_list() == [0.01, None, None]
    assert frame["storage_included_gb"].to_list() == [0.0, None, None]
    assert frame["boot_disk_min_gb"].to_list() == [107.3741824, None, None]


def test_a_currency_the_table_lacks_is_an_error_naming_it() -> None:
    (cny,) = [o for o in _every_field_kind() if o.price_currency == "CNY"]
    with pytest.raises(ValueError, match="FX table of test .* no rate for CNY"):
        _stored([cny], OTHER_FX)


def test_empty_records() -> None:
    assert_frame_equal(_stored([], default_fx()), offers_to_frame([]))


# --- the columns held as Enums -----------------------------------------------------------


def test_the_compared_enumerations_are_enums_of_their_schema_enums() -> None:
    frame = offers_to_frame(_every_field_kind())
    for name, dtype in ENUM_COLUMNS.items():
        assert frame.schema[name] == dtype == OFFER_SCHEMA[name]
    assert catalog_frame().schema["catalog_form_factor"] == FORM_FACTOR_DTYPE
    full = frame.row(0, named=True)
    assert (full["gpu_form_factor"], full["gpu_interconnect"], full["fabric"]) == (
        "sxm",
        "nvlink",
        "infiniband",
    )


def test_a_stored_value_outside_its_enum_reads_as_not_stated() -> None:
    """A record another version wrote (a fabric or link this one does not know) loads; the
    unknown value is null, as if the offer did not state it; the rest of the row is read."""
    full, *_ = _every_field_kind()
    (record,) = [json.loads(r) for r in record_jsons([full])]
    assert record["fabric"] == "infiniband"
    record |= {"fabric": "nvlink_switch", "gpu_interconnect": "ualink", "gpu_form_factor": "sxm"}
    frame = records_to_frame([json.dumps(record)], [full.fetched_at], default_fx())
    row = frame.row(0, named=True)
    assert (row["fabric"], row["gpu_interconnect"], row["gpu_form_factor"]) == (None, None, "sxm")
    assert row["fabric_gbps"] == 3200.0 and row["usd_per_hour"] == float(full.usd_per_hour)
    assert frame.schema["fabric"] == FABRIC_DTYPE


def test_the_default_catalog_is_built_once_another_efficiency_its_own() -> None:
    """catalog_frame() at the default efficiency is one frame, built once (a ranking with
    its own mfu built it again); another efficiency, or a choice of specs, gets its own."""
    assert catalog_frame() is catalog_frame() is catalog_frame(efficiency=default_efficiency())
    other = default_efficiency().model_copy(update={"default_mfu_bf16": 0.11})
    theirs = catalog_frame(efficiency=other)
    assert theirs is not catalog_frame()
    unknown = theirs.filter(pl.col("gpu_family").is_null() | (pl.col("mfu_bf16") == 0.11))
    assert unknown.height > 0  # the other default reached the families without their own
    assert_frame_equal(theirs.drop("mfu_bf16"), catalog_frame().drop("mfu_bf16"))
    one = catalog_frame(specs=[next(iter(catalog()))])
    assert one.height == 1 and one.row(0) == catalog_frame().row(0)


def test_held_lightly_keeps_every_value_and_dtype_and_leaves_a_full_frame_as_it_is() -> None:
    """A frame read back from Arrow IPC, as every API load reads the kept frame: its empty
    columns (of every kind the schema has: text, numbers, lists, enums, a decimal) come
    back as null columns of the same dtype, the rest unchanged; a frame with no empty
    column is the same object."""
    frame = offers_to_frame([make_offer(), make_offer(offer_id="b")])
    data = io.BytesIO()
    frame.write_ipc(data)
    read = pl.read_ipc(data.getvalue())
    empty = [c.name for c in read.iter_columns() if c.null_count() == read.height]
    kinds = {"seller", "ram_gb", "cpu_sockets", "multi_node", "os_images", "fabric"}
    assert kinds <= set(empty) and "provider" not in empty
    light = held_lightly(read)
    assert_frame_equal(light, read)
    assert light.schema == read.schema == frame.schema
    full = read.drop(empty)
    assert held_lightly(full) is full
    assert held_lightly(read.clear()).is_empty()


_LIGHT_CODE = """
import io
import polars as pl
from gpuscout.pricing.frame import held_lightly

def anonymous_mb():
    with open("/proc/self/smaps_rollup") as rollup:
        line = next(line for line in rollup if line.startswith("Anonymous:"))
    return int(line.split()[1]) / 1024

rows = 200_000
empty = {f"s{i}": pl.Series([None] * rows, dtype=pl.String) for i in range(20)}
frame = pl.DataFrame({**empty, "v": range(rows)})
data = io.BytesIO()
frame.write_ipc(data)
del frame
read = pl.read_ipc(data.getvalue())
del data
before = anonymous_mb()
light = held_lightly(read)
del read
print(before - anonymous_mb())
"""


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="reads Linux /proc")
def test_held_lightly_gives_back_the_buffers_of_empty_columns_read_from_ipc() -> None:
    """The point of :func:`held_lightly`: 20 empty text columns of 200k rows read back from
    Arrow IPC hold 16 bytes a row each (64 MB); held lightly, their memory goes back (polars'
    allocator told to return freed pages at once, so that the figure is not timing)."""
    env = {**os.environ, "_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", _LIGHT_CODE], env=env, capture_output=True, text=True, check=True
    )
    freed_mb = float(done.stdout.split()[-1])
    assert freed_mb > 0.75 * 20 * 200_000 * 16 / 2**20, done.stdout
