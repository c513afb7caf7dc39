"""Price-sheet adapter: the shipped example sheet, CSV, validation messages, file reading."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpuscout.adapters.base import (
    DUPLICATE_REASON,
    MissingCredentials,
    ProviderError,
    ResponseFormatError,
)
from gpuscout.adapters.schema import (
    Cooling,
    Fabric,
    GpuFormFactor,
    GpuInterconnect,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    StorageType,
)
from gpuscout.adapters.sheet import ILLUSTRATIVE_REASON, SHEET_KEYS, SheetAdapter
from gpuscout.pricing import Job, offers_to_frame, rank

EXAMPLE = Path(__file__).parents[2] / "adapters" / "samples" / "sheets" / "example_sheet.yaml"
NOW = datetime(2026, 11, 30, tzinfo=UTC)


def parse_bytes(data: bytes, name: str) -> Any:
    a = SheetAdapter()
    return a.parse([a.decode(data, name)], fetched_at=NOW)


def example() -> Any:
    return parse_bytes(EXAMPLE.read_bytes(), "example_sheet.yaml")


def find(offers: list[Any], offer_id: str) -> Any:
    return next(o for o in offers if o.offer_id == offer_id)


def test_example_sheet_loads_every_entry() -> None:
    """Every published price is an offer; the seed server's made-up price is not."""
    result = example()
    [skipped] = result.skipped
    assert skipped.reason == (
        "example_sheet.yaml offers[15] (id seed-8x-a100-80g-epyc7702-monthly): "
        + ILLUSTRATIVE_REASON
    )
    assert len(result.offers) == 14
    assert {o.provider for o in result.offers} == {"sheet"}
    assert not any(o.seller == "example-host" for o in result.offers)


def without_illustrative_flag() -> Any:
    """The example sheet with its illustrative entry parsed as if it were a quote: to check
    that the format carries every group of the seed server's fields."""
    text = EXAMPLE.read_text("utf-8").replace("    illustrative: true", "    illustrative: false")
    assert "illustrative: false" in text
    return parse_bytes(text.encode(), "example_sheet.yaml")


@pytest.mark.parametrize("flag", ["true", "yes", "1", "TRUE"])
def test_an_illustrative_csv_row_is_never_an_offer(flag: str) -> None:
    text = (
        "id,seller,source,gpu_name,gpu_count,price_amount,price_currency,price_unit,"
        "price_basis,term,illustrative\n"
        f"demo,my-host,made up,H100 SXM,8,1,USD,hour,instance,on_demand,{flag}\n"
        "real,my-host,quote 7,H100 SXM,8,20,USD,hour,instance,on_demand,false\n"
    )
    result = parse_bytes(text.encode(), "hosts.csv")
    assert [o.offer_id for o in result.offers] == ["my-host/real"]
    assert [s.reason for s in result.skipped] == [
        f"hosts.csv row 2 (id demo): {ILLUSTRATIVE_REASON}"
    ]
    # a price of $1 for 8x H100 would rank first; skipped, it cannot rank at all
    ranked = rank(offers_to_frame(result.offers), job=Job(hours=10))
    assert ranked["offer_id"].to_list() == ["my-host/real"]


def test_illustrative_in_defaults_marks_the_whole_sheet() -> None:
    text = (
        "defaults: {illustrative: true, seller: demo, source: doc, price_currency: USD,"
        " price_unit: hour, price_basis: instance, term: on_demand}\n"
        "offers:\n"
        "  - {id: a, gpu_name: H100 SXM, gpu_count: 1, price_amount: '2'}\n"
        "  - {id: b, gpu_name: A100 SXM4 80GB, gpu_count: 1, price_amount: '1'}\n"
    )
    result = parse_bytes(text.encode(), "demo.yaml")
    assert result.offers == [] and len(result.skipped) == 2


def test_an_illustrative_value_that_is_not_yes_or_no_skips_the_entry() -> None:
    text = (
        "offers:\n"
        "  - {id: a, seller: s, source: q, gpu_name: H100 SXM, gpu_count: 1, price_amount: '2',"
        " price_currency: USD, price_unit: hour, price_basis: instance, term: on_demand,"
        " illustrative: maybe}\n"
    )
    [skipped] = parse_bytes(text.encode(), "q.yaml").skipped
    assert skipped.reason == "q.yaml offers[1] (id a): field 'illustrative': must be true or false"


def test_tencent_monthly_cny_commitment() -> None:
    o = find(
        [o for o in example().offers if o.term is RentalTerm.COMMIT_1MO],
        "tencent-cloud/GN10Xp.20XLARGE320",
    )
    assert o.gpu_model == "V100-SXM2-32GB"
    assert o.gpu_raw_name == "Tesla V100-NVLINK-32G"
    assert o.provider == "sheet" and o.seller == "tencent-cloud"
    assert o.gpu_count == 8 and o.gpu_memory_gb == 32
    assert o.vcpus == 80 and o.ram_gb == 320
    assert o.country == "CN"
    assert o.price_amount == Decimal("46000")
    assert o.price_currency == "CNY"
    assert o.price_unit is PriceUnit.MONTH
    assert o.price_basis is PriceBasis.INSTANCE
    assert o.term is RentalTerm.COMMIT_1MO
    # 46000 CNY / 730 h at the shipped ECB rate (7.5782 CNY and 1.0411 USD per EUR)
    expected = Decimal(46000) / (Decimal("7.5782") / Decimal("1.0411")) / 730
    assert o.usd_per_hour == expected.quantize(Decimal("0.000001"))


def test_one_configuration_at_two_terms_shares_an_id() -> None:
    """Hourly and monthly prices of one Tencent instance are one configuration: the
    engine picks the cheaper term for the job, on-demand for a short one, the month for
    a long one."""
    offers = [o for o in example().offers if o.offer_id == "tencent-cloud/GT4.41XLARGE948"]
    assert {o.term for o in offers} == {RentalTerm.ON_DEMAND, RentalTerm.COMMIT_1MO}
    assert len({o.key for o in offers}) == 2
    short = rank(offers_to_frame(offers), job=Job(hours=100))
    long = rank(offers_to_frame(offers), job=Job(hours=700))
    assert short.height == long.height == 1  # one configuration, its best term
    assert short["term"][0] == "on_demand"
    assert long["term"][0] == "commit_1mo"
    # 114016 CNY a month against 237.51 CNY an hour: the month pays from 480 hours on
    assert 400 < long["break_even_hours"][0] < 500


def test_jd_cloud_p40_hourly_and_monthly_from_a_dated_revision() -> None:
    """JD Cloud's list prices of p.n1p40.3xlarge: one P40, 14.73 CNY an hour or 4241.5 a
    month, dated by the documentation revision they are copied from (2018-12-29)."""
    offers = [o for o in example().offers if o.offer_id == "jd-cloud/p.n1p40.3xlarge"]
    by_term = {o.term: o for o in offers}
    assert set(by_term) == {RentalTerm.ON_DEMAND, RentalTerm.COMMIT_1MO}
    hourly, monthly = by_term[RentalTerm.ON_DEMAND], by_term[RentalTerm.COMMIT_1MO]
    assert hourly.gpu_model == monthly.gpu_model == "P40"
    assert (hourly.gpu_count, hourly.vcpus, hourly.ram_gb) == (1, 12, 48)
    assert (hourly.price_amount, hourly.price_unit) == (Decimal("14.73"), PriceUnit.HOUR)
    assert (monthly.price_amount, monthly.price_unit) == (Decimal("4241.5"), PriceUnit.MONTH)
    assert {o.price_currency for o in offers} == {"CNY"} and {o.country for o in offers} == {"CN"}
    assert {o.fetched_at for o in offers} == {datetime(2018, 12, 29, tzinfo=UTC)}
    # 4241.5 CNY a month against 14.73 CNY an hour: the month pays from about 288 hours on
    long = rank(offers_to_frame(offers), job=Job(hours=700))
    assert long["term"][0] == "commit_1mo" and 280 < long["break_even_hours"][0] < 295


def test_the_same_offer_twice_is_skipped_naming_the_first() -> None:
    text = CSV_HEADER + (
        "box,my-host,quote 1,H100 SXM,8,,20,USD,hour,instance,on_demand,\n"
        "box,my-host,quote 2,H100 SXM,8,,19,USD,hour,instance,on_demand,\n"
        "box,my-host,quote 3,H100 SXM,8,,9,USD,hour,instance,interruptible,\n"
    )
    result = parse_bytes(text.encode(), "hosts.csv")
    assert [(o.term, o.price_amount) for o in result.offers] == [
        (RentalTerm.ON_DEMAND, Decimal(20)),
        (RentalTerm.INTERRUPTIBLE, Decimal(9)),
    ]
    [skipped] = result.skipped
    assert skipped.reason == DUPLICATE_REASON
    assert skipped.ref == "hosts.csv row 3 (id box) (first: hosts.csv row 2 (id box))"


def test_per_gpu_spot_price_and_unknown_gpu() -> None:
    offers = example().offers
    spot = find(offers, "hyperstack/h100-pcie-spot")
    assert spot.gpu_model == "H100-PCIE-80GB"
    assert spot.term is RentalTerm.INTERRUPTIBLE
    assert spot.price_basis is PriceBasis.GPU
    assert spot.usd_per_hour == Decimal("2.000000")
    ali = find(offers, "alibaba-cloud/ecs.gn7e-c16g1.32xlarge-cn-hongkong")
    assert ali.gpu_model is None and ali.gpu_count == 8
    assert ali.price_amount == Decimal("327.2236")


def test_seed_server_fills_every_group() -> None:
    o = find(without_illustrative_flag().offers, "example-host/seed-8x-a100-80g-epyc7702-monthly")
    assert (o.gpu_model, o.gpu_count, o.gpu_memory_gb) == ("A100-SXM4-80GB", 8, 80)
    assert o.gpu_form_factor is GpuFormFactor.SXM
    assert o.gpu_interconnect is GpuInterconnect.NVLINK
    assert (o.cpu_model, o.cpu_sockets, o.cpu_cores, o.vcpus) == ("AMD EPYC 7702", 2, 128, 256)
    assert o.ram_gb == 512 and o.ram_ecc is True
    assert o.storage_gb == 15360 and o.storage_type is StorageType.SSD
    assert o.fabric is Fabric.INFINIBAND and o.fabric_gbps == 400 and o.multi_node
    assert o.psu_watts == 8000 and o.psu_redundancy == "2+2" and o.cooling is Cooling.AIR
    assert o.chassis_form_factor == "4U" and o.expandability_notes
    assert o.os_images == ("Ubuntu 22.04 LTS",)
    assert o.frameworks == ("CUDA", "PyTorch", "TensorFlow") and o.backup_service
    assert (o.price_currency, o.price_unit, o.term) == (
        "CNY",
        PriceUnit.MONTH,
        RentalTerm.COMMIT_1MO,
    )
    assert o.min_rental_hours == 730 and o.billing_increment_s == 2628000 and o.prepaid
    assert o.support_tier and o.sla_uptime_pct == 99.5 and o.datacenter
    assert o.available_now and o.available_count == 1


CSV_HEADER = (
    "id,seller,source,gpu_name,gpu_count,gpu_memory_gb,price_amount,price_currency,"
    "price_unit,price_basis,term,os_images\n"
)


def test_csv_rows_with_lists_and_empty_cells() -> None:
    text = CSV_HEADER + (
        "box-1,my-host,quote 1,A100-80G,8,80,95.84,CNY,hour,instance,on_demand,"
        "Ubuntu 22.04 LTS; Rocky Linux 9\n"
        "box-2,my-host,quote 2,H100 SXM,1,,2.10,USD,hour,gpu,commit_1y,\n"
    )
    result = parse_bytes(text.encode(), "hosts.csv")
    assert result.skipped == []
    box1, box2 = result.offers
    assert box1.offer_id == "my-host/box-1"
    assert box1.os_images == ("Ubuntu 22.04 LTS", "Rocky Linux 9")
    assert box1.price_amount == Decimal("95.84")
    # "A100-80G" without a form factor: the slower variant, the form factor unstated (#13)
    assert (box1.gpu_model, box1.gpu_form_factor) == ("A100-PCIE-80GB", None)
    assert box2.gpu_model == "H100-SXM5-80GB" and box2.term is RentalTerm.COMMIT_1Y
    assert box2.os_images is None


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        (
            "b,h,s,H100 SXM,1,,-1,USD,hour,gpu,on_demand,",
            "hosts.csv row 2 (id b): field 'price_amount'",
        ),
        (
            "b,h,s,H100 SXM,1,,abc,USD,hour,gpu,on_demand,",
            "hosts.csv row 2 (id b): field 'price_amount'",
        ),
        ("b,h,s,H100 SXM,1,,2,RMB,hour,gpu,on_demand,", "field 'price_currency'"),
        ("b,h,s,H100 SXM,1,,2,USD,fortnight,gpu,on_demand,", "field 'price_unit'"),
        ("b,h,s,H100 SXM,0,,2,USD,hour,instance,on_demand,", "field 'gpu_count'"),
        ("b,h,,H100 SXM,1,,2,USD,hour,gpu,on_demand,", "field 'source' is required"),
        ("b,h,s,H100 SXM,1,,2,USD,term,gpu,on_demand,", "field 'price_unit'"),
    ],
)
def test_bad_rows_name_file_row_and_field(cells: str, message: str) -> None:
    result = parse_bytes((CSV_HEADER + cells + "\n").encode(), "hosts.csv")
    assert result.offers == []
    [skipped] = result.skipped
    assert message in skipped.reason
    assert "hosts.csv row 2" in skipped.reason


def test_a_price_below_the_floor_is_skipped_naming_the_row() -> None:
    cells = "b,h,s,H100 SXM,1,,0.001,USD,hour,gpu,on_demand,"
    result = parse_bytes((CSV_HEADER + cells + "\n").encode(), "hosts.csv")
    assert result.offers == []
    [skipped] = result.skipped
    assert skipped.reason == "absurd price: 0.00100 USD per GPU-hour (on_demand)"
    assert skipped.ref == "hosts.csv row 2 (id b)"


def test_unknown_key_and_defaults_in_yaml() -> None:
    text = b"""
defaults: {seller: s, source: q, price_currency: EUR, price_unit: hour,
           price_basis: instance, term: on_demand}
offers:
  - {id: a, gpu_name: RTX 4090, gpu_count: 2, price_amount: "1.20"}
  - {id: b, gpu_name: RTX 4090, gpu_count: 2, price_amount: 1, gpu_modle: x}
  - just a string
"""
    result = parse_bytes(text, "q.yaml")
    [a] = result.offers
    assert a.price_currency == "EUR" and a.gpu_model == "RTX-4090"
    assert [s.reason for s in result.skipped] == [
        "q.yaml offers[2] (id b): unknown field 'gpu_modle'",
        "q.yaml offers[3]: an entry must be a mapping, not str",
    ]


@pytest.mark.parametrize(
    ("data", "name"),
    [
        (b"offers: [unclosed", "a.yaml"),
        (b"- 1\n- 2\n", "a.yaml"),
        (b"offers: 3\n", "a.yaml"),
        (b"offers: []\nsurprise: 1\n", "a.yaml"),
        (b"id,seller\n", "a.txt"),
        (b"\xff\xfe\x00", "a.csv"),
    ],
)
def test_broken_sheet_is_a_format_error_naming_the_file(data: bytes, name: str) -> None:
    with pytest.raises(ResponseFormatError, match=name):
        parse_bytes(data, name)


def test_every_documented_key_is_accepted() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "price-sheets.md").read_text()
    missing = [k for k in sorted(SHEET_KEYS) if f"`{k}`" not in doc]
    assert missing == []


def run_fetch(a: SheetAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await a.fetch(client)

    return asyncio.run(go())


def test_fetch_reads_configured_files(tmp_path: Path) -> None:
    csv_file = tmp_path / "hosts.csv"
    csv_file.write_text(CSV_HEADER + "b,h,s,H100 SXM,1,,2,USD,hour,gpu,on_demand,\n")
    joined = os.pathsep.join([str(EXAMPLE), str(csv_file)])
    a = SheetAdapter({"price_sheet_paths": joined})
    payloads = run_fetch(a)
    assert [p["format"] for p in payloads] == ["yaml", "csv"]
    assert (
        len(a.parse(payloads, fetched_at=NOW).offers) == 15
    )  # 14 of the example (one illustrative), 1 of the CSV
    assert SheetAdapter(paths=[csv_file]).paths == (csv_file,)


def test_fetch_missing_file_and_no_paths(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="nope.yaml"):
        run_fetch(SheetAdapter(paths=[tmp_path / "nope.yaml"]))
    with pytest.raises(MissingCredentials, match="PRICE_SHEET_PATHS"):
        run_fetch(SheetAdapter())


def test_price_date_dates_the_offer() -> None:
    """An entry's ``price_date`` is its offer's fetch time: the price's age counts from the
    quote, not from the reading of the sheet; without one, the reading's time."""
    offers = example().offers
    ali = find(offers, "alibaba-cloud/ecs.gn7e-c16g1.32xlarge-cn-hongkong")
    assert ali.fetched_at == datetime(2024, 10, 9, tzinfo=UTC)
    tencent = find(offers, "tencent-cloud/GN10Xp.20XLARGE320")
    assert tencent.fetched_at == NOW  # its source is undated
    text = CSV_HEADER.replace("\n", ",price_date\n") + (
        "a,h,q,H100 SXM,1,,2,USD,hour,gpu,on_demand,,2026-11-02\n"
    )
    [o] = parse_bytes(text.encode(), "hosts.csv").offers
    assert o.fetched_at == datetime(2026, 11, 2, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2026-12-24", "field 'price_date': 2026-12-24 is after the sheet was read (2026-11-30)"),
        ("last week", "field 'price_date': 'last week' is not a date (YYYY-MM-DD)"),
    ],
)
def test_a_bad_price_date_skips_the_entry(value: str, message: str) -> None:
    text = CSV_HEADER.replace("\n", ",price_date\n") + (
        f"a,h,q,H100 SXM,1,,2,USD,hour,gpu,on_demand,,{value}\n"
    )
    result = parse_bytes(text.encode(), "hosts.csv")
    assert result.offers == []
    assert [s.reason for s in result.skipped] == [f"hosts.csv row 2 (id a): {message}"]


def test_sizes_and_power_as_a_data_sheet_writes_them() -> None:
    """``"50 GiB"``, ``"1.92 TB"``, ``"4 x 2000 W"``: the schema's GB and all-PSU watts."""
    header = "id,seller,source,gpu_name,gpu_count,price_amount,price_currency,price_unit,"
    header += "price_basis,term,storage_gb,ram_gb,psu_watts,psu_redundancy,chassis_form_factor\n"
    text = header + (
        "a,h,s,H100 SXM,8,20,USD,hour,instance,on_demand,15.36 TB,2 TiB,4 x 2000 W,2+2,4U\n"
        "b,h,s,H100 SXM,8,20,USD,hour,instance,on_demand,22 TiB SSD,512,3000,,\n"
        "c,h,s,H100 SXM,8,20,USD,hour,instance,on_demand,,,lots of watts,,\n"
        "d,h,s,H100 SXM,8,20,USD,hour,instance,on_demand,big,,,,\n"
    )
    result = parse_bytes(text.encode(), "hosts.csv")
    a, b = result.offers
    assert a.storage_gb == 15360 and a.ram_gb == pytest.approx(2 * 1.099511627776 * 1000)
    assert (a.psu_watts, a.psu_redundancy, a.chassis_form_factor) == (8000, "2+2", "4U")
    assert b.storage_gb == pytest.approx(24189.255811) and b.ram_gb == 512
    assert b.psu_watts == 3000 and b.psu_redundancy is None and b.cooling is None
    assert [s.reason for s in result.skipped] == [
        "hosts.csv row 4 (id c): field 'psu_watts': 'lots of watts' is not watts"
        ' (3000, "3000 W" or "4 x 2000 W")',
        "hosts.csv row 5 (id d): field 'storage_gb': 'big' is not a size"
        " (GB, or a number with GB, TB, GiB or TiB)",
    ]


def test_example_autodl_entry_carries_its_stated_data_disk() -> None:
    o = find(without_illustrative_flag().offers, "autodl/rtx3090-beijing-a")
    assert o.storage_gb == pytest.approx(53.687091)  # "data disk 50 GiB"
    assert o.psu_watts is None and o.os_images is None  # the source states neither


def test_sheet_quantity_doctests() -> None:
    import doctest

    from gpuscout.adapters import sheet

    result = doctest.testmod(sheet)
    assert result.attempted >= 2 and result.failed == 0
