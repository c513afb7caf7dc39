"""AWS EC2 adapter: price-list CSV, spot and GpuInfo XML, parsed and fetched via respx."""

from __future__ import annotations

import asyncio
import csv
import json
import logging
import urllib.parse
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from gpuscout.adapters.aws import (
    MAX_EC2_PAGES,
    PRICING_BASE,
    REGION_INDEX_URL,
    SPOT_ADVISOR_URL,
    SPOT_FEED_URL,
    AwsAdapter,
    GpuFamily,
    _xml_data,
    _xml_host,
    gpu_families,
)
from gpuscout.adapters.base import (
    FAILED_CALLS_KEY,
    FailedCall,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
    failed_calls_payload,
)
from gpuscout.adapters.collect import ProviderRun, RunStatus, run_provider
from gpuscout.adapters.schema import (
    Fabric,
    GpuFormFactor,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    StorageType,
    Vendor,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "aws"
SAMPLES = Path(__file__).resolve().parents[2] / "adapters" / "samples" / "aws"
NOW = datetime(2025, 9, 15, 12, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)
GPU_CSV = "bulk_index_csv_gpu_rows.reconstructed.csv"
SPOT_XML = "spot_price_history_gpu_all_zones.query_api.reconstructed.xml"
GPU_INFO_XML = "describe_instance_types_gpuinfo.query_api.reconstructed.xml"
FEED = "spot_feed.spotinfo_capture_excerpt.verbatim.json"
ADVISOR = "spot_advisor_data.spotinfo_excerpt.verbatim.json"
Q = Decimal("0.000001")


def read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decoded(*names: str) -> list[Any]:
    adapter = AwsAdapter()
    return [adapter.decode(read(n), n) for n in names]


def parse(*payloads: Any) -> Any:
    return AwsAdapter().parse(list(payloads), fetched_at=NOW)


def label(o: Any) -> str:
    """A readable id: the instance type, with the term and its variant when there is one."""
    if o.term_variant is None:
        return str(o.offer_id)
    if o.term is RentalTerm.INTERRUPTIBLE:
        return f"{o.offer_id}:spot:{o.term_variant}"
    lease = {RentalTerm.COMMIT_1Y: "1yr", RentalTerm.COMMIT_3Y: "3yr"}[o.term]
    return f"{o.offer_id}:reserved-{lease}-{o.term_variant}"


def by_id(result: Any) -> dict[tuple[str, str | None], Any]:
    return {(label(o), o.region): o for o in result.offers}


def csv_lines() -> tuple[list[str], list[str]]:
    """(metadata + header lines, data rows) of the reconstructed GPU CSV."""
    lines = read(GPU_CSV).decode().splitlines()
    return lines[:6], lines[6:]


def p5_row(**changes: str) -> str:
    """The p5.48xlarge on-demand row with columns changed (by CSV header name)."""
    head, rows = csv_lines()
    header = next(csv.reader([head[5]]))
    row = next(csv.reader([rows[0]]))
    values = dict(zip(header, row, strict=True))
    values.update(changes)
    return ",".join(f'"{values[h]}"' if values[h] else "" for h in header)


def csv_with(*rows: str) -> str:
    head, _ = csv_lines()
    return "\n".join([*head, *rows]) + "\n"


# --- parse: the reconstructed price list + spot + GpuInfo -------------------------------


@pytest.fixture(scope="module")
def full() -> Any:
    return parse(*decoded(GPU_CSV, SPOT_XML, GPU_INFO_XML))


def test_offers_and_decoys(full: Any) -> None:
    assert sorted(by_id(full)) == [
        ("g5.xlarge", "us-east-1"),
        ("g5.xlarge:spot:us-east-1c", "us-east-1"),
        ("g6.xlarge", "us-east-1"),
        ("g6.xlarge:spot:us-east-1f", "us-east-1"),
        ("p4d.24xlarge", "us-east-1"),
        ("p4d.24xlarge:spot:us-east-1b", "us-east-1"),
        ("p5.48xlarge", "us-east-1"),
        ("p5.48xlarge:reserved-1yr-standard-no-upfront", "us-east-1"),
        ("p5.48xlarge:spot:us-east-1a", "us-east-1"),
        ("p5.48xlarge:spot:us-east-1d", "us-east-1"),
    ]
    assert full.skip_reasons() == {
        "capacity reservation row": 2,
        "not Linux": 1,
        "not shared tenancy": 1,
        "pre-installed software": 1,
    }


def test_sample_xml_is_the_tested_fixture() -> None:
    for name in (SPOT_XML, GPU_INFO_XML):
        assert (SAMPLES / name).read_bytes() == read(name), name


def test_p5_on_demand(full: Any) -> None:
    o = by_id(full)[("p5.48xlarge", "us-east-1")]
    assert o.provider == "aws"
    assert o.instance_name == "p5.48xlarge"
    assert o.raw_ref == "aws:sku/XQ4W8VFKPB3N2HJM"
    assert o.country == "US"  # us-east-1, "US East (N. Virginia)": data/region_countries.csv
    assert o.gpu_model == "H100-SXM5-80GB"
    assert o.gpu_raw_name == "H100"  # GpuInfo.Gpus[0].Name
    assert o.gpu_vendor is Vendor.NVIDIA
    assert o.gpu_count == 8
    assert o.gpu_memory_gb == 80  # "640 GB" in the price list / 8
    assert o.gpu_form_factor is GpuFormFactor.SXM
    assert o.vcpus == 192
    assert o.ram_gb == pytest.approx(2048 * 1024**3 / 1e9)  # "2048 GiB"
    assert o.storage_gb == 8 * 3840  # "8 x 3840 SSD"
    # the price list says "SSD"; DescribeInstanceTypes' nvmeSupport "required" says NVMe
    assert o.storage_type is StorageType.NVME
    assert o.cpu_model == "AMD EPYC 7R13 Processor"
    assert o.cpu_vendor == "amd"
    # vCpuInfo/defaultCores and processorInfo/supportedArchitectures
    assert (o.cpu_cores, o.cpu_arch) == (96, "x86_64")
    # not stated by the API: unknown, not guessed
    assert (o.cpu_sockets, o.ram_ecc, o.disk_bandwidth_mbps) == (None, None, None)
    assert o.term is RentalTerm.ON_DEMAND
    assert o.price_amount == Decimal("55.0400000000")
    assert o.price_currency == "USD"
    assert o.price_unit is PriceUnit.HOUR
    assert o.price_basis is PriceBasis.INSTANCE
    assert o.usd_per_hour == Decimal("55.040000")
    assert o.usd_per_gpu_hour == Decimal("6.88")
    assert o.billing_increment_s == 1
    assert o.min_rental_hours == pytest.approx(1 / 60)
    assert o.prepaid is False


def test_p5_reserved_no_upfront_stays_hourly(full: Any) -> None:
    o = by_id(full)[("p5.48xlarge:reserved-1yr-standard-no-upfront", "us-east-1")]
    assert o.term is RentalTerm.COMMIT_1Y
    assert o.price_unit is PriceUnit.HOUR
    assert o.price_amount == Decimal("34.5200000000")
    assert o.prepaid is False
    assert o.raw_ref == "aws:sku/XQ4W8VFKPB3N2HJM.4NA7Y494T4"


def test_g5_and_g6(full: Any) -> None:
    g5 = by_id(full)[("g5.xlarge", "us-east-1")]
    assert (g5.gpu_model, g5.gpu_count, g5.gpu_memory_gb) == ("A10G", 1, 24)
    assert g5.storage_type is StorageType.NVME and g5.storage_gb == 250
    assert g5.vcpus == 4 and g5.ram_gb == pytest.approx(16 * 1024**3 / 1e9)
    assert (g5.cpu_cores, g5.cpu_arch) == (2, "x86_64")
    g6 = by_id(full)[("g6.xlarge", "us-east-1")]
    assert (g6.gpu_model, g6.gpu_raw_name, g6.price_amount) == ("L4", "L4", Decimal("0.8048"))


@pytest.mark.parametrize(
    ("archs", "arch"),
    [(["x86_64"], "x86_64"), (["i386", "x86_64"], "x86_64"), (["arm64"], "arm64"),
     (["x86_64", "arm64"], None), (["x86_64_mac"], None), ([], None)],
)  # fmt: skip
def test_cpu_arch_only_where_one_architecture_is_stated(archs: list[str], arch: str | None) -> None:
    items = "".join(f"<item>{a}</item>" for a in archs)
    record = ET.fromstring(
        "<item><processorInfo><supportedArchitectures>"
        f"{items}</supportedArchitectures></processorInfo>"
        "<vCpuInfo><defaultCores>0</defaultCores></vCpuInfo>"
        "<instanceStorageInfo><nvmeSupport>unsupported</nvmeSupport></instanceStorageInfo></item>"
    )
    host = _xml_host(_xml_data(record))
    assert host.get("cpu_arch") == arch
    assert "cpu_cores" not in host and "storage_type" not in host


def test_p4d_model_from_the_family_table_without_gpuinfo(full: Any) -> None:
    o = by_id(full)[("p4d.24xlarge", "us-east-1")]  # not in the GpuInfo fixture
    assert o.gpu_raw_name == "A100"
    assert o.gpu_model == "A100-SXM4-40GB"  # 320 GB / 8 GPUs
    assert o.gpu_memory_gb == 40


def test_family_table_loads_with_a_source_per_row() -> None:
    families = gpu_families()
    assert len(families) == 21
    assert families["p5"] == GpuFamily("H100", GpuFormFactor.SXM)
    assert families["p6e-gb200"] == GpuFamily("GB200", GpuFormFactor.SUPERCHIP)
    assert families["g4ad"] == GpuFamily("Radeon Pro V520")
    assert families["g6f"] == GpuFamily("L4")  # fractional L4 sizes
    assert gpu_families() is families  # read once


def test_spot_offers_per_availability_zone(full: Any) -> None:
    offers = by_id(full)
    a = offers[("p5.48xlarge:spot:us-east-1a", "us-east-1")]
    d = offers[("p5.48xlarge:spot:us-east-1d", "us-east-1")]
    assert a.term is RentalTerm.INTERRUPTIBLE and d.term is RentalTerm.INTERRUPTIBLE
    assert a.price_amount == Decimal("25.600000") and d.price_amount == Decimal("27.412200")
    assert a.price_unit is PriceUnit.HOUR and a.price_currency == "USD"
    assert a.instance_name == "p5.48xlarge (spot, us-east-1a)"
    assert a.raw_ref == "aws:spot/us-east-1a/p5.48xlarge"
    assert (a.region, a.country) == ("us-east-1", "US")
    assert a.gpu_model == "H100-SXM5-80GB" and a.gpu_count == 8 and a.vcpus == 192
    assert a.usd_per_hour == Decimal("25.600000")


@pytest.mark.parametrize(
    "name",
    [
        "offer_file_us-east-1_gpu_excerpt.reconstructed.json",
        "pricing_get_products_response.reconstructed.json",
        "spot_price_history_gpu.reconstructed.json",
        "describe_instance_types_gpuinfo.reconstructed.json",
        "spot_price_history.awscli_example.verbatim.json",
    ],
)
def test_json_shapes_fetch_never_returns_are_refused(name: str) -> None:
    """The offer file, GetProducts and the SDK's JSON carry the same data as the CSV and XML
    fetch returns; parse reads only what fetch returns, and says so instead of guessing."""
    with pytest.raises(ResponseFormatError, match="unexpected payload type"):
        parse(*decoded(GPU_CSV, name))


def test_json_gpuinfo_and_spot_match_their_xml() -> None:
    """The XML fixtures carry the records of the SDK-JSON ones, element for element."""
    spot = json.loads(read("spot_price_history_gpu.reconstructed.json"))["SpotPriceHistory"]
    offers = by_id(parse(*decoded(GPU_CSV, SPOT_XML)))
    for s in spot:
        o = offers[(f"{s['InstanceType']}:spot:{s['AvailabilityZone']}", "us-east-1")]
        assert o.price_amount == Decimal(s["SpotPrice"])
    infos = json.loads(read("describe_instance_types_gpuinfo.reconstructed.json"))["InstanceTypes"]
    offers = by_id(parse(*decoded(GPU_CSV, GPU_INFO_XML)))
    for info in infos:
        gpu = info["GpuInfo"]["Gpus"][0]
        assert offers[(info["InstanceType"], "us-east-1")].gpu_raw_name == gpu["Name"]


def test_spot_query_api_xml() -> None:
    result = parse(
        *decoded(GPU_CSV, "spot_price_history_gpu.query_api.reconstructed.xml"),
    )
    spot = {k: o for k, o in by_id(result).items() if o.term is RentalTerm.INTERRUPTIBLE}
    assert sorted(spot) == [
        ("g5.xlarge:spot:us-east-1c", "us-east-1"),
        ("p5.48xlarge:spot:us-east-1a", "us-east-1"),
    ]
    assert spot[("g5.xlarge:spot:us-east-1c", "us-east-1")].price_amount == Decimal("0.410600")


def test_verbatim_price_list_excerpt_has_no_linux_gpu_rows() -> None:
    # the m1.xlarge spot prices of the AWS CLI example (spot_price_history.awscli_example)
    cli_example = spot_xml(
        ("m1.xlarge", "us-west-1a", "0.080000", "Linux/UNIX (Amazon VPC)"),
        ("m1.xlarge", "us-west-1c", "0.080000", "Linux/UNIX (Amazon VPC)"),
    )
    result = parse(*decoded("bulk_index_csv_sample_2025-09.verbatim.csv"), cli_example)
    assert result.offers == []
    reasons = result.skip_reasons()
    assert reasons["not Linux"] == 41  # Windows, RHEL, SUSE, Ubuntu Pro rows
    assert reasons["not shared tenancy"] == 1  # c6g Host row (Linux)
    # the m1.xlarge spot example has no price-list product here
    assert reasons["instance type not in the price list (hardware unknown)"] == 2


# --- reserved terms: upfront and hourly parts -------------------------------------------


def reserved_rows(option: str, lease: str, hourly: str, upfront: str | None) -> list[str]:
    common = {
        "TermType": "Reserved",
        "OfferTermCode": "TESTTERM01",
        "LeaseContractLength": lease,
        "PurchaseOption": option,
        "OfferingClass": "convertible",
        "RateCode": "XQ4W8VFKPB3N2HJM.TESTTERM01.6YS6EN2CT7",
        "PriceDescription": "Linux/UNIX (Amazon VPC), p5.48xlarge reserved instance applied",
    }
    rows = [p5_row(**common, Unit="Hrs", PricePerUnit=hourly)]
    if upfront is not None:
        rows.append(
            p5_row(
                **dict(
                    common,
                    RateCode="XQ4W8VFKPB3N2HJM.TESTTERM01.2TG2D8R56U",
                    PriceDescription="Upfront Fee",
                ),
                Unit="Quantity",
                PricePerUnit=upfront,
                StartingRange="",
                EndingRange="",
            )
        )
    return rows


def test_partial_upfront_is_one_exact_term_price() -> None:
    text = csv_with(*reserved_rows("Partial Upfront", "3yr", "13.1000000000", "344000"))
    (o,) = parse(text).offers
    assert label(o) == "p5.48xlarge:reserved-3yr-convertible-partial-upfront"
    assert o.term is RentalTerm.COMMIT_3Y
    assert o.price_unit is PriceUnit.TERM
    assert o.price_amount == Decimal("344000") + Decimal("13.1") * 26280  # exact
    assert o.usd_per_hour == (o.price_amount / 26280).quantize(Q)
    assert o.prepaid is True


def test_all_upfront_is_the_upfront_fee_for_the_term() -> None:
    text = csv_with(*reserved_rows("All Upfront", "1yr", "0.0000000000", "290000"))
    (o,) = parse(text).offers
    assert o.term is RentalTerm.COMMIT_1Y
    assert o.price_unit is PriceUnit.TERM
    assert o.price_amount == Decimal("290000")
    assert o.usd_per_hour == (Decimal("290000") / 8760).quantize(Q)


def test_reserved_with_two_hourly_parts_is_skipped() -> None:
    rows = reserved_rows("No Upfront", "1yr", "30.0", None) * 2
    result = parse(csv_with(*rows))
    assert result.offers == []
    assert result.skip_reasons() == {"reserved term without one hourly and/or one upfront part": 1}


# --- awkward and broken input ------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"PricePerUnit": "abc"}, "price is not a number: 'abc'"),
        ({"PricePerUnit": ""}, "no price"),
        ({"PricePerUnit": "-1.0"}, "invalid price_amount"),
        ({"PricePerUnit": "0.0000000000"}, "invalid price_amount"),
        ({"PricePerUnit": "0.0010000000"}, "absurd price: 0.000125 USD per GPU-hour"),
        ({"GPU": "0"}, "no GPU"),
        ({"GPU": "eight"}, "no GPU"),
        ({"Currency": "XYZ"}, "invalid price_currency"),
    ],
)
def test_bad_price_list_rows_are_skipped(changes: dict[str, str], reason: str) -> None:
    result = parse(csv_with(p5_row(**changes)))
    assert result.offers == []
    (skipped,) = result.skipped
    assert skipped.reason.startswith(reason)


def test_unknown_gpu_is_kept_without_a_model() -> None:
    row = p5_row(
        **{"Instance Type": "g4ad.xlarge", "GPU": "1", "GPU Memory": "8 GB"},
        PricePerUnit="0.3790000000",
    )
    (o,) = parse(csv_with(row)).offers
    assert o.gpu_model is None
    assert o.gpu_raw_name == "Radeon Pro V520"
    assert o.gpu_count == 1 and o.gpu_memory_gb == 8


def test_fractional_gpu_from_the_price_list() -> None:
    row = p5_row(**{"Instance Type": "g6f.large", "GPU": "0.125", "GPU Memory": "3 GB"})
    (o,) = parse(csv_with(row.replace("55.0400000000", "0.2000000000"))).offers
    assert (o.gpu_count, o.gpu_fraction, o.gpu_memory_gb) == (1, 0.125, 3)
    assert o.gpu_model == "L4"  # resolved with the whole board's 24 GB
    assert o.usd_per_gpu_hour == Decimal("1.6")


def test_gpu_memory_falls_back_to_gpu_info_in_its_nominal_size() -> None:
    """Without the price list's "GPU Memory", GpuInfo's 81920 MiB per H100 is the 80 GB
    it is sold by (80 GiB), not 85.9 decimal GB beside every other provider's 80."""
    row = p5_row(**{"GPU Memory": "NA"})
    (o,) = parse(csv_with(row), *decoded(GPU_INFO_XML)).offers
    assert (o.gpu_model, o.gpu_memory_gb) == ("H100-SXM5-80GB", 80)


def test_family_not_in_table_keeps_count_without_a_name() -> None:
    row = p5_row(**{"Instance Type": "zz9.2xlarge", "GPU": "2", "GPU Memory": "NA"})
    (o,) = parse(csv_with(row)).offers
    assert (o.gpu_model, o.gpu_raw_name, o.gpu_count, o.gpu_memory_gb) == (None, None, 2, None)


def test_bad_spot_records_are_skipped() -> None:
    spot = spot_xml(
        ("p5.48xlarge", "us-east-1a", None),
        ("p5.48xlarge", "us-east-1b", "-2"),
        ("p5.48xlarge", "us-east-1c", "30", "Windows"),
        ("p5.48xlarge", "weird", "30"),
        ("p5.48xlarge", "us-east-1d", "20.5"),
    )
    result = parse(*decoded(GPU_CSV), spot)
    spot_offers = [o for o in result.offers if o.term is RentalTerm.INTERRUPTIBLE]
    assert [label(o) for o in spot_offers] == ["p5.48xlarge:spot:us-east-1d"]
    reasons = result.skip_reasons()
    assert reasons["no price"] == 1
    assert reasons["invalid price_amount: Input should be greater than 0"] == 1
    assert reasons["spot product 'Windows' (Linux only)"] == 1
    assert reasons["not a regional availability zone: 'weird'"] == 1


@pytest.mark.parametrize(
    "payload",
    [
        {"unexpected": []},
        {"products": [], "terms": {}},
        {"PriceList": "x"},
        {"SpotPriceHistory": None},
        "plain text",
        "<Response><Errors><Error><Code>AuthFailure</Code></Error></Errors></Response>",
        {FAILED_CALLS_KEY: "us-east-1"},
        {FAILED_CALLS_KEY: [{"reason": "spot prices not fetched: HTTP 401 AuthFailure"}]},
        {FAILED_CALLS_KEY: [{"ref": "aws:spot/us-east-1", "reason": 401}]},
        "<unclosed",
        '"FormatVersion","v1.0"\n"no header here"\n',
        None,
        42,
        [GPU_CSV],
    ],
)
def test_wrong_shape_is_a_response_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_response_format_error() -> None:
    data = read("offer_file_us-east-1_gpu_excerpt.reconstructed.json")[:700]
    with pytest.raises(ResponseFormatError):
        AwsAdapter().decode(data, "offer.json")


# --- fetch -------------------------------------------------------------------------------

VERSION_PATH = "/offers/v1.0/aws/AmazonEC2/20250912225308"
CSV_URL = f"{PRICING_BASE}{VERSION_PATH}/us-east-1/index.csv"
EC2_URL = "https://ec2.us-east-1.amazonaws.com/"
REGION_INDEX = {
    "formatVersion": "v1.0",
    "publicationDate": "2025-09-12T22:53:08Z",
    "regions": {
        "us-east-1": {
            "regionCode": "us-east-1",
            "currentVersionUrl": f"{VERSION_PATH}/us-east-1/index.json",
        },
        "us-gov-west-1": {
            "regionCode": "us-gov-west-1",
            "currentVersionUrl": f"{VERSION_PATH}/us-gov-west-1/index.json",
        },
    },
}
CREDS = {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG"}


def fetch(credentials: dict[str, str] | None = None) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await AwsAdapter(credentials, policy=FAST).fetch(client)

    return asyncio.run(go())


def mock_public(*, feed: bool) -> None:
    """The Spot Advisor's data (always fetched) and, for a run without keys, the public spot
    feed, each a recorded excerpt at its real URL."""
    respx.get(SPOT_ADVISOR_URL).mock(return_value=httpx.Response(200, content=read(ADVISOR)))
    if feed:
        respx.get(SPOT_FEED_URL).mock(return_value=httpx.Response(200, content=read(FEED)))


def without_public(payloads: list[Any]) -> list[Any]:
    """The payloads but the Spot Advisor's data and the public spot feed."""
    return [
        p for p in payloads if not (isinstance(p, dict) and {"spot_advisor", "config"} & p.keys())
    ]


def mock_price_list(*, feed: bool = False) -> tuple[respx.Route, respx.Route]:
    index = respx.get(REGION_INDEX_URL).mock(return_value=httpx.Response(200, json=REGION_INDEX))
    csv_route = respx.get(CSV_URL).mock(return_value=httpx.Response(200, content=read(GPU_CSV)))
    mock_public(feed=feed)
    return index, csv_route


@respx.mock
def test_fetch_without_credentials_streams_price_list_and_reads_the_public_spot_feed() -> None:
    index, csv_route = mock_price_list(feed=True)
    payloads = fetch()
    assert index.call_count == 1 and csv_route.call_count == 1  # GovCloud not fetched
    text, advisor, feed = payloads
    assert advisor == json.loads(read(ADVISOR)) and feed == json.loads(read(FEED))
    lines = text.splitlines()
    assert lines[:5] == read(GPU_CSV).decode().splitlines()[:5]  # metadata kept
    assert lines[5].startswith('"SKU"')
    # only the Linux shared-tenancy GPU rows survive the streaming filter
    assert [line.split(",")[0].strip('"') for line in lines[6:]] == [
        "XQ4W8VFKPB3N2HJM",
        "XQ4W8VFKPB3N2HJM",
        "7K3JTD9NQ4VZ8CYB",
        "N8B2XW7Y3M5QKPJD",
        "5TQ9JKM2X8B7WRZC",
    ]
    result = AwsAdapter().parse([text], fetched_at=NOW)
    assert len(result.offers) == 5 and result.skipped == []
    # the offline sample holds exactly what fetch returns for this price list
    assert text == (SAMPLES / "bulk_index_csv_gpu_rows.streamed.reconstructed.csv").read_text()


def spot_xml(*items: tuple[str | None, ...], token: str = "") -> str:
    """A DescribeSpotPriceHistory page of (instance type, AZ, price[, product]) items; a
    price of None leaves the element out."""
    body = "".join(
        f"<item><instanceType>{t}</instanceType><productDescription>"
        f"{rest[0] if rest else 'Linux/UNIX'}</productDescription>"
        + ("" if p is None else f"<spotPrice>{p}</spotPrice>")
        + f"<timestamp>2025-09-15T12:00:00.000Z</timestamp>"
        f"<availabilityZone>{az}</availabilityZone></item>"
        for t, az, p, *rest in items
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        f"<requestId>r</requestId><spotPriceHistorySet>{body}</spotPriceHistorySet>"
        f"<nextToken>{token}</nextToken></DescribeSpotPriceHistoryResponse>"
    )


#: DescribeInstanceTypes Query-API XML, element names as in the EC2 API (reconstructed).
INSTANCE_TYPES_XML = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<DescribeInstanceTypesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
    "<requestId>r</requestId><instanceTypeSet>"
    "<item><instanceType>p4d.24xlarge</instanceType><gpuInfo><gpus><item><name>A100</name>"
    "<manufacturer>NVIDIA</manufacturer><count>8</count><memoryInfo><sizeInMiB>40960"
    "</sizeInMiB></memoryInfo></item></gpus><totalGpuMemoryInMiB>327680</totalGpuMemoryInMiB>"
    "</gpuInfo></item>"
    "<item><instanceType>m7i.large</instanceType></item>"
    "</instanceTypeSet></DescribeInstanceTypesResponse>"
)


def form_of(request: httpx.Request) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(request.content.decode())


def ec2_dispatch(spot: list[httpx.Response], types: httpx.Response | None = None) -> Any:
    """respx side effect answering DescribeInstanceTypes and DescribeSpotPriceHistory."""
    answers = iter(spot)

    def answer(request: httpx.Request) -> httpx.Response:
        if form_of(request)["Action"] == ["DescribeInstanceTypes"]:
            return types or httpx.Response(200, text=INSTANCE_TYPES_XML)
        return next(answers)

    return answer


def calls_for(route: respx.Route, action: str) -> list[httpx.Request]:
    return [c.request for c in route.calls if form_of(c.request)["Action"] == [action]]


@respx.mock
def test_fetch_spot_is_signed_and_paginated() -> None:
    mock_price_list()
    first = spot_xml(("p5.48xlarge", "us-east-1a", "25.600000"), token="page2")
    second = spot_xml(("g5.xlarge", "us-east-1c", "0.410600"))
    ec2 = respx.post(EC2_URL).mock(
        side_effect=ec2_dispatch(
            [httpx.Response(200, text=first), httpx.Response(200, text=second)]
        )
    )
    payloads = without_public(fetch(CREDS))
    assert payloads[1:] == [INSTANCE_TYPES_XML, first, second]
    spot = calls_for(ec2, "DescribeSpotPriceHistory")
    assert len(spot) == 2
    req = spot[0]
    auth = req.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-east-1/ec2/aws4_request" in auth and "Signature=" in auth
    assert req.headers["x-amz-date"]
    form = form_of(req)
    assert form["ProductDescription.1"] == ["Linux/UNIX"]
    types = sorted(v[0] for k, v in form.items() if k.startswith("InstanceType."))
    assert types == ["g5.xlarge", "g6.xlarge", "p4d.24xlarge", "p5.48xlarge"]
    assert "NextToken" not in form
    assert form_of(spot[1])["NextToken"] == ["page2"]
    (described,) = calls_for(ec2, "DescribeInstanceTypes")
    assert described.headers["authorization"].startswith("AWS4-HMAC-SHA256 ")
    dit = form_of(described)
    assert dit["Filter.1.Name"] == ["instance-type"]
    assert sorted(v[0] for k, v in dit.items() if k.startswith("Filter.1.Value.")) == types
    result = AwsAdapter().parse(payloads, fetched_at=NOW)
    spot_ids = sorted(label(o) for o in result.offers if o.term is RentalTerm.INTERRUPTIBLE)
    assert spot_ids == ["g5.xlarge:spot:us-east-1c", "p5.48xlarge:spot:us-east-1a"]
    p4d = by_id(result)[("p4d.24xlarge", "us-east-1")]
    assert (p4d.gpu_raw_name, p4d.gpu_model, p4d.gpu_vendor) == (
        "A100",
        "A100-SXM4-40GB",
        Vendor.NVIDIA,
    )


@respx.mock
def test_spot_pages_stop_at_the_page_limit() -> None:
    """A token that never ends fails that region's spot prices, not the provider."""
    mock_price_list()
    endless = spot_xml(("p5.48xlarge", "us-east-1a", "25.6"), token="again")
    respx.post(EC2_URL).mock(
        side_effect=ec2_dispatch([httpx.Response(200, text=endless)] * MAX_EC2_PAGES)
    )
    payloads = without_public(fetch(CREDS))
    reason = f"spot prices not fetched: more than {MAX_EC2_PAGES} DescribeSpotPriceHistory pages"
    assert payloads[-1] == failed_calls_payload([FailedCall("aws:spot/us-east-1", reason)])
    assert payloads[1:-1] == [INSTANCE_TYPES_XML]  # the region's pages are all dropped


def test_instance_types_xml_is_parsed() -> None:
    result = parse(*decoded(GPU_CSV), INSTANCE_TYPES_XML)
    assert by_id(result)[("p4d.24xlarge", "us-east-1")].gpu_raw_name == "A100"


@respx.mock
def test_failed_instance_types_call_is_only_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    mock_price_list()
    ok = spot_xml(("p5.48xlarge", "us-east-1a", "25.600000"))
    respx.post(EC2_URL).mock(
        side_effect=ec2_dispatch(
            [httpx.Response(200, text=ok)], types=httpx.Response(403, text="UnauthorizedOperation")
        )
    )
    with caplog.at_level(logging.WARNING, logger="gpuscout.adapters.aws"):
        payloads = without_public(fetch(CREDS))
    assert payloads[1:] == [ok]
    assert "DescribeInstanceTypes failed" in caplog.text


@respx.mock
def test_fetch_retries_stream_on_429_and_5xx() -> None:
    respx.get(REGION_INDEX_URL).mock(return_value=httpx.Response(200, json=REGION_INDEX))
    csv_route = respx.get(CSV_URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(503),
            httpx.Response(200, content=read(GPU_CSV)),
        ]
    )
    mock_public(feed=True)
    text, *_ = fetch()
    assert csv_route.call_count == 3
    assert len(text.splitlines()) == 11


@respx.mock
def test_fetch_retries_a_broken_stream() -> None:
    respx.get(REGION_INDEX_URL).mock(return_value=httpx.Response(200, json=REGION_INDEX))
    csv_route = respx.get(CSV_URL).mock(
        side_effect=[httpx.ReadTimeout("slow"), httpx.Response(200, content=read(GPU_CSV))]
    )
    mock_public(feed=True)
    text, *_ = fetch()
    assert csv_route.call_count == 2 and "p5.48xlarge" in text


@respx.mock
def test_fetch_stream_fails_after_repeated_500() -> None:
    respx.get(REGION_INDEX_URL).mock(return_value=httpx.Response(200, json=REGION_INDEX))
    csv_route = respx.get(CSV_URL).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500 .* after 3 attempts"):
        fetch()
    assert csv_route.call_count == 3


@respx.mock
def test_fetch_stream_client_error_is_not_retried() -> None:
    respx.get(REGION_INDEX_URL).mock(return_value=httpx.Response(200, json=REGION_INDEX))
    csv_route = respx.get(CSV_URL).mock(return_value=httpx.Response(403, text="AccessDenied"))
    with pytest.raises(ProviderError, match=r"HTTP 403 .*\(text/plain, 12 bytes\)"):
        fetch()
    assert csv_route.call_count == 1


@respx.mock
def test_fetch_region_index_500_is_a_provider_error() -> None:
    route = respx.get(REGION_INDEX_URL).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500"):
        fetch()
    assert route.call_count == 3


@respx.mock
def test_fetch_region_index_wrong_shape() -> None:
    respx.get(REGION_INDEX_URL).mock(return_value=httpx.Response(200, json={"offers": {}}))
    with pytest.raises(ResponseFormatError, match="regions"):
        fetch()


@respx.mock
def test_spot_retries_429_then_succeeds() -> None:
    mock_price_list()
    ok = spot_xml(("p5.48xlarge", "us-east-1a", "25.600000"))
    ec2 = respx.post(EC2_URL).mock(
        side_effect=ec2_dispatch(
            [
                httpx.Response(429, headers={"Retry-After": "0"}),
                httpx.Response(500),
                httpx.Response(200, text=ok),
            ]
        )
    )
    assert without_public(fetch(CREDS))[1:] == [INSTANCE_TYPES_XML, ok]
    assert len(calls_for(ec2, "DescribeSpotPriceHistory")) == 3


def test_needs_no_credentials_to_run() -> None:
    assert AwsAdapter.credential_names == ()
    assert set(AwsAdapter.optional_credential_names) == {
        "aws_access_key_id",
        "aws_secret_access_key",
    }


def test_decode_keeps_csv_and_xml_as_text() -> None:
    adapter = AwsAdapter()
    assert adapter.decode(read(GPU_CSV), GPU_CSV).startswith('"FormatVersion"')
    xml = "spot_price_history_gpu.query_api.reconstructed.xml"
    assert adapter.decode(read(xml), xml).startswith("<?xml")
    assert json.loads(read("spot_price_history_gpu.reconstructed.json"))


# --- spot failures keep the public price list -------------------------------------------

#: EC2's answer to rejected keys: the error-response structure of the EC2 API Reference
#: ("Error codes for the Amazon EC2 API", example error response,
#: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html), body
#: verbatim from a wire log in aws/aws-sdk-java-v2#2981. Status 401 as reported for
#: AuthFailure in turbot/steampipe-plugin-aws#75, where it came from opt-in regions not
#: enabled for the account (same answer as bad keys; also fog/fog-aws#585).
AUTH_FAILURE = (
    "<Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to validate "
    "the provided access credentials</Message></Error></Errors>"
    "<RequestID>5b48c718-a402-4c2f-b776-8ebea01ae49d</RequestID></Response>"
)
AUTH_HINT = (
    " (AWS keys rejected or without ec2:DescribeSpotPriceHistory,"
    " or the region is not enabled for the account)"
)
#: Price-list regions of the multi-region tests (region code -> price-list Location).
REGIONS = {
    "us-east-1": "US East (N. Virginia)",
    "us-west-2": "US West (Oregon)",
    "eu-west-1": "EU (Ireland)",
}
EC2_ANY_REGION = r"^https://ec2\.[a-z0-9-]+\.amazonaws\.com/$"


def csv_url(region: str) -> str:
    return f"{PRICING_BASE}{VERSION_PATH}/{region}/index.csv"


def region_csv(region: str) -> bytes:
    """The GPU CSV moved to ``region``: its region code, location and SKUs (AWS SKUs are
    per region; the parser keys products by SKU, so copies must not share them)."""
    text = read(GPU_CSV).decode()
    if region == "us-east-1":
        return text.encode()
    suffix = region.replace("-", "").upper()[-4:]
    for sku in {line.split(",", 1)[0].strip('"') for line in csv_lines()[1]}:
        text = text.replace(sku, sku[:-4] + suffix)
    text = text.replace('"us-east-1"', f'"{region}"').replace(REGIONS["us-east-1"], REGIONS[region])
    return text.encode()


def mock_regions(failing_csv: str | None = None) -> dict[str, respx.Route]:
    """Region index and price-list CSVs of :data:`REGIONS`; ``failing_csv`` answers 500."""
    mock_public(feed=False)
    regions = {
        r: {"regionCode": r, "currentVersionUrl": f"{VERSION_PATH}/{r}/index.json"} for r in REGIONS
    }
    respx.get(REGION_INDEX_URL).mock(
        return_value=httpx.Response(200, json={"formatVersion": "v1.0", "regions": regions})
    )
    return {
        r: respx.get(csv_url(r)).mock(
            return_value=httpx.Response(500)
            if r == failing_csv
            else httpx.Response(200, content=region_csv(r))
        )
        for r in REGIONS
    }


def region_of(request: httpx.Request) -> str:
    return request.url.host.split(".")[1]  # ec2.<region>.amazonaws.com


def run(credentials: dict[str, str]) -> ProviderRun:
    """The whole provider run, as a snapshot gets it (fetch, then parse)."""

    async def go() -> ProviderRun:
        async with httpx.AsyncClient() as client:
            return await run_provider(AwsAdapter(credentials, policy=FAST), client)

    return asyncio.run(go())


def spot_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "spot prices" in r.getMessage()]


@respx.mock
def test_spot_rejected_in_every_region_keeps_the_public_prices(
    caplog: pytest.LogCaptureFixture,
) -> None:
    csv_routes = mock_regions()
    ec2 = respx.post(url__regex=EC2_ANY_REGION).mock(
        return_value=httpx.Response(401, text=AUTH_FAILURE)
    )
    with caplog.at_level(logging.WARNING, logger="gpuscout.adapters.aws"):
        outcome = run(CREDS)
    assert outcome.status is RunStatus.OK and outcome.error is None
    assert all(route.call_count == 1 for route in csv_routes.values())
    # each region asked once: a 401 is not retried
    spot_calls = calls_for(ec2, "DescribeSpotPriceHistory")
    assert sorted(region_of(r) for r in spot_calls) == sorted(REGIONS)
    # the public prices of every region are kept, and no spot offer is made up
    assert {o.term for o in outcome.offers} == {RentalTerm.ON_DEMAND, RentalTerm.COMMIT_1Y}
    for region in REGIONS:
        ids = sorted(label(o) for o in outcome.offers if o.region == region)
        assert ids == [
            "g5.xlarge",
            "g6.xlarge",
            "p4d.24xlarge",
            "p5.48xlarge",
            "p5.48xlarge:reserved-1yr-standard-no-upfront",
        ], region
    # one warning line for all regions, naming the status, the EC2 code and the count
    (line,) = spot_warnings(caplog)
    assert line.startswith(
        "aws: spot prices not fetched in 3 of 3 regions: HTTP 401 AuthFailure in 3 [eu-west-1,"
        " us-east-1, us-west-2]; the AWS keys were rejected"
    )
    assert "GPUSCOUT_AWS_ACCESS_KEY_ID" in line
    assert line.endswith("; on-demand and reserved prices kept")
    # and the run itself carries it: one skipped record per region, with the cause
    assert sorted((s.ref, s.reason) for s in outcome.skipped) == [
        (f"aws:spot/{r}", "spot prices not fetched: HTTP 401 AuthFailure" + AUTH_HINT)
        for r in sorted(REGIONS)
    ]


@pytest.mark.parametrize(
    ("failure", "reason", "calls"),
    [
        # an opt-in region the account has not enabled answers AuthFailure (see AUTH_FAILURE)
        (
            httpx.Response(401, text=AUTH_FAILURE),
            "spot prices not fetched: HTTP 401 AuthFailure" + AUTH_HINT,
            1,
        ),
        # EC2 unreachable in one region: given up on at once (a refused connection is not
        # retried)
        (
            httpx.ConnectError("[Errno 111] Connection refused"),
            "spot prices not fetched: network error on EC2: host unreachable"
            " ([Errno 111] Connection refused), not retried",
            1,
        ),
    ],
    ids=["auth-failure", "unreachable"],
)
@respx.mock
def test_spot_failing_in_one_region_keeps_the_others(
    caplog: pytest.LogCaptureFixture,
    failure: httpx.Response | Exception,
    reason: str,
    calls: int,
) -> None:
    mock_regions()
    answers = {
        "us-east-1": httpx.Response(200, text=spot_xml(("p5.48xlarge", "us-east-1a", "25.6"))),
        "eu-west-1": httpx.Response(200, text=spot_xml(("g5.xlarge", "eu-west-1b", "0.45"))),
    }

    def answer(request: httpx.Request) -> httpx.Response:
        if form_of(request)["Action"] == ["DescribeInstanceTypes"]:
            return httpx.Response(200, text=INSTANCE_TYPES_XML)
        region = region_of(request)
        if region == "us-west-2":
            if isinstance(failure, Exception):
                raise failure
            return failure
        return answers[region]

    ec2 = respx.post(url__regex=EC2_ANY_REGION).mock(side_effect=answer)
    with caplog.at_level(logging.WARNING, logger="gpuscout.adapters.aws"):
        payloads = fetch(CREDS)
    spot_calls = [region_of(r) for r in calls_for(ec2, "DescribeSpotPriceHistory")]
    assert spot_calls.count("us-west-2") == calls
    assert payloads[-1] == failed_calls_payload([FailedCall("aws:spot/us-west-2", reason)])
    result = AwsAdapter().parse(payloads, fetched_at=NOW)
    spot = sorted((label(o), o.region) for o in result.offers if o.term is RentalTerm.INTERRUPTIBLE)
    assert spot == [
        ("g5.xlarge:spot:eu-west-1b", "eu-west-1"),
        ("p5.48xlarge:spot:us-east-1a", "us-east-1"),
    ]
    assert {o.region for o in result.offers if o.term is RentalTerm.ON_DEMAND} == set(REGIONS)
    assert [(s.ref, s.reason) for s in result.skipped] == [("aws:spot/us-west-2", reason)]
    (line,) = spot_warnings(caplog)
    assert line.startswith("aws: spot prices not fetched in 1 of 3 regions: ")
    assert "in 1 [us-west-2]" in line
    assert ("region not enabled" in line) is isinstance(failure, httpx.Response)
    # EC2's free-text message is quoted nowhere (an answer's text is never shown)
    assert "AWS was not able to validate" not in line
    assert "GPUSCOUT_AWS_ACCESS_KEY_ID" not in line  # the keys work elsewhere


@respx.mock
def test_price_list_failure_still_fails_the_provider_with_keys_set() -> None:
    csv_routes = mock_regions(failing_csv="us-west-2")
    ec2 = respx.post(url__regex=EC2_ANY_REGION).mock(
        return_value=httpx.Response(200, text=spot_xml())
    )
    with pytest.raises(ProviderError, match="HTTP 500 from .*/us-west-2/index.csv"):
        fetch(CREDS)
    assert csv_routes["us-west-2"].call_count == FAST.attempts
    assert not ec2.called  # spot is not even asked without the price list
    outcome = run(CREDS)
    assert outcome.status is RunStatus.ERROR and outcome.offers == []
    assert outcome.error is not None and "us-west-2/index.csv" in outcome.error


@respx.mock
def test_spot_failures_replay_from_a_recording() -> None:
    """The failures payload is JSON, so a recorded run parses the same as a live one."""
    mock_regions()
    unauthorized = (
        "<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not "
        "authorized to perform this operation.</Message></Error></Errors>"
        "<RequestID>r-1</RequestID></Response>"
    )

    def answer(request: httpx.Request) -> httpx.Response:
        if form_of(request)["Action"] == ["DescribeInstanceTypes"]:
            return httpx.Response(200, text=INSTANCE_TYPES_XML)
        region = region_of(request)
        if region == "us-east-1":
            return httpx.Response(403, text=unauthorized)
        if region == "us-west-2":
            raise httpx.ReadTimeout("timed out")
        return httpx.Response(200, text=spot_xml(("g5.xlarge", "eu-west-1b", "0.45")))

    respx.post(url__regex=EC2_ANY_REGION).mock(side_effect=answer)
    payloads = fetch(CREDS)
    adapter = AwsAdapter()
    recorded = adapter.decode(json.dumps(payloads[-1]).encode(), "spot_failures.json")
    live = adapter.parse(payloads, fetched_at=NOW)
    replayed = adapter.parse([*payloads[:-1], recorded], fetched_at=NOW)
    assert replayed == live
    spot_skips = [
        (s.ref, s.reason) for s in replayed.skipped if (s.ref or "").startswith("aws:spot/")
    ]
    assert spot_skips == [
        (
            "aws:spot/us-east-1",
            "spot prices not fetched: HTTP 403 UnauthorizedOperation" + AUTH_HINT,
        ),
        ("aws:spot/us-west-2", "spot prices not fetched: timeout after 3 attempts: EC2"),
    ]


def test_fabric_from_describe_instance_types_network_info() -> None:
    """NetworkInfo (EC2 API reference API_NetworkInfo / API_NetworkCardInfo / API_EfaInfo):
    efaSupported -> EFA, multi-node, the cards' summed peakBandwidthInGbps."""
    offers = by_id(parse(*decoded(GPU_CSV, GPU_INFO_XML)))
    p5, p4d = offers[("p5.48xlarge", "us-east-1")], offers[("p4d.24xlarge", "us-east-1")]
    assert (p5.fabric, p5.fabric_gbps, p5.multi_node) == (Fabric.EFA, 3200, True)  # 32 x 100
    assert (p4d.fabric, p4d.fabric_gbps, p4d.multi_node) == (Fabric.EFA, 400, True)  # 4 x 100
    g5 = offers[("g5.xlarge", "us-east-1")]
    # efaSupported false: no cluster fabric stated, and fabrics.csv has no g5.xlarge row
    assert (g5.fabric, g5.fabric_gbps, g5.multi_node) == (None, None, None)


def test_fabric_the_api_states_wins_over_the_documented_table() -> None:
    xml = read(GPU_INFO_XML).decode()
    p4d_at = xml.index("<instanceType>p4d.24xlarge")
    head, p4d = xml[:p4d_at], xml[p4d_at:]
    halved = p4d.replace(
        "<peakBandwidthInGbps>100.0</peakBandwidthInGbps>",
        "<peakBandwidthInGbps>50.0</peakBandwidthInGbps>",
    )
    unknown = p4d.replace("<peakBandwidthInGbps>100.0</peakBandwidthInGbps>", "", 1)
    adapter = AwsAdapter()
    for text, gbps in ((halved, 200), (unknown, 400)):
        payload = adapter.decode((head + text).encode(), GPU_INFO_XML)
        o = by_id(parse(*decoded(GPU_CSV), payload))[("p4d.24xlarge", "us-east-1")]
        # 4 x 50 from the API; a card without a figure: the table's 400 ("4x 100 Gigabit")
        assert (o.fabric, o.fabric_gbps, o.multi_node) == (Fabric.EFA, gbps, True)


def test_without_keys_the_public_spot_feed_prices_each_gpu_type_per_region_with_its_band() -> None:
    """The recorded feed (captured 2026-08-10) priced by the price list's hardware; the Spot
    Advisor's band of each type and region rides on its offer."""
    payloads = [*decoded(GPU_CSV), json.loads(read(ADVISOR)), json.loads(read(FEED))]
    result = AwsAdapter().parse(payloads, fetched_at=NOW)
    spot = {(o.offer_id, o.region): o for o in result.offers if o.term is RentalTerm.INTERRUPTIBLE}
    p5 = spot[("p5.48xlarge", "us-east-2")]
    assert p5.price_amount == Decimal("20.3632") and p5.price_basis is PriceBasis.INSTANCE
    assert p5.price_currency == "USD" and p5.price_unit is PriceUnit.HOUR
    assert p5.gpu_count == 8 and p5.term_variant is None
    assert p5.interruption_band == "5-10%"  # r = 1 in us-east-2
    assert spot[("g6.xlarge", "us-east-2")].interruption_band == ">20%"
    assert spot[("g5.xlarge", "us-east-2")].price_amount == Decimal("0.3651")
    assert set(spot) == {
        ("g5.xlarge", "us-east-2"),
        ("g6.xlarge", "us-east-2"),
        ("p4d.24xlarge", "us-east-2"),
        ("p5.48xlarge", "us-east-2"),
    }
    # GPU types the price list does not describe are skipped, saying why; non-GPU types and
    # "N/A" (Windows) prices are not offers at all
    unknown = {s.ref for s in result.skipped}
    assert "aws:spot-feed/us-east-2/p5.4xlarge" in unknown
    assert "aws:spot-feed/af-south-1/g4dn.xlarge" in unknown
    assert not any("inf1" in (ref or "") for ref in unknown)


@respx.mock
def test_a_failed_advisor_or_feed_leaves_the_price_list_and_says_why() -> None:
    mock_price_list()
    respx.get(SPOT_FEED_URL).mock(return_value=httpx.Response(404, text="NoSuchKey"))
    respx.get(SPOT_ADVISOR_URL).mock(return_value=httpx.Response(404, text="NoSuchKey"))
    payloads = fetch()
    result = AwsAdapter().parse(payloads, fetched_at=NOW)
    assert len(result.offers) == 5  # the price list stands
    reasons = {s.ref: s.reason for s in result.skipped}
    assert reasons["aws:spot-feed"].startswith("spot-feed not fetched: HTTP 404")
    assert reasons["aws:spot-advisor"].startswith("spot-advisor not fetched: HTTP 404")


def test_a_replaced_base_url_serves_the_public_files_at_their_paths() -> None:
    adapter = AwsAdapter(base_url="http://127.0.0.1:8080/aws")
    assert adapter.public_url(SPOT_FEED_URL) == "http://127.0.0.1:8080/aws/spot.json"
    assert AwsAdapter().public_url(SPOT_FEED_URL) == SPOT_FEED_URL
