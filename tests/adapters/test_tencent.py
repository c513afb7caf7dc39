"""Tencent Cloud adapter: TC3 signing against Tencent's worked example, parsing the
DescribeZoneInstanceConfigInfos answers, fetching through respx."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
import respx

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
from gpuscout.adapters.tencent import (
    API_HOST,
    GPU_REGIONS,
    GpuFamily,
    TencentAdapter,
    gpu_families,
    region_countries,
    tc3_authorization,
    tc3_canonical_request,
    tc3_signature,
    tc3_string_to_sign,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tencent"
NOW = datetime(2026, 3, 2, 8, tzinfo=UTC)
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)
URL = f"https://{API_HOST}/"
POSTPAID = "describe_zone_instance_config_infos_postpaid_gpu.reconstructed.json"
PREPAID = "describe_zone_instance_config_infos_prepaid_gpu.reconstructed.json"
SPOTPAID = "describe_zone_instance_config_infos_spotpaid_gpu.reconstructed.json"
DOCS_EXAMPLE = "describe_zone_instance_config_infos.docs_example.verbatim.json"
CREDS = {"tencent_secret_id": "AKIDtest", "tencent_secret_key": "secret"}


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text("utf-8"))


def parse(*payloads: Any) -> Any:
    return TencentAdapter().parse(list(payloads), fetched_at=NOW)


def recorded() -> Any:
    return parse(load(POSTPAID), load(PREPAID), load(SPOTPAID))


def offer(result: Any, itype: str, zone: str, term: RentalTerm) -> Any:
    return next(
        o for o in result.offers if (o.offer_id, o.term_variant, o.term) == (itype, zone, term)
    )


def row(name: str = POSTPAID, index: int = 0, **changes: Any) -> dict[str, Any]:
    """A copy of one fixture row, with fields replaced (``None`` removes the field)."""
    item: dict[str, Any] = copy.deepcopy(load(name)["Response"]["InstanceTypeQuotaSet"][index])
    for key, value in changes.items():
        if value is None:
            item.pop(key, None)
        else:
            item[key] = value
    return item


def answer(*rows: Any) -> dict[str, Any]:
    return {"Response": {"InstanceTypeQuotaSet": list(rows), "RequestId": "r-1"}}


# --- signing: Tencent's worked example ---------------------------------------------------
#
# "Signature v3" (TC3-HMAC-SHA256), https://cloud.tencent.com/document/api/213/30654 (English:
# https://www.tencentcloud.com/document/api/213/30654), example "querying the list of CVM
# instances in the Guangzhou region": POST to cvm.tencentcloudapi.com at X-TC-Timestamp
# 1551113065 with Content-Type "application/json; charset=utf-8" and the body below; the page
# gives HashedRequestPayload 35e9c5b0..., HashedCanonicalRequest 5ffe6a04..., SecretKey
# "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE" and Signature 72e494ea... .

DOC_PAYLOAD = (
    rb'{"Limit": 1, "Filters": [{"Values": ["\u672a\u547d\u540d"], "Name": "instance-name"}]}'
)
DOC_SECRET_ID = "AKID**********************0123456789EXAMPLE"
DOC_SECRET_KEY = "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE"
DOC_TIMESTAMP = 1551113065
DOC_SIGNATURE = "72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"


def test_canonical_request_and_string_to_sign_match_the_documented_example() -> None:
    canonical = tc3_canonical_request(
        host="cvm.tencentcloudapi.com",
        content_type="application/json; charset=utf-8",
        payload=DOC_PAYLOAD,
    )
    assert canonical == (
        "POST\n/\n\ncontent-type:application/json; charset=utf-8\n"
        "host:cvm.tencentcloudapi.com\n\ncontent-type;host\n"
        "35e9c5b0e3ae67532d3c9f17ead6c90222632e5b1ff7f6e89887f1398934f064"
    )
    to_sign = tc3_string_to_sign(
        timestamp=DOC_TIMESTAMP, service="cvm", canonical_request=canonical
    )
    assert to_sign == (
        "TC3-HMAC-SHA256\n1551113065\n2019-02-25/cvm/tc3_request\n"
        "5ffe6a04c0664d6b969fab9a13bdab201d63ee709638e2749d62a09ca18d7031"
    )
    signature = tc3_signature(
        secret_key=DOC_SECRET_KEY, date="2019-02-25", service="cvm", string_to_sign=to_sign
    )
    assert signature == DOC_SIGNATURE


def test_authorization_header_matches_the_documented_example() -> None:
    header = tc3_authorization(
        secret_id=DOC_SECRET_ID,
        secret_key=DOC_SECRET_KEY,
        service="cvm",
        host="cvm.tencentcloudapi.com",
        payload=DOC_PAYLOAD,
        timestamp=DOC_TIMESTAMP,
    )
    assert header == (
        f"TC3-HMAC-SHA256 Credential={DOC_SECRET_ID}/2019-02-25/cvm/tc3_request, "
        f"SignedHeaders=content-type;host, Signature={DOC_SIGNATURE}"
    )


def test_signing_uses_the_utc_date_and_every_input() -> None:
    # 1551113065 is 2019-02-26 00:44 in UTC+8: the page warns the date must be UTC's
    assert "\n2019-02-25/cvm/" in tc3_string_to_sign(
        timestamp=DOC_TIMESTAMP, service="cvm", canonical_request=""
    )
    base = {
        "secret_id": DOC_SECRET_ID,
        "secret_key": DOC_SECRET_KEY,
        "service": "cvm",
        "host": "cvm.tencentcloudapi.com",
        "payload": DOC_PAYLOAD,
        "timestamp": DOC_TIMESTAMP,
    }
    reference = tc3_authorization(**base)  # type: ignore[arg-type]
    for key, value in [
        ("secret_key", "other"),
        ("payload", DOC_PAYLOAD + b" "),
        ("timestamp", DOC_TIMESTAMP + 1),
        ("host", "cvm.intl.tencentcloudapi.com"),
    ]:
        assert tc3_authorization(**{**base, key: value}) != reference, key  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "value"), [("secret_id", ""), ("secret_key", ""), ("host", ""), ("timestamp", -1)]
)
def test_signing_rejects_missing_inputs(key: str, value: Any) -> None:
    base: dict[str, Any] = {
        "secret_id": "id",
        "secret_key": "key",
        "service": "cvm",
        "host": API_HOST,
        "payload": b"{}",
        "timestamp": 1,
    }
    with pytest.raises(ValueError):
        tc3_authorization(**{**base, key: value})


# --- parse: the reconstructed answers ----------------------------------------------------


def test_on_demand_gn7_offer() -> None:
    o = offer(recorded(), "GN7.2XLARGE32", "ap-guangzhou-3", RentalTerm.ON_DEMAND)
    assert o.provider == "tencent"
    assert o.region == "ap-guangzhou"
    assert o.country == "CN"
    assert o.instance_name == "GN7.2XLARGE32 (GPU计算型GN7, ap-guangzhou-3)"
    assert o.raw_ref == "tencent:ap-guangzhou-3/GN7.2XLARGE32/POSTPAID_BY_HOUR"
    assert (o.gpu_model, o.gpu_raw_name, o.gpu_vendor) == ("T4", "NVIDIA Tesla T4", Vendor.NVIDIA)
    assert (o.gpu_count, o.gpu_fraction, o.gpu_memory_gb) == (1, None, 16)
    assert (o.vcpus, o.ram_gb) == (8, 32)  # Memory is documented in GB: not converted
    assert (o.cpu_model, o.cpu_vendor) == ("Intel Xeon Platinum 8255C", "intel")
    assert o.price_amount == Decimal("8.68")
    assert o.price_currency == "CNY"  # as Tencent's China site quotes it, never converted
    assert (o.price_unit, o.price_basis) == (PriceUnit.HOUR, PriceBasis.INSTANCE)
    assert o.prepaid is False
    assert o.available_now is True


def test_an_international_account_prices_in_usd() -> None:
    """The API names no currency: the setting says which site the account is on."""
    adapter = TencentAdapter({"tencent_currency": "USD"})
    result = adapter.parse([load(POSTPAID)], fetched_at=NOW)
    assert result.offers and {o.price_currency for o in result.offers} == {"USD"}
    with pytest.raises(ValueError, match="tencent_currency: CNY or USD, not 'EUR'"):
        TencentAdapter({"tencent_currency": "EUR"})


def test_the_currency_setting_reaches_the_adapter() -> None:
    from gpuscout.service.settings import Settings

    settings = Settings(_env_file=None, tencent_currency="USD")  # type: ignore[call-arg]
    assert settings.provider_credentials()["tencent_currency"] == "USD"
    assert Settings(_env_file=None).provider_credentials()["tencent_currency"] == "CNY"  # type: ignore[call-arg]


def test_terms_of_one_configuration_differ_only_in_term() -> None:
    result = recorded()
    same = [
        o
        for o in result.offers
        if (o.offer_id, o.term_variant) == ("GN7.2XLARGE32", "ap-guangzhou-3")
    ]
    terms = {o.term: (o.price_amount, o.price_unit, o.prepaid) for o in same}
    assert terms == {
        RentalTerm.ON_DEMAND: (Decimal("8.68"), PriceUnit.HOUR, False),
        RentalTerm.COMMIT_1MO: (Decimal("4050.0"), PriceUnit.MONTH, True),
        # the list prices (OriginalPrice*); the discounted ones are "account price" variants
        RentalTerm.COMMIT_1Y: (Decimal("48600.0"), PriceUnit.TERM, True),
        RentalTerm.COMMIT_3Y: (Decimal("145800.0"), PriceUnit.TERM, True),
        RentalTerm.INTERRUPTIBLE: (Decimal("1.74"), PriceUnit.HOUR, False),
    }
    assert {o.region for o in same} == {"ap-guangzhou"}
    assert len({o.key for o in same}) == len(same)
    quoted = [
        o
        for o in result.offers
        if (o.offer_id, o.term_variant) == ("GN7.2XLARGE32", "ap-guangzhou-3 (account price)")
    ]
    account = {o.term: o.price_amount for o in quoted}
    # DiscountPrice* differs from OriginalPrice* only for the long terms of this row
    assert account == {
        RentalTerm.COMMIT_1Y: Decimal("40338.0"),
        RentalTerm.COMMIT_3Y: Decimal("87480.0"),
    }
    assert account[RentalTerm.COMMIT_3Y] / 3 < account[RentalTerm.COMMIT_1Y]


def test_each_zone_is_its_own_variant_and_keys_are_unique() -> None:
    result = recorded()
    zones = {
        o.term_variant
        for o in result.offers
        if o.offer_id == "GN7.2XLARGE32" and o.term is RentalTerm.ON_DEMAND
    }
    assert zones == {"ap-guangzhou-3", "ap-guangzhou-6"}
    keys = [o.key for o in result.offers]
    assert len(keys) == len(set(keys)) == 10 + 3  # + 3 account-price variants


def test_vgpu_slice_is_a_fraction_of_one_t4() -> None:
    o = offer(recorded(), "GN7.LARGE20", "ap-guangzhou-6", RentalTerm.ON_DEMAND)
    assert (o.gpu_count, o.gpu_fraction) == (1, 0.25)
    assert o.gpu_model == "T4"
    assert o.gpu_memory_gb == 4  # the page's "4 GB vGPU"


def test_a100_sold_out_is_kept_unavailable() -> None:
    result = recorded()
    o = offer(result, "GT4.41XLARGE948", "ap-guangzhou-6", RentalTerm.ON_DEMAND)
    assert o.gpu_model == "A100-SXM4-40GB"
    assert o.gpu_form_factor is GpuFormFactor.SXM  # from the page's "A100 NVLink 40 GB"
    assert (o.gpu_count, o.gpu_memory_gb, o.vcpus, o.ram_gb) == (8, 40, 164, 948)
    assert (o.cpu_vendor, o.available_now) == ("amd", False)
    monthly = offer(result, "GT4.41XLARGE948", "ap-guangzhou-6", RentalTerm.COMMIT_1MO)
    assert monthly.price_amount == Decimal("110000.0")
    # zero yearly prices are "not offered", not free
    assert not [
        o
        for o in result.offers
        if o.offer_id == "GT4.41XLARGE948"
        and o.term
        in (
            RentalTerm.COMMIT_1Y,
            RentalTerm.COMMIT_3Y,
        )
    ]


def test_discounted_hourly_price_is_an_account_price_beside_the_list_price() -> None:
    result = recorded()
    o = offer(result, "PNV4.7XLARGE116", "ap-guangzhou-7", RentalTerm.ON_DEMAND)
    assert o.price_amount == Decimal("12.8")  # UnitPrice, the list price
    assert o.gpu_model == "A10"
    zone = f"ap-guangzhou-7 ({ACCOUNT_PRICE_VARIANT})"
    quoted = offer(result, "PNV4.7XLARGE116", zone, RentalTerm.ON_DEMAND)
    assert quoted.price_amount == Decimal("11.52")  # UnitPriceDiscount (Discount 90)
    assert quoted.key != o.key and quoted.region == o.region


def test_cpu_only_rows_are_skipped() -> None:
    result = recorded()
    assert [(s.reason, s.ref) for s in result.skipped] == [
        ("no GPU", "tencent:ap-guangzhou-3/S5.LARGE8/POSTPAID_BY_HOUR")
    ]


def test_documented_example_answer_parses() -> None:
    """Tencent's own example (a CPU type): read without error, nothing invented."""
    result = parse(load(DOCS_EXAMPLE))
    assert result.offers == []
    assert result.skip_reasons() == {"no GPU": 1}


def test_postpaid_row_with_only_prepaid_prices_is_not_guessed() -> None:
    """The documented example row says POSTPAID_BY_HOUR yet carries monthly prices (59) and
    zero hourly ones: as a GPU row it is skipped, not read as 59 an hour."""
    example = load(DOCS_EXAMPLE)["Response"]["InstanceTypeQuotaSet"][0]
    gpu_row = {**example, "GpuCount": 1, "Gpu": 1, "InstanceFamily": "GN7"}
    result = parse(answer(gpu_row))
    assert result.offers == []
    assert result.skip_reasons() == {"no hourly price (UnitPriceDiscount / UnitPrice)": 1}


@pytest.mark.parametrize(
    ("family", "itype", "type_name"),
    [
        # no Tencent page found names PNV5b's GPU
        ("PNV5b", "PNV5b.8XLARGE96", "GPU计算型PNV5b"),
        # "equipped with A100 GPUs and supports NVLink and NVSwitch": 40 or 80 GB is not said
        ("HCCPNV4h", "HCCPNV4h.48XLARGE1024", "高性能计算集群HCCPNV4h"),
    ],
)
def test_unknown_family_is_kept_without_a_model(family: str, itype: str, type_name: str) -> None:
    unknown = row(InstanceType=itype, InstanceFamily=family, TypeName=type_name)
    [o] = parse(answer(unknown)).offers
    assert (o.gpu_model, o.gpu_raw_name, o.gpu_memory_gb) == (None, type_name, None)
    assert (o.gpu_vendor, o.gpu_form_factor) == (None, None)
    assert o.gpu_count == 1
    assert o.price_amount == Decimal("8.68")


@pytest.mark.parametrize(
    ("family", "itype", "gpu_count", "model", "raw_name", "memory_gb"),
    [
        # "GPU Rendering Instance": GN7vw.4XLARGE64 "1 | 1 * 16 GB", NVIDIA Tesla T4
        ("GN7vw", "GN7vw.4XLARGE64", 1, "T4", "NVIDIA Tesla T4", 16),
        # GN7vw.LARGE16 "1/4 | 4 GB vGPU"
        ("GN7vw", "GN7vw.LARGE16", 0.25, "T4", "NVIDIA Tesla T4", 4),
        # GNV4.3XLARGE44 "1 | 24 GB", NVIDIA A10
        ("GNV4", "GNV4.3XLARGE44", 1, "A10", "NVIDIA A10", 24),
        # GNV4v.3XLARGE58 "1/2 | 12 GB vGPU", NVIDIA A10
        ("GNV4v", "GNV4v.3XLARGE58", 0.5, "A10", "NVIDIA A10", 12),
    ],
)
def test_rendering_families_get_the_documented_gpu(
    family: str, itype: str, gpu_count: float, model: str, raw_name: str, memory_gb: float
) -> None:
    rendering = row(
        InstanceType=itype,
        InstanceFamily=family,
        TypeName=f"GPU渲染型{family}",
        GpuCount=gpu_count,
        Gpu=gpu_count,
    )
    [o] = parse(answer(rendering)).offers
    assert (o.gpu_model, o.gpu_raw_name, o.gpu_vendor) == (model, raw_name, Vendor.NVIDIA)
    assert o.gpu_form_factor is GpuFormFactor.PCIE
    assert o.gpu_memory_gb == memory_gb
    assert o.gpu_count == 1
    assert o.gpu_fraction == (gpu_count if gpu_count < 1 else None)


def test_family_lookup_ignores_case_and_falls_back_to_the_type_prefix() -> None:
    [o] = parse(answer(row(InstanceFamily="gn7"))).offers
    assert o.gpu_model == "T4"
    [o] = parse(answer(row(InstanceFamily=None))).offers
    assert o.gpu_model == "T4"


def test_families_load_once_from_their_data_file() -> None:
    families = gpu_families()
    assert families is gpu_families()
    assert len(families) == 13
    assert families["GT4"] == GpuFamily("NVIDIA A100 NVLink 40 GB", 40)
    assert families["GN7vw"] == GpuFamily("NVIDIA Tesla T4", 16)


def test_every_documented_family_resolves_to_the_catalog() -> None:
    for family, gpu in gpu_families().items():
        spec = resolve_gpu_name(gpu.gpu_raw_name, memory_gb=gpu.memory_gb)
        assert spec is not None, family
        assert get_gpu(spec.name) is spec
        assert spec.memory_gb == gpu.memory_gb, family


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"GpuCount": "many"}, "GpuCount is not a number: 'many'"),
        ({"GpuCount": 1.5}, "GpuCount 1.5 is not a whole number of GPUs"),
        ({"GpuCount": None}, "no GpuCount (GPU type)"),
        ({"GpuCount": 0, "Gpu": 0}, "no GPU"),
        ({"Price": None}, "row without a Price object"),
        ({"Price": {"UnitPrice": "n/a", "ChargeUnit": "HOUR"}}, "price is not a number: "),
        ({"Price": {"UnitPrice": 0, "UnitPriceDiscount": 0}}, "no hourly price"),
        ({"Price": {"UnitPrice": 1, "ChargeUnit": "GB"}}, "hourly price with ChargeUnit 'GB'"),
        ({"InstanceChargeType": "CDHPAID"}, "billing mode 'CDHPAID' is not priced"),
        ({"InstanceChargeType": None}, "billing mode '(none)' is not priced"),
        ({"Zone": "guangzhou"}, "not a zone name: 'guangzhou'"),
        ({"InstanceType": None}, "row without InstanceType or Zone"),
        ({"Price": {"UnitPrice": 0.0001, "UnitPriceDiscount": 0.0001}}, "absurd price"),
    ],
)
def test_bad_rows_are_skipped_with_a_reason(changes: dict[str, Any], reason: str) -> None:
    result = parse(answer(row(**changes)))
    assert result.offers == []
    [skipped] = result.skipped
    assert skipped.reason.startswith(reason), skipped.reason


def test_spot_without_a_discounted_price_is_not_the_list_price() -> None:
    result = parse(answer(row(SPOTPAID, Price={"UnitPrice": 8.68, "ChargeUnit": "HOUR"})))
    assert result.offers == []
    assert result.skip_reasons() == {"no spot price (UnitPriceDiscount)": 1}


def test_prepaid_without_any_price_is_skipped() -> None:
    result = parse(answer(row(PREPAID, Price={"OriginalPrice": 0, "DiscountPrice": 0})))
    assert result.skip_reasons() == {"no prepaid price (DiscountPrice / OriginalPrice)": 1}


def test_prepaid_list_price_is_the_fallback() -> None:
    [o] = parse(answer(row(PREPAID, Price={"OriginalPrice": 4100, "DiscountPrice": None}))).offers
    assert (o.term, o.price_amount) == (RentalTerm.COMMIT_1MO, Decimal("4100"))


def test_same_type_zone_and_term_twice_is_one_offer() -> None:
    result = parse(answer(row(), row()))
    assert len(result.offers) == 1
    assert result.skip_reasons() == {DUPLICATE_REASON: 1}


def test_non_object_row_is_skipped() -> None:
    result = parse(answer("GN7.2XLARGE32", row()))
    assert len(result.offers) == 1
    assert result.skip_reasons() == {"InstanceTypeQuotaSet entry is not an object": 1}


# --- parse: errors -----------------------------------------------------------------------


def error(code: str, message: str = "msg") -> dict[str, Any]:
    return {"Response": {"Error": {"Code": code, "Message": message}, "RequestId": "r-9"}}


def test_failures_payload_becomes_grouped_skipped_records() -> None:
    spot = "SPOTPAID prices not fetched: InvalidParameterValue"
    failures = {
        FAILED_CALLS_KEY: [
            {"ref": "tencent:ap-tokyo/SPOTPAID", "reason": spot},
            {"ref": "tencent:ap-seoul/SPOTPAID", "reason": spot},
            {
                "ref": "tencent:ap-bangkok/PREPAID",
                "reason": "PREPAID prices not fetched: timeout after 3 attempts: "
                "https://cvm.tencentcloudapi.com/",
            },
        ]
    }
    result = parse(load(POSTPAID), failures)
    assert result.skip_reasons() == {
        "no GPU": 1,
        "SPOTPAID prices not fetched: InvalidParameterValue": 2,
        "PREPAID prices not fetched: timeout after 3 attempts: https://cvm.tencentcloudapi.com/": 1,
    }
    assert {s.ref for s in result.skipped if "not fetched" in s.reason} == {
        "tencent:ap-tokyo/SPOTPAID",
        "tencent:ap-seoul/SPOTPAID",
        "tencent:ap-bangkok/PREPAID",
    }


@pytest.mark.parametrize(
    "payload",
    [
        [],
        "text",
        {"Response": {}},
        {"Response": {"InstanceTypeQuotaSet": {}}},
        {"unexpected": []},
        {FAILED_CALLS_KEY: {}},
        {FAILED_CALLS_KEY: [{"ref": "tencent:ap-tokyo/SPOTPAID"}]},
    ],
)
def test_wrong_shapes_are_format_errors(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        parse(payload)


def test_truncated_file_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError):
        TencentAdapter().decode(b'{"Response": {"InstanceTypeQuo', "truncated.json")


# --- configuration -----------------------------------------------------------------------


def test_default_regions_and_countries() -> None:
    assert TencentAdapter.regions == GPU_REGIONS
    assert tuple(region_countries()) == GPU_REGIONS
    assert region_countries()["sa-saopaulo"] == "BR" and len(GPU_REGIONS) == 16
    assert {"ap-guangzhou", "ap-shanghai", "ap-beijing", "ap-singapore", "na-ashburn"} <= set(
        GPU_REGIONS
    )
    assert not [r for r in GPU_REGIONS if r.endswith("-fsi")]
    assert TencentAdapter.credential_names == ("tencent_secret_id", "tencent_secret_key")


# --- fetch -------------------------------------------------------------------------------


class TwoRegions(TencentAdapter):
    regions: ClassVar[tuple[str, ...]] = ("ap-guangzhou", "ap-tokyo")


class OneRegion(TencentAdapter):
    regions: ClassVar[tuple[str, ...]] = ("ap-guangzhou",)


def adapter(
    creds: dict[str, str | None] | None = None, cls: type[TencentAdapter] = TwoRegions
) -> Any:
    return cls(CREDS if creds is None else creds, policy=FAST, clock=lambda: DOC_TIMESTAMP)


def run_fetch(a: TencentAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await a.fetch(client)

    return asyncio.run(go())


def charge_type_of(request: httpx.Request) -> str:
    body = json.loads(request.content)
    [flt] = body["Filters"]
    assert flt["Name"] == "instance-charge-type"
    [value] = flt["Values"]
    return str(value)


FIXTURE_BY_CHARGE = {"POSTPAID_BY_HOUR": POSTPAID, "PREPAID": PREPAID, "SPOTPAID": SPOTPAID}


def tencent(overrides: dict[tuple[str, str], Any] | None = None) -> Any:
    """A fake CVM endpoint: the fixture of the asked billing mode and region, or an override
    answer (a dict, an httpx.Response, or a list of them for successive calls)."""
    overrides = dict(overrides or {})

    def answer_(request: httpx.Request) -> httpx.Response:
        key = (request.headers["X-TC-Region"], charge_type_of(request))
        chosen = overrides.get(key)
        if isinstance(chosen, list):
            chosen = chosen.pop(0)
        if isinstance(chosen, httpx.Response):
            return chosen
        if chosen is not None:
            return httpx.Response(200, json=chosen)
        # the Guangzhou fixture, its zones renamed to the asked region's
        text = (FIXTURES / FIXTURE_BY_CHARGE[key[1]]).read_text("utf-8")
        return httpx.Response(200, json=json.loads(text.replace("ap-guangzhou", key[0])))

    return answer_


@respx.mock
def test_fetch_signs_every_call_and_asks_each_region_and_billing_mode() -> None:
    route = respx.post(URL).mock(side_effect=tencent())
    payloads = run_fetch(adapter())
    assert route.call_count == 6
    asked = set()
    for call in route.calls:
        request = call.request
        asked.add((request.headers["X-TC-Region"], charge_type_of(request)))
        assert request.headers["X-TC-Action"] == "DescribeZoneInstanceConfigInfos"
        assert request.headers["X-TC-Version"] == "2017-03-12"
        assert request.headers["X-TC-Timestamp"] == str(DOC_TIMESTAMP)
        assert request.headers["Content-Type"] == "application/json; charset=utf-8"
        assert request.headers["Host"] == API_HOST
        assert request.headers["Authorization"] == tc3_authorization(
            secret_id="AKIDtest",
            secret_key="secret",
            service="cvm",
            host=API_HOST,
            payload=request.content,
            timestamp=DOC_TIMESTAMP,
        )
        assert request.headers["Authorization"].startswith(
            "TC3-HMAC-SHA256 Credential=AKIDtest/2019-02-25/cvm/tc3_request, "
        )
    assert asked == {
        (r, c)
        for r in ("ap-guangzhou", "ap-tokyo")
        for c in ("POSTPAID_BY_HOUR", "PREPAID", "SPOTPAID")
    }
    assert len(payloads) == 6
    result = TencentAdapter().parse(payloads, fetched_at=NOW)
    assert len(result.offers) == 2 * 13  # the same fixture answered for both regions
    assert result.skipped == []  # the CPU-only row was dropped in fetch


@respx.mock
def test_fetch_keeps_the_documented_shape_without_cpu_rows() -> None:
    respx.post(URL).mock(side_effect=tencent())
    payloads = run_fetch(adapter(cls=OneRegion))
    postpaid = next(
        p
        for p in payloads
        if p["Response"]["InstanceTypeQuotaSet"][0]["InstanceChargeType"] == "POSTPAID_BY_HOUR"
    )
    types = [r["InstanceType"] for r in postpaid["Response"]["InstanceTypeQuotaSet"]]
    assert "S5.LARGE8" not in types
    assert len(types) == 5
    assert postpaid["Response"]["RequestId"] == load(POSTPAID)["Response"]["RequestId"]


@respx.mock
def test_fetch_region_error_loses_only_that_region(caplog: pytest.LogCaptureFixture) -> None:
    respx.post(URL).mock(
        side_effect=tencent(
            {
                ("ap-tokyo", "SPOTPAID"): error("InvalidParameterValue", "no spot here"),
                ("ap-tokyo", "PREPAID"): httpx.Response(500),
            }
        )
    )
    with caplog.at_level(logging.WARNING, logger="gpuscout.adapters.tencent"):
        payloads = run_fetch(adapter())
    assert payloads[-1] == failed_calls_payload(
        [
            FailedCall(
                "tencent:ap-tokyo/PREPAID",
                f"PREPAID prices not fetched: HTTP 500 from {URL} after 3 attempts",
            ),
            FailedCall(
                "tencent:ap-tokyo/SPOTPAID", "SPOTPAID prices not fetched: InvalidParameterValue"
            ),
        ]
    )
    [warning] = [r.getMessage() for r in caplog.records]
    assert "2 of 6" in warning
    assert "InvalidParameterValue (no spot here) in 1 [ap-tokyo SPOTPAID]" in warning
    result = TencentAdapter().parse(payloads, fetched_at=NOW)
    assert result.skip_reasons() == {
        "SPOTPAID prices not fetched: InvalidParameterValue": 1,
        f"PREPAID prices not fetched: HTTP 500 from {URL} after 3 attempts": 1,
    }
    assert len(result.offers) == 13 + 6  # ap-guangzhou whole, ap-tokyo on-demand only


@respx.mock
def test_fetch_auth_error_fails_the_provider_naming_code_and_message() -> None:
    respx.post(URL).mock(
        side_effect=tencent(
            {("ap-tokyo", "PREPAID"): error("AuthFailure.SecretIdNotFound", "Key does not exist.")}
        )
    )
    with pytest.raises(ProviderError) as caught:
        run_fetch(adapter())
    text = str(caught.value)
    assert "AuthFailure.SecretIdNotFound: Key does not exist." in text
    assert "GPUSCOUT_TENCENT_SECRET_ID" in text
    assert "r-9" not in text  # no request id


@respx.mock
def test_fetch_fails_when_every_call_failed() -> None:
    respx.post(URL).mock(return_value=httpx.Response(200, json=error("UnsupportedRegion", "x")))
    every = r"all 6 DescribeZoneInstanceConfigInfos calls failed: UnsupportedRegion \(x\) in 6"
    with pytest.raises(ProviderError, match=every):
        run_fetch(adapter())


@respx.mock
def test_fetch_retries_the_rate_limit_with_a_fresh_signature() -> None:
    times = iter(range(DOC_TIMESTAMP, DOC_TIMESTAMP + 100))
    route = respx.post(URL).mock(
        side_effect=tencent(
            {
                ("ap-guangzhou", "POSTPAID_BY_HOUR"): [
                    error("RequestLimitExceeded", "slow down"),
                    load(POSTPAID),
                ]
            }
        )
    )
    payloads = run_fetch(OneRegion(CREDS, policy=FAST, clock=lambda: next(times)))
    assert route.call_count == 4
    assert FAILED_CALLS_KEY not in payloads[-1]
    stamps = [c.request.headers["X-TC-Timestamp"] for c in route.calls]
    assert len(set(stamps)) == 4


@respx.mock
def test_fetch_gives_up_on_a_lasting_rate_limit() -> None:
    route = respx.post(URL).mock(
        side_effect=tencent(
            {("ap-tokyo", "SPOTPAID"): [error("RequestLimitExceeded")] * FAST.attempts}
        )
    )
    payloads = run_fetch(adapter())
    assert route.call_count == 6 - 1 + FAST.attempts
    assert payloads[-1] == failed_calls_payload(
        [
            FailedCall(
                "tencent:ap-tokyo/SPOTPAID", "SPOTPAID prices not fetched: RequestLimitExceeded"
            )
        ]
    )


@respx.mock
def test_fetch_broken_answer_shape_is_a_format_error() -> None:
    respx.post(URL).mock(return_value=httpx.Response(200, json={"Response": {"RequestId": "x"}}))
    with pytest.raises(ResponseFormatError, match="InstanceTypeQuotaSet"):
        run_fetch(adapter())


def test_fetch_without_keys_is_missing_credentials() -> None:
    with pytest.raises(MissingCredentials) as caught:
        run_fetch(adapter({"tencent_secret_id": "AKIDtest", "tencent_secret_key": None}))
    assert "GPUSCOUT_TENCENT_SECRET_KEY" in str(caught.value)
