"""Amazon EC2 GPU instances: the public EC2 price list plus spot prices.

Sources (formats as documented by AWS and recorded in tests/fixtures/aws/):

* **Price List bulk files** (public, no auth; "Using the bulk API",
  https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-ppslong.html):
  ``/offers/v1.0/aws/AmazonEC2/current/region_index.json`` lists each region's
  ``currentVersionUrl`` (``.../<region>/index.json``; the same path with ``index.csv`` is
  the CSV). A region file is hundreds of MB, so :meth:`AwsAdapter.fetch` streams it line by
  line and keeps only the GPU rows we price (see :func:`_keep_product`). CSV layout: five
  metadata lines, a header, then one row per SKU x term x price dimension.
* **Offer file JSON / Price List Query API GetProducts**: the same products and terms as
  JSON (``products``/``terms``; GetProducts wraps each product as a JSON *string* in
  ``PriceList``). :meth:`AwsAdapter.parse` reads both, e.g. when replaying recordings.
* **DescribeSpotPriceHistory** (EC2 Query API, SigV4-signed, XML; the SDK/CLI JSON shape is
  read too): current spot price per availability zone. Needs the settings
  ``aws_access_key_id``/``aws_secret_access_key``; without them the spot part is skipped
  with a warning and the public price list is still fetched. Spot is an extra: a region
  whose spot call fails (rejected keys, an opt-in region the account has not enabled, EC2
  unreachable) loses only its spot prices, even when every region fails. The failures are
  logged as one warning and kept in the payloads (:func:`~adapters.base.failed_calls_payload`),
  so that :meth:`AwsAdapter.parse` records each failed region as a skipped record with its
  cause.
* **DescribeInstanceTypes** ``GpuInfo`` (Query-API XML, fetched with the same keys, or the
  SDK's JSON), when given, names the GPU model and maker; otherwise the model comes from
  :data:`GPU_FAMILIES`.

Prices: on-demand and spot are USD per instance-hour. A reserved-instance term has an
hourly part (unit ``Hrs``) and an optional upfront fee (unit ``Quantity``). No Upfront is
kept as its hourly rate (``prepaid=False``); Partial and All Upfront become one exact price
for the whole term, ``upfront + hourly x term hours`` (``prepaid=True``: part or all of it
is paid before use). Term hours: 1 year = 8760 h, 3 years = 26280 h, as AWS counts a
reserved term as 31,536,000 / 94,608,000 seconds ("Reserved Instance term",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/reserved-instances-types.html).
"""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import io
import json
import logging
import re
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar
from xml.sax import saxutils

import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from .base import (
    MIN_USD_PER_GPU_HOUR,
    Adapter,
    FailedCall,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    failed_calls_payload,
    failure_groups,
    read_failed_calls,
    request,
    request_stream,
)
from .gpus import resolve_gpu_name, spec_fields
from .schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm, Vendor, usd_per_hour
from .units import gib_to_gb, mib_to_gb, to_decimal, to_float

__all__ = ["GPU_FAMILIES", "AwsAdapter", "GpuFamily"]

log = logging.getLogger("gpuscout.adapters.aws")

#: AWS's endpoint pattern, ``https://<service>.<region>.amazonaws.com`` (the adapter's base URL).
ENDPOINT = "https://{service}.{region}.amazonaws.com"
#: The price list's endpoint (``service`` and ``region`` of :data:`ENDPOINT`).
PRICING = {"service": "pricing", "region": "us-east-1"}
PRICING_BASE = ENDPOINT.format(**PRICING)
REGION_INDEX_PATH = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
REGION_INDEX_URL = PRICING_BASE + REGION_INDEX_PATH
EC2_API_VERSION = "2016-11-15"
#: Regions not rentable with an ordinary account (GovCloud needs a separate one).
EXCLUDED_REGION_PREFIXES = ("us-gov-",)
#: Region price lists streamed at once (each is a long download).
CONCURRENT_DOWNLOADS = 4
MAX_EC2_PAGES = 50
#: Values per ``instance-type`` filter in one DescribeInstanceTypes call.
INSTANCE_TYPE_FILTER_CHUNK = 50
#: HTTP statuses of EC2's authentication/authorization errors: ``AuthFailure`` (401, also
#: what an opt-in region the account has not enabled answers) and ``UnauthorizedOperation``
#: (403, the keys lack ``ec2:DescribeSpotPriceHistory``).
AUTH_STATUSES = frozenset({401, 403})
#: Region names listed per cause in the spot-failure warning.
MAX_REGIONS_NAMED = 6

#: Linux on-demand and spot instances are billed per second with a one-minute minimum
#: (https://aws.amazon.com/ec2/pricing/on-demand/ , "Per Second Billing").
BILLING_INCREMENT_S = 1
MIN_RENTAL_HOURS = 60 / 3600


@dataclasses.dataclass(frozen=True, slots=True)
class GpuFamily:
    """The GPU of an instance family, as AWS's instance-type docs name it."""

    gpu_raw_name: str
    form_factor: GpuFormFactor | None = None


#: Instance family -> GPU, from "Accelerated computing instance specifications"
#: (https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html): the Accelerators column
#: names the GPU (H100, A100, A10G...). The SXM form factor is inferred only where the docs
#: say the GPUs are joined by NVLink/NVSwitch (P3, P4, P5, P6). Used when no
#: DescribeInstanceTypes ``GpuInfo`` is given; the price list itself has no GPU model.
GPU_FAMILIES: dict[str, GpuFamily] = {
    "p6-b300": GpuFamily("B300", GpuFormFactor.SXM),
    "p6-b200": GpuFamily("B200", GpuFormFactor.SXM),
    "p6e-gb200": GpuFamily("GB200", GpuFormFactor.SUPERCHIP),
    "p5": GpuFamily("H100", GpuFormFactor.SXM),
    "p5e": GpuFamily("H200", GpuFormFactor.SXM),
    "p5en": GpuFamily("H200", GpuFormFactor.SXM),
    "p4d": GpuFamily("A100", GpuFormFactor.SXM),
    "p4de": GpuFamily("A100", GpuFormFactor.SXM),
    "p3": GpuFamily("V100", GpuFormFactor.SXM),
    "p3dn": GpuFamily("V100", GpuFormFactor.SXM),
    "g6e": GpuFamily("L40S"),
    "g6": GpuFamily("L4"),
    "gr6": GpuFamily("L4"),
    "g6f": GpuFamily("L4"),  # fractional L4 sizes
    "gr6f": GpuFamily("L4"),
    "g5": GpuFamily("A10G"),
    "g5g": GpuFamily("T4g"),
    "g4dn": GpuFamily("T4"),
    "g4ad": GpuFamily("Radeon Pro V520"),
    "g3": GpuFamily("M60"),
    "g3s": GpuFamily("M60"),
}


# --- normalised records ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Product:
    """One price-list product (SKU): an instance type in a region with OS and tenancy."""

    sku: str
    attrs: Mapping[str, str]  # JSON attribute names (camelCase), CSV columns mapped onto them

    def get(self, name: str) -> str:
        return str(self.attrs.get(name) or "").strip()


@dataclasses.dataclass(frozen=True, slots=True)
class _Rate:
    """One price dimension of one term of one SKU."""

    sku: str
    term_type: str  # OnDemand | Reserved
    offer_term_code: str
    rate_code: str
    unit: str  # Hrs | Quantity
    price: str
    currency: str
    lease: str = ""  # 1yr | 3yr
    purchase_option: str = ""  # No Upfront | Partial Upfront | All Upfront
    offering_class: str = ""  # standard | convertible


#: CSV column -> JSON attribute name (the CSV uses Title Case, the JSON camelCase).
_CSV_TO_ATTR = {
    "Product Family": "productFamily",
    "Instance Type": "instanceType",
    "Region Code": "regionCode",
    "Location": "location",
    "vCPU": "vcpu",
    "Memory": "memory",
    "Storage": "storage",
    "Physical Processor": "physicalProcessor",
    "Tenancy": "tenancy",
    "Operating System": "operatingSystem",
    "CapacityStatus": "capacitystatus",
    "Pre Installed S/W": "preInstalledSw",
    "MarketOption": "marketoption",
    "GPU": "gpu",
    "GPU Memory": "gpuMemory",
    "License Model": "licenseModel",
}


def _keep_product(p: _Product) -> str | None:
    """Why a product is not a Linux shared-tenancy GPU instance we price; None to keep it.

    ``CapacityStatus`` other than ``Used`` marks capacity-reservation rows at the same price;
    ``Pre Installed S/W`` other than ``NA`` adds SQL Server licences.
    """
    if p.get("productFamily") not in ("Compute Instance", ""):
        return "not a compute instance"
    if p.get("operatingSystem") != "Linux":
        return "not Linux"
    if p.get("tenancy") != "Shared":
        return "not shared tenancy"
    if p.get("capacitystatus") not in ("Used", ""):
        return "capacity reservation row"
    if p.get("preInstalledSw") not in ("NA", ""):
        return "pre-installed software"
    if p.get("marketoption") not in ("OnDemand", ""):
        return "not an on-demand market option"
    gpus = p.get("gpu")
    try:
        count = to_float(gpus) if gpus not in ("", "NA") else None
    except ValueError:
        count = None
    if not count or count <= 0:
        return "no GPU"
    return None


# --- decoding payload kinds --------------------------------------------------------------


def _csv_records(text: str) -> Iterator[tuple[_Product, _Rate]]:
    """Products and rates of a price-list CSV (metadata lines, header, rows)."""
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    for row in reader:
        if header is None:
            if row and row[0] == "SKU":
                header = row
            continue
        if not row or len(row) != len(header):
            continue
        d = dict(zip(header, row, strict=True))
        attrs = {attr: d.get(col, "") for col, attr in _CSV_TO_ATTR.items()}
        yield (
            _Product(d.get("SKU", ""), attrs),
            _Rate(
                sku=d.get("SKU", ""),
                term_type=d.get("TermType", ""),
                offer_term_code=d.get("OfferTermCode", ""),
                rate_code=d.get("RateCode", ""),
                unit=d.get("Unit", ""),
                price=d.get("PricePerUnit", ""),
                currency=d.get("Currency", ""),
                lease=d.get("LeaseContractLength", ""),
                purchase_option=d.get("PurchaseOption", ""),
                offering_class=d.get("OfferingClass", ""),
            ),
        )
    if header is None:
        raise ResponseFormatError(AwsAdapter.name, "price-list CSV has no 'SKU' header row")


def _json_terms(sku: str, terms: Mapping[str, Any]) -> Iterator[_Rate]:
    """Rates of one SKU from a JSON ``terms`` object ({OnDemand|Reserved: {code: term}})."""
    for term_type in ("OnDemand", "Reserved"):
        by_code = terms.get(term_type) or {}
        if not isinstance(by_code, Mapping):
            continue
        for term in by_code.values():
            if not isinstance(term, Mapping):
                continue
            attrs = term.get("termAttributes") or {}
            for dim in (term.get("priceDimensions") or {}).values():
                if not isinstance(dim, Mapping):
                    continue
                prices = dim.get("pricePerUnit") or {}
                for currency, price in prices.items() if isinstance(prices, Mapping) else ():
                    yield _Rate(
                        sku=sku,
                        term_type=term_type,
                        offer_term_code=str(term.get("offerTermCode") or ""),
                        rate_code=str(dim.get("rateCode") or ""),
                        unit=str(dim.get("unit") or ""),
                        price=str(price),
                        currency=str(currency),
                        lease=str(attrs.get("LeaseContractLength") or ""),
                        purchase_option=str(attrs.get("PurchaseOption") or ""),
                        offering_class=str(attrs.get("OfferingClass") or ""),
                    )


def _json_product(raw: Any) -> _Product | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("attributes"), Mapping):
        return None
    attrs = {k: str(v) for k, v in raw["attributes"].items()}
    attrs["productFamily"] = str(raw.get("productFamily") or "")
    return _Product(str(raw.get("sku") or ""), attrs)


def _offer_file_records(payload: Mapping[str, Any]) -> Iterator[tuple[_Product, _Rate]]:
    products, terms = payload.get("products"), payload.get("terms")
    if not isinstance(products, Mapping) or not isinstance(terms, Mapping):
        raise ResponseFormatError(AwsAdapter.name, "offer file lacks 'products'/'terms' objects")
    for sku, raw in products.items():
        product = _json_product(raw)
        if product is None:
            continue
        sku_terms = {
            t: terms[t][sku]
            for t in ("OnDemand", "Reserved")
            if isinstance(terms.get(t), Mapping) and sku in terms[t]
        }
        for rate in _json_terms(str(sku), sku_terms):
            yield product, rate


def _get_products_records(payload: Mapping[str, Any]) -> Iterator[tuple[_Product, _Rate]]:
    """GetProducts: each ``PriceList`` element is a JSON string of {product, terms}."""
    items = payload.get("PriceList")
    if not isinstance(items, list):
        raise ResponseFormatError(AwsAdapter.name, "GetProducts 'PriceList' is not a list")
    for item in items:
        try:
            data = json.loads(item) if isinstance(item, str) else item
        except json.JSONDecodeError:
            continue
        if not isinstance(data, Mapping):
            continue
        product = _json_product(data.get("product"))
        if product is None:
            continue
        terms = data.get("terms")
        for rate in _json_terms(product.sku, terms if isinstance(terms, Mapping) else {}):
            yield product, rate


@dataclasses.dataclass(frozen=True, slots=True)
class _Spot:
    instance_type: str
    availability_zone: str
    product_description: str
    price: str
    timestamp: str


def _strip_ns(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _xml_spot(text: str) -> tuple[list[_Spot], str]:
    """Items and ``nextToken`` of a DescribeSpotPriceHistory Query-API XML response."""
    root = _xml_root(text)
    if _strip_ns(root.tag) != "DescribeSpotPriceHistoryResponse":
        raise ResponseFormatError(AwsAdapter.name, f"unexpected XML response <{root.tag}>")
    items: list[_Spot] = []
    token = ""
    for child in root:
        tag = _strip_ns(child.tag)
        if tag == "nextToken":
            token = (child.text or "").strip()
        elif tag == "spotPriceHistorySet":
            for item in child:
                f = {_strip_ns(e.tag): (e.text or "").strip() for e in item}
                items.append(
                    _Spot(
                        f.get("instanceType", ""),
                        f.get("availabilityZone", ""),
                        f.get("productDescription", ""),
                        f.get("spotPrice", ""),
                        f.get("timestamp", ""),
                    )
                )
    return items, token


def _xml_root(text: str) -> ET.Element:
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise ResponseFormatError(AwsAdapter.name, f"EC2 response is not XML: {exc}") from None


def _xml_fields(element: ET.Element) -> dict[str, ET.Element]:
    return {_strip_ns(child.tag): child for child in element}


def _xml_text(element: ET.Element | None) -> str:
    return (element.text or "").strip() if element is not None else ""


def _xml_instance_types(root: ET.Element) -> tuple[dict[str, _GpuInfo], str]:
    """GpuInfo per instance type and ``nextToken`` of a DescribeInstanceTypes XML response.

    Shape (EC2 Query API): ``instanceTypeSet/item/{instanceType, gpuInfo/gpus/item/{name,
    manufacturer, count, memoryInfo/sizeInMiB}}``.
    """
    out: dict[str, _GpuInfo] = {}
    top = _xml_fields(root)
    for item in top.get("instanceTypeSet", ()):
        fields = _xml_fields(item)
        gpu_info = fields.get("gpuInfo")
        gpus = _xml_fields(gpu_info).get("gpus") if gpu_info is not None else None
        first = next(iter(gpus), None) if gpus is not None else None
        if first is None:
            continue
        g = _xml_fields(first)
        memory = _xml_fields(g["memoryInfo"]).get("sizeInMiB") if "memoryInfo" in g else None
        try:
            count = int(_xml_text(g.get("count"))) if _xml_text(g.get("count")) else None
            memory_mib = to_float(_xml_text(memory))
        except ValueError:
            continue
        out[_xml_text(fields.get("instanceType"))] = _GpuInfo(
            _xml_text(g.get("name")), _xml_text(g.get("manufacturer")), count, memory_mib
        )
    return out, _xml_text(top.get("nextToken"))


def _json_spot(payload: Mapping[str, Any]) -> list[_Spot]:
    rows = payload.get("SpotPriceHistory")
    if not isinstance(rows, list):
        raise ResponseFormatError(AwsAdapter.name, "'SpotPriceHistory' is not a list")
    return [
        _Spot(
            str(r.get("InstanceType") or ""),
            str(r.get("AvailabilityZone") or ""),
            str(r.get("ProductDescription") or ""),
            "" if r.get("SpotPrice") is None else str(r.get("SpotPrice")),
            str(r.get("Timestamp") or ""),
        )
        for r in rows
        if isinstance(r, Mapping)
    ]


# --- spot failures -----------------------------------------------------------------------

_HTTP_STATUS = re.compile(r"^HTTP (\d{3}) ")
_EC2_CODE = re.compile(r"<Code>([^<]+)</Code>")
_EC2_MESSAGE = re.compile(r"<Message>([^<]*)")
_EC2_URL = re.compile(r"https://ec2\.[a-z0-9-]+\.amazonaws\.com/")
_XML_ENTITIES = {"&quot;": '"', "&apos;": "'"}


@dataclasses.dataclass(frozen=True, slots=True)
class _SpotFailure:
    """Why one region's spot prices were not fetched.

    EC2 answers a failed Query-API call with ``<Response><Errors><Error><Code>...</Code>
    <Message>...</Message></Error></Errors><RequestID>...</RequestID></Response>`` ("Error
    codes for the Amazon EC2 API", example error response,
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html).
    """

    region: str
    status: int | None  # HTTP status; None for a network error or an unreadable answer
    code: str  # EC2 error code (AuthFailure, UnauthorizedOperation...); "" if none
    message: str  # EC2's <Message>; for a failure without an HTTP status, what went wrong

    @classmethod
    def from_error(cls, region: str, reason: str) -> _SpotFailure:
        """Read the status and the EC2 error back from a failed :func:`request`.

        Its :class:`ProviderError` carries only text, ``HTTP <status> from <url>: <body
        excerpt>`` (``... after N attempts`` for a retried status); EC2's ``<Code>`` comes
        first in the body, so the excerpt holds it. Any other failure (timeout, network,
        payload) keeps its text, the regional URL replaced so that it reads the same in
        every region and equal failures group.
        """
        status = _HTTP_STATUS.match(reason)
        if status is None:
            return cls(region, None, "", _EC2_URL.sub("EC2", reason))
        code = _EC2_CODE.search(reason)
        message = _EC2_MESSAGE.search(reason)
        return cls(
            region,
            int(status.group(1)),
            _xml_unescape(code.group(1)) if code else "",
            _xml_unescape(message.group(1)).removesuffix("...") if message else "",
        )

    @property
    def auth(self) -> bool:
        """Rejected keys, keys without the permission, or a region not enabled."""
        return self.status in AUTH_STATUSES

    @property
    def cause(self) -> str:
        """What failed, the same text in every region: ``HTTP 401 AuthFailure``."""
        if self.status is None:
            return self.message
        return f"HTTP {self.status} {self.code}".strip()

    @property
    def failed_call(self) -> FailedCall:
        """The skipped record parse reports (no region or request id in the reason)."""
        reason = f"spot prices not fetched: {self.cause}"
        if self.auth:
            reason += (
                " (AWS keys rejected or without ec2:DescribeSpotPriceHistory,"
                " or the region is not enabled for the account)"
            )
        return FailedCall(f"aws:spot/{self.region}", reason)


def _xml_unescape(text: str) -> str:
    return saxutils.unescape(text, _XML_ENTITIES).strip()


def _spot_failure_warning(failures: Sequence[_SpotFailure], regions: int) -> str:
    """One line for all failed regions, grouped by cause, saying what the user can do."""
    text = f"aws: spot prices not fetched in {len(failures)} of {regions} regions: "
    text += failure_groups(
        failures,
        cause=lambda f: f.cause,
        place=lambda f: f.region,
        detail=lambda f: f.message if f.status is not None else "",
        max_named=MAX_REGIONS_NAMED,
    )
    if len(failures) == regions and all(f.auth for f in failures):
        text += (
            "; the AWS keys were rejected or lack ec2:DescribeSpotPriceHistory: check "
            "GPUSCOUT_AWS_ACCESS_KEY_ID and GPUSCOUT_AWS_SECRET_ACCESS_KEY"
        )
    elif any(f.auth for f in failures):
        text += "; an auth failure in some regions only is usually a region not enabled"
    return text + "; on-demand and reserved prices kept"


@dataclasses.dataclass(frozen=True, slots=True)
class _GpuInfo:
    """DescribeInstanceTypes ``GpuInfo``: name, maker, count and per-GPU memory (MiB)."""

    name: str
    manufacturer: str
    count: int | None
    memory_mib: float | None


def _gpu_infos(payload: Mapping[str, Any]) -> dict[str, _GpuInfo]:
    rows = payload.get("InstanceTypes")
    if not isinstance(rows, list):
        raise ResponseFormatError(AwsAdapter.name, "'InstanceTypes' is not a list")
    out: dict[str, _GpuInfo] = {}
    for row in rows:
        if not isinstance(row, Mapping):
            continue
        gpus = (row.get("GpuInfo") or {}).get("Gpus") or []
        if not gpus or not isinstance(gpus[0], Mapping):
            continue
        first = gpus[0]
        try:
            count = int(first["Count"]) if first.get("Count") is not None else None
            mem = to_float((first.get("MemoryInfo") or {}).get("SizeInMiB"))
        except (TypeError, ValueError):
            continue
        out[str(row.get("InstanceType") or "")] = _GpuInfo(
            str(first.get("Name") or ""), str(first.get("Manufacturer") or ""), count, mem
        )
    return out


# --- unit helpers ------------------------------------------------------------------------

_QTY_UNIT = re.compile(r"^\s*([\d.,]+)\s*(GiB|GB|TB|TiB)?\s*$", re.IGNORECASE)
_STORAGE = re.compile(r"^\s*(\d+)\s*x\s*([\d.,]+)\s*(.*)$", re.IGNORECASE)
_AZ = re.compile(r"^([a-z]{2}(?:-[a-z]+)+-\d+)[a-z]$")


def _memory_gb(text: str) -> float | None:
    """Price-list memory ("2048 GiB", "640 GB") in decimal GB; None if absent or odd."""
    m = _QTY_UNIT.match(text or "")
    if not m:
        return None
    value = float(m.group(1).replace(",", ""))
    unit = (m.group(2) or "GB").lower()
    if unit == "gib":
        return gib_to_gb(value)
    if unit == "tib":
        return gib_to_gb(value * 1024)
    if unit == "tb":
        return value * 1000
    return value


def _storage(text: str) -> tuple[float | None, str | None]:
    """Instance store ("8 x 3840 SSD", "1 x 250 NVMe SSD") -> (total GB, kind); EBS -> None.

    AWS gives instance-store volume sizes in GB.
    """
    m = _STORAGE.match(text or "")
    if not m:
        return None, None
    total = int(m.group(1)) * float(m.group(2).replace(",", ""))
    rest = m.group(3).lower()
    kind = (
        "nvme" if "nvme" in rest else "ssd" if "ssd" in rest else "hdd" if "hdd" in rest else None
    )
    return total, kind


def _cpu_vendor(processor: str) -> str | None:
    first = processor.split(" ", 1)[0].lower() if processor else ""
    return {"intel": "intel", "amd": "amd", "aws": "aws"}.get(first)


def _family(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def _region_of_az(az: str) -> str | None:
    """ "us-east-1a" -> "us-east-1"; None for local/wavelength zones and garbage."""
    m = _AZ.match(az)
    return m.group(1) if m else None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


_LEASES = {"1yr": RentalTerm.COMMIT_1Y, "3yr": RentalTerm.COMMIT_3Y}


# --- hardware per instance type ----------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Hardware:
    """What the offers of one instance type share, from the price list and GpuInfo."""

    gpu_count: int
    gpu_fraction: float | None
    gpu_raw_name: str | None
    gpu_memory_gb: float | None
    form_factor: GpuFormFactor | None
    vendor_hint: Vendor | None
    fields: Mapping[str, Any]  # vcpus, ram_gb, storage_gb, storage_type, cpu_model, cpu_vendor


def _hardware(product: _Product, info: _GpuInfo | None) -> _Hardware | str:
    """Hardware of a product, or the reason it cannot be priced."""
    itype = product.get("instanceType")
    try:
        count = to_float(product.get("gpu"))
    except ValueError:
        return f"GPU count is not a number: {product.get('gpu')!r}"
    if info is not None and info.count:
        count = float(info.count)
    if not count or count <= 0:
        return "no GPU"
    fraction = count if count < 1 else None
    gpu_count = 1 if fraction is not None else int(count)
    # The price list's "GPU Memory" is the instance total in the datasheet's GB ("640 GB"
    # for 8 H100 80GB); GpuInfo gives MiB per GPU (81920 for an H100, i.e. 85.9 GB), so it
    # is only the fallback, to stay comparable with the GPU catalog's datasheet figures.
    total_gpu_memory = _memory_gb(product.get("gpuMemory"))
    per_gpu_memory: float | None = None
    if total_gpu_memory:
        per_gpu_memory = total_gpu_memory / gpu_count
    elif info is not None and info.memory_mib:
        per_gpu_memory = mib_to_gb(info.memory_mib)
    family = GPU_FAMILIES.get(_family(itype))
    raw_name = (info.name if info and info.name else None) or (family and family.gpu_raw_name)
    vendor_hint = None
    if info is not None and info.manufacturer:
        vendor_hint = {"nvidia": Vendor.NVIDIA, "amd": Vendor.AMD}.get(info.manufacturer.lower())
    storage_gb, storage_kind = _storage(product.get("storage"))
    processor = product.get("physicalProcessor")
    try:
        vcpus = to_float(product.get("vcpu"))
    except ValueError:
        vcpus = None
    return _Hardware(
        gpu_count=gpu_count,
        gpu_fraction=fraction,
        gpu_raw_name=raw_name or None,
        gpu_memory_gb=per_gpu_memory,
        form_factor=family.form_factor if family else None,
        vendor_hint=vendor_hint,
        fields={
            "vcpus": vcpus or None,
            "ram_gb": _memory_gb(product.get("memory")),
            "storage_gb": storage_gb,
            "storage_type": storage_kind,
            "cpu_model": processor or None,
            "cpu_vendor": _cpu_vendor(processor),
        },
    )


def _gpu_fields(hw: _Hardware) -> dict[str, Any]:
    spec = None
    if hw.gpu_raw_name:
        board_memory = hw.gpu_memory_gb
        if board_memory and hw.gpu_fraction:
            board_memory = board_memory / hw.gpu_fraction
        spec = resolve_gpu_name(hw.gpu_raw_name, memory_gb=board_memory, form_factor=hw.form_factor)
    return {
        "gpu_raw_name": hw.gpu_raw_name,
        **spec_fields(spec, form_factor=hw.form_factor, vendor=hw.vendor_hint),
        "gpu_count": hw.gpu_count,
        "gpu_fraction": hw.gpu_fraction,
        "gpu_memory_gb": hw.gpu_memory_gb,
    }


# --- the adapter -------------------------------------------------------------------------


class AwsAdapter(Adapter):
    """EC2 GPU instances: on-demand and reserved (price list), spot (EC2 API, with keys)."""

    name: ClassVar[str] = "aws"
    title: ClassVar[str] = "Amazon Web Services (EC2)"
    source_url: ClassVar[str] = REGION_INDEX_URL
    #: Nothing is required: the price list is public. These enable spot prices.
    credential_names: ClassVar[tuple[str, ...]] = ()
    optional_credential_names: ClassVar[tuple[str, ...]] = (
        "aws_access_key_id",
        "aws_secret_access_key",
    )
    #: Restrict to these regions (None = every region in the region index).
    regions: ClassVar[tuple[str, ...] | None] = None
    base_url = ENDPOINT

    # fetch -------------------------------------------------------------------------------
    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Filtered price-list CSVs per region, then spot XML pages if keys are set.

        The price list is the provider: if it fails, fetch fails. Spot is an extra: regions
        whose spot call failed are logged in one warning and listed in a last payload
        (:func:`~adapters.base.failed_calls_payload`), and the price lists are returned all
        the same.
        """
        index = await self.get_json(client, self.url(REGION_INDEX_PATH, **PRICING))
        csv_urls = self._region_csv_urls(index)
        gate = asyncio.Semaphore(CONCURRENT_DOWNLOADS)

        async def one(url: str) -> str:
            async with gate:
                return await self._stream_gpu_rows(client, url)

        tasks = [asyncio.create_task(one(u)) for u in csv_urls.values()]
        try:
            price_lists = list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:  # one region failed: stop the other downloads
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        payloads: list[Any] = list(price_lists)
        creds = self._spot_credentials()
        if creds is None:
            log.warning(
                "aws: spot prices skipped: credentials not set (GPUSCOUT_AWS_ACCESS_KEY_ID, "
                "GPUSCOUT_AWS_SECRET_ACCESS_KEY); on-demand and reserved prices still fetched"
            )
            return payloads
        types_by_region = _gpu_types_by_region(price_lists)
        payloads.extend(await self._fetch_instance_types(client, creds, types_by_region))
        pages, failures = await self._fetch_spot(client, creds, types_by_region)
        payloads.extend(pages)
        if failures:
            log.warning("%s", _spot_failure_warning(failures, len(types_by_region)))
            payloads.append(failed_calls_payload([f.failed_call for f in failures]))
        return payloads

    async def _fetch_instance_types(
        self,
        client: httpx.AsyncClient,
        creds: Credentials,
        types_by_region: Mapping[str, Sequence[str]],
    ) -> list[str]:
        """DescribeInstanceTypes pages naming each GPU (model, maker, MiB per GPU).

        Asked in one region (us-east-1 if priced there) with an ``instance-type`` filter, which,
        unlike the ``InstanceType.N`` list, does not fail on a type that region lacks. Optional:
        on failure the family table names the GPUs and a warning is logged.
        """
        if not types_by_region:
            return []
        region = "us-east-1" if "us-east-1" in types_by_region else next(iter(types_by_region))
        all_types = sorted({t for types in types_by_region.values() for t in types})
        pages: list[str] = []
        try:
            for start in range(0, len(all_types), INSTANCE_TYPE_FILTER_CHUNK):
                chunk = all_types[start : start + INSTANCE_TYPE_FILTER_CHUNK]
                params = {
                    "Action": "DescribeInstanceTypes",
                    "Version": EC2_API_VERSION,
                    "Filter.1.Name": "instance-type",
                    **{f"Filter.1.Value.{i}": t for i, t in enumerate(chunk, start=1)},
                }
                token = ""
                for _ in range(MAX_EC2_PAGES):
                    body = dict(params, NextToken=token) if token else params
                    text = await self._ec2_query(client, creds, region, body)
                    pages.append(text)
                    _, token = _xml_instance_types(_xml_root(text))
                    if not token:
                        break
        except ProviderError as exc:
            log.warning(
                "aws: DescribeInstanceTypes failed (%s); GPU names from the family table",
                exc.reason,
            )
            return []
        return pages

    def _region_csv_urls(self, index: Any) -> dict[str, str]:
        regions = index.get("regions") if isinstance(index, Mapping) else None
        if not isinstance(regions, Mapping):
            raise ResponseFormatError(self.name, "region index lacks a 'regions' object")
        urls: dict[str, str] = {}
        for code, entry in regions.items():
            if code.startswith(EXCLUDED_REGION_PREFIXES):
                continue
            if self.regions is not None and code not in self.regions:
                continue
            path = entry.get("currentVersionUrl") if isinstance(entry, Mapping) else None
            if not isinstance(path, str) or not path.endswith("index.json"):
                raise ResponseFormatError(self.name, f"region {code!r} has no currentVersionUrl")
            urls[code] = self.url(path[: -len("index.json")] + "index.csv", **PRICING)
        return urls

    async def _stream_gpu_rows(self, client: httpx.AsyncClient, url: str) -> str:
        """Stream one region's price-list CSV, keeping metadata, header and GPU rows only.

        Memory stays bounded by the kept rows (a few thousand), not by the file.
        """

        async def consume(response: httpx.Response) -> str:
            kept: list[str] = []
            keep: Callable[[list[str]], bool] | None = None
            async for line in response.aiter_lines():
                if keep is None:
                    kept.append(line)
                    row = next(csv.reader([line]), [])
                    if row and row[0] == "SKU":
                        keep = _csv_row_filter(row)
                    continue
                # Cheap pre-check before the CSV parse: most rows are not Linux/Shared.
                if "Linux" not in line or "Shared" not in line:
                    continue
                row = next(csv.reader([line]), [])
                if keep(row):
                    kept.append(line)
            if keep is None:
                raise ResponseFormatError(self.name, f"no CSV header in {url}")
            return "\n".join(kept) + "\n"

        return await request_stream(
            client, "GET", url, consume, provider=self.name, policy=self.policy
        )

    def _spot_credentials(self) -> Credentials | None:
        key = self.credentials.get("aws_access_key_id")
        secret = self.credentials.get("aws_secret_access_key")
        if not key or not secret:
            return None
        return Credentials(str(key), str(secret))

    async def _fetch_spot(
        self,
        client: httpx.AsyncClient,
        creds: Credentials,
        types_by_region: Mapping[str, Sequence[str]],
    ) -> tuple[list[str], list[_SpotFailure]]:
        """Current spot prices per AZ of every region: the pages, and the failed regions.

        A failure never fails the provider, even in every region (rejected keys, EC2 down):
        the public price list fetched before is worth keeping. A region counts whole: if a
        later page fails, its earlier pages are dropped too, so no region is half-priced.
        """
        start = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        gate = asyncio.Semaphore(CONCURRENT_DOWNLOADS)

        async def one(region: str, types: Sequence[str]) -> list[str] | _SpotFailure:
            async with gate:
                try:
                    return await self._spot_region(client, creds, region, types, start)
                except ProviderError as exc:
                    return _SpotFailure.from_error(region, exc.reason)
                except httpx.HTTPError as exc:  # those request() leaves as they are
                    return _SpotFailure.from_error(region, f"{type(exc).__name__}: {exc}")

        # Regions in parallel (a few at a time): an unreachable EC2 costs every region its
        # retries, which one after another would take minutes. Results keep region order.
        outcomes = await asyncio.gather(*(one(r, t) for r, t in types_by_region.items()))
        pages = [page for o in outcomes if isinstance(o, list) for page in o]
        failures = [o for o in outcomes if isinstance(o, _SpotFailure)]
        return pages, failures

    async def _spot_region(
        self,
        client: httpx.AsyncClient,
        creds: Credentials,
        region: str,
        instance_types: Sequence[str],
        start: str,
    ) -> list[str]:
        params: dict[str, str] = {
            "Action": "DescribeSpotPriceHistory",
            "Version": EC2_API_VERSION,
            "StartTime": start,
            "ProductDescription.1": "Linux/UNIX",
            "MaxResults": "1000",
        }
        for i, itype in enumerate(sorted(instance_types), start=1):
            params[f"InstanceType.{i}"] = itype
        pages: list[str] = []
        token = ""
        while True:
            if len(pages) >= MAX_EC2_PAGES:
                raise ProviderError(self.name, f"more than {MAX_EC2_PAGES} spot pages")
            body = dict(params, NextToken=token) if token else params
            text = await self._ec2_query(client, creds, region, body)
            pages.append(text)
            _, token = _xml_spot(text)
            if not token:
                return pages

    async def _ec2_query(
        self, client: httpx.AsyncClient, creds: Credentials, region: str, params: Mapping[str, str]
    ) -> str:
        """POST one EC2 Query API call, signed with SigV4 (service ``ec2``)."""
        url = self.url("/", service="ec2", region=region)
        body = urllib.parse.urlencode(params).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
        signed = AWSRequest(method="POST", url=url, data=body, headers=headers)
        SigV4Auth(creds, "ec2", region).add_auth(signed)
        response = await request(
            client,
            "POST",
            url,
            provider=self.name,
            policy=self.policy,
            content=body,
            headers=dict(signed.headers.items()),
        )
        return response.text

    # decode / parse ----------------------------------------------------------------------
    def decode(self, data: bytes, filename: str) -> Any:
        """CSV price lists and Query-API XML stay text; everything else is JSON."""
        if filename.endswith((".csv", ".xml")):
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ResponseFormatError(self.name, f"{filename} is not UTF-8: {exc}") from None
        return super().decode(data, filename)

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        records: list[tuple[_Product, _Rate]] = []
        spots: list[_Spot] = []
        gpu_info: dict[str, _GpuInfo] = {}
        failed: list[FailedCall] = []
        for payload in payloads:
            if (calls := read_failed_calls(payload, self.name)) is not None:
                failed.extend(calls)
            else:
                self._classify(payload, records, spots, gpu_info)
        result = ParseResult()
        builder = _OfferBuilder(self.name, fetched_at, result, gpu_info)
        builder.price_list(records)
        builder.spot(spots)
        result.skip_failed(failed)  # the run reports them: a rejected key must not go unseen
        return result

    def _classify(
        self,
        payload: Any,
        records: list[tuple[_Product, _Rate]],
        spots: list[_Spot],
        gpu_info: dict[str, _GpuInfo],
    ) -> None:
        """Tell a payload's kind by its content and collect its records."""
        if isinstance(payload, bytes):
            payload = payload.decode("utf-8", errors="replace")
        if isinstance(payload, str):
            text = payload.lstrip("\ufeff \t\r\n")
            if text.startswith("<"):
                root = _xml_root(text)
                if _strip_ns(root.tag) == "DescribeInstanceTypesResponse":
                    gpu_info.update(_xml_instance_types(root)[0])
                else:
                    spots.extend(_xml_spot(text)[0])
            elif text.startswith(('"FormatVersion"', "FormatVersion", '"SKU"')):
                records.extend(_csv_records(text))
            else:
                raise ResponseFormatError(self.name, "text payload is neither CSV nor XML")
        elif isinstance(payload, Mapping):
            if "products" in payload and "terms" in payload:
                records.extend(_offer_file_records(payload))
            elif "PriceList" in payload:
                records.extend(_get_products_records(payload))
            elif "SpotPriceHistory" in payload:
                spots.extend(_json_spot(payload))
            elif "InstanceTypes" in payload:
                gpu_info.update(_gpu_infos(payload))
            else:
                keys = ", ".join(sorted(map(str, payload))[:6])
                raise ResponseFormatError(self.name, f"unknown payload with keys {keys}")
        else:
            raise ResponseFormatError(self.name, f"unexpected payload type {type(payload)}")


def _csv_row_filter(header: list[str]) -> Callable[[list[str]], bool]:
    """A fast row test for streaming: the product filter plus on-demand/reserved terms."""
    index = {col: i for i, col in enumerate(header)}
    cols = {attr: index[col] for col, attr in _CSV_TO_ATTR.items() if col in index}
    term_col = index.get("TermType")

    def keep(row: list[str]) -> bool:
        if len(row) != len(header):
            return False
        if term_col is not None and row[term_col] not in ("OnDemand", "Reserved"):
            return False
        product = _Product("", {attr: row[i] for attr, i in cols.items()})
        return _keep_product(product) is None

    return keep


def _gpu_types_by_region(price_lists: Iterable[str]) -> dict[str, list[str]]:
    """GPU instance types each region prices (from the filtered CSVs), for spot queries."""
    out: dict[str, set[str]] = {}
    for text in price_lists:
        for product, _ in _csv_records(text):
            if _keep_product(product) is None:
                region, itype = product.get("regionCode"), product.get("instanceType")
                if region and itype:
                    out.setdefault(region, set()).add(itype)
    return {r: sorted(t) for r, t in sorted(out.items())}


class _OfferBuilder:
    """Turns normalised records into offers, one per instance type, region and term."""

    def __init__(
        self,
        provider: str,
        fetched_at: datetime,
        result: ParseResult,
        gpu_info: Mapping[str, _GpuInfo],
    ) -> None:
        self.provider = provider
        self.fetched_at = fetched_at
        self.result = result
        self.gpu_info = gpu_info
        self.hardware_by_type: dict[str, _Hardware] = {}
        self.seen: set[str] = set()

    # price list --------------------------------------------------------------------------
    def price_list(self, records: Sequence[tuple[_Product, _Rate]]) -> None:
        products: dict[str, _Product] = {}
        terms: dict[tuple[str, str, str], list[_Rate]] = {}
        for product, rate in records:
            reason = _keep_product(product)
            if reason is not None:
                self.result.skip(reason, f"aws:sku/{product.sku}")
                continue
            products.setdefault(product.sku, product)
            if rate.term_type not in ("OnDemand", "Reserved"):
                self.result.skip(f"term type {rate.term_type!r}", f"aws:rate/{rate.rate_code}")
                continue
            key = (rate.sku, rate.term_type, rate.offer_term_code)
            terms.setdefault(key, []).append(rate)
        for (sku, term_type, code), rates in terms.items():
            product = products[sku]
            hw = self._hardware(product)
            if isinstance(hw, str):
                self.result.skip(hw, f"aws:sku/{sku}")
                continue
            if term_type == "OnDemand":
                self._on_demand(product, hw, rates)
            else:
                self._reserved(product, hw, code, rates)

    def _hardware(self, product: _Product) -> _Hardware | str:
        itype = product.get("instanceType")
        if not itype:
            return "no instance type"
        hw = _hardware(product, self.gpu_info.get(itype))
        if not isinstance(hw, str):
            self.hardware_by_type.setdefault(itype, hw)
        return hw

    def _on_demand(self, product: _Product, hw: _Hardware, rates: Sequence[_Rate]) -> None:
        itype = product.get("instanceType")
        ref = f"aws:sku/{product.sku}"
        hourly = [r for r in rates if r.unit == "Hrs"]
        if len(hourly) != 1:
            self.result.skip(f"{len(hourly)} hourly prices in an on-demand term", ref)
            return
        rate = hourly[0]
        price = self._decimal(rate.price, ref)
        if price is None:
            return
        self._add(
            ref,
            hw,
            offer_id=itype,
            instance_name=itype,
            region=product.get("regionCode") or None,
            price=price,
            currency=rate.currency,
            unit=PriceUnit.HOUR,
            term=RentalTerm.ON_DEMAND,
            prepaid=False,
            billing_increment_s=BILLING_INCREMENT_S,
            min_rental_hours=MIN_RENTAL_HOURS,
        )

    def _reserved(
        self, product: _Product, hw: _Hardware, code: str, rates: Sequence[_Rate]
    ) -> None:
        itype = product.get("instanceType")
        ref = f"aws:sku/{product.sku}.{code}"
        first = rates[0]
        term = _LEASES.get(first.lease)
        if term is None:
            self.result.skip(f"unknown lease length {first.lease!r}", ref)
            return
        hourly = [r for r in rates if r.unit == "Hrs"]
        upfront = [r for r in rates if r.unit == "Quantity"]
        if len(hourly) > 1 or len(upfront) > 1 or not (hourly or upfront):
            self.result.skip("reserved term without one hourly and/or one upfront part", ref)
            return
        currencies = {r.currency for r in (*hourly, *upfront)}
        if len(currencies) != 1:
            self.result.skip(f"mixed currencies {sorted(currencies)}", ref)
            return
        hourly_price = self._decimal(hourly[0].price, ref) if hourly else Decimal(0)
        upfront_price = self._decimal(upfront[0].price, ref) if upfront else Decimal(0)
        if hourly_price is None or upfront_price is None:
            return
        if hourly_price < 0 or upfront_price < 0:
            self.result.skip("negative reserved price part", ref)
            return
        if upfront_price == 0:
            price, unit, prepaid = hourly_price, PriceUnit.HOUR, False
        else:
            hours = term.commitment_hours or Decimal(0)
            price, unit, prepaid = upfront_price + hourly_price * hours, PriceUnit.TERM, True
        option = _slug(first.purchase_option) or "unknown"
        offering = _slug(first.offering_class) or "standard"
        self._add(
            ref,
            hw,
            offer_id=itype,
            term_variant=f"{offering}-{option}",
            instance_name=f"{itype} ({first.lease} {first.offering_class} RI, "
            f"{first.purchase_option})",
            region=product.get("regionCode") or None,
            price=price,
            currency=first.currency,
            unit=unit,
            term=term,
            prepaid=prepaid,
        )

    # spot --------------------------------------------------------------------------------
    def spot(self, spots: Sequence[_Spot]) -> None:
        """The latest Linux price per instance type and AZ (StartTime=now gives one each)."""
        latest: dict[tuple[str, str], _Spot] = {}
        for s in spots:
            ref = f"aws:spot/{s.availability_zone}/{s.instance_type}"
            if not s.product_description.startswith("Linux/UNIX"):
                self.result.skip(f"spot product {s.product_description!r} (Linux only)", ref)
                continue
            key = (s.instance_type, s.availability_zone)
            if key not in latest or s.timestamp > latest[key].timestamp:
                latest[key] = s
        for (itype, az), s in sorted(latest.items()):
            ref = f"aws:spot/{az}/{itype}"
            region = _region_of_az(az)
            if region is None:
                self.result.skip(f"not a regional availability zone: {az!r}", ref)
                continue
            hw = self.hardware_by_type.get(itype)
            if hw is None:
                self.result.skip("instance type not in the price list (hardware unknown)", ref)
                continue
            price = self._decimal(s.price, ref)
            if price is None:
                continue
            self._add(
                ref,
                hw,
                offer_id=itype,
                term_variant=az,
                instance_name=f"{itype} (spot, {az})",
                region=region,
                price=price,
                currency="USD",  # DescribeSpotPriceHistory prices are USD per instance-hour
                unit=PriceUnit.HOUR,
                term=RentalTerm.INTERRUPTIBLE,
                prepaid=False,
                billing_increment_s=BILLING_INCREMENT_S,
                min_rental_hours=MIN_RENTAL_HOURS,
            )

    # shared ------------------------------------------------------------------------------
    def _decimal(self, raw: str, ref: str) -> Decimal | None:
        try:
            value = to_decimal(raw)
        except ValueError:
            self.result.skip(f"price is not a number: {raw!r}", ref)
            return None
        if value is None:
            self.result.skip("no price", ref)
        return value

    def _add(
        self,
        ref: str,
        hw: _Hardware,
        *,
        offer_id: str,
        instance_name: str,
        region: str | None,
        term_variant: str | None = None,
        price: Decimal,
        currency: str,
        unit: PriceUnit,
        term: RentalTerm,
        prepaid: bool | None,
        billing_increment_s: int | None = None,
        min_rental_hours: float | None = None,
    ) -> None:
        key = f"{offer_id}|{region}|{term.value}|{term_variant}"
        if key in self.seen:
            self.result.skip("duplicate price for the same instance, region and term", ref)
            return
        if price > 0 and _too_cheap(price, currency, unit, term, hw):
            self.result.skip(f"absurd price {price} {currency} for a data-centre GPU", ref)
            return
        offer = self.result.add(
            ref,
            provider=self.provider,
            offer_id=offer_id,
            term_variant=term_variant,
            instance_name=instance_name,
            region=region,
            fetched_at=self.fetched_at,
            raw_ref=ref,
            **_gpu_fields(hw),
            **hw.fields,
            price_amount=price,
            price_currency=currency,
            price_unit=unit,
            price_basis=PriceBasis.INSTANCE,
            term=term,
            prepaid=prepaid,
            billing_increment_s=billing_increment_s,
            min_rental_hours=min_rental_hours,
        )
        if offer is not None:
            self.seen.add(key)


def _too_cheap(
    price: Decimal, currency: str, unit: PriceUnit, term: RentalTerm, hw: _Hardware
) -> bool:
    """Below :data:`MIN_USD_PER_GPU_HOUR` per GPU-hour (an unknown currency is not judged)."""
    try:
        per_hour = usd_per_hour(
            price_amount=price,
            price_currency=currency,
            price_unit=unit,
            price_basis=PriceBasis.INSTANCE,
            term=term,
            gpu_count=hw.gpu_count,
        )
    except (KeyError, ValueError):
        return False
    gpus = Decimal(str(hw.gpu_fraction if hw.gpu_fraction is not None else hw.gpu_count))
    return per_hour / gpus < MIN_USD_PER_GPU_HOUR


ADAPTER = AwsAdapter
