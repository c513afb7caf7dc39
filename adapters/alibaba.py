"""Alibaba Cloud ECS GPU instances: pay-as-you-go, monthly and yearly subscription, spot.

Every call is an ECS OpenAPI RPC call (version ``2014-05-26``) to the regional endpoint
``https://ecs.<region>.aliyuncs.com/`` ("Endpoints",
https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-endpoint),
signed with the V3 signature ``ACS3-HMAC-SHA256`` (:func:`sign_acs3`; "Request syntax and
signature method V3",
https://www.alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature).
It needs an AccessKey pair (settings ``alibaba_access_key_id`` and
``alibaba_access_key_secret``); there is no anonymous price API. Calls used (field names as
in the API references, help.aliyun.com document ids in brackets):

* **DescribeInstanceTypes** [25620] with ``MinimumGPUAmount=1``, paged by ``NextToken``
  (``MaxResults`` at most 100): ``InstanceTypes.InstanceType[]`` with ``InstanceTypeId``,
  ``GPUSpec`` ("NVIDIA A10"), ``GPUAmount``, ``GPUMemorySize`` (GiB per GPU),
  ``CpuCoreCount`` (vCPUs) and ``MemorySize`` (GiB). It lists every type ECS has, not what
  a region sells, so
* **DescribeAvailableResource** (``DestinationResource=InstanceType``;
  https://www.alibabacloud.com/help/en/ecs/developer-reference/
  api-ecs-2014-05-26-describeavailableresource) tells, per region, which types its zones
  list and whether any zone has them (``Status`` ``Available`` or ``SoldOut``); only those
  types are priced there, as the DescribeInstanceTypes reference advises (it describes
  types only; what a region sells is DescribeAvailableResource's answer). A type
  ``Available`` in some zone gets ``available_now=True`` on its pay-as-you-go offer.
* **DescribePrice** [107829], one call per instance type, region and ``PriceUnit``:
  ``Hour`` is the pay-as-you-go price (:attr:`RentalTerm.ON_DEMAND`, per hour), ``Month``
  and ``Year`` the subscription price of one month (:attr:`RentalTerm.COMMIT_1MO`, per
  month) and one year (:attr:`RentalTerm.COMMIT_1Y`, the whole year as one
  :attr:`PriceUnit.TERM` price). Subscriptions (``PrePaid``) are paid before use, so those
  offers are ``prepaid``. All three share ``offer_id`` = the instance type and the region,
  so the pricing engine compares the terms of one configuration.
* **DescribeSpotPriceHistory** [60400] per instance type and region (``NetworkType=vpc``,
  ``OSType=linux``, the default window of the last 3 hours, paged by ``Offset`` /
  ``NextOffset``): ``SpotPrices.SpotPriceType[]`` per zone. The latest ``SpotPrice`` of each
  zone becomes one :attr:`RentalTerm.INTERRUPTIBLE` offer with ``term_variant`` = the zone
  id (as aws.py does with availability zones); spot instances are billed per second.

GPU form factor. ``GPUSpec`` names the chip only ("NVIDIA V100", "NVIDIA A100"), which the GPU
catalog cannot place without the form factor (SXM or PCIe). :data:`GPU_FAMILY_HINTS` adds it
(and the memory per GPU) for the instance families whose own Alibaba Cloud documentation states
it; a family not listed there keeps such a GPU without a model rather than get a guessed one.

Prices. DescribePrice prices the whole instance as ordered: ``PriceInfo.Price.TradePrice``
(the transaction price, "equal to the original price minus the discount"; ``OriginalPrice``
is the list price) includes the system disk, itemised in ``DetailInfos.DetailInfo[]``
(``Resource`` ``instanceType``, ``systemDisk``...). gpuscout keeps the compute-only price:
``TradePrice`` minus the ``systemDisk`` line's ``TradePrice``; a response without that
breakdown, or with another paid line (image, bandwidth, data disk), is skipped rather than
guessed. TradePrice is after the discounts DescribePrice applies (the promotion rules in
``PriceInfo.Rules``, which may be the calling account's own). The currency is kept as returned:
``CNY`` on the China site (aliyun.com), ``USD`` on the international site. The image is the
default Linux one ("if you do not specify ImageId, the price of a Linux image is queried")
and the system disk the type's default category, since it is subtracted anyway.

Many calls: a few per instance type and region, so calls go through one concurrency gate
(:attr:`AlibabaAdapter.concurrency`). Every attempt is signed afresh: the V3 signature
carries a nonce (``x-acs-signature-nonce``) that guards against replay and must differ per
request, so the base helpers' resend of the same request is not used as is. Retries follow
the adapter's :class:`~adapters.base.RetryPolicy`, on 429/5xx, transport errors and ECS
throttling, which is an HTTP 400 with code ``Throttling`` (or ``Throttling.User``...; "400
Throttling Request was denied due to request throttling",
https://developer.aliyun.com/ask/128391). A call
that still fails costs only its instance type, region and term: fetch records it (a last
payload, :func:`~adapters.base.failed_calls_payload`) and parse reports it as a skipped
record; only when every price call failed does the provider fail.

Payloads: DescribeInstanceTypes and DescribeAvailableResource responses as returned; price
and spot responses, which do not repeat what was asked, wrapped as
``{QUERY_KEY: {"Action", "RegionId", "InstanceType", "PriceUnit"}, "response": ...}``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import logging
import re
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    FailedCall,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    failed_calls_payload,
    read_failed_calls,
    request_json,
)
from .gpus import resolve_gpu_name, spec_fields
from .schema import PriceBasis, PriceUnit, RentalTerm
from .units import gib_to_gb, nominal_gpu_memory_gb, positive, to_decimal, whole_count

__all__ = [
    "API_VERSION",
    "GPU_FAMILY_HINTS",
    "PRICE_UNITS",
    "QUERY_KEY",
    "REGIONS",
    "AlibabaAdapter",
    "GpuFamilyHint",
    "canonical_query",
    "percent_encode",
    "sign_acs3",
]

log = logging.getLogger("gpuscout.adapters.alibaba")

API_VERSION = "2014-05-26"
SIGNATURE_ALGORITHM = "ACS3-HMAC-SHA256"
ENDPOINT = "ecs.{region}.aliyuncs.com"

#: Public regions with an ECS endpoint ("Endpoints" page above), without the local regions
#: (cn-nanjing, cn-fuzhou) and the closed ap-southeast-2. Which of them sell GPU types is not
#: documented in one place; DescribeAvailableResource answers it at one call per region.
REGIONS: tuple[str, ...] = (
    "cn-qingdao",
    "cn-beijing",
    "cn-zhangjiakou",
    "cn-huhehaote",
    "cn-wulanchabu",
    "cn-hangzhou",
    "cn-shanghai",
    "cn-shenzhen",
    "cn-heyuan",
    "cn-guangzhou",
    "cn-chengdu",
    "cn-hongkong",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-southeast-1",
    "ap-southeast-3",
    "ap-southeast-5",
    "ap-southeast-6",
    "ap-southeast-7",
    "us-east-1",
    "us-west-1",
    "eu-central-1",
    "eu-west-1",
    "me-east-1",
)

#: ISO country of each region, from the region names in the docs ("Germany (Frankfurt)",
#: "UK (London)", "UAE (Dubai)"...).
COUNTRIES: Mapping[str, str] = {
    **{r: "CN" for r in REGIONS if r.startswith("cn-")},
    "cn-hongkong": "HK",
    "ap-northeast-1": "JP",
    "ap-northeast-2": "KR",
    "ap-southeast-1": "SG",
    "ap-southeast-3": "MY",
    "ap-southeast-5": "ID",
    "ap-southeast-6": "PH",
    "ap-southeast-7": "TH",
    "us-east-1": "US",
    "us-west-1": "US",
    "eu-central-1": "DE",
    "eu-west-1": "GB",
    "me-east-1": "AE",
}

#: DescribePrice ``PriceUnit`` values asked, each with ``Period=1``.
PRICE_UNITS: tuple[str, ...] = ("Hour", "Month", "Year")

#: PriceUnit -> (term, unit of the price, paid before use).
_TERMS: Mapping[str, tuple[RentalTerm, PriceUnit, bool]] = {
    "Hour": (RentalTerm.ON_DEMAND, PriceUnit.HOUR, False),
    "Month": (RentalTerm.COMMIT_1MO, PriceUnit.MONTH, True),
    "Year": (RentalTerm.COMMIT_1Y, PriceUnit.TERM, True),
}
_TERM_NAMES = {
    "Hour": "pay-as-you-go",
    "Month": "1-month subscription",
    "Year": "1-year subscription",
}

#: Key of gpuscout's own payloads (lower-case prefix: not an Alibaba response). A price or
#: spot response is stored under ``"response"`` beside the query that produced it.
QUERY_KEY = "gpuscout_query"
RESPONSE_KEY = "response"

#: Calls in flight at once, over all regions (ECS throttles per account, API and region).
CONCURRENT_CALLS = 8
#: DescribeInstanceTypes allows at most 100 entries per page.
INSTANCE_TYPES_PAGE = 100
MAX_PAGES = 50
#: Spot instances are "billed by second" (DescribeSpotPriceHistory, SpotDuration).
SPOT_BILLING_INCREMENT_S = 1

#: vGPU families rent a slice of a GPU ("vGPU-accelerated instance family: sgn7i-vws,
#: vgn7i-vws, vgn6i-vws", https://help.aliyun.com/en/eci/user-guide/
#: create-an-instance-by-specifying-the-gpu-type); the API does not say how big the slice is.
_VGPU_FAMILY = re.compile(r"^ecs\.[sv]gn")


@dataclasses.dataclass(frozen=True, slots=True)
class GpuFamilyHint:
    """What Alibaba Cloud's documentation of one instance family says its GPUs are."""

    #: GPU family of the catalog ("V100", "A100"); the hint applies only to a ``GPUSpec``
    #: that names it (a whole word of the name), so a family that changes GPUs is not mislabelled.
    gpu_family: str
    #: Form factor as the documentation states it ("SXM2", or NVSwitch-connected => "SXM").
    form_factor: str
    #: Nominal memory per GPU in GB, as documented.
    memory_gb: float


#: Instance family (``InstanceTypeFamily`` without ``ecs.``) -> the documented GPU. Only families
#: whose own Alibaba Cloud page states the form factor are listed; each entry quotes it. Sources,
#: in the AlibabaCloudDocs/ecs repository (the published help-center text, English edition):
#:
#: * [GPU-families] ``intl.en-US/Instance/Instance type families/Compute optimized type family
#:   with GPU/GPU-accelerated compute optimized instance families.md`` @3f6a3016 (code index
#:   32360205000). A current copy of the help-center page (code index 59137736427) still says
#:   of gn6v and gn6e "Uses NVIDIA V100 GPUs (SXM2-based)"; it no longer names gn7's GPU.
#: * [GPU-types] ``.../Compute optimized type family with GPU/GPU-accelerated compute optimized
#:   instance types.md`` @342402335d (code index 18134731915).
#: * [Bare-metal] ``intl.en-US/Instance/Instance type families/ECS Bare Metal Instance types/
#:   Overview.md`` @13c03167 (code index 18190343213).
#: * [SCC] ``intl.en-US/Instance/Instance type families/Super Computing Cluster instance type
#:   family/Overview.md`` @4643b3b4 (code index 32594441979); sccgn6e from another version of
#:   that page (code index 18870655488).
#:
#: NVSwitch-connected A100s are SXM4 parts (the PCIe card links at most a pair by an NVLink
#: bridge). Not listed for want of a statement: gn5 (P100, no form factor given); gn7e, ebmgn7e,
#: ebmgn7ex (80 GB per GPU, but the pages name neither the GPU nor its form factor); gn8v,
#: ebmgn8v (NVLink among eight GPUs, GPU model not named). gn6i, gn7i, gn7s, gn8is and their
#: bare-metal twins need no hint: T4, A10, A30 and L20 come in one form factor.
GPU_FAMILY_HINTS: Mapping[str, GpuFamilyHint] = {
    # [GPU-families] gn6v: "Uses NVIDIA V100 GPU computing accelerators (SXM2-based)",
    # "16 GB HBM2 GPU memory (900 GB/s bandwidth) per GPU"
    "gn6v": GpuFamilyHint("V100", "SXM2", 16),
    # [GPU-families] gn6e: "Uses NVIDIA V100 (32 GB NVLink) GPU processors", "Uses NVIDIA V100
    # GPU computing accelerators (SXM2-based)", "32 GB HBM2 GPU memory (900 GB/s bandwidth)"
    "gn6e": GpuFamilyHint("V100", "SXM2", 32),
    # [GPU-types] gn7: "Uses NVIDIA A100 GPUs. NVSwitches are used to establish connections
    # between NVIDIA A100 GPUs", "40 GB HBM2 memory per GPU"
    "gn7": GpuFamilyHint("A100", "SXM", 40),
    # [Bare-metal] ebmgn7: "Uses NVIDIA A100 GPUs. NVSwitches are used to establish connections
    # between NVIDIA A100 GPUs", "40 GB HBM2 memory per GPU"
    "ebmgn7": GpuFamilyHint("A100", "SXM", 40),
    # [Bare-metal] ebmgn6e: "Uses NVIDIA V100 (32 GB NVLink) GPUs", "Uses NVIDIA V100 GPUs
    # (SXM2-based)", "32 GB HBM2 memory per GPU (900 GB/s bandwidth)"
    "ebmgn6e": GpuFamilyHint("V100", "SXM2", 32),
    # [Bare-metal] ebmgn6v: "Uses NVIDIA V100 GPUs (SXM2-based)", "16 GB HBM2 memory per GPU"
    "ebmgn6v": GpuFamilyHint("V100", "SXM2", 16),
    # [SCC] sccgn6: "Uses NVIDIA V100 GPU accelerators (SXM2-based)", "16 GB HBM2 GPU memory"
    "sccgn6": GpuFamilyHint("V100", "SXM2", 16),
    # [SCC] sccgn6e: "Uses NVIDIA V100 GPUs (SXM2-based)", "32 GB HBM2 GPU memory"
    "sccgn6e": GpuFamilyHint("V100", "SXM2", 32),
}

#: Documented and reported memory sizes closer than this fraction are the same size.
_HINT_MEMORY_TOLERANCE = 0.10
_NAME_WORD = re.compile(r"[a-z0-9]+")
_ERROR_CODE = re.compile(r'"Code"\s*:\s*"([^"]+)"')
_HTTP_STATUS = re.compile(r"^HTTP (\d{3})\b")
_URL = re.compile(r"https://ecs\.[a-z0-9-]+\.aliyuncs\.com/")


# --- signing -----------------------------------------------------------------------------


def percent_encode(text: str) -> str:
    """RFC 3986 encoding as the V3 signature wants it: only ``A-Za-z0-9-_.~`` stay as is
    (a space is ``%20``, ``*`` is ``%2A``, ``~`` stays)."""
    return urllib.parse.quote(text, safe="-_.~")


def canonical_query(params: Mapping[str, str]) -> str:
    """The query parameters sorted by name, each name and value percent-encoded."""
    return "&".join(f"{percent_encode(k)}={percent_encode(v)}" for k, v in sorted(params.items()))


def sign_acs3(
    *,
    method: str,
    host: str,
    action: str,
    version: str,
    query: Mapping[str, str],
    access_key_id: str,
    access_key_secret: str,
    date: str,
    nonce: str,
    body: bytes = b"",
) -> dict[str, str]:
    """The headers of one request signed with ACS3-HMAC-SHA256, ``Authorization`` included.

    As the V3 signature document specifies: the canonical request is the method, the URI
    ``/`` (RPC style), the canonical query, the ``host``/``x-acs-*`` headers as ``name:value``
    lines, their names joined by ``;`` and the hex SHA-256 of the body; the string to sign is
    ``ACS3-HMAC-SHA256`` and the hex SHA-256 of the canonical request; the signature is the
    hex HMAC-SHA256 of it under the AccessKey secret. ``date`` is UTC
    ``yyyy-MM-ddTHH:mm:ssZ``; ``nonce`` must differ for every request.
    """
    payload_hash = hashlib.sha256(body).hexdigest()
    headers = {
        "host": host,
        "x-acs-action": action,
        "x-acs-content-sha256": payload_hash,
        "x-acs-date": date,
        "x-acs-signature-nonce": nonce,
        "x-acs-version": version,
    }
    names = sorted(headers)
    canonical_headers = "".join(f"{n}:{headers[n].strip()}\n" for n in names)
    signed_headers = ";".join(names)
    canonical_request = "\n".join(
        [
            method.upper(),
            "/",
            canonical_query(query),
            canonical_headers,
            signed_headers,
            payload_hash,
        ]
    )
    string_to_sign = (
        f"{SIGNATURE_ALGORITHM}\n{hashlib.sha256(canonical_request.encode()).hexdigest()}"
    )
    signature = hmac.new(
        access_key_secret.encode(), string_to_sign.encode(), hashlib.sha256
    ).hexdigest()
    headers["Authorization"] = (
        f"{SIGNATURE_ALGORITHM} Credential={access_key_id},"
        f"SignedHeaders={signed_headers},Signature={signature}"
    )
    return headers


# --- failures ----------------------------------------------------------------------------


def _error_cause(reason: str) -> str:
    """What failed, the same text in every region and without the request id.

    :func:`~adapters.base.request` reports ``HTTP <status> from <url>: <body excerpt>``; ECS
    error bodies are ``{"RequestId", "HostId", "Code", "Message", "Recommend"}`` ("Troubleshoot
    API error codes", https://help.aliyun.com/en/ecs/developer-reference/
    error-code-error-code-troubleshooting-ideas), so the excerpt holds the ``Code``.
    """
    status = _HTTP_STATUS.match(reason)
    if status is None:
        return _URL.sub("ECS", reason)
    code = _ERROR_CODE.search(reason)
    return f"HTTP {status.group(1)} {code.group(1)}" if code else f"HTTP {status.group(1)}"


def _transient(reason: str) -> bool:
    """Worth another attempt: throttled, a server error, a timeout or a network error."""
    status = _HTTP_STATUS.match(reason)
    if status is not None:
        code = _ERROR_CODE.search(reason)
        if code is not None and code.group(1).startswith(("Throttling", "ServiceUnavailable")):
            return True
        return status.group(1) == "429" or status.group(1).startswith("5")
    return reason.startswith(("timeout", "network error"))


@dataclasses.dataclass(frozen=True, slots=True)
class _Failure:
    """One call that failed after its retries."""

    action: str
    region: str
    instance_type: str
    price_unit: str
    cause: str

    @property
    def failed_call(self) -> FailedCall:
        """The skipped record parse reports: what was asked in the ref, the cause in the reason."""
        where = "/".join(p for p in (self.region, self.instance_type, self.price_unit) if p)
        what = f"{self.action} {self.price_unit}".strip()
        return FailedCall(f"alibaba:{where}", f"{what} failed: {self.cause}")


# --- hardware ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Hardware:
    """What the offers of one instance type share (DescribeInstanceTypes)."""

    gpu_count: int
    fields: Mapping[str, Any]


def _hardware(row: Mapping[str, Any]) -> _Hardware | str:
    """The hardware of one DescribeInstanceTypes entry, or why it is not priced."""
    family = str(row.get("InstanceTypeFamily") or "")
    if _VGPU_FAMILY.match(family):
        return "vGPU family (a slice of one GPU of unpublished size)"
    amount = row.get("GPUAmount")
    count = whole_count(amount)
    if count is None:
        return f"no whole GPU (GPUAmount {amount!r})"
    raw_name = str(row.get("GPUSpec") or "").strip()
    if not raw_name:
        return "no GPUSpec"
    memory_gib = positive(_float(row.get("GPUMemorySize")))
    memory = nominal_gpu_memory_gb(memory_gib) if memory_gib else None
    hint = _family_hint(row, raw_name, memory)
    if hint is not None:
        memory = memory or nominal_gpu_memory_gb(hint.memory_gb)
    spec = resolve_gpu_name(
        raw_name, memory_gb=memory, form_factor=hint.form_factor if hint else None
    )
    ram_gib = positive(_float(row.get("MemorySize")))
    processor = str(row.get("PhysicalProcessorModel") or "").strip()
    return _Hardware(
        gpu_count=count,
        fields={
            "gpu_raw_name": raw_name,
            **spec_fields(spec),
            "gpu_count": count,
            "gpu_memory_gb": memory,
            "vcpus": positive(_float(row.get("CpuCoreCount"))),
            "ram_gb": gib_to_gb(ram_gib) if ram_gib else None,
            "cpu_model": processor or None,
        },
    )


def _instance_family(row: Mapping[str, Any]) -> str:
    """``gn6v`` from ``InstanceTypeFamily`` ``ecs.gn6v``, else from ``ecs.gn6v-c8g1.2xlarge``."""
    family = str(row.get("InstanceTypeFamily") or "").strip()
    if not family:
        parts = str(row.get("InstanceTypeId") or "").strip().split(".")
        family = f"ecs.{parts[1].split('-', 1)[0]}" if len(parts) == 3 else ""
    return family.removeprefix("ecs.")


def _family_hint(
    row: Mapping[str, Any], raw_name: str, memory_gb: float | None
) -> GpuFamilyHint | None:
    """The documented GPU of the row's family, if it is the GPU the row names.

    Not applied when ``GPUSpec`` does not name the documented GPU, or when ``GPUMemorySize``
    contradicts the documented memory: the documentation then describes other hardware.
    """
    hint = GPU_FAMILY_HINTS.get(_instance_family(row))
    if hint is None or hint.gpu_family.lower() not in _NAME_WORD.findall(raw_name.lower()):
        return None
    if memory_gb is not None and abs(memory_gb - hint.memory_gb) > (
        _HINT_MEMORY_TOLERANCE * hint.memory_gb
    ):
        return None
    return hint


def _float(value: Any) -> float | None:
    try:
        dec = to_decimal(value)
    except ValueError:
        return None
    return None if dec is None else float(dec)


def _instance_type_rows(payload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    box = payload.get("InstanceTypes")
    rows = box.get("InstanceType") if isinstance(box, Mapping) else None
    if not isinstance(rows, list):
        raise ResponseFormatError(
            AlibabaAdapter.name, "DescribeInstanceTypes: 'InstanceTypes.InstanceType' is not a list"
        )
    return [r for r in rows if isinstance(r, Mapping)]


def _listed_types(payload: Mapping[str, Any]) -> dict[tuple[str, str], bool]:
    """(region, instance type) -> whether any zone has it ``Available`` (else ``SoldOut``).

    Shape: ``AvailableZones.AvailableZone[{RegionId, ZoneId, AvailableResources.
    AvailableResource[{Type, SupportedResources.SupportedResource[{Value, Status}]}]}]``.
    """
    box = payload.get("AvailableZones")
    zones = box.get("AvailableZone") if isinstance(box, Mapping) else None
    if not isinstance(zones, list):
        raise ResponseFormatError(
            AlibabaAdapter.name,
            "DescribeAvailableResource: 'AvailableZones.AvailableZone' is not a list",
        )
    out: dict[tuple[str, str], bool] = {}
    for zone in zones:
        if not isinstance(zone, Mapping):
            continue
        region = str(zone.get("RegionId") or "")
        resources = _list_at(zone, "AvailableResources", "AvailableResource")
        for resource in resources:
            if resource.get("Type") != "InstanceType":
                continue
            for item in _list_at(resource, "SupportedResources", "SupportedResource"):
                value = str(item.get("Value") or "")
                if region and value:
                    key = (region, value)
                    out[key] = out.get(key, False) or item.get("Status") == "Available"
    return out


def _list_at(obj: Mapping[str, Any], outer: str, inner: str) -> list[Mapping[str, Any]]:
    box = obj.get(outer)
    items = box.get(inner) if isinstance(box, Mapping) else None
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


# --- the adapter -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Credentials:
    key_id: str
    secret: str


class AlibabaAdapter(Adapter):
    """ECS GPU instance types priced per region: pay-as-you-go, subscriptions and spot."""

    name: ClassVar[str] = "alibaba"
    title: ClassVar[str] = "Alibaba Cloud"
    source_url: ClassVar[str] = "https://ecs.aliyuncs.com/?Action=DescribePrice"
    credential_names: ClassVar[tuple[str, ...]] = (
        "alibaba_access_key_id",
        "alibaba_access_key_secret",
    )
    #: Regions asked (override to narrow a run); the first also answers DescribeInstanceTypes.
    regions: ClassVar[tuple[str, ...]] = REGIONS
    #: DescribePrice price units asked for every instance type and region.
    price_units: ClassVar[tuple[str, ...]] = PRICE_UNITS
    #: Calls in flight at once.
    concurrency: ClassVar[int] = CONCURRENT_CALLS

    # fetch -------------------------------------------------------------------------------
    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Instance types, then per region what it lists, then prices and spot per type.

        A failing DescribeInstanceTypes fails the provider (nothing could be named); a
        failing region or price call only costs its records. If every call after the
        instance types failed, the provider fails with the commonest cause.
        """
        keys = self.require_credentials()
        creds = _Credentials(keys["alibaba_access_key_id"], keys["alibaba_access_key_secret"])
        if not self.regions:
            raise ProviderError(self.name, "no regions configured")
        gate = asyncio.Semaphore(self.concurrency)
        type_pages = await self._instance_types(client, creds, gate)
        gpu_types = {
            str(row.get("InstanceTypeId") or "")
            for page in type_pages
            for row in _instance_type_rows(page)
            if not isinstance(_hardware(row), str)
        }
        gpu_types.discard("")
        payloads: list[Any] = list(type_pages)
        failures: list[_Failure] = []

        async def region_types(region: str) -> tuple[Any, list[str]] | _Failure:
            try:
                answer = await self._call(
                    client,
                    creds,
                    gate,
                    region,
                    "DescribeAvailableResource",
                    {
                        "RegionId": region,
                        "DestinationResource": "InstanceType",
                        "InstanceChargeType": "PostPaid",
                        "IoOptimized": "optimized",
                    },
                )
                found = _listed_types(answer) if isinstance(answer, Mapping) else None
                if found is None:
                    raise ResponseFormatError(self.name, "DescribeAvailableResource: not an object")
            except ProviderError as exc:
                cause = _error_cause(exc.reason)
                return _Failure("DescribeAvailableResource", region, "", "", cause)
            return answer, sorted({t for (r, t) in found if r == region and t in gpu_types})

        listed: list[list[str]] = []
        for outcome in await asyncio.gather(*(region_types(r) for r in self.regions)):
            if isinstance(outcome, _Failure):
                failures.append(outcome)
                listed.append([])
            else:
                payloads.append(outcome[0])
                listed.append(outcome[1])
        jobs = [
            (region, itype, unit)
            for region, types in zip(self.regions, listed, strict=True)
            for itype in types
            for unit in (*self.price_units, "")  # "" = spot
        ]

        async def one(region: str, itype: str, unit: str) -> list[Any] | _Failure:
            action = "DescribePrice" if unit else "DescribeSpotPriceHistory"
            try:
                if unit:
                    return [await self._price(client, creds, gate, region, itype, unit)]
                return await self._spot(client, creds, gate, region, itype)
            except ProviderError as exc:
                return _Failure(action, region, itype, unit, _error_cause(exc.reason))

        outcomes = await asyncio.gather(*(one(*job) for job in jobs))
        priced = [p for o in outcomes if isinstance(o, list) for p in o]
        failures.extend(o for o in outcomes if isinstance(o, _Failure))
        if failures and not priced:
            causes = Counter(f.cause for f in failures)
            summary = "; ".join(f"{cause} ({n})" for cause, n in causes.most_common(3))
            raise ProviderError(self.name, f"all {len(failures)} calls failed: {summary}")
        payloads.extend(priced)
        if failures:
            log.warning(
                "alibaba: %d of %d calls failed (kept as skipped records)",
                len(failures),
                len(jobs) + len(self.regions),
            )
            payloads.append(failed_calls_payload([f.failed_call for f in failures]))
        return payloads

    async def _instance_types(
        self, client: httpx.AsyncClient, creds: _Credentials, gate: asyncio.Semaphore
    ) -> list[Any]:
        region = self.regions[0]
        pages: list[Any] = []
        token = ""
        for _ in range(MAX_PAGES):
            params = {"MinimumGPUAmount": "1", "MaxResults": str(INSTANCE_TYPES_PAGE)}
            if token:
                params["NextToken"] = token
            try:
                page = await self._call(
                    client, creds, gate, region, "DescribeInstanceTypes", params
                )
            except ProviderError as exc:
                raise ProviderError(
                    self.name,
                    f"DescribeInstanceTypes failed: {_error_cause(exc.reason)} (check "
                    "GPUSCOUT_ALIBABA_ACCESS_KEY_ID / GPUSCOUT_ALIBABA_ACCESS_KEY_SECRET and "
                    "the key's ecs:Describe* permissions)",
                ) from None
            if not isinstance(page, Mapping):
                raise ResponseFormatError(self.name, "DescribeInstanceTypes: not a JSON object")
            _instance_type_rows(page)  # the shape is checked before anything is priced
            pages.append(page)
            token = str(page.get("NextToken") or "")
            if not token:
                return pages
        raise ProviderError(self.name, f"DescribeInstanceTypes: more than {MAX_PAGES} pages")

    async def _price(
        self,
        client: httpx.AsyncClient,
        creds: _Credentials,
        gate: asyncio.Semaphore,
        region: str,
        itype: str,
        unit: str,
    ) -> dict[str, Any]:
        query = {
            "RegionId": region,
            "ResourceType": "instance",
            "InstanceType": itype,
            "PriceUnit": unit,
            "Period": "1",
        }
        response = await self._call(client, creds, gate, region, "DescribePrice", query)
        return {
            QUERY_KEY: {
                "Action": "DescribePrice",
                "RegionId": region,
                "InstanceType": itype,
                "PriceUnit": unit,
            },
            RESPONSE_KEY: response,
        }

    async def _spot(
        self,
        client: httpx.AsyncClient,
        creds: _Credentials,
        gate: asyncio.Semaphore,
        region: str,
        itype: str,
    ) -> list[Any]:
        """All pages; the type counts whole (a failed later page drops the earlier ones)."""
        query = {
            "RegionId": region,
            "InstanceType": itype,
            "NetworkType": "vpc",
            "OSType": "linux",
        }
        pages: list[Any] = []
        offset = 0
        for _ in range(MAX_PAGES):
            params = dict(query, Offset=str(offset)) if offset else query
            page = await self._call(client, creds, gate, region, "DescribeSpotPriceHistory", params)
            pages.append(
                {
                    QUERY_KEY: {
                        "Action": "DescribeSpotPriceHistory",
                        "RegionId": region,
                        "InstanceType": itype,
                    },
                    RESPONSE_KEY: page,
                }
            )
            rows = (
                _list_at(page, "SpotPrices", "SpotPriceType") if isinstance(page, Mapping) else []
            )
            following = whole_count(page.get("NextOffset")) if isinstance(page, Mapping) else None
            if not rows or following is None or following <= offset:
                return pages
            offset = following
        raise ProviderError(self.name, f"DescribeSpotPriceHistory: more than {MAX_PAGES} pages")

    async def _call(
        self,
        client: httpx.AsyncClient,
        creds: _Credentials,
        gate: asyncio.Semaphore,
        region: str,
        action: str,
        params: Mapping[str, str],
    ) -> Any:
        """One signed RPC call (POST, parameters in the query, empty body), with retries.

        Each attempt is one :func:`request_json` without its own retries, signed afresh
        with a new nonce and date (a resent request would repeat the nonce).
        """
        host = ENDPOINT.format(region=region)
        url = f"https://{host}/?{canonical_query(params)}"
        once = dataclasses.replace(self.policy, attempts=1)
        attempts = max(1, self.policy.attempts)
        for attempt in range(1, attempts + 1):
            headers = sign_acs3(
                method="POST",
                host=host,
                action=action,
                version=API_VERSION,
                query=params,
                access_key_id=creds.key_id,
                access_key_secret=creds.secret,
                date=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                nonce=uuid.uuid4().hex,
            )
            try:
                async with gate:
                    return await request_json(
                        client, "POST", url, provider=self.name, policy=once, headers=headers
                    )
            except ProviderError as exc:
                if attempt == attempts or not _transient(exc.reason):
                    raise
            wait = self.policy.base_wait_s * 2 ** (attempt - 1)
            await asyncio.sleep(min(wait, self.policy.max_wait_s))
        raise AssertionError("unreachable")  # pragma: no cover

    # parse -------------------------------------------------------------------------------
    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        hardware: dict[str, _Hardware] = {}
        rejected: dict[str, str] = {}
        available: dict[tuple[str, str], bool] = {}
        prices: list[tuple[Mapping[str, Any], Any]] = []
        spots: list[tuple[Mapping[str, Any], Any]] = []
        failed: list[FailedCall] = []
        for payload in payloads:
            if (calls := read_failed_calls(payload, self.name)) is not None:
                failed.extend(calls)
                continue
            if not isinstance(payload, Mapping):
                raise ResponseFormatError(
                    self.name, f"expected a JSON object, got {type(payload).__name__}"
                )
            if "InstanceTypes" in payload:
                for row in _instance_type_rows(payload):
                    itype = str(row.get("InstanceTypeId") or "")
                    hw = _hardware(row)
                    if isinstance(hw, str):
                        rejected[itype] = hw
                    elif itype:
                        hardware[itype] = hw
            elif "AvailableZones" in payload:
                available.update(_listed_types(payload))
            elif QUERY_KEY in payload:
                query = payload[QUERY_KEY]
                if not isinstance(query, Mapping) or RESPONSE_KEY not in payload:
                    raise ResponseFormatError(self.name, f"bad {QUERY_KEY} payload")
                action = query.get("Action")
                if action == "DescribePrice":
                    prices.append((query, payload[RESPONSE_KEY]))
                elif action == "DescribeSpotPriceHistory":
                    spots.append((query, payload[RESPONSE_KEY]))
                else:
                    raise ResponseFormatError(self.name, f"unknown query action {action!r}")
            elif "PriceInfo" in payload or "SpotPrices" in payload:
                raise ResponseFormatError(
                    self.name,
                    "a price response without its query (instance type, region): "
                    f"wrap it as {{{QUERY_KEY!r}: ..., {RESPONSE_KEY!r}: ...}}",
                )
            elif "Code" in payload and "Message" in payload:
                raise ProviderError(self.name, f"API error {payload['Code']}: {payload['Message']}")
            else:
                keys = ", ".join(sorted(map(str, payload))[:6])
                raise ResponseFormatError(self.name, f"unknown payload with keys {keys}")
        result = ParseResult()
        builder = _OfferBuilder(self.name, fetched_at, result, hardware, available)
        for itype, reason in sorted(rejected.items()):
            result.skip(reason, f"alibaba:instance-type/{itype}")
        for query, response in prices:
            builder.price(query, response)
        builder.spot(spots)
        result.skip_failed(failed)
        return result


class _OfferBuilder:
    """Turns price and spot responses into offers (one per type, region, term, zone)."""

    def __init__(
        self,
        provider: str,
        fetched_at: datetime,
        result: ParseResult,
        hardware: Mapping[str, _Hardware],
        available: Mapping[tuple[str, str], bool],
    ) -> None:
        self.provider = provider
        self.fetched_at = fetched_at
        self.result = result
        self.hardware = hardware
        self.available = available
        self.seen: set[tuple[str, str, str, str]] = set()

    def price(self, query: Mapping[str, Any], response: Any) -> None:
        region = str(query.get("RegionId") or "")
        itype = str(query.get("InstanceType") or "")
        unit = str(query.get("PriceUnit") or "")
        ref = f"alibaba:{region}/{itype}/{unit}"
        if unit not in _TERMS:
            self.result.skip(f"unknown PriceUnit {unit!r}", ref)
            return
        hw = self._hw(itype, ref)
        if hw is None:
            return
        info = response.get("PriceInfo") if isinstance(response, Mapping) else None
        price = info.get("Price") if isinstance(info, Mapping) else None
        if not isinstance(price, Mapping):
            self.result.skip("DescribePrice response without PriceInfo.Price", ref)
            return
        amount = self._compute_only(price, ref)
        currency = str(price.get("Currency") or "")
        if amount is None:
            return
        if not currency:
            self.result.skip("DescribePrice response without Currency", ref)
            return
        term, price_unit, prepaid = _TERMS[unit]
        self._add(
            ref,
            hw,
            offer_id=itype,
            instance_name=itype if unit == "Hour" else f"{itype} ({_TERM_NAMES[unit]})",
            region=region,
            price=amount,
            currency=currency,
            unit=price_unit,
            term=term,
            prepaid=prepaid,
            available_now=self.available.get((region, itype)) if unit == "Hour" else None,
        )

    def _compute_only(self, price: Mapping[str, Any], ref: str) -> Decimal | None:
        """``TradePrice`` less the system disk's line; ``None`` (skipped) if not itemised."""
        try:
            total = to_decimal(price.get("TradePrice"))
        except ValueError:
            total = None
        if total is None:
            self.result.skip(f"TradePrice is not a number: {price.get('TradePrice')!r}", ref)
            return None
        lines = _list_at(price, "DetailInfos", "DetailInfo")
        if not lines:
            self.result.skip("no DetailInfos breakdown: the system disk share is unknown", ref)
            return None
        disk = Decimal(0)
        for line in lines:
            resource = str(line.get("Resource") or "").lower()
            try:
                trade = to_decimal(line.get("TradePrice")) or Decimal(0)
            except ValueError:
                self.result.skip(f"DetailInfo {resource!r} TradePrice is not a number", ref)
                return None
            if resource == "systemdisk":
                disk += trade
            elif resource not in ("instancetype", "instance") and trade != 0:
                self.result.skip(f"price includes a paid {resource!r} line", ref)
                return None
        return total - disk

    def spot(self, responses: Iterable[tuple[Mapping[str, Any], Any]]) -> None:
        """The latest price per instance type and zone, over all pages."""
        latest: dict[tuple[str, str, str], tuple[datetime, Any, str]] = {}
        for query, response in responses:
            region = str(query.get("RegionId") or "")
            if not isinstance(response, Mapping):
                self.result.skip("DescribeSpotPriceHistory response is not an object", None)
                continue
            currency = str(response.get("Currency") or "")
            for row in _list_at(response, "SpotPrices", "SpotPriceType"):
                itype = str(row.get("InstanceType") or query.get("InstanceType") or "")
                zone = str(row.get("ZoneId") or "")
                ref = f"alibaba:spot/{zone or region}/{itype}"
                if not zone.startswith(region) or len(zone) == len(region):
                    self.result.skip(f"zone {zone!r} is not in region {region!r}", ref)
                    continue
                try:
                    when = datetime.fromisoformat(str(row.get("Timestamp") or ""))
                except ValueError:
                    self.result.skip(f"bad spot Timestamp {row.get('Timestamp')!r}", ref)
                    continue
                if when.tzinfo is None:  # ECS timestamps are UTC
                    when = when.replace(tzinfo=UTC)
                key = (region, itype, zone)
                if key not in latest or when > latest[key][0]:
                    latest[key] = (when, row.get("SpotPrice"), currency)
        for (region, itype, zone), (_, raw_price, currency) in sorted(latest.items()):
            ref = f"alibaba:spot/{zone}/{itype}"
            hw = self._hw(itype, ref)
            if hw is None:
                continue
            try:
                price = to_decimal(raw_price)
            except ValueError:
                price = None
            if price is None:
                self.result.skip(f"SpotPrice is not a number: {raw_price!r}", ref)
                continue
            if not currency:
                self.result.skip("DescribeSpotPriceHistory response without Currency", ref)
                continue
            self._add(
                ref,
                hw,
                offer_id=itype,
                term_variant=zone,
                instance_name=f"{itype} (spot, {zone})",
                region=region,
                price=price,
                currency=currency,
                unit=PriceUnit.HOUR,
                term=RentalTerm.INTERRUPTIBLE,
                prepaid=False,
                billing_increment_s=SPOT_BILLING_INCREMENT_S,
            )

    def _hw(self, itype: str, ref: str) -> _Hardware | None:
        hw = self.hardware.get(itype)
        if hw is None:
            self.result.skip("instance type not in DescribeInstanceTypes (hardware unknown)", ref)
        return hw

    def _add(
        self,
        ref: str,
        hw: _Hardware,
        *,
        offer_id: str,
        instance_name: str,
        region: str,
        price: Decimal,
        currency: str,
        unit: PriceUnit,
        term: RentalTerm,
        prepaid: bool,
        term_variant: str | None = None,
        available_now: bool | None = None,
        billing_increment_s: int | None = None,
    ) -> None:
        key = (offer_id, region, term.value, term_variant or "")
        if key in self.seen:
            self.result.skip("duplicate price for the same instance, region and term", ref)
            return
        offer = self.result.add(
            ref,
            provider=self.provider,
            offer_id=offer_id,
            term_variant=term_variant,
            instance_name=instance_name,
            region=region or None,
            country=COUNTRIES.get(region),
            fetched_at=self.fetched_at,
            raw_ref=ref,
            **hw.fields,
            price_amount=price,
            price_currency=currency,
            price_unit=unit,
            price_basis=PriceBasis.INSTANCE,
            term=term,
            prepaid=prepaid,
            billing_increment_s=billing_increment_s,
            available_now=available_now,
        )
        if offer is not None:
            self.seen.add(key)


ADAPTER = AlibabaAdapter
