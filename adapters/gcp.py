"""Google Cloud (Compute Engine) GPU machines, priced from the Cloud Billing Catalog API.

Source: ``GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus`` (the
Compute Engine service), API key in ``?key=``, paged with ``pageToken`` / ``nextPageToken``
(https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list). One response
is ``{"skus": [Sku, ...], "nextPageToken": "..."}``; the last page has an empty token.

The catalog has **no price per machine type**. It prices components, each SKU for a list of
``serviceRegions`` and one ``category.usageType`` (``OnDemand``, ``Preemptible`` = Spot,
``Commit1Yr``, ``Commit3Yr``):

* GPUs per GPU-hour (``usageUnit`` ``h``), named only in the free-text ``description``
  ("Nvidia Tesla A100 GPU running in Americas", "Spot Preemptible Nvidia L4 GPU ...",
  "Commitment v1: Nvidia H100 80GB GPU in Americas for 1 Year");
* vCPUs per vCPU-hour and RAM per GiB-hour (``GiBy.h``) of each machine series
  ("A2 Instance Core", "A2 Instance Ram", "Commitment v1: A2 Cpu in ... for 1 Year");
* A4 (B200) only as a bundled "A4 Nvidia B200 (1 gpu slice)" SKU: one GPU with its share of
  the host, with no vCPU/RAM SKUs to add.

A machine price is therefore assembled here, per region and term, as
``gpus x GPU rate + vCPUs x core rate + GiB x RAM rate`` (or ``gpus x slice rate``), from
the machine shapes Google documents (:func:`machine_shapes`: ``data/gcp_machine_types.csv``
and ``data/gcp_n1_gpu_limits.csv``, each row citing its page). Prices are
``tieredRates[].unitPrice`` = ``units`` + ``nanos``/1e9 in ``currencyCode``
(:func:`adapters.units.google_money_to_decimal`).

Physical cores are the vCPUs over two: "For all other machine series [than C4A, N4A,
T2D, T2A, H4D, H3 and A4X], the compute instances have two vCPUs per core by default", and
"you can infer its number of physical CPU cores using the default vCPU per core ratio for
that machine series" (https://cloud.google.com/compute/docs/cpu-platforms); every series
here (A2, A3, A4, G2, N1) is such a series (:data:`VCPUS_PER_CORE`). The CPU model varies by
series and zone and is not in the Catalog API: ``cpu_model`` stays unknown.

Not included in the assembled price: the Local SSD bundled with A2 Ultra / A3 machines (a
separate per-GiB-month storage SKU; its size is reported in ``storage_gb``), sustained-use
discounts, and DWS / sole-tenancy / reservation SKUs.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import tomllib
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import Adapter, ParseResult, ResponseFormatError, gpu_fields, price_fields
from .gpus import get_gpu
from .regions import region_country
from .schema import (
    GpuFormFactor,
    GpuInterconnect,
    OfferFields,
    PriceBasis,
    RentalTerm,
    StorageType,
)
from .tables import DATA_DIR, data_rows, package_text, typed_row
from .units import gib_to_gb, google_money_to_decimal

__all__ = ["GcpAdapter", "accelerators", "machine_shapes"]

#: vCPUs per physical core of every machine series this adapter prices (A2, A3, A4, G2,
#: N1): two hardware threads per core by default (cloud.google.com/compute/docs/cpu-platforms).
VCPUS_PER_CORE = 2

SERVICE_ID = "6F81-5844-456A"  # Compute Engine
API_BASE = "https://cloudbilling.googleapis.com/v1"
SKUS_PATH = f"/services/{SERVICE_ID}/skus"
SKUS_URL = API_BASE + SKUS_PATH
#: The API's maximum page size (services.skus.list reference).
PAGE_SIZE = 5000
#: A guard against a server that never stops handing out page tokens.
MAX_PAGES = 200


_TERMS: dict[str, RentalTerm] = {
    "OnDemand": RentalTerm.ON_DEMAND,
    "Preemptible": RentalTerm.INTERRUPTIBLE,
    "Commit1Yr": RentalTerm.COMMIT_1Y,
    "Commit3Yr": RentalTerm.COMMIT_3Y,
}

#: Descriptions with these words price something other than a plain predefined machine
#: (sole-tenant nodes, custom shapes, Dynamic Workload Scheduler, reservations...), from
#: ``data/gcp_sku_filters.toml``.
_REJECT_MARKERS: tuple[str, ...] = tuple(
    tomllib.loads(package_text(DATA_DIR, "gcp_sku_filters.toml"))["reject"]
)

# --- GPUs and machine shapes (data/gcp_*.csv) -----------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Accelerator:
    """One Compute Engine accelerator type, as Google documents it (``gcp_accelerators.csv``).

    ``sku_label`` matches the GPU SKU's description without prefixes and location; "(1 gpu
    slice)" marks a bundled per-GPU machine rate.
    """

    type_id: str  # the acceleratorType name, e.g. "nvidia-tesla-a100"
    memory_gb: float  # per GPU
    form_factor: GpuFormFactor | None
    nvlink: bool  # GPUs of one machine joined by NVLink (A-series: "NVLink full mesh")
    sku_label: re.Pattern[str]


@functools.cache
def accelerators() -> dict[str, Accelerator]:
    """Accelerator type -> what Google documents of it, read once from the data file."""
    rows = data_rows("gcp_accelerators.csv")
    return {row["type_id"]: typed_row(Accelerator, row) for row in rows}


@dataclasses.dataclass(frozen=True, slots=True)
class MachineShape:
    """A predefined GPU machine type: what the component prices are multiplied by.

    ``series`` names the vCPU/RAM SKUs ("a2" for "A2 Instance Core"); ``None`` means the
    machine is billed only by its GPU-slice SKU (A4). ``ram_gib``: Google's tables say "GB"
    but machine memory is in GiB (machineTypes.memoryMb = 85 x 1024 for a2-highgpu-1g, and
    RAM is billed per ``GiBy.h``).
    """

    name: str
    accelerator: str
    gpu_count: int
    vcpus: int
    ram_gib: int | float  # whole GiB as Google lists a machine type; N1 shapes compute it
    series: str | None
    local_ssd_gib: int = 0
    spot_only: bool = False


#: n1-standard-N has N vCPUs and 3.75 GB (GiB) per vCPU
#: (https://cloud.google.com/compute/docs/general-purpose-machines#n1_machine_types).
_N1_STANDARD_VCPUS = (1, 2, 4, 8, 16, 32, 64, 96)
_N1_GIB_PER_VCPU = 3.75


def _n1_gpu_shapes() -> list[MachineShape]:
    """Every n1-standard machine each N1-attachable GPU count may be attached to, within the
    VM limits (max vCPUs, max memory GB) ``gcp_n1_gpu_limits.csv`` gives per GPU count."""
    shapes = []
    for row in data_rows("gcp_n1_gpu_limits.csv"):
        accelerator, count = row["accelerator"], int(row["gpu_count"])
        for vcpus in _N1_STANDARD_VCPUS:
            ram = vcpus * _N1_GIB_PER_VCPU
            if vcpus <= int(row["max_vcpus"]) and ram <= float(row["max_ram_gb"]):
                name = f"n1-standard-{vcpus}+{count}x{accelerator}"
                shapes.append(MachineShape(name, accelerator, count, vcpus, ram, "n1"))
    return shapes


@functools.cache
def machine_shapes() -> tuple[MachineShape, ...]:
    """The A2, A3, A4 and G2 machine types of ``gcp_machine_types.csv``, then N1 + GPUs."""
    documented = [typed_row(MachineShape, row) for row in data_rows("gcp_machine_types.csv")]
    return (*documented, *_n1_gpu_shapes())


@functools.cache
def _shapes_by_accelerator() -> dict[str, list[MachineShape]]:
    out: dict[str, list[MachineShape]] = {}
    for shape in machine_shapes():
        out.setdefault(shape.accelerator, []).append(shape)
    return out


# --- SKU classification ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Rate:
    """One component price: ``amount`` of ``currency`` per GPU-, vCPU- or GiB-hour."""

    sku_id: str
    amount: Decimal
    currency: str
    label: str  # the description with prefixes and location stripped


#: (component kind, accelerator type or series, region, term) -> rate
RateKey = tuple[str, str, str, RentalTerm]
#: Component rates by their key, filled SKU by SKU.
Rates = dict[RateKey, Rate]

_PREFIXES = re.compile(r"^(?:commitment v1:\s*|spot preemptible\s+)+", re.IGNORECASE)
_LOCATION_SUFFIX = re.compile(r"\s+(?:attached to|running in|in)\s+.*$", re.IGNORECASE)
_CORE_RAM = re.compile(
    r"^(?P<series>.+?)(?:\s+(?:predefined|amd|arm))?(?:\s+instance)?\s+(?P<res>core|cpu|ram)$",
    re.IGNORECASE,
)
_UNIT_BY_KIND = {"gpu": "h", "slice": "h", "core": "h", "ram": "GiBy.h"}


def sku_label(description: str) -> str:
    """The description without the term prefix and the location suffix.

    >>> sku_label("Commitment v1: Nvidia H100 80GB GPU in Americas for 1 Year")
    'Nvidia H100 80GB GPU'
    >>> sku_label("Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas")
    'Nvidia L4 GPU'
    """
    return _LOCATION_SUFFIX.sub("", _PREFIXES.sub("", description.strip())).strip()


def _component(label: str, resource_group: str) -> tuple[str, str] | None:
    """(kind, name) of a SKU label: ("gpu", accelerator), ("core", series)...; None if other."""
    for accelerator in accelerators().values():
        if accelerator.sku_label.fullmatch(label):
            return ("slice" if "gpu slice" in label.lower() else "gpu"), accelerator.type_id
    if resource_group == "GPU" or re.search(r"\bgpu\b", label, re.IGNORECASE):
        return "unknown_gpu", label
    m = _CORE_RAM.match(label)
    if m is None:
        return None
    kind = "ram" if m["res"].lower() == "ram" else "core"
    return kind, re.sub(r"\s+", "", m["series"]).lower()


def list_unit_price(pricing_expression: Mapping[str, Any]) -> tuple[Decimal, str]:
    """The per-unit list price of a SKU and its currency, from its tiered rates.

    The tier starting at usage 0 is the rate a renter pays; a free first tier (a usage
    allowance, price 0) is passed over for the first priced tier.
    """
    tiers = pricing_expression.get("tieredRates")
    if not isinstance(tiers, list) or not tiers:
        raise ValueError("no tieredRates")
    ordered = sorted(
        (t for t in tiers if isinstance(t, dict)),
        key=lambda t: Decimal(str(t.get("startUsageAmount") or 0)),
    )
    currency = ""
    for tier in ordered:
        price = tier.get("unitPrice")
        if not isinstance(price, dict):
            raise ValueError("tier without unitPrice")
        amount = google_money_to_decimal(price.get("units"), price.get("nanos"))
        code = price.get("currencyCode")
        if not isinstance(code, str) or not code:
            raise ValueError("unitPrice without currencyCode")
        currency = code
        if amount != 0:
            return amount, currency
    return Decimal(0), currency


def _add_sku(rates: Rates, result: ParseResult, sku: Mapping[str, Any]) -> None:
    """Add the rates one SKU prices to ``rates``."""
    sku_id = str(sku.get("skuId") or sku.get("name") or "?")
    ref = f"gcp:sku/{sku_id}"
    category = sku.get("category")
    description = sku.get("description")
    if not isinstance(category, dict) or not isinstance(description, str):
        result.skip("SKU without category or description", ref)
        return
    if category.get("resourceFamily") != "Compute":
        return
    lowered = description.lower()
    if any(marker in lowered for marker in _REJECT_MARKERS):
        return
    label = sku_label(description)
    component = _component(label, str(category.get("resourceGroup") or ""))
    if component is None:
        return
    kind, name = component
    if kind == "unknown_gpu":
        result.skip(f"GPU SKU with no known machine shape: {label!r}", ref)
        return
    term = _TERMS.get(str(category.get("usageType")))
    if term is None:
        result.skip(f"unknown usageType {category.get('usageType')!r}", ref)
        return
    says_spot = "preemptible" in lowered or lowered.startswith("spot ")
    if says_spot != (term is RentalTerm.INTERRUPTIBLE):
        result.skip("description and usageType disagree on spot", ref)
        return
    try:
        rate = _rate(sku, sku_id, label, kind)
    except ValueError as exc:
        result.skip(f"bad price: {exc}", ref)
        return
    regions = sku.get("serviceRegions")
    if not isinstance(regions, list) or not regions:
        result.skip("SKU without serviceRegions", ref)
        return
    for region in regions:
        if not isinstance(region, str) or not region:
            continue
        key: RateKey = (kind, name, region, term)
        if key in rates and rates[key].amount != rate.amount:
            result.skip(f"second price for {kind} {name} in {region} ({term})", ref)
            continue
        rates.setdefault(key, rate)


def _rate(sku: Mapping[str, Any], sku_id: str, label: str, kind: str) -> Rate:
    info = sku.get("pricingInfo")
    if not isinstance(info, list) or not info or not isinstance(info[0], dict):
        raise ValueError("no pricingInfo")
    expression = info[0].get("pricingExpression")
    if not isinstance(expression, dict):
        raise ValueError("no pricingExpression")
    unit = expression.get("usageUnit")
    if unit != _UNIT_BY_KIND[kind]:
        raise ValueError(f"usageUnit {unit!r} for a {kind} SKU")
    amount, currency = list_unit_price(expression)
    if amount <= 0:
        raise ValueError(f"price {amount} <= 0")
    return Rate(sku_id, amount, currency, label)


# --- machine assembly -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class MachinePrice:
    amount: Decimal  # per machine-hour
    currency: str
    rates: tuple[Rate, ...]


def assemble_machine_price(
    shape: MachineShape, gpu: Rate, kind: str, rates: Rates, region: str, term: RentalTerm
) -> MachinePrice | str:
    """The hourly price of ``shape`` in ``region`` for ``term``, or why it cannot be priced.

    ``gpu x count`` for a slice-billed machine; ``gpu x count + core x vCPUs + RAM x GiB``
    otherwise (the billing model of https://cloud.google.com/compute/vm-instance-pricing).
    """
    count = Decimal(shape.gpu_count)
    if kind == "slice" or shape.series is None:
        if kind != "slice" or shape.series is not None:
            return f"{shape.name}: GPU rate and machine billing model disagree"
        return MachinePrice(gpu.amount * count, gpu.currency, (gpu,))
    core = rates.get(("core", shape.series, region, term))
    ram = rates.get(("ram", shape.series, region, term))
    if core is None or ram is None:
        return f"no {shape.series} vCPU/RAM price in {region} ({term.value})"
    if not gpu.currency == core.currency == ram.currency:
        return f"{shape.series} components priced in different currencies in {region}"
    amount = (
        gpu.amount * count
        + core.amount * Decimal(shape.vcpus)
        + ram.amount * Decimal(str(shape.ram_gib))
    )
    return MachinePrice(amount, gpu.currency, (gpu, core, ram))


class GcpAdapter(Adapter):
    """Google Cloud GPU machines: A2, A3, A4, G2 and N1+GPU, per region, on-demand, Spot
    and 1-/3-year commitments, from the public Cloud Billing Catalog."""

    name = "gcp"
    title = "Google Cloud"
    #: Where to rent: Compute Engine's Create an instance page, as Google's docs link it
    #: ("Go to Create an instance").
    rent_url: ClassVar[str] = "https://console.cloud.google.com/compute/instancesAdd"
    pricing_url: ClassVar[str] = "https://cloud.google.com/compute/gpus-pricing"
    source_url = SKUS_URL
    credential_names = ("gcp_api_key",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        key = self.require_credentials()["gcp_api_key"]

        async def page(token: str | None) -> Any:
            params = {"key": key, "currencyCode": "USD", "pageSize": str(PAGE_SIZE)}
            params |= {"pageToken": token} if token else {}
            page = await self.get_json(client, self.url(SKUS_PATH), params=params)
            if not isinstance(page, dict) or not isinstance(page.get("skus", []), list):
                raise ResponseFormatError(self.name, "SKU page is not {'skus': [...]}")
            return page

        return await self.follow_pages(
            page,
            lambda page: page.get("nextPageToken") or None,
            max_pages=MAX_PAGES,
            too_many=f"more than {MAX_PAGES} SKU pages",
            repeated="the API returned the same page token twice",
        )

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        rates: Rates = {}
        add_sku = functools.partial(_add_sku, rates)
        result = self.parse_records(payloads, "skus", add_sku, what="SKU", fetched_at=fetched_at)
        reported: set[tuple[str, str]] = set()
        # every GPU and slice rate, in (kind, accelerator, region, term) order
        for key, gpu in sorted((k, r) for k, r in rates.items() if k[0] in ("gpu", "slice")):
            kind, accelerator, region, term = key
            for shape in _shapes_by_accelerator().get(accelerator, []):
                if shape.spot_only and term is not RentalTerm.INTERRUPTIBLE:
                    continue
                price = assemble_machine_price(shape, gpu, kind, rates, region, term)
                if isinstance(price, str):
                    # One record per missing component, not one per machine shape.
                    ref = f"gcp:sku/{gpu.sku_id}"
                    if (price, ref) not in reported:
                        reported.add((price, ref))
                        result.skip(price, ref)
                    continue
                self._add_machine(result, shape, gpu, price, region, term)
        return result

    def _add_machine(
        self,
        result: ParseResult,
        shape: MachineShape,
        gpu: Rate,
        price: MachinePrice,
        region: str,
        term: RentalTerm,
    ) -> None:
        ref = "gcp:sku/" + "+".join(r.sku_id for r in price.rates)
        accelerator = accelerators()[shape.accelerator]
        named = gpu_fields(
            gpu.label, memory_gb=accelerator.memory_gb, form_factor=accelerator.form_factor
        )
        spec = get_gpu(named["gpu_model"]) if named["gpu_model"] else None
        fields: OfferFields = {
            "offer_id": shape.name,
            "instance_name": shape.name,
            "region": region,
            "country": region_country("gcp", region),
            **named,
            "gpu_count": shape.gpu_count,
            "gpu_interconnect": GpuInterconnect.NVLINK if accelerator.nvlink else None,
            "gpu_nvlink_gbs": (spec.nvlink_gbs or None) if spec and accelerator.nvlink else None,
            "vcpus": shape.vcpus,
            "cpu_cores": shape.vcpus / VCPUS_PER_CORE,
            "ram_gb": round(gib_to_gb(shape.ram_gib), 3),
            "storage_gb": round(gib_to_gb(shape.local_ssd_gib), 3) if shape.local_ssd_gib else None,
            "storage_type": StorageType.SSD if shape.local_ssd_gib else None,
            **price_fields(price.amount, PriceBasis.INSTANCE, term, currency=price.currency),
            # Per-second billing after a 1-minute minimum for vCPUs, memory and GPUs
            # (https://cloud.google.com/compute/vm-instance-pricing#billingmodel).
            "billing_increment_s": None if term.is_commitment else 1,
            "min_rental_hours": None if term.is_commitment else 1 / 60,
        }
        result.add(ref, **fields)
