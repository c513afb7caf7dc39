"""Amazon EC2 GPU instances: the public EC2 price list plus spot prices.

Sources (formats as documented by AWS and recorded in tests/fixtures/aws/):

* **Price List bulk files** (public, no auth; "Using the bulk API",
  https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-ppslong.html):
  ``/offers/v1.0/aws/AmazonEC2/current/region_index.json`` lists each region's
  ``currentVersionUrl`` (``.../<region>/index.json``; the same path with ``index.csv`` is
  the CSV). A region file is hundreds of MB, so :meth:`AwsAdapter.fetch` streams it line by
  line and keeps only the GPU rows we price (see :func:`_keep_product`). CSV layout: five
  metadata lines, a header, then one row per SKU x term x price dimension. Parse applies
  the same row filter, so a whole region file reads the same as the streamed one.
* **The public spot price feed** (no account): the JSON behind the EC2 spot pricing page
  (https://aws.amazon.com/ec2/spot/pricing/), ``https://website.spot.ec2.aws.a2z.com/spot.json``:
  ``{"vers", "config": {"rate": "perhr", "valueColumns": ["linux", "mswin"], "currencies":
  ["USD"], "regions": [{"region": "us-east-2", "instanceTypes": [{"type": "gpuCurrentGen",
  "sizes": [{"size": "p5.48xlarge", "valueColumns": [{"name": "linux", "prices": {"USD":
  "20.3632"}}, ...]}]}]}]}}`` (the format as alexei-led/spotinfo reads and records it, which
  also notes that the older JSONP ``spot-price.s3.amazonaws.com/spot.js`` stopped changing in
  2024). One USD price per instance-hour per type and region, Linux read, ``N/A`` not sold.
  The default spot source: used when no AWS keys are set.
* **The Spot Instance Advisor's data** (no account, always fetched):
  ``https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json``, ``{"ranges": [{"index":
  0, "label": "<5%", "max": 5}, ...], "spot_advisor": {<region>: {"Linux": {<type>: {"s":
  savings %, "r": band index}}}}}`` (the format spotinfo and the AWS Spot Instance Advisor page
  read): each interruptible offer carries its type's and region's band, the frequency of
  interruption the preemption model uses (``interruption_band``). Where it fails, the offers
  keep the model's default rate, and a skipped record says why.
* **DescribeSpotPriceHistory** (EC2 Query API, SigV4-signed, XML): current spot price per
  availability zone. Needs the settings
  ``aws_access_key_id``/``aws_secret_access_key``; with them it replaces the public feed's
  per-region price by each zone's. Spot is an extra: a region
  whose spot call fails (rejected keys, an opt-in region the account has not enabled, EC2
  unreachable) loses only its spot prices, even when every region fails. The failures are
  logged as one warning and kept in the payloads (:func:`~adapters.base.failed_calls_payload`),
  so that :meth:`AwsAdapter.parse` records each failed region as a skipped record with its
  cause.
* **DescribeInstanceTypes** ``GpuInfo`` (Query-API XML, fetched with the same keys), when
  given, names the GPU model and maker; otherwise the model comes from
  :func:`gpu_families` (``data/aws_gpu_families.csv``). Its ``NetworkInfo`` states EFA and
  the network cards' bandwidth: the offer's fabric (:func:`_xml_fabric`), which wins over
  the documented-fabric table ``data/fabrics.csv``.

Parse reads exactly what fetch returns (CSV text, Query-API XML, the failed-calls payload);
the JSON shapes of the same data (offer file, GetProducts, the SDK's) are not read.

Prices: on-demand and spot are USD per instance-hour. A reserved-instance term has an
hourly part (unit ``Hrs``) and an optional upfront fee (unit ``Quantity``). No Upfront is
kept as its hourly rate (``prepaid=False``); Partial and All Upfront become one exact price
for the whole term, ``upfront + hourly x term hours`` (``prepaid=True``: part or all of it
is paid before use). Term hours: 1 year = 8760 h, 3 years = 26280 h, as AWS counts a
reserved term as 31,536,000 / 94,608,000 seconds ("Reserved Instance term",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/reserved-instances-types.html).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import logging
import re
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from .base import (
    Adapter,
    FailedCall,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    failed_calls_payload,
    gpu_fields,
    price_fields,
    request,
    request_stream,
)
from .calls import (
    CallFailure,
    error_code,
    failure_groups,
    gather_limited,
    http_status,
    key_rejected,
)
from .regions import region_country
from .schema import (
    Fabric,
    GpuFormFactor,
    OfferFields,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    StorageType,
)
from .tables import data_rows, typed_row
from .units import (
    cpu_vendor,
    gpu_share,
    gpu_vendor,
    lenient_float,
    price_or_reason,
    size_text_to_gb,
    to_float,
    value_at,
)

__all__ = [
    "SPOT_ADVISOR_URL",
    "SPOT_FEED_URL",
    "AwsAdapter",
    "GpuFamily",
    "InterruptionBands",
    "gpu_families",
]

log = logging.getLogger("gpuscout.adapters.aws")

#: AWS's endpoint pattern, ``https://<service>.<region>.amazonaws.com`` (the adapter's base URL).
ENDPOINT = "https://{service}.{region}.amazonaws.com"
#: The public spot price feed behind the EC2 spot pricing page (no account; module docstring).
SPOT_FEED_URL = "https://website.spot.ec2.aws.a2z.com/spot.json"
#: The Spot Instance Advisor's data: interruption band per type and region (no account).
SPOT_ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
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

#: Linux on-demand and spot instances are billed per second with a one-minute minimum
#: (https://aws.amazon.com/ec2/pricing/on-demand/ , "Per Second Billing").
BILLING_INCREMENT_S = 1
MIN_RENTAL_HOURS = 60 / 3600


@dataclasses.dataclass(frozen=True, slots=True)
class GpuFamily:
    """The GPU of an instance family, as AWS's instance-type docs name it."""

    gpu_raw_name: str
    form_factor: GpuFormFactor | None = None


@functools.cache
def gpu_families() -> dict[str, GpuFamily]:
    """Instance family -> GPU, from ``data/aws_gpu_families.csv``, read once.

    Each row cites "Accelerated computing instance specifications", whose Accelerators
    column names the GPU (H100, A100, A10G...); the SXM form factor only where the docs say
    the GPUs are joined by NVLink/NVSwitch (P3, P4, P5, P6). Used when no
    DescribeInstanceTypes ``GpuInfo`` is given; the price list itself has no GPU model.
    """
    return {row["family"]: typed_row(GpuFamily, row) for row in data_rows("aws_gpu_families.csv")}


# --- price-list rows ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Row:
    """One price-list CSV row: a SKU (instance type in a region with OS and tenancy) and one
    price dimension of one of its terms, by the CSV's column names."""

    cells: Mapping[str, str]

    def get(self, column: str) -> str:
        return (self.cells.get(column) or "").strip()


def _keep_product(row: _Row) -> str | None:
    """Why a row is not a Linux shared-tenancy GPU instance we price; None to keep it.

    ``CapacityStatus`` other than ``Used`` marks capacity-reservation rows at the same price;
    ``Pre Installed S/W`` other than ``NA`` adds SQL Server licences.
    """
    if row.get("Product Family") not in ("Compute Instance", ""):
        return "not a compute instance"
    if row.get("Operating System") != "Linux":
        return "not Linux"
    if row.get("Tenancy") != "Shared":
        return "not shared tenancy"
    if row.get("CapacityStatus") not in ("Used", ""):
        return "capacity reservation row"
    if row.get("Pre Installed S/W") not in ("NA", ""):
        return "pre-installed software"
    if row.get("MarketOption") not in ("OnDemand", ""):
        return "not an on-demand market option"
    count = lenient_float(row.get("GPU"))
    if not count or count <= 0:
        return "no GPU"
    return None


# --- decoding what fetch returns: CSV and Query-API XML ---------------------------------


def _csv_records(text: str) -> Iterator[_Row]:
    """The rows of a price-list CSV (metadata lines, header, rows)."""
    header: list[str] | None = None
    for row in csv.reader(io.StringIO(text)):
        if header is None:
            if row and row[0] == "SKU":
                header = row
            continue
        if row and len(row) == len(header):
            yield _Row(dict(zip(header, row, strict=True)))
    if header is None:
        raise ResponseFormatError(AwsAdapter.name, "price-list CSV has no 'SKU' header row")


@dataclasses.dataclass(frozen=True, slots=True)
class _Spot:
    instance_type: str
    availability_zone: str
    product_description: str
    price: str
    timestamp: str


def _strip_ns(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _xml_spot(root: ET.Element) -> tuple[list[_Spot], str]:
    """Items and ``nextToken`` of a DescribeSpotPriceHistory Query-API XML response."""
    if _strip_ns(root.tag) != "DescribeSpotPriceHistoryResponse":
        raise ResponseFormatError(AwsAdapter.name, f"unexpected XML response <{root.tag}>")
    data = _xml_data(root)
    keys = ("instanceType", "availabilityZone", "productDescription", "spotPrice", "timestamp")
    items = [
        _Spot(*(_xml_str(item, k) for k in keys)) for item in _xml_list(data, "spotPriceHistorySet")
    ]
    return items, _xml_str(data, "nextToken")


def _xml_root(text: str) -> ET.Element:
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise ResponseFormatError(AwsAdapter.name, f"EC2 response is not XML: {exc}") from None


def _xml_data(element: ET.Element) -> Any:
    """A Query-API XML element as JSON-like data: a set of ``<item>`` elements is a list, an
    element with others a dict by tag (namespace dropped), any other its text, stripped."""
    children = list(element)
    if not children:
        return (element.text or "").strip()
    if all(_strip_ns(child.tag) == "item" for child in children):
        return [_xml_data(child) for child in children]
    return {_strip_ns(child.tag): _xml_data(child) for child in children}


def _xml_str(data: Any, *keys: str) -> str:
    """The text at ``keys`` down :func:`_xml_data`; ``""`` where there is none."""
    value = value_at(data, *keys)
    return value if isinstance(value, str) else ""


def _xml_list(data: Any, *keys: str) -> list[Any]:
    """The items of the set at ``keys`` down :func:`_xml_data`; none where it is empty."""
    value = value_at(data, *keys)
    return value if isinstance(value, list) else []


@dataclasses.dataclass(frozen=True, slots=True)
class _TypeInfo:
    """DescribeInstanceTypes of one GPU type: ``GpuInfo`` (name, maker, count and per-GPU
    memory in MiB), the fabric its ``NetworkInfo`` states (:func:`_xml_fabric`) and what its
    ``ProcessorInfo``, ``VCpuInfo`` and ``InstanceStorageInfo`` state (:func:`_xml_host`)."""

    name: str
    manufacturer: str
    count: int | None
    memory_mib: float | None
    stated: OfferFields  # the fabric and the host facts


#: ``processorInfo/supportedArchitectures`` values, as the schema's ``cpu_arch`` names them
#: (EC2 API reference, ArchitectureType: i386 | x86_64 | arm64 | x86_64_mac | arm64_mac).
_ARCHITECTURES = {"x86_64": "x86_64", "arm64": "arm64"}


def _xml_host(record: Any) -> OfferFields:
    """CPU and instance-store facts of one DescribeInstanceTypes record.

    * ``vCpuInfo/defaultCores``: the physical cores (``cpu_cores``; ``defaultVCpus`` is
      the price list's vCPU figure already);
    * ``processorInfo/supportedArchitectures``: ``cpu_arch`` when it names one architecture
      (a 32-bit ``i386`` beside ``x86_64`` is still ``x86_64``);
    * ``instanceStorageInfo/nvmeSupport`` ``required``: the instance store is NVMe
      (``storage_type``; the price list calls a p5's disks plain "SSD").

    EC2 API reference: API_VCpuInfo, API_ProcessorInfo, API_InstanceStorageInfo. The API
    states no socket count, RAM ECC nor public bandwidth (``networkPerformance`` is the VPC
    network), and EBS throughput is network storage's, not the instance store's: those stay
    unknown.
    """
    out: OfferFields = {}
    cores = to_float(_xml_str(record, "vCpuInfo", "defaultCores"))
    if cores is not None and cores > 0:
        out["cpu_cores"] = cores
    archs = _xml_list(record, "processorInfo", "supportedArchitectures")
    names = {a for a in archs if isinstance(a, str)} - {"i386"}
    if len(names) == 1 and (arch := _ARCHITECTURES.get(names.pop())) is not None:
        out["cpu_arch"] = arch
    if _xml_str(record, "instanceStorageInfo", "nvmeSupport").lower() == "required":
        out["storage_type"] = StorageType.NVME
    return out


def _xml_fabric(network: Any) -> OfferFields:
    """The cluster fabric a DescribeInstanceTypes ``networkInfo`` states.

    ``networkInfo/efaSupported`` true: ``fabric=efa`` and ``multi_node`` (EFA exists for
    inter-instance traffic, see :mod:`adapters.fabrics`), ``fabric_gbps`` the sum of
    ``networkCards/item/peakBandwidthInGbps`` (a p5.48xlarge: 32 cards, 3200 Gbps). EC2 API
    reference: API_NetworkInfo (``efaSupported``, ``efaInfo``, ``networkCards``,
    ``maximumNetworkCards``), API_NetworkCardInfo (``peakBandwidthInGbps``), API_EfaInfo
    (``maximumEfaInterfaces``). Without EFA the API states no cluster fabric (an ENA VPC
    network is not one), so nothing is set and ``data/fabrics.csv`` may fill it; a card
    without a number leaves ``fabric_gbps`` unset rather than undercounted.
    """
    if _xml_str(network, "efaSupported").lower() != "true":
        return {}
    out: OfferFields = {"fabric": Fabric.EFA, "multi_node": True}
    cards = _xml_list(network, "networkCards")
    peaks = [to_float(_xml_str(card, "peakBandwidthInGbps")) for card in cards]
    if peaks and all(p is not None and p > 0 for p in peaks):
        out["fabric_gbps"] = sum(p for p in peaks if p is not None)
    return out


def _xml_instance_types(root: ET.Element) -> tuple[dict[str, _TypeInfo], str]:
    """GpuInfo per instance type and ``nextToken`` of a DescribeInstanceTypes XML response.

    Shape (EC2 Query API): ``instanceTypeSet/item/{instanceType, gpuInfo/gpus/item/{name,
    manufacturer, count, memoryInfo/sizeInMiB}, networkInfo}``.
    """
    out: dict[str, _TypeInfo] = {}
    data = _xml_data(root)
    for item in _xml_list(data, "instanceTypeSet"):
        gpus = _xml_list(item, "gpuInfo", "gpus")
        if not gpus:
            continue
        gpu = gpus[0]
        try:
            count = int(_xml_str(gpu, "count")) if _xml_str(gpu, "count") else None
            memory_mib = to_float(_xml_str(gpu, "memoryInfo", "sizeInMiB"))
            stated = _xml_fabric(value_at(item, "networkInfo")) | _xml_host(item)
        except ValueError:
            continue
        name, maker = _xml_str(gpu, "name"), _xml_str(gpu, "manufacturer")
        out[_xml_str(item, "instanceType")] = _TypeInfo(name, maker, count, memory_mib, stated)
    return out, _xml_str(data, "nextToken")


# --- spot failures -----------------------------------------------------------------------

_EC2_URL = re.compile(r"https://ec2\.[a-z0-9-]+\.amazonaws\.com/")
_XML_ENTITIES = {"&quot;": '"', "&apos;": "'"}
#: What EC2's authentication/authorization errors (:func:`~adapters.calls.key_rejected`) may
#: mean: ``AuthFailure`` (401, also what an opt-in region the account has not enabled answers)
#: and ``UnauthorizedOperation`` (403, the keys lack ``ec2:DescribeSpotPriceHistory``).
_AUTH_HINT = (
    " (AWS keys rejected or without ec2:DescribeSpotPriceHistory,"
    " or the region is not enabled for the account)"
)


def _spot_failure(region: str, reason: str) -> CallFailure:
    """Why one region's spot prices were not fetched, read back from a failed :func:`request`.

    Its :class:`ProviderError` carries only text, ``HTTP <status> from <url> (<type>); code
    <Code>`` (``... after N attempts`` for a retried status). EC2 answers a failed Query-API
    call with ``<Response><Errors><Error><Code>...</Code><Message>...</Message></Error>
    </Errors><RequestID>...</RequestID></Response>`` ("Error codes for the Amazon EC2 API",
    example error response,
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html), the
    error names its ``<Code>``: the cause is ``HTTP 401 AuthFailure``, the same in every
    region (EC2's ``<Message>`` is free text and not quoted). Any other failure (timeout, network,
    payload) keeps its text, the regional URL replaced so that it reads the same in every
    region and equal failures group. The skipped record names no region or request id in its
    reason, and says what an auth failure (:data:`_AUTH_HINT`) may mean.
    """
    status = http_status(reason)
    if status is None:
        cause, detail = _EC2_URL.sub("EC2", reason), ""
    else:
        cause, detail = f"HTTP {status} {error_code(reason) or ''}".strip(), ""
    hint = _AUTH_HINT if key_rejected(reason) else ""
    failed = FailedCall(f"aws:spot/{region}", f"spot prices not fetched: {cause}{hint}")
    return CallFailure(failed, cause, region, detail)


def _spot_failure_warning(failures: Sequence[CallFailure], regions: int) -> str:
    """One line for all failed regions, grouped by cause, saying what the user can do."""
    text = f"aws: spot prices not fetched in {len(failures)} of {regions} regions: "
    text += failure_groups(failures)
    if len(failures) == regions and all(key_rejected(f.cause) for f in failures):
        text += (
            "; the AWS keys were rejected or lack ec2:DescribeSpotPriceHistory: check "
            "GPUSCOUT_AWS_ACCESS_KEY_ID and GPUSCOUT_AWS_SECRET_ACCESS_KEY"
        )
    elif any(key_rejected(f.cause) for f in failures):
        text += "; an auth failure in some regions only is usually a region not enabled"
    return text + "; on-demand and reserved prices kept"


# --- price-list and zone strings --------------------------------------------------------

_STORAGE = re.compile(r"^\s*(\d+)\s*x\s*([\d.,]+)\s*(.*)$", re.IGNORECASE)
_AZ = re.compile(r"^([a-z]{2}(?:-[a-z]+)+-\d+)[a-z]$")


def _storage(text: str) -> tuple[float | None, StorageType | None]:
    """Instance store ("8 x 3840 SSD", "1 x 250 NVMe SSD") -> (total GB, kind); EBS -> None.

    AWS gives instance-store volume sizes in GB.
    """
    m = _STORAGE.match(text or "")
    if not m:
        return None, None
    total = int(m.group(1)) * float(m.group(2).replace(",", ""))
    rest = m.group(3).lower()
    kind = next(
        (k for k in (StorageType.NVME, StorageType.SSD, StorageType.HDD) if k in rest), None
    )
    return total, kind


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


_LEASES = {"1yr": RentalTerm.COMMIT_1Y, "3yr": RentalTerm.COMMIT_3Y}


# --- hardware per instance type ----------------------------------------------------------


def _hardware(row: _Row, info: _TypeInfo | None) -> OfferFields | str:
    """The fields every offer of a row's instance type shares, or why it cannot be priced."""
    count = float(info.count) if info is not None and info.count else lenient_float(row.get("GPU"))
    if not count or count <= 0:
        return "no GPU"
    gpu_count, fraction = gpu_share(count)
    # The price list's "GPU Memory" is the instance total in the datasheet's GB ("640 GB"
    # for 8 H100 80GB); GpuInfo gives MiB per GPU, the nominal size in MiB (81920 for an
    # H100: 80 GiB, the "80 GB" it is sold by), the fallback.
    total_gpu_memory = size_text_to_gb(row.get("GPU Memory"))
    per_gpu_memory = total_gpu_memory / gpu_count if total_gpu_memory else None
    if per_gpu_memory is None and info is not None and info.memory_mib:
        per_gpu_memory = info.memory_mib / 1024
    family = gpu_families().get(row.get("Instance Type").split(".", 1)[0])
    form_factor = family.form_factor if family else None
    raw_name = (info.name if info else None) or (family.gpu_raw_name if family else None)
    # A slice's memory is its share; the catalog knows the whole board's.
    board_memory = per_gpu_memory / fraction if per_gpu_memory and fraction else per_gpu_memory
    vendor = gpu_vendor(info.manufacturer) if info is not None else None
    storage_gb, storage_kind = _storage(row.get("Storage"))
    processor = row.get("Physical Processor")
    return {
        **gpu_fields(raw_name, memory_gb=board_memory, form_factor=form_factor, vendor=vendor),
        "gpu_count": gpu_count,
        "gpu_fraction": fraction,
        "gpu_memory_gb": per_gpu_memory,
        "vcpus": lenient_float(row.get("vCPU")) or None,
        "ram_gb": size_text_to_gb(row.get("Memory")),
        "storage_gb": storage_gb,
        "storage_type": storage_kind,
        "cpu_model": processor or None,
        "cpu_vendor": cpu_vendor(processor),
        **(info.stated if info is not None else {}),
    }


# --- the adapter -------------------------------------------------------------------------


class AwsAdapter(Adapter):
    """EC2 GPU instances: on-demand and reserved (price list), spot (EC2 API, with keys)."""

    name = "aws"
    title = "Amazon Web Services (EC2)"
    #: Where to rent: the EC2 console's launch wizard (console.aws.amazon.com/ec2/, AWS's
    #: getting-started guide), region and instance type (the offer's id) filled as the
    #: console's own links give them.
    rent_url: ClassVar[str] = (
        "https://console.aws.amazon.com/ec2/home?region={region}"
        "#LaunchInstances:instanceType={offer_id}"
    )
    pricing_url: ClassVar[str] = "https://aws.amazon.com/ec2/pricing/on-demand/"
    source_url = REGION_INDEX_URL
    #: Nothing is required: the price list is public. These enable spot prices.
    optional_credential_names = ("aws_access_key_id", "aws_secret_access_key")
    #: Restrict to these regions (None = every region in the region index).
    regions: ClassVar[tuple[str, ...] | None] = None
    base_url = ENDPOINT

    @classmethod
    def source_text(cls) -> str:
        return (
            f"API, no account: price list {cls.source_url}; spot prices from the public feed"
            f" {SPOT_FEED_URL} (with keys: each zone's, DescribeSpotPriceHistory);"
            f" interruption bands from {SPOT_ADVISOR_URL}"
        )

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
        downloads = [functools.partial(self._stream_gpu_rows, client, u) for u in csv_urls.values()]
        price_lists = await gather_limited(downloads, CONCURRENT_DOWNLOADS)
        payloads: list[Any] = list(price_lists)
        failed: list[FailedCall] = []
        advisor = await self._public_json(client, SPOT_ADVISOR_URL, "spot-advisor", failed)
        payloads += [advisor] if advisor is not None else []
        key, secret = (
            self.credentials.get(n) for n in ("aws_access_key_id", "aws_secret_access_key")
        )
        if not key or not secret:
            # no account: the public feed's spot price per type and region
            feed = await self._public_json(client, SPOT_FEED_URL, "spot-feed", failed)
            payloads += [feed] if feed is not None else []
            return payloads + ([failed_calls_payload(failed)] if failed else [])
        creds = Credentials(str(key), str(secret))
        types_by_region = _gpu_types_by_region(price_lists)
        payloads.extend(await self._fetch_instance_types(client, creds, types_by_region))
        pages, failures = await self._fetch_spot(client, creds, types_by_region)
        payloads.extend(pages)
        if failures:
            log.warning("%s", _spot_failure_warning(failures, len(types_by_region)))
            failed += [f.call for f in failures]
        return payloads + ([failed_calls_payload(failed)] if failed else [])

    def public_url(self, url: str) -> str:
        """``url``, a public file AWS serves on its own host (the spot feed, the advisor's data),
        or, where the base URL was replaced (a mirror, a test server), the same path there: a
        replacement serves every AWS address at one."""
        if self.base_url == type(self).base_url:
            return url
        return self.base_url + urllib.parse.urlsplit(url).path

    async def _public_json(
        self, client: httpx.AsyncClient, url: str, what: str, failed: list[FailedCall]
    ) -> Any:
        """A public JSON file, or ``None`` with the failure added to ``failed`` (an extra: the
        price list stands without it)."""
        try:
            return await self.get_json(client, self.public_url(url))
        except ProviderError as exc:
            log.warning("aws: %s not fetched: %s", what, exc.reason)
            failed.append(FailedCall(f"aws:{what}", f"{what} not fetched: {exc.reason}"))
            return None

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
                pages += await self._ec2_pages(
                    client, creds, region, params, lambda root: _xml_instance_types(root)[1]
                )
        except ProviderError as exc:
            log.warning(
                "aws: DescribeInstanceTypes failed (%s); GPU names from the family table",
                exc.reason,
            )
            return []
        return pages

    def _region_csv_urls(self, index: Any) -> dict[str, str]:
        regions = value_at(index, "regions")
        if not isinstance(regions, Mapping):
            raise ResponseFormatError(self.name, "region index lacks a 'regions' object")
        urls: dict[str, str] = {}
        for code, entry in regions.items():
            if code.startswith(EXCLUDED_REGION_PREFIXES):
                continue
            if self.regions is not None and code not in self.regions:
                continue
            path = value_at(entry, "currentVersionUrl")
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

    async def _fetch_spot(
        self,
        client: httpx.AsyncClient,
        creds: Credentials,
        types_by_region: Mapping[str, Sequence[str]],
    ) -> tuple[list[str], list[CallFailure]]:
        """Current spot prices per AZ of every region: the pages, and the failed regions.

        A failure never fails the provider, even in every region (rejected keys, EC2 down):
        the public price list fetched before is worth keeping. A region counts whole: if a
        later page fails, its earlier pages are dropped too, so no region is half-priced.
        """
        start = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

        async def one(region: str, types: Sequence[str]) -> list[str] | CallFailure:
            try:
                return await self._spot_region(client, creds, region, types, start)
            except ProviderError as exc:
                return _spot_failure(region, exc.reason)
            except httpx.HTTPError as exc:  # those request() leaves as they are
                return _spot_failure(region, f"{type(exc).__name__}: {exc}")

        # Regions in parallel (a few at a time): an unreachable EC2 costs every region its
        # retries. Results keep region order.
        calls = [functools.partial(one, r, t) for r, t in types_by_region.items()]
        outcomes = await gather_limited(calls, CONCURRENT_DOWNLOADS)
        pages = [page for o in outcomes if isinstance(o, list) for page in o]
        failures = [o for o in outcomes if isinstance(o, CallFailure)]
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
            **{f"InstanceType.{i}": t for i, t in enumerate(sorted(instance_types), start=1)},
        }
        return await self._ec2_pages(client, creds, region, params, lambda root: _xml_spot(root)[1])

    async def _ec2_pages(
        self,
        client: httpx.AsyncClient,
        creds: Credentials,
        region: str,
        params: Mapping[str, str],
        next_token: Callable[[ET.Element], str],
    ) -> list[str]:
        """Every page of one EC2 Query-API call, following ``nextToken``; ``next_token``
        reads it from a page (and raises on a page of the wrong kind)."""

        async def page(token: str | None) -> str:
            body = dict(params, NextToken=token) if token else params
            return await self._ec2_query(client, creds, region, body)

        return await self.follow_pages(
            page,
            lambda text: next_token(_xml_root(text)) or None,
            max_pages=MAX_EC2_PAGES,
            too_many=f"more than {MAX_EC2_PAGES} {params['Action']} pages",
        )

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
        rows: list[_Row] = []
        spots: list[_Spot] = []
        gpu_info: dict[str, _TypeInfo] = {}
        feeds: list[Mapping[str, Any]] = []
        bands = InterruptionBands()
        payloads, failed = self.split_failed_calls(payloads)
        for payload in payloads:
            if isinstance(payload, Mapping) and "spot_advisor" in payload:
                try:
                    bands = _interruption_bands(payload, self.name)
                except ResponseFormatError as exc:  # an extra: the offers keep the default
                    failed.append(FailedCall("aws:spot-advisor", exc.reason))
            elif isinstance(payload, Mapping) and "config" in payload:
                feeds.append(payload)
            elif not isinstance(payload, str):
                raise ResponseFormatError(
                    self.name,
                    f"unexpected payload type {type(payload).__name__}: parse reads what fetch"
                    " returns (price-list CSV text, EC2 Query-API XML, the spot feed's and the"
                    " Spot Advisor's JSON)",
                )
            elif (text := payload.lstrip("\ufeff \t\r\n")).startswith("<"):
                root = _xml_root(text)
                if _strip_ns(root.tag) == "DescribeInstanceTypesResponse":
                    gpu_info.update(_xml_instance_types(root)[0])
                else:
                    spots.extend(_xml_spot(root)[0])
            elif text.startswith(('"FormatVersion"', "FormatVersion", '"SKU"')):
                rows.extend(_csv_records(text))
            else:
                raise ResponseFormatError(self.name, "text payload is neither CSV nor XML")
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        builder = _OfferBuilder(result, gpu_info, bands)
        builder.price_list(rows)
        builder.spot(spots)
        for feed in feeds:
            builder.spot_feed(feed)
        result.skip_failed(failed)  # the run reports them: a rejected key must not go unseen
        return result


def _csv_row_filter(header: list[str]) -> Callable[[list[str]], bool]:
    """A fast row test for streaming: the product filter plus on-demand/reserved terms."""
    term_col = header.index("TermType") if "TermType" in header else None

    def keep(row: list[str]) -> bool:
        if len(row) != len(header):
            return False
        if term_col is not None and row[term_col] not in ("OnDemand", "Reserved"):
            return False
        return _keep_product(_Row(dict(zip(header, row, strict=True)))) is None

    return keep


def _gpu_types_by_region(price_lists: Iterable[str]) -> dict[str, list[str]]:
    """GPU instance types each region prices (from the filtered CSVs), for spot queries."""
    out: dict[str, set[str]] = {}
    for text in price_lists:
        for row in _csv_records(text):
            if _keep_product(row) is None:
                region, itype = row.get("Region Code"), row.get("Instance Type")
                if region and itype:
                    out.setdefault(region, set()).add(itype)
    return {r: sorted(t) for r, t in sorted(out.items())}


@dataclasses.dataclass(frozen=True, slots=True)
class InterruptionBands:
    """The Spot Instance Advisor's band of each Linux instance type per region, ``(region,
    type) -> label`` (``"<5%"``, ``"5-10%"``, ... ``">20%"`` of capacity reclaimed per month);
    empty where the data was not fetched."""

    by_type: Mapping[tuple[str, str], str] = dataclasses.field(default_factory=dict)

    def fields(self, region: str, itype: str) -> OfferFields:
        """The offer fields of the band of ``itype`` in ``region`` (none where not listed)."""
        band = self.by_type.get((region, itype))
        return {"interruption_band": band} if band is not None else {}


def _interruption_bands(payload: Mapping[str, Any], provider: str) -> InterruptionBands:
    """The bands of the advisor's data: each ``spot_advisor[region]["Linux"][type]["r"]``
    indexes ``ranges``, whose ``label`` names the band."""
    ranges = payload.get("ranges")
    advisor = payload.get("spot_advisor")
    if not isinstance(ranges, list) or not isinstance(advisor, Mapping):
        raise ResponseFormatError(provider, "spot advisor data lacks ranges or spot_advisor")
    labels = {
        band["index"]: band["label"]
        for band in ranges
        if isinstance(band, Mapping)
        and isinstance(band.get("index"), int)
        and isinstance(band.get("label"), str)
    }
    out: dict[tuple[str, str], str] = {}
    for region, systems in advisor.items():
        linux = systems.get("Linux") if isinstance(systems, Mapping) else None
        for itype, entry in (linux if isinstance(linux, Mapping) else {}).items():
            r = entry.get("r") if isinstance(entry, Mapping) else None
            if isinstance(r, int) and r in labels:
                out[(region, itype)] = labels[r]
    return InterruptionBands(out)


class _OfferBuilder:
    """Turns price-list rows and spot items into offers, one per instance type, region and
    term (the contract drops a second record with the same offer key)."""

    def __init__(
        self,
        result: ParseResult,
        gpu_info: Mapping[str, _TypeInfo],
        bands: InterruptionBands | None = None,
    ) -> None:
        self.result = result
        self.gpu_info = gpu_info
        self.bands = bands or InterruptionBands()
        self.hardware_by_type: dict[str, OfferFields] = {}

    # price list --------------------------------------------------------------------------
    def price_list(self, rows: Sequence[_Row]) -> None:
        products: dict[str, _Row] = {}  # SKU -> its first row (the product's columns)
        terms: dict[tuple[str, str, str], list[_Row]] = {}
        for row in rows:
            reason = _keep_product(row)
            if reason is not None:
                self.result.skip(reason, f"aws:sku/{row.get('SKU')}")
                continue
            products.setdefault(row.get("SKU"), row)
            term_type = row.get("TermType")
            if term_type not in ("OnDemand", "Reserved"):
                self.result.skip(f"term type {term_type!r}", f"aws:rate/{row.get('RateCode')}")
                continue
            terms.setdefault((row.get("SKU"), term_type, row.get("OfferTermCode")), []).append(row)
        for (sku, term_type, code), rates in terms.items():
            product = products[sku]
            hw = self._hardware(product)
            if isinstance(hw, str):
                self.result.skip(hw, f"aws:sku/{sku}")
            elif term_type == "OnDemand":
                self._on_demand(product, hw, rates)
            else:
                self._reserved(product, hw, code, rates)

    def _hardware(self, product: _Row) -> OfferFields | str:
        itype = product.get("Instance Type")
        if not itype:
            return "no instance type"
        hw = _hardware(product, self.gpu_info.get(itype))
        if not isinstance(hw, str):
            self.hardware_by_type.setdefault(itype, hw)
        return hw

    def _on_demand(self, product: _Row, hw: OfferFields, rates: Sequence[_Row]) -> None:
        itype = product.get("Instance Type")
        ref = f"aws:sku/{product.get('SKU')}"
        hourly = [r for r in rates if r.get("Unit") == "Hrs"]
        if len(hourly) != 1:
            self.result.skip(f"{len(hourly)} hourly prices in an on-demand term", ref)
            return
        price = price_or_reason(hourly[0].get("PricePerUnit"))
        if isinstance(price, str):
            self.result.skip(price, ref)
            return
        fields: OfferFields = {
            **hw,
            "offer_id": itype,
            "instance_name": itype,
            **_place(product.get("Region Code")),
            **price_fields(price, PriceBasis.INSTANCE, currency=hourly[0].get("Currency")),
            "prepaid": False,
            "billing_increment_s": BILLING_INCREMENT_S,
            "min_rental_hours": MIN_RENTAL_HOURS,
        }
        self.result.add(ref, **fields)

    def _reserved(self, product: _Row, hw: OfferFields, code: str, rates: Sequence[_Row]) -> None:
        itype = product.get("Instance Type")
        ref = f"aws:sku/{product.get('SKU')}.{code}"
        first = rates[0]
        columns = ("LeaseContractLength", "PurchaseOption", "OfferingClass")
        lease, option, offering = (first.get(c) for c in columns)
        term = _LEASES.get(lease)
        if term is None:
            self.result.skip(f"unknown lease length {lease!r}", ref)
            return
        hourly = [r for r in rates if r.get("Unit") == "Hrs"]
        upfront = [r for r in rates if r.get("Unit") == "Quantity"]
        if len(hourly) > 1 or len(upfront) > 1 or not (hourly or upfront):
            self.result.skip("reserved term without one hourly and/or one upfront part", ref)
            return
        currencies = {r.get("Currency") for r in (*hourly, *upfront)}
        if len(currencies) != 1:
            self.result.skip(f"mixed currencies {sorted(currencies)}", ref)
            return
        parts = [
            price_or_reason(r[0].get("PricePerUnit")) if r else Decimal(0)
            for r in (hourly, upfront)
        ]
        reasons = [p for p in parts if isinstance(p, str)]
        for reason in reasons:  # each broken part is reported
            self.result.skip(reason, ref)
        if reasons:
            return
        hourly_part, upfront_part = (Decimal(p) for p in parts)
        if hourly_part < 0 or upfront_part < 0:
            self.result.skip("negative reserved price part", ref)
            return
        if upfront_part == 0:
            price, unit, prepaid = hourly_part, PriceUnit.HOUR, False
        else:
            hours = term.commitment_hours or Decimal(0)
            price, unit, prepaid = upfront_part + hourly_part * hours, PriceUnit.TERM, True
        fields: OfferFields = {
            **hw,
            "offer_id": itype,
            "term_variant": f"{_slug(offering) or 'standard'}-{_slug(option) or 'unknown'}",
            "instance_name": f"{itype} ({lease} {offering} RI, {option})",
            **_place(product.get("Region Code")),
            **price_fields(
                price, PriceBasis.INSTANCE, term, unit=unit, currency=first.get("Currency")
            ),
            "prepaid": prepaid,
        }
        self.result.add(ref, **fields)

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
            zone = _AZ.match(az)  # "us-east-1a" in "us-east-1"; None for local/wavelength zones
            hw = self.hardware_by_type.get(itype)
            price = price_or_reason(s.price)
            if zone is None:
                self.result.skip(f"not a regional availability zone: {az!r}", ref)
            elif hw is None:
                self.result.skip("instance type not in the price list (hardware unknown)", ref)
            elif isinstance(price, str):
                self.result.skip(price, ref)
            else:
                fields: OfferFields = {
                    **hw,
                    "offer_id": itype,
                    "term_variant": az,
                    "instance_name": f"{itype} (spot, {az})",
                    **_place(zone.group(1)),
                    # DescribeSpotPriceHistory prices are USD per instance-hour
                    **price_fields(price, PriceBasis.INSTANCE, RentalTerm.INTERRUPTIBLE),
                    "prepaid": False,
                    "billing_increment_s": BILLING_INCREMENT_S,
                    "min_rental_hours": MIN_RENTAL_HOURS,
                    **self.bands.fields(zone.group(1), itype),
                }
                self.result.add(ref, **fields)

    def spot_feed(self, feed: Mapping[str, Any]) -> None:
        """The public feed's Linux spot price of each GPU type the price list describes, per
        region (USD per instance-hour, ``config.rate`` ``perhr``); other types are not GPU
        offers and are passed over, a GPU type without a Linux price is not sold there."""
        config = feed.get("config")
        regions = config.get("regions") if isinstance(config, Mapping) else None
        if not isinstance(regions, list) or not isinstance(config, Mapping):
            self.result.skip("spot feed without config.regions: no spot prices", "aws:spot-feed")
            return
        if config.get("rate") != "perhr" or "USD" not in (config.get("currencies") or []):
            self.result.skip("spot feed prices not USD per hour: not read", "aws:spot-feed")
            return
        for entry in regions:
            region = entry.get("region") if isinstance(entry, Mapping) else None
            groups = entry.get("instanceTypes") if isinstance(entry, Mapping) else None
            if not isinstance(region, str) or not isinstance(groups, list):
                self.result.skip("spot feed region without a name or instance types")
                continue
            for group in groups:
                for size in group.get("sizes", []) if isinstance(group, Mapping) else []:
                    self._feed_size(region, size)

    def _feed_size(self, region: str, size: Any) -> None:
        itype = size.get("size") if isinstance(size, Mapping) else None
        if not isinstance(itype, str) or itype.split(".")[0] not in gpu_families():
            return  # not a GPU instance type
        ref = f"aws:spot-feed/{region}/{itype}"
        linux = [
            c.get("prices", {}).get("USD")
            for c in size.get("valueColumns", [])
            if isinstance(c, Mapping) and c.get("name") == "linux"
        ]
        hw = self.hardware_by_type.get(itype)
        if not linux or not isinstance(linux[0], str) or linux[0].startswith("N/A"):
            return  # not sold as spot there
        price = price_or_reason(linux[0])
        if hw is None:
            self.result.skip("instance type not in the price list (hardware unknown)", ref)
        elif isinstance(price, str):
            self.result.skip(price, ref)
        else:
            fields: OfferFields = {
                **hw,
                "offer_id": itype,
                "instance_name": f"{itype} (spot, {region})",
                **_place(region),
                # the feed's prices are USD per instance-hour (config.rate "perhr")
                **price_fields(price, PriceBasis.INSTANCE, RentalTerm.INTERRUPTIBLE),
                "prepaid": False,
                "billing_increment_s": BILLING_INCREMENT_S,
                "min_rental_hours": MIN_RENTAL_HOURS,
                **self.bands.fields(region, itype),
            }
            self.result.add(ref, **fields)


def _place(region: Any) -> OfferFields:
    """An offer's ``region`` and its ISO country (``data/region_countries.csv``)."""
    name = region if isinstance(region, str) and region else None
    return {"region": name, "country": region_country("aws", name)}
