"""Alibaba Cloud ECS adapter: V3 signing, parse of the reconstructed responses, fetch via respx."""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
import respx

from gpuscout.adapters.alibaba import (
    QUERY_KEY,
    REGIONS,
    AlibabaAdapter,
    GpuFamilyHint,
    canonical_query,
    gpu_family_hints,
    percent_encode,
    region_countries,
    sign_acs3,
)
from gpuscout.adapters.base import (
    ACCOUNT_PRICE_VARIANT,
    DUPLICATE_REASON,
    FAILED_CALLS_KEY,
    FailedCall,
    MissingCredentials,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
    failed_calls_payload,
)
from gpuscout.adapters.gpus import get_gpu, resolve_gpu_name
from gpuscout.adapters.schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm, Vendor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alibaba"
NOW = datetime(2025, 9, 15, 12, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)
CREDS = {"alibaba_access_key_id": "testid", "alibaba_access_key_secret": "testsecret"}
PRICE = "ecs_describe_price_gpu.reconstructed.json"
SPOT = "ecs_describe_spot_price_history.reconstructed.json"
TYPES = "ecs_describe_instance_types_gpu.reconstructed.json"
AVAILABLE = "ecs_describe_available_resource_gpu.reconstructed.json"
GN7I = "ecs.gn7i-c8g1.2xlarge"
GN6V = "ecs.gn6v-c8g1.2xlarge"
HANGZHOU_URL = "https://ecs.cn-hangzhou.aliyuncs.com/"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def price_payload(
    response: Any, *, unit: str = "Hour", itype: str = GN7I, region: str = "cn-hangzhou"
) -> dict[str, Any]:
    query = {"Action": "DescribePrice", "RegionId": region, "InstanceType": itype}
    return {QUERY_KEY: {**query, "PriceUnit": unit}, "response": response}


def spot_payload(response: Any, *, region: str = "cn-hangzhou") -> dict[str, Any]:
    query = {"Action": "DescribeSpotPriceHistory", "RegionId": region, "InstanceType": GN7I}
    return {QUERY_KEY: query, "response": response}


def priced(trade: str, disk: str, *, original: str | None = None) -> dict[str, Any]:
    """The recorded DescribePrice response with other figures (total = trade, disk line)."""
    response = load(PRICE)
    price = response["PriceInfo"]["Price"]
    price["TradePrice"] = float(trade)
    price["OriginalPrice"] = float(original or trade)
    price["DiscountPrice"] = float(Decimal(original or trade) - Decimal(trade))
    instance_line, disk_line = price["DetailInfos"]["DetailInfo"]
    instance_line["TradePrice"] = float(Decimal(trade) - Decimal(disk))
    instance_line["OriginalPrice"] = float(Decimal(original or trade) - Decimal(disk))
    disk_line["TradePrice"] = disk_line["OriginalPrice"] = float(disk)
    return response


def parse(*payloads: Any) -> Any:
    return AlibabaAdapter().parse(list(payloads), fetched_at=NOW)


def base_payloads() -> list[Any]:
    return [load(TYPES), load(AVAILABLE), price_payload(load(PRICE)), spot_payload(load(SPOT))]


def label(o: Any) -> str:
    return o.offer_id if o.term_variant is None else f"{o.offer_id}:{o.term_variant}"


def by_term(result: Any) -> dict[tuple[str, RentalTerm], Any]:
    return {(label(o), o.term): o for o in result.offers}


# --- signing: the documented V3 worked example --------------------------------------------


def test_v3_signature_matches_the_documented_example() -> None:
    """Alibaba Cloud "Request syntax and signature method V3", fixed-value example:
    POST ecs.cn-shanghai.aliyuncs.com RunInstances 2014-05-26, query
    ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai,
    x-acs-date 2023-10-26T10:22:32Z, nonce 3156853299f313e23d1673dc12e1703d, AccessKey
    YourAccessKeyId / YourAccessKeySecret, empty body; hashed canonical request
    7ea06492da5221eba5297e897ce16e55f964061054b7695beedaac1145b1e259 and signature
    06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0
    (https://help.aliyun.com/zh/sdk/product-overview/v3-request-structure-and-signature;
    the same steps and values in the Function Compute "签名机制" page)."""
    headers = sign_acs3(
        method="POST",
        host="ecs.cn-shanghai.aliyuncs.com",
        action="RunInstances",
        version="2014-05-26",
        query={
            "RegionId": "cn-shanghai",
            "ImageId": "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd",
        },
        access_key_id="YourAccessKeyId",
        access_key_secret="YourAccessKeySecret",
        date="2023-10-26T10:22:32Z",
        nonce="3156853299f313e23d1673dc12e1703d",
    )
    assert headers["Authorization"] == (
        "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,"
        "SignedHeaders=host;x-acs-action;x-acs-content-sha256;x-acs-date;"
        "x-acs-signature-nonce;x-acs-version,"
        "Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0"
    )
    assert headers["x-acs-content-sha256"] == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert headers["x-acs-action"] == "RunInstances"
    assert headers["x-acs-version"] == "2014-05-26"


def test_signature_depends_on_every_signed_part() -> None:
    common: dict[str, Any] = {
        "method": "POST",
        "host": "ecs.cn-hangzhou.aliyuncs.com",
        "action": "DescribePrice",
        "version": "2014-05-26",
        "query": {"RegionId": "cn-hangzhou"},
        "access_key_id": "id",
        "access_key_secret": "secret",
        "date": "2025-09-15T12:00:00Z",
        "nonce": "n1",
    }
    base = sign_acs3(**common)["Authorization"]
    for change in (
        {"nonce": "n2"},
        {"query": {"RegionId": "cn-beijing"}},
        {"access_key_secret": "other"},
        {"body": b"x"},
        {"method": "GET"},
    ):
        assert sign_acs3(**{**common, **change})["Authorization"] != base, change


def test_percent_encoding_follows_the_v3_rules() -> None:
    # "space -> %20, * -> %2A, %7E -> ~"; A-Z a-z 0-9 - _ . ~ unencoded (V3 signature doc).
    assert percent_encode("a b*c~d-e_f.g") == "a%20b%2Ac~d-e_f.g"
    assert percent_encode("x/y=z&w:+") == "x%2Fy%3Dz%26w%3A%2B"
    assert percent_encode("é") == "%C3%A9"
    assert canonical_query({"b": "2", "a": "x y", "A": "1"}) == "A=1&a=x%20y&b=2"


# --- parse -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def full() -> Any:
    return parse(*base_payloads())


def test_offers_from_the_reconstructed_responses(full: Any) -> None:
    assert sorted(by_term(full)) == [
        (GN7I, RentalTerm.ON_DEMAND),
        (f"{GN7I}:cn-hangzhou-i", RentalTerm.INTERRUPTIBLE),
        (f"{GN7I}:cn-hangzhou-j", RentalTerm.INTERRUPTIBLE),
    ]
    assert full.skipped == []


def test_on_demand_is_compute_only_trade_price(full: Any) -> None:
    o = by_term(full)[(GN7I, RentalTerm.ON_DEMAND)]
    # TradePrice 11.57 for the whole order, of which the system disk is 0.03
    assert o.price_amount == Decimal("11.54")
    assert o.price_currency == "CNY"
    assert o.price_unit is PriceUnit.HOUR
    assert o.price_basis is PriceBasis.INSTANCE
    assert o.prepaid is False
    assert o.provider == "alibaba"
    assert o.offer_id == o.instance_name == GN7I
    assert (o.region, o.country) == ("cn-hangzhou", "CN")
    assert o.raw_ref == f"alibaba:cn-hangzhou/{GN7I}/Hour"
    assert o.fetched_at == NOW
    assert o.available_now is True  # Available in cn-hangzhou-i (sold out in -j)
    # 11.54 CNY at the shipped ECB rates (7.5782 CNY and 1.0411 USD per EUR)
    assert o.usd_per_hour == (Decimal("11.54") * Decimal("1.0411") / Decimal("7.5782")).quantize(
        Decimal("0.000001")
    )


def test_hardware_from_describe_instance_types(full: Any) -> None:
    o = by_term(full)[(GN7I, RentalTerm.ON_DEMAND)]
    assert (o.gpu_raw_name, o.gpu_model, o.gpu_vendor) == ("NVIDIA A10", "A10", Vendor.NVIDIA)
    assert o.gpu_form_factor is GpuFormFactor.PCIE  # from the catalog entry, not guessed
    assert o.gpu_count == 1
    assert o.gpu_memory_gb == 24  # GPUMemorySize 24 (GiB), kept as the nominal figure
    assert o.vcpus == 8
    assert o.ram_gb == pytest.approx(30 * 1.073741824)
    assert o.cpu_model == "Intel Xeon(Ice Lake) Platinum 8369B"


def test_spot_is_one_offer_per_zone(full: Any) -> None:
    offers = by_term(full)
    i = offers[(f"{GN7I}:cn-hangzhou-i", RentalTerm.INTERRUPTIBLE)]
    j = offers[(f"{GN7I}:cn-hangzhou-j", RentalTerm.INTERRUPTIBLE)]
    assert (i.price_amount, j.price_amount) == (Decimal("2.312"), Decimal("2.418"))
    assert i.price_currency == "CNY" and i.price_unit is PriceUnit.HOUR
    assert i.offer_id == GN7I and i.region == "cn-hangzhou"
    assert i.instance_name == f"{GN7I} (spot, cn-hangzhou-i)"
    assert i.billing_increment_s == 1
    assert i.available_now is None
    assert i.raw_ref == f"alibaba:spot/cn-hangzhou-i/{GN7I}"
    assert len({o.key for o in full.offers}) == len(full.offers)


def test_month_and_year_are_terms_of_the_same_configuration() -> None:
    result = parse(
        load(TYPES),
        price_payload(load(PRICE)),
        price_payload(priced("5200.00", "12.00"), unit="Month"),
        price_payload(priced("53040.00", "122.40"), unit="Year"),
    )
    offers = by_term(result)
    month = offers[(GN7I, RentalTerm.COMMIT_1MO)]
    year = offers[(GN7I, RentalTerm.COMMIT_1Y)]
    assert (month.price_amount, month.price_unit, month.prepaid) == (
        Decimal("5188.00"),
        PriceUnit.MONTH,
        True,
    )
    assert (year.price_amount, year.price_unit, year.prepaid) == (
        Decimal("52917.60"),
        PriceUnit.TERM,
        True,
    )
    assert month.instance_name == f"{GN7I} (1-month subscription)"
    assert year.instance_name == f"{GN7I} (1-year subscription)"
    assert month.available_now is None  # the stock answer was for pay-as-you-go
    assert {o.offer_id for o in result.offers} == {GN7I}
    assert {o.region for o in result.offers} == {"cn-hangzhou"}
    assert len({o.key for o in result.offers}) == 3
    # a month of 730 h and a year of 8760 h, in USD per hour
    hourly = offers[(GN7I, RentalTerm.ON_DEMAND)].usd_per_hour
    assert month.usd_per_hour < hourly and year.usd_per_hour < month.usd_per_hour


def test_list_price_is_the_offer_and_the_trade_price_an_account_price() -> None:
    """DescribePrice: ``OriginalPrice`` is the list price, ``TradePrice`` "the original price
    minus the discount" (the calling account's promotions or contract): the list price is the
    offer, a differing trade price a second offer labelled "account price"."""
    response = priced("10.57", "0.03", original="11.57")
    assert response["PriceInfo"]["Price"]["DiscountPrice"] == 1.0
    listed, quoted = parse(load(TYPES), price_payload(response)).offers
    assert (listed.price_amount, listed.term_variant) == (Decimal("11.54"), None)
    assert (quoted.price_amount, quoted.term_variant) == (Decimal("10.54"), ACCOUNT_PRICE_VARIANT)
    assert quoted.term is listed.term is RentalTerm.ON_DEMAND and quoted.key != listed.key


def test_bad_trade_price_keeps_the_list_price() -> None:
    response = priced("10.57", "0.03", original="11.57")
    response["PriceInfo"]["Price"]["TradePrice"] = "n/a"
    result = parse(load(TYPES), price_payload(response))
    assert [(o.price_amount, o.term_variant) for o in result.offers] == [(Decimal("11.54"), None)]
    assert list(result.skip_reasons()) == ["TradePrice is not a number: 'n/a'"]


def test_usd_account_keeps_its_currency() -> None:
    response = load(PRICE)
    response["PriceInfo"]["Price"]["Currency"] = "USD"
    (o,) = parse(load(TYPES), price_payload(response)).offers
    assert (o.price_currency, o.price_amount) == ("USD", Decimal("11.54"))


def test_system_disk_line_matched_in_either_spelling() -> None:
    # The ECS reference lists Resource values "InstanceType", "SystemDisk"; responses use
    # "instanceType", "systemDisk".
    response = load(PRICE)
    lines = response["PriceInfo"]["Price"]["DetailInfos"]["DetailInfo"]
    lines[0]["Resource"], lines[1]["Resource"] = "InstanceType", "SystemDisk"
    (o,) = parse(load(TYPES), price_payload(response)).offers
    assert o.price_amount == Decimal("11.54")


def test_documented_family_places_an_ambiguous_gpu_name() -> None:
    """gn6v's GPUSpec "NVIDIA V100" is SXM2 or PCIe; Alibaba's gn6v page says "SXM2-based"."""
    (o,) = parse(load(TYPES), price_payload(load(PRICE), itype=GN6V)).offers
    assert o.gpu_raw_name == "NVIDIA V100" and o.gpu_memory_gb == 16
    assert (o.gpu_model, o.gpu_vendor) == ("V100-SXM2-16GB", Vendor.NVIDIA)
    assert o.gpu_form_factor is GpuFormFactor.SXM


def _offer_of_type(**changes: Any) -> Any:
    """The one offer of the recorded gn6v DescribeInstanceTypes row with fields replaced
    (``None`` removes a field), priced by the recorded DescribePrice answer."""
    types = load(TYPES)
    rows = types["InstanceTypes"]["InstanceType"]
    row = next(r for r in rows if r["InstanceTypeId"] == GN6V)
    for key, value in changes.items():
        if value is None:
            row.pop(key, None)
        else:
            row[key] = value
    types["InstanceTypes"]["InstanceType"] = [row]
    (o,) = parse(types, price_payload(load(PRICE), itype=row["InstanceTypeId"])).offers
    return o


@pytest.mark.parametrize(
    ("itype", "family", "gpu_spec", "memory", "model"),
    [
        ("ecs.gn6e-c12g1.3xlarge", "ecs.gn6e", "NVIDIA V100", 32, "V100-SXM2-32GB"),
        ("ecs.gn7-c12g1.3xlarge", "ecs.gn7", "NVIDIA A100", 40, "A100-SXM4-40GB"),
        ("ecs.ebmgn7.26xlarge", "ecs.ebmgn7", "NVIDIA A100", 40, "A100-SXM4-40GB"),
        ("ecs.ebmgn6e.24xlarge", "ecs.ebmgn6e", "NVIDIA V100", 32, "V100-SXM2-32GB"),
        ("ecs.ebmgn6v.24xlarge", "ecs.ebmgn6v", "NVIDIA V100", 16, "V100-SXM2-16GB"),
        ("ecs.sccgn6.24xlarge", "ecs.sccgn6", "NVIDIA V100", 16, "V100-SXM2-16GB"),
        ("ecs.sccgn6e.24xlarge", "ecs.sccgn6e", "NVIDIA V100", 32, "V100-SXM2-32GB"),
    ],
)
def test_documented_families_resolve_to_their_sxm_model(
    itype: str, family: str, gpu_spec: str, memory: int, model: str
) -> None:
    o = _offer_of_type(
        InstanceTypeId=itype, InstanceTypeFamily=family, GPUSpec=gpu_spec, GPUMemorySize=memory
    )
    assert (o.gpu_model, o.gpu_raw_name, o.gpu_memory_gb) == (model, gpu_spec, memory)
    assert o.gpu_form_factor is GpuFormFactor.SXM


def test_family_hint_supplies_a_missing_memory_size() -> None:
    """ebmgn7 without GPUMemorySize: A100 40 or 80 GB; the page says "40 GB HBM2 memory"."""
    o = _offer_of_type(
        InstanceTypeId="ecs.ebmgn7.26xlarge",
        InstanceTypeFamily="ecs.ebmgn7",
        GPUSpec="NVIDIA A100",
        GPUMemorySize=None,
    )
    assert (o.gpu_model, o.gpu_memory_gb) == ("A100-SXM4-40GB", 40)


def test_family_falls_back_to_the_instance_type_prefix() -> None:
    o = _offer_of_type(InstanceTypeFamily=None)
    assert o.gpu_model == "V100-SXM2-16GB"


@pytest.mark.parametrize(
    ("itype", "family", "gpu_spec", "memory"),
    [
        # gn7e pages give 80 GB per GPU but name neither the GPU nor its form factor
        ("ecs.gn7e-c16g1.4xlarge", "ecs.gn7e", "NVIDIA A100", 80),
        ("ecs.ebmgn7ex.32xlarge", "ecs.ebmgn7ex", "NVIDIA A100", 80),
        # gn5's page says "Uses NVIDIA P100 GPUs", no form factor
        ("ecs.gn5-c4g1.xlarge", "ecs.gn5", "NVIDIA P100", 16),
        # a family this table has never heard of
        ("ecs.gn99-c8g1.2xlarge", "ecs.gn99", "NVIDIA V100", 16),
    ],
)
def test_undocumented_families_get_the_slower_variant_without_a_form_factor(
    itype: str, family: str, gpu_spec: str, memory: int
) -> None:
    """#13: a family name without its form factor is ranked as the slower (PCIe) variant,
    the form factor left unstated, never the documented families' SXM."""
    o = _offer_of_type(
        InstanceTypeId=itype, InstanceTypeFamily=family, GPUSpec=gpu_spec, GPUMemorySize=memory
    )
    assert (o.gpu_raw_name, o.gpu_memory_gb) == (gpu_spec, memory)
    assert o.gpu_model is not None and "PCIE" in o.gpu_model
    assert o.gpu_form_factor is None


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"GPUSpec": "NVIDIA P100"}, "GPUSpec names another GPU than the documented V100"),
        ({"GPUMemorySize": 32}, "32 GB contradicts the documented 16 GB per GPU"),
    ],
)
def test_family_hint_is_not_applied_to_other_hardware(changes: dict[str, Any], why: str) -> None:
    o = _offer_of_type(**changes)
    # not the hint's V100 SXM2 16 GB: the stated name's slower variant, form factor unstated
    assert o.gpu_model != "V100-SXM2-16GB" and o.gpu_form_factor is None, why


def test_family_hints_load_once_from_their_data_file() -> None:
    hints = gpu_family_hints()
    assert hints is gpu_family_hints()
    assert set(hints) == {
        "gn6v",
        "gn6e",
        "gn7",
        "ebmgn7",
        "ebmgn6e",
        "ebmgn6v",
        "sccgn6",
        "sccgn6e",
    }
    assert hints["gn6e"] == GpuFamilyHint("V100", "SXM2", 32)


def test_every_family_hint_resolves_to_its_documented_catalog_model() -> None:
    for family, hint in gpu_family_hints().items():
        spec = resolve_gpu_name(
            f"NVIDIA {hint.gpu_family}", memory_gb=hint.memory_gb, form_factor=hint.form_factor
        )
        assert spec is not None, family
        assert get_gpu(spec.name) is spec
        assert (spec.family, spec.memory_gb) == (hint.gpu_family, hint.memory_gb), family
        assert spec.form_factor is GpuFormFactor.SXM, family


def _without_breakdown() -> Any:
    response = load(PRICE)
    del response["PriceInfo"]["Price"]["DetailInfos"]
    return response


def _with_paid_line() -> Any:
    response = load(PRICE)
    lines = response["PriceInfo"]["Price"]["DetailInfos"]["DetailInfo"]
    lines.append({"Resource": "bandwidth", "OriginalPrice": 0.8, "TradePrice": 0.8})
    return response


def _bad_list_price() -> Any:
    response = load(PRICE)
    response["PriceInfo"]["Price"]["OriginalPrice"] = "n/a"
    return response


def _no_currency() -> Any:
    response = load(PRICE)
    del response["PriceInfo"]["Price"]["Currency"]
    return response


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (
            price_payload(_without_breakdown()),
            "no DetailInfos breakdown: the system disk share is unknown",
        ),
        (price_payload(_with_paid_line()), "price includes a paid 'bandwidth' line"),
        (price_payload(_bad_list_price()), "OriginalPrice is not a number: 'n/a'"),
        (price_payload(_no_currency()), "DescribePrice response without Currency"),
        (price_payload({"RequestId": "x"}), "DescribePrice response without PriceInfo.Price"),
        (
            price_payload(load(PRICE), itype="ecs.gn5-c4g1.xlarge"),
            "instance type not in DescribeInstanceTypes (hardware unknown)",
        ),
        (price_payload(load(PRICE), unit="Week"), "unknown PriceUnit 'Week'"),
        (
            price_payload(priced("0.03", "0.03")),
            "invalid price_amount: Input should be greater than 0",
        ),
    ],
)
def test_bad_price_responses_are_skipped(payload: Any, reason: str) -> None:
    result = parse(load(TYPES), payload)
    assert result.offers == []
    assert list(result.skip_reasons()) == [reason]


def test_the_same_price_twice_is_one_offer() -> None:
    result = parse(load(TYPES), price_payload(load(PRICE)), price_payload(priced("9.00", "0.10")))
    [o] = result.offers
    assert o.price_amount == Decimal("11.54")  # the first wins (the recorded one)
    assert result.skip_reasons() == {DUPLICATE_REASON: 1}


def test_spot_keeps_the_latest_price_per_zone() -> None:
    response = load(SPOT)
    rows = response["SpotPrices"]["SpotPriceType"]
    older = dict(rows[0], Timestamp="2025-09-15T07:00:00Z", SpotPrice=9.999)
    newer = dict(rows[1], Timestamp="2025-09-15T09:00:00Z", SpotPrice=2.5)
    stray = dict(rows[0], ZoneId="cn-beijing-h")
    rows.extend([older, newer, stray])
    result = parse(load(TYPES), spot_payload(response))
    prices = {o.term_variant: o.price_amount for o in result.offers}
    assert prices == {"cn-hangzhou-i": Decimal("2.312"), "cn-hangzhou-j": Decimal("2.5")}
    assert list(result.skip_reasons()) == ["zone 'cn-beijing-h' is not in region 'cn-hangzhou'"]


def test_spot_latest_over_several_pages() -> None:
    first, second = load(SPOT), load(SPOT)
    second["SpotPrices"]["SpotPriceType"] = [
        dict(
            second["SpotPrices"]["SpotPriceType"][0], Timestamp="2025-09-15T10:00:00Z", SpotPrice=3
        )
    ]
    result = parse(load(TYPES), spot_payload(first), spot_payload(second))
    prices = {o.term_variant: o.price_amount for o in result.offers}
    assert prices == {"cn-hangzhou-i": Decimal("3"), "cn-hangzhou-j": Decimal("2.418")}


def test_bad_spot_rows_are_skipped() -> None:
    response = load(SPOT)
    rows = response["SpotPrices"]["SpotPriceType"]
    rows[0]["Timestamp"] = "yesterday"
    rows[1]["SpotPrice"] = "cheap"
    result = parse(load(TYPES), spot_payload(response))
    assert result.offers == []
    assert sorted(result.skip_reasons()) == [
        "SpotPrice is not a number: 'cheap'",
        "bad spot Timestamp 'yesterday'",
    ]
    no_currency = load(SPOT)
    del no_currency["Currency"]
    result = parse(load(TYPES), spot_payload(no_currency))
    assert result.skip_reasons() == {"DescribeSpotPriceHistory response without Currency": 2}


def test_instance_types_that_are_not_whole_gpus_are_reported() -> None:
    types = load(TYPES)
    rows = types["InstanceTypes"]["InstanceType"]
    template = rows[0]
    rows.append(
        dict(template, InstanceTypeId="ecs.vgn6i-m4-vws.xlarge", InstanceTypeFamily="ecs.vgn6i-vws")
    )
    rows.append(
        dict(template, InstanceTypeId="ecs.g7.large", InstanceTypeFamily="ecs.g7", GPUAmount=0)
    )
    rows.append(dict(template, InstanceTypeId="ecs.gnx.large", GPUSpec=""))
    result = parse(types)
    assert result.offers == []
    assert {s.ref: s.reason for s in result.skipped} == {
        "alibaba:instance-type/ecs.vgn6i-m4-vws.xlarge": (
            "vGPU family (a slice of one GPU of unpublished size)"
        ),
        "alibaba:instance-type/ecs.g7.large": "no whole GPU (GPUAmount 0)",
        "alibaba:instance-type/ecs.gnx.large": "no GPUSpec",
    }


def test_recorded_failures_become_skipped_records() -> None:
    failures = {
        FAILED_CALLS_KEY: [
            {
                "ref": f"alibaba:cn-hangzhou/{GN6V}/Year",
                "reason": "DescribePrice Year failed: HTTP 400 InvalidParameter",
            },
            {
                "ref": "alibaba:us-east-1",
                "reason": "DescribeAvailableResource failed: timeout after 1 attempts: ECS",
            },
        ]
    }
    result = parse(*base_payloads(), failures)
    assert len(result.offers) == 3
    assert [(s.reason, s.ref) for s in result.skipped] == [
        (
            "DescribePrice Year failed: HTTP 400 InvalidParameter",
            f"alibaba:cn-hangzhou/{GN6V}/Year",
        ),
        ("DescribeAvailableResource failed: timeout after 1 attempts: ECS", "alibaba:us-east-1"),
    ]


@pytest.mark.parametrize(
    "payload",
    [
        None,
        [],
        "text",
        {"unexpected": 1},
        {"InstanceTypes": {"InstanceType": "x"}},
        {"AvailableZones": []},
        {QUERY_KEY: {"Action": "RunInstances"}, "response": {}},
        {QUERY_KEY: "x", "response": {}},
        {FAILED_CALLS_KEY: "x"},
        {FAILED_CALLS_KEY: [{"ref": "alibaba:cn-hangzhou"}]},
    ],
)
def test_wrong_shape_is_a_response_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_json_is_a_response_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        AlibabaAdapter().decode((FIXTURES / PRICE).read_bytes()[:100], PRICE)


# --- fetch -------------------------------------------------------------------------------


class HangzhouAdapter(AlibabaAdapter):
    regions: ClassVar[tuple[str, ...]] = ("cn-hangzhou",)


def fetch(adapter: AlibabaAdapter | None = None) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await (adapter or HangzhouAdapter(CREDS, policy=FAST)).fetch(client)

    return asyncio.run(go())


def action_of(request: httpx.Request) -> str:
    return request.headers["x-acs-action"]


def params_of(request: httpx.Request) -> dict[str, str]:
    return dict(request.url.params)


def error(status: int, code: str) -> httpx.Response:
    body = {
        "RequestId": "8CE45CD5-31FB-47C2-959D-CA8144CE0000",
        "HostId": "ecs.cn-hangzhou.aliyuncs.com",
        "Code": code,
        "Message": "message",
        "Recommend": "https://api.aliyun.com/troubleshoot?q=" + code,
    }
    return httpx.Response(status, json=body)


#: A DescribePrice answer per PriceUnit: the recorded hourly one, and a month and a year of
#: the same configuration (figures illustrative, same breakdown).
PRICE_BY_UNIT = {
    "Hour": lambda: load(PRICE),
    "Month": lambda: priced("5200.00", "12.00"),
    "Year": lambda: priced("53040.00", "122.40"),
}


def ecs(overrides: dict[tuple[str, str, str], list[httpx.Response]] | None = None) -> Any:
    """respx side effect answering by action, with queued overrides per (action, type, unit)."""
    queued = {k: list(v) for k, v in (overrides or {}).items()}

    def answer(request: httpx.Request) -> httpx.Response:
        action, params = action_of(request), params_of(request)
        key = (action, params.get("InstanceType", ""), params.get("PriceUnit", ""))
        if queued.get(key):
            return queued[key].pop(0)
        if action == "DescribeInstanceTypes":
            return httpx.Response(200, json=load(TYPES))
        if action == "DescribeAvailableResource":
            return httpx.Response(200, json=load(AVAILABLE))
        if action == "DescribePrice":
            return httpx.Response(200, json=PRICE_BY_UNIT[params["PriceUnit"]]())
        if action == "DescribeSpotPriceHistory":
            spot = load(SPOT)  # recorded for gn7i: answer for the type asked
            for row in spot["SpotPrices"]["SpotPriceType"]:
                row["InstanceType"] = params["InstanceType"]
            return httpx.Response(200, json=spot)
        return httpx.Response(404)

    return answer


def calls(route: respx.Route, action: str) -> list[httpx.Request]:
    return [c.request for c in route.calls if action_of(c.request) == action]


@respx.mock
def test_fetch_prices_every_listed_gpu_type_and_term() -> None:
    route = respx.post(HANGZHOU_URL).mock(side_effect=ecs())
    payloads = fetch()
    (types,) = calls(route, "DescribeInstanceTypes")
    assert params_of(types) == {"MinimumGPUAmount": "1", "MaxResults": "100"}
    (available,) = calls(route, "DescribeAvailableResource")
    assert params_of(available) == {
        "RegionId": "cn-hangzhou",
        "DestinationResource": "InstanceType",
        "InstanceChargeType": "PostPaid",
        "IoOptimized": "optimized",
    }
    prices = sorted(
        (params_of(r)["InstanceType"], params_of(r)["PriceUnit"])
        for r in calls(route, "DescribePrice")
    )
    # both GPU types listed in the region (gn6v although sold out); ecs.g7.large has no GPU
    assert prices == sorted((t, u) for t in (GN6V, GN7I) for u in ("Hour", "Month", "Year"))
    first = calls(route, "DescribePrice")[0]
    assert params_of(first)["ResourceType"] == "instance" and params_of(first)["Period"] == "1"
    spot = calls(route, "DescribeSpotPriceHistory")
    assert sorted(params_of(r)["InstanceType"] for r in spot) == [GN6V, GN7I]
    assert params_of(spot[0])["NetworkType"] == "vpc" and params_of(spot[0])["OSType"] == "linux"
    assert len(route.calls) == 2 + 6 + 2
    assert payloads[:2] == [load(TYPES), load(AVAILABLE)]
    assert len(payloads) == 2 + 6 + 2
    result = AlibabaAdapter().parse(payloads, fetched_at=NOW)
    terms = sorted((o.offer_id, o.term.value, o.term_variant or "") for o in result.offers)
    assert len(terms) == 2 * (3 + 2)
    assert (GN7I, "commit_1y", "") in terms and (GN6V, "interruptible", "cn-hangzhou-j") in terms
    assert result.skipped == []


@respx.mock
def test_every_request_is_signed_with_its_own_nonce() -> None:
    route = respx.post(HANGZHOU_URL).mock(side_effect=ecs())
    fetch()
    nonces = set()
    for call in route.calls:
        req = call.request
        auth = req.headers["authorization"]
        assert auth.startswith(
            "ACS3-HMAC-SHA256 Credential=testid,SignedHeaders=host;x-acs-action;"
            "x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature="
        )
        assert req.headers["x-acs-version"] == "2014-05-26"
        assert req.headers["host"] == "ecs.cn-hangzhou.aliyuncs.com"
        assert req.headers["x-acs-content-sha256"] == hashlib.sha256(b"").hexdigest()
        assert req.content == b""
        # the signature covers exactly what was sent
        expected = sign_acs3(
            method="POST",
            host="ecs.cn-hangzhou.aliyuncs.com",
            action=req.headers["x-acs-action"],
            version="2014-05-26",
            query=params_of(req),
            access_key_id="testid",
            access_key_secret="testsecret",
            date=req.headers["x-acs-date"],
            nonce=req.headers["x-acs-signature-nonce"],
        )
        assert auth == expected["Authorization"]
        nonces.add(req.headers["x-acs-signature-nonce"])
    assert len(nonces) == len(route.calls)


@respx.mock
def test_throttling_is_retried_with_a_fresh_signature() -> None:
    key = ("DescribePrice", GN7I, "Hour")
    route = respx.post(HANGZHOU_URL).mock(
        side_effect=ecs({key: [error(400, "Throttling.User"), error(503, "ServiceUnavailable")]})
    )
    payloads = fetch()
    attempts = [
        r
        for r in calls(route, "DescribePrice")
        if (params_of(r)["InstanceType"], params_of(r)["PriceUnit"]) == (GN7I, "Hour")
    ]
    assert len(attempts) == 3
    assert len({r.headers["x-acs-signature-nonce"] for r in attempts}) == 3
    assert FAILED_CALLS_KEY not in payloads[-1]


@respx.mock
def test_a_failing_call_costs_only_its_record() -> None:
    overrides = {
        ("DescribePrice", GN6V, "Year"): [error(400, "InvalidInstanceType.NotSupported")],
        ("DescribeSpotPriceHistory", GN6V, ""): [error(400, "Throttling")] * 3,
    }
    route = respx.post(HANGZHOU_URL).mock(side_effect=ecs(overrides))
    payloads = fetch()
    year_gn6v = [
        r
        for r in calls(route, "DescribePrice")
        if (params_of(r)["InstanceType"], params_of(r)["PriceUnit"]) == (GN6V, "Year")
    ]
    assert len(year_gn6v) == 1  # a client error is not retried
    assert payloads[-1] == failed_calls_payload(
        [
            FailedCall(
                f"alibaba:cn-hangzhou/{GN6V}/Year",
                "DescribePrice Year failed: HTTP 400 InvalidInstanceType.NotSupported",
            ),
            FailedCall(
                f"alibaba:cn-hangzhou/{GN6V}",
                "DescribeSpotPriceHistory failed: HTTP 400 Throttling",
            ),
        ]
    )
    result = AlibabaAdapter().parse(payloads, fetched_at=NOW)
    assert len(result.offers) == 10 - 1 - 2
    assert result.skip_reasons() == {
        "DescribePrice Year failed: HTTP 400 InvalidInstanceType.NotSupported": 1,
        "DescribeSpotPriceHistory failed: HTTP 400 Throttling": 1,
    }


@respx.mock
def test_all_price_calls_failing_fails_the_provider() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if action_of(request) in ("DescribePrice", "DescribeSpotPriceHistory"):
            return error(403, "Forbidden.RAM")
        return ecs()(request)

    respx.post(HANGZHOU_URL).mock(side_effect=answer)
    with pytest.raises(ProviderError, match=r"all 8 calls failed: HTTP 403 Forbidden\.RAM in 8 \["):
        fetch()


@respx.mock
def test_failing_region_is_a_skipped_record_when_others_work() -> None:
    class TwoRegions(AlibabaAdapter):
        regions: ClassVar[tuple[str, ...]] = ("cn-hangzhou", "us-east-1")

    respx.post(HANGZHOU_URL).mock(side_effect=ecs())
    respx.post("https://ecs.us-east-1.aliyuncs.com/").mock(
        return_value=error(400, "InvalidRegionId.NotFound")
    )
    payloads = fetch(TwoRegions(CREDS, policy=FAST))
    result = AlibabaAdapter().parse(payloads, fetched_at=NOW)
    assert len(result.offers) == 10
    assert [(s.reason, s.ref) for s in result.skipped] == [
        (
            "DescribeAvailableResource failed: HTTP 400 InvalidRegionId.NotFound",
            "alibaba:us-east-1",
        )
    ]


@respx.mock
def test_instance_types_failure_fails_the_provider() -> None:
    respx.post(HANGZHOU_URL).mock(return_value=error(400, "InvalidAccessKeyId.NotFound"))
    with pytest.raises(ProviderError, match="DescribeInstanceTypes failed: HTTP 400 InvalidAcc"):
        fetch()


@respx.mock
def test_instance_types_and_spot_are_paged() -> None:
    page1 = load(TYPES)
    page1["NextToken"] = "e71d8a535bd9cc11"
    page1["InstanceTypes"]["InstanceType"] = page1["InstanceTypes"]["InstanceType"][:1]
    page2 = load(TYPES)
    page2["InstanceTypes"]["InstanceType"] = page2["InstanceTypes"]["InstanceType"][1:]
    spot1 = load(SPOT)
    spot1["NextOffset"] = 2
    overrides = {
        ("DescribeInstanceTypes", "", ""): [
            httpx.Response(200, json=page1),
            httpx.Response(200, json=page2),
        ],
        ("DescribeSpotPriceHistory", GN7I, ""): [httpx.Response(200, json=spot1)],
    }
    route = respx.post(HANGZHOU_URL).mock(side_effect=ecs(overrides))
    payloads = fetch()
    types = calls(route, "DescribeInstanceTypes")
    assert [params_of(r).get("NextToken") for r in types] == [None, "e71d8a535bd9cc11"]
    gn7i_spot = [
        r for r in calls(route, "DescribeSpotPriceHistory") if params_of(r)["InstanceType"] == GN7I
    ]
    assert [params_of(r).get("Offset") for r in gn7i_spot] == [None, "2"]
    assert payloads[:2] == [page1, page2]
    result = AlibabaAdapter().parse(payloads, fetched_at=NOW)
    assert len(result.offers) == 10 and result.skipped == []


def test_missing_credentials_skip_the_provider() -> None:
    with pytest.raises(MissingCredentials, match="GPUSCOUT_ALIBABA_ACCESS_KEY_SECRET"):
        fetch(HangzhouAdapter({"alibaba_access_key_id": "testid"}, policy=FAST))


def test_declares_itself() -> None:
    assert AlibabaAdapter.name == "alibaba" and AlibabaAdapter.title == "Alibaba Cloud"
    assert AlibabaAdapter.credential_names == (
        "alibaba_access_key_id",
        "alibaba_access_key_secret",
    )
    assert AlibabaAdapter.regions[0] == "cn-qingdao" and "cn-hangzhou" in AlibabaAdapter.regions
    assert AlibabaAdapter.regions == REGIONS == tuple(region_countries())
    assert len(REGIONS) == 24 and region_countries()["eu-west-1"] == "GB"
