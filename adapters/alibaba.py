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
catalog cannot place without the form factor (SXM or PCIe). :func:`gpu_family_hints` adds it
(and the memory per GPU) for the instance families whose own Alibaba Cloud documentation states
it, from ``data/alibaba_gpu_families.toml`` (each row quotes its page); a family not listed
there keeps such a GPU without a model rather than get a guessed one.

Prices. DescribePrice prices the whole instance as ordered: ``PriceInfo.Price.OriginalPrice``
(the list price) and ``TradePrice`` (the transaction price, "equal to the original price
minus the discount") include the system disk, itemised in ``DetailInfos.DetailInfo[]``
(``Resource`` ``instanceType``, ``systemDisk``...). gpuscout keeps the compute-only price:
the total minus the ``systemDisk`` line's; a response without that breakdown, or with another
paid line (image, bandwidth, data disk), is skipped rather than guessed. The offer is the
list price (``OriginalPrice``): TradePrice is after the discounts DescribePrice applies (the
promotion rules in ``PriceInfo.Rules``), which may be the calling account's own. Where
TradePrice differs, it is a second offer with ``term_variant="account price"``
(:data:`~adapters.base.ACCOUNT_PRICE_VARIANT`), so an answer ranked on it says so. The
currency is kept as returned: ``CNY`` on the China site (aliyun.com), ``USD`` on the
international site. The image is the default Linux one ("if you do not specify ImageId,
the price of a Linux image is queried") and the system disk the type's default category,
since it is subtracted anyway.

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
and spot responses, which do not repeat what was asked, wrapped by
:func:`~adapters.units.query_payload` with ``{"Action", "RegionId", "InstanceType",
"PriceUnit"}``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import hmac
import re
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import (
    ACCOUNT_PRICE_VARIANT,
    Adapter,
    FailedCall,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    gpu_fields,
    price_fields,
    request_json,
    unreachable,
)
from .calls import (
    QUERY_KEY,
    CallFailure,
    error_code,
    failure_cause,
    fresh_retries,
    http_status,
    keep_failures,
    query_payload,
    read_query_payload,
)
from .schema import OfferFields, PriceBasis, PriceUnit, RentalTerm
from .tables import sourced_rows, typed_row
from .units import (
    gib_to_gb,
    lenient_decimal,
    nominal_gpu_memory_gb,
    nominal_memory_gb,
    positive_quantity,
    to_decimal,
    value_at,
    whole_count,
)

__all__ = [
    "API_VERSION",
    "PRICE_UNITS",
    "QUERY_KEY",
    "REGIONS",
    "AlibabaAdapter",
    "GpuFamilyHint",
    "canonical_query",
    "gpu_family_hints",
    "percent_encode",
    "region_countries",
    "sign_acs3",
]

API_VERSION = "2014-05-26"
SIGNATURE_ALGORITHM = "ACS3-HMAC-SHA256"
ENDPOINT = "ecs.{region}.aliyuncs.com"


@functools.cache
def region_countries() -> Mapping[str, str]:
    """Region -> ISO country of the regions asked, read from ``data/alibaba_regions.toml``
    (why these regions, and the source, there) on first use."""
    return {row["region"]: row["country"] for row in sourced_rows("alibaba_regions.toml", "region")}


#: Regions asked by default, in the data file's order.
REGIONS: tuple[str, ...] = tuple(region_countries())

#: DescribePrice ``PriceUnit`` values asked, each with ``Period=1``.
PRICE_UNITS: tuple[str, ...] = ("Hour", "Month", "Year")

#: PriceUnit -> (term, unit of the price, paid before use, the term in the instance name).
_TERMS: Mapping[str, tuple[RentalTerm, PriceUnit, bool, str]] = {
    "Hour": (RentalTerm.ON_DEMAND, PriceUnit.HOUR, False, "pay-as-you-go"),
    "Month": (RentalTerm.COMMIT_1MO, PriceUnit.MONTH, True, "1-month subscription"),
    "Year": (RentalTerm.COMMIT_1Y, PriceUnit.TERM, True, "1-year subscription"),
}

#: DescribeInstanceTypes allows at most 100 entries per page.
INSTANCE_TYPES_PAGE = 100
MAX_PAGES = 50
#: Spot instances are "billed by second" (DescribeSpotPriceHistory, SpotDuration).
SPOT_BILLING_INCREMENT_S = 1

#: vGPU families rent a slice of a GPU ("vGPU-accelerated instance family: sgn7i-vws,
#: vgn7i-vws, vgn6i-vws", https://help.aliyun.com/en/eci/user-guide/
#: create-an-instance-by-specifying-the-gpu-type); the API does not say how big the slice is.
_VGPU_FAMILY = re.compile(r"^ecs\.[sv]gn")

#: One signed ECS call of a fetch: ``(region, action, parameters) -> decoded answer``.
_Call = Callable[[str, str, Mapping[str, str]], Awaitable[Any]]


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


@functools.cache
def gpu_family_hints() -> Mapping[str, GpuFamilyHint]:
    """Instance family (``InstanceTypeFamily`` without ``ecs.``) -> the documented GPU, read
    from ``data/alibaba_gpu_families.toml`` (sources and quotes there) on first use."""
    rows = sourced_rows("alibaba_gpu_families.toml", "family")
    return {row["family"]: typed_row(GpuFamilyHint, row) for row in rows}


#: Documented and reported memory sizes closer than this fraction are the same size.
_HINT_MEMORY_TOLERANCE = 0.10
_NAME_WORD = re.compile(r"[a-z0-9]+")


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


def _transient(exc: BaseException) -> bool:
    """Worth another attempt: throttled, a server error, a timeout or a network error, but
    not a host that cannot be reached (:func:`~adapters.base.unreachable`).

    ECS error bodies are ``{"RequestId", "HostId", "Code", "Message", "Recommend"}``
    ("Troubleshoot API error codes", https://help.aliyun.com/en/ecs/developer-reference/
    error-code-error-code-troubleshooting-ideas), so the failure's body excerpt holds the
    ``Code``; throttling is an HTTP 400 with code ``Throttling`` (or ``Throttling.User``...).
    """
    if not isinstance(exc, ProviderError):
        return False
    status = http_status(exc.reason)
    if status is None:
        return exc.reason.startswith(("timeout", "network error")) and not unreachable(exc.reason)
    code = error_code(exc.reason) or ""
    return code.startswith(("Throttling", "ServiceUnavailable")) or status == 429 or status >= 500


def _failure(action: str, reason: str, region: str, itype: str = "", unit: str = "") -> CallFailure:
    """A call that failed after its retries: what was asked in the ref, the cause in the reason
    (``HTTP 400 InvalidParameter``: the ECS ``Code``, no request id)."""
    place = "/".join(p for p in (region, itype, unit) if p)
    cause = failure_cause(reason)
    failed = FailedCall(f"alibaba:{place}", f"{f'{action} {unit}'.strip()} failed: {cause}")
    return CallFailure(failed, cause, place)


# --- hardware ----------------------------------------------------------------------------


def _hardware(row: Mapping[str, Any]) -> OfferFields | str:
    """The hardware fields of one DescribeInstanceTypes entry, or why it is not priced."""
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
    memory = nominal_memory_gb(row.get("GPUMemorySize"))
    hint = _family_hint(row, raw_name, memory)
    if hint is not None:
        memory = memory or nominal_gpu_memory_gb(hint.memory_gb)
    ram_gib = positive_quantity(row.get("MemorySize"))
    processor = str(row.get("PhysicalProcessorModel") or "").strip()
    return {
        **gpu_fields(raw_name, memory_gb=memory, form_factor=hint.form_factor if hint else None),
        "gpu_count": count,
        "vcpus": positive_quantity(row.get("CpuCoreCount")),
        "ram_gb": gib_to_gb(ram_gib) if ram_gib else None,
        "cpu_model": processor or None,
    }


def _family_hint(
    row: Mapping[str, Any], raw_name: str, memory_gb: float | None
) -> GpuFamilyHint | None:
    """The documented GPU of the row's family, if it is the GPU the row names.

    Not applied when ``GPUSpec`` does not name the documented GPU, or when ``GPUMemorySize``
    contradicts the documented memory: the documentation then describes other hardware.
    """
    # the family: ``gn6v`` from ``InstanceTypeFamily`` ``ecs.gn6v``, else from the type's id
    # (``ecs.gn6v-c8g1.2xlarge``)
    family = str(row.get("InstanceTypeFamily") or "").strip()
    if not family:
        parts = str(row.get("InstanceTypeId") or "").strip().split(".")
        family = f"ecs.{parts[1].split('-', 1)[0]}" if len(parts) == 3 else ""
    hint = gpu_family_hints().get(family.removeprefix("ecs."))
    if hint is None or hint.gpu_family.lower() not in _NAME_WORD.findall(raw_name.lower()):
        return None
    if memory_gb is not None and abs(memory_gb - hint.memory_gb) > (
        _HINT_MEMORY_TOLERANCE * hint.memory_gb
    ):
        return None
    return hint


def _instance_type_rows(payload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    rows = value_at(payload, "InstanceTypes", "InstanceType")
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
    zones = value_at(payload, "AvailableZones", "AvailableZone")
    if not isinstance(zones, list):
        raise ResponseFormatError(
            AlibabaAdapter.name,
            "DescribeAvailableResource: 'AvailableZones.AvailableZone' is not a list",
        )
    out: dict[tuple[str, str], bool] = {}
    for zone in zones:
        region = str(value_at(zone, "RegionId") or "")  # none for an entry that is no object
        for resource in _list_at(zone, "AvailableResources", "AvailableResource"):
            if resource.get("Type") != "InstanceType":
                continue
            for item in _list_at(resource, "SupportedResources", "SupportedResource"):
                value = str(item.get("Value") or "")
                if region and value:
                    key = (region, value)
                    out[key] = out.get(key, False) or item.get("Status") == "Available"
    return out


def _list_at(obj: Any, outer: str, inner: str) -> list[Mapping[str, Any]]:
    items = value_at(obj, outer, inner)
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


# --- the adapter -------------------------------------------------------------------------


class AlibabaAdapter(Adapter):
    """ECS GPU instance types priced per region: pay-as-you-go, subscriptions and spot."""

    name = "alibaba"
    title = "Alibaba Cloud"
    #: Where to rent: Alibaba Cloud's ECS pricing page.
    pricing_url: ClassVar[str] = "https://www.alibabacloud.com/product/ecs/pricing"
    source_url = "https://ecs.aliyuncs.com/?Action=DescribePrice"
    credential_names = ("alibaba_access_key_id", "alibaba_access_key_secret")
    #: The regional ECS endpoint; ``{region}`` is the call's region.
    base_url = "https://" + ENDPOINT
    #: Regions asked (override to narrow a run); the first also answers DescribeInstanceTypes.
    regions: ClassVar[tuple[str, ...]] = REGIONS
    #: DescribePrice price units asked for every instance type and region.
    price_units: ClassVar[tuple[str, ...]] = PRICE_UNITS
    #: Calls in flight at once, over all regions (ECS throttles per account, API and region).
    concurrency: ClassVar[int] = 8

    # fetch -------------------------------------------------------------------------------
    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Instance types, then per region what it lists, then prices and spot per type.

        A failing DescribeInstanceTypes fails the provider (nothing could be named); a
        failing region or price call only costs its records. If every call after the
        instance types failed, the provider fails naming the causes.
        """
        keys = self.require_credentials()
        if not self.regions:
            raise ProviderError(self.name, "no regions configured")
        call = functools.partial(
            self._call,
            client,
            keys["alibaba_access_key_id"],
            keys["alibaba_access_key_secret"],
            asyncio.Semaphore(self.concurrency),
        )
        type_pages = await self._instance_types(call)
        gpu_types = {
            str(row.get("InstanceTypeId") or "")
            for page in type_pages
            for row in _instance_type_rows(page)
            if not isinstance(_hardware(row), str)
        }
        gpu_types.discard("")
        listings = await asyncio.gather(*(self._listing(call, r, gpu_types) for r in self.regions))
        failures = [o for o in listings if isinstance(o, CallFailure)]
        listed = [o for o in listings if not isinstance(o, CallFailure)]
        jobs = [
            (region, itype, unit)
            for region, _, types in listed
            for itype in types
            for unit in (*self.price_units, "")  # "" = spot
        ]
        outcomes = await asyncio.gather(*(self._priced(call, *job) for job in jobs))
        failures.extend(o for o in outcomes if isinstance(o, CallFailure))
        priced = [p for o in outcomes if not isinstance(o, CallFailure) for p in o]
        calls = len(jobs) + len(self.regions)
        return [
            *type_pages,
            *(answer for _, answer, _ in listed),
            *keep_failures(self.name, priced, failures, calls=calls, what="calls"),
        ]

    async def _instance_types(self, call: _Call) -> list[Any]:
        async def page(token: str | None) -> Any:
            params = {"MinimumGPUAmount": "1", "MaxResults": str(INSTANCE_TYPES_PAGE)}
            params |= {"NextToken": token} if token else {}
            try:
                page = await call(self.regions[0], "DescribeInstanceTypes", params)
            except ProviderError as exc:
                raise ProviderError(
                    self.name,
                    f"DescribeInstanceTypes failed: {failure_cause(exc.reason)} (check "
                    "GPUSCOUT_ALIBABA_ACCESS_KEY_ID / GPUSCOUT_ALIBABA_ACCESS_KEY_SECRET and "
                    "the key's ecs:Describe* permissions)",
                ) from None
            if not isinstance(page, Mapping):
                raise ResponseFormatError(self.name, "DescribeInstanceTypes: not a JSON object")
            _instance_type_rows(page)  # the shape is checked before anything is priced
            return page

        return await self.follow_pages(
            page,
            lambda page: str(page.get("NextToken") or "") or None,
            max_pages=MAX_PAGES,
            too_many=f"DescribeInstanceTypes: more than {MAX_PAGES} pages",
        )

    async def _listing(
        self, call: _Call, region: str, gpu_types: set[str]
    ) -> tuple[str, Any, list[str]] | CallFailure:
        """``(region, answer, GPU types it lists)`` of DescribeAvailableResource."""
        params = {
            "RegionId": region,
            "DestinationResource": "InstanceType",
            "InstanceChargeType": "PostPaid",
            "IoOptimized": "optimized",
        }
        try:
            answer = await call(region, "DescribeAvailableResource", params)
            if not isinstance(answer, Mapping):
                raise ResponseFormatError(self.name, "DescribeAvailableResource: not an object")
            found = _listed_types(answer)
        except ProviderError as exc:
            return _failure("DescribeAvailableResource", exc.reason, region)
        return region, answer, sorted({t for (r, t) in found if r == region and t in gpu_types})

    async def _priced(
        self, call: _Call, region: str, itype: str, unit: str
    ) -> list[Any] | CallFailure:
        """The price (``unit``) or spot (``unit`` "") payloads of one type in one region."""
        action = "DescribePrice" if unit else "DescribeSpotPriceHistory"
        query = {"Action": action, "RegionId": region, "InstanceType": itype}
        try:
            if unit:
                params = {"RegionId": region, "ResourceType": "instance", "InstanceType": itype}
                response = await call(region, action, {**params, "PriceUnit": unit, "Period": "1"})
                return [query_payload({**query, "PriceUnit": unit}, response)]
            return await self._spot(call, query)
        except ProviderError as exc:
            return _failure(action, exc.reason, region, itype, unit)

    async def _spot(self, call: _Call, query: Mapping[str, str]) -> list[Any]:
        """All pages; the type counts whole (a failed later page drops the earlier ones)."""
        params = {
            "RegionId": query["RegionId"],
            "InstanceType": query["InstanceType"],
            "NetworkType": "vpc",
            "OSType": "linux",
        }
        pages: list[Any] = []
        offset = 0
        for _ in range(MAX_PAGES):
            asked = dict(params, Offset=str(offset)) if offset else params
            page = await call(query["RegionId"], query["Action"], asked)
            pages.append(query_payload(query, page))
            rows = _list_at(page, "SpotPrices", "SpotPriceType")  # none unless an object
            following = whole_count(page.get("NextOffset")) if rows else None
            if following is None or following <= offset:
                return pages
            offset = following
        raise ProviderError(self.name, f"DescribeSpotPriceHistory: more than {MAX_PAGES} pages")

    async def _call(
        self,
        client: httpx.AsyncClient,
        key_id: str,
        secret: str,
        gate: asyncio.Semaphore,
        region: str,
        action: str,
        params: Mapping[str, str],
    ) -> Any:
        """One signed RPC call (POST, parameters in the query, empty body), with retries.

        Each attempt is one :func:`request_json` without its own retries, signed afresh
        with a new nonce and date (a resent request would repeat the nonce).
        """
        base = self.url("/", region=region)
        host = urllib.parse.urlsplit(base).netloc
        url = f"{base}?{canonical_query(params)}"
        once = dataclasses.replace(self.policy, attempts=1)

        async def attempt() -> Any:
            headers = sign_acs3(
                method="POST",
                host=host,
                action=action,
                version=API_VERSION,
                query=params,
                access_key_id=key_id,
                access_key_secret=secret,
                date=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                nonce=uuid.uuid4().hex,
            )
            async with gate:
                return await request_json(
                    client, "POST", url, provider=self.name, policy=once, headers=headers
                )

        return await fresh_retries(self.policy, error=_transient)(attempt)

    # parse -------------------------------------------------------------------------------
    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        hardware: dict[str, OfferFields] = {}
        rejected: dict[str, str] = {}
        available: dict[tuple[str, str], bool] = {}
        prices: list[tuple[Mapping[str, Any], Any]] = []
        spots: list[tuple[Mapping[str, Any], Any]] = []
        payloads, failed = self.split_failed_calls(payloads)
        for payload in payloads:
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
                query, response = read_query_payload(payload, self.name)
                action = query.get("Action")
                if action == "DescribePrice":
                    prices.append((query, response))
                elif action == "DescribeSpotPriceHistory":
                    spots.append((query, response))
                else:
                    raise ResponseFormatError(self.name, f"unknown query action {action!r}")
            else:
                keys = ", ".join(sorted(map(str, payload))[:6])
                raise ResponseFormatError(self.name, f"unknown payload with keys {keys}")
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        builder = _OfferBuilder(result, hardware, available)
        for itype, reason in sorted(rejected.items()):
            result.skip(reason, f"alibaba:instance-type/{itype}")
        for query, response in prices:
            builder.price(query, response)
        builder.spot(spots)
        result.skip_failed(failed)
        return result


@dataclasses.dataclass(frozen=True, slots=True)
class _OfferBuilder:
    """Turns price and spot responses into offers (one per type, region, term, zone)."""

    result: ParseResult
    hardware: Mapping[str, OfferFields]
    available: Mapping[tuple[str, str], bool]

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
        price = value_at(response, "PriceInfo", "Price")
        if not isinstance(price, Mapping):
            self.result.skip("DescribePrice response without PriceInfo.Price", ref)
            return
        listed = self._compute_only(price, ref, "OriginalPrice")
        currency = str(price.get("Currency") or "")
        if listed is None:
            return
        if not currency:
            self.result.skip("DescribePrice response without Currency", ref)
            return
        term, price_unit, prepaid, term_name = _TERMS[unit]
        hourly = unit == "Hour"
        offer: OfferFields = {
            "offer_id": itype,
            "instance_name": itype if hourly else f"{itype} ({term_name})",
            **price_fields(listed, PriceBasis.INSTANCE, term, unit=price_unit, currency=currency),
            "prepaid": prepaid,
            "available_now": self.available.get((region, itype)) if hourly else None,
        }
        self._add(ref, hw, region, offer)
        traded = self._compute_only(price, ref, "TradePrice")
        if traded is not None and traded != listed:
            account: OfferFields = {"price_amount": traded, "term_variant": ACCOUNT_PRICE_VARIANT}
            self._add(ref, hw, region, offer | account)

    def _compute_only(self, price: Mapping[str, Any], ref: str, key: str) -> Decimal | None:
        """``key`` (``OriginalPrice`` or ``TradePrice``) less the system disk's line;
        ``None`` (skipped) if not itemised."""
        total = self._decimal(price.get(key), key, ref)
        if total is None:
            return None
        lines = _list_at(price, "DetailInfos", "DetailInfo")
        if not lines:
            self.result.skip("no DetailInfos breakdown: the system disk share is unknown", ref)
            return None
        disk = Decimal(0)
        for line in lines:
            resource = str(line.get("Resource") or "").lower()
            try:
                trade = to_decimal(line.get(key)) or Decimal(0)
            except ValueError:
                self.result.skip(f"DetailInfo {resource!r} {key} is not a number", ref)
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
            price = None if hw is None else self._decimal(raw_price, "SpotPrice", ref)
            if hw is None or price is None:
                continue
            if not currency:
                self.result.skip("DescribeSpotPriceHistory response without Currency", ref)
                continue
            self._add(
                ref,
                hw,
                region,
                {
                    "offer_id": itype,
                    "term_variant": zone,
                    "instance_name": f"{itype} (spot, {zone})",
                    **price_fields(
                        price, PriceBasis.INSTANCE, RentalTerm.INTERRUPTIBLE, currency=currency
                    ),
                    "prepaid": False,
                    "billing_increment_s": SPOT_BILLING_INCREMENT_S,
                },
            )

    def _hw(self, itype: str, ref: str) -> OfferFields | None:
        hw = self.hardware.get(itype)
        if hw is None:
            self.result.skip("instance type not in DescribeInstanceTypes (hardware unknown)", ref)
        return hw

    def _decimal(self, raw: Any, name: str, ref: str) -> Decimal | None:
        value = lenient_decimal(raw)
        if value is None:
            self.result.skip(f"{name} is not a number: {raw!r}", ref)
        return value

    def _add(self, ref: str, hw: OfferFields, region: str, price: OfferFields) -> None:
        """One offer: the type's hardware in ``region`` at ``price`` (its price fields, term
        and name)."""
        place: OfferFields = {"region": region or None, "country": region_countries().get(region)}
        self.result.add(ref, **(place | hw | price))
