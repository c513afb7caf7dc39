"""Microsoft Azure GPU virtual machines from the public Azure Retail Prices API.

API: ``GET https://prices.azure.com/api/retail/prices`` (no auth), documented at
https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices .
A page is ``{"BillingCurrency", "CustomerEntityId", "CustomerEntityType", "Items": [...],
"NextPageLink", "Count"}``; ``NextPageLink`` is the full URL of the next page (``$skip``)
and is ``null`` on the last one. ``api-version=2023-01-01-preview`` adds the ``savingsPlan``
array (hourly 1- and 3-year savings-plan rates) to pay-as-you-go items.

What one item means (same doc page):

* ``type`` ``Consumption``: pay-as-you-go, ``retailPrice`` in ``currencyCode`` per
  ``unitOfMeasure`` ("1 Hour") for the whole VM. Spot and Low Priority meters are also
  ``Consumption``; only the ``meterName``/``skuName`` suffix " Spot" / " Low Priority"
  tells them apart. Both are interruptible; the offer id and instance name keep which.
* ``type`` ``Reservation`` with ``reservationTerm`` "1 Year"/"3 Years": ``retailPrice`` is
  the price of the WHOLE term (e.g. 25007.0 for a 1-year E64 v4) although
  ``unitOfMeasure`` still says "1 Hour" -> ``price_unit=term``.
* ``type`` ``DevTestConsumption``: Dev/Test subscription rates, not a public offer: dropped.
* Windows meters differ only by ``productName`` ending in " Windows": dropped (Linux only).

GPU count, model, GPU memory, vCPUs, RAM and temp disk are NOT in the price feed. They come
from the VM size name looked up in :func:`gpu_sizes` (``data/azure_vm_sizes.csv``), a table
transcribed from Microsoft's "Sizes in series" pages (learn.microsoft.com/azure/
virtual-machines/sizes/gpu-accelerated/<series>; markdown in MicrosoftDocs/
azure-compute-docs, articles/virtual-machines/sizes/gpu-accelerated/). A size not in the
table (non-GPU or an unknown new series) is skipped with its reason rather than guessed.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from fractions import Fraction
from typing import Any, ClassVar

import httpx

from .base import Adapter, ParseResult, ResponseFormatError, gpu_fields, price_fields
from .regions import region_country
from .schema import (
    GpuFormFactor,
    OfferFields,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    StorageType,
)
from .tables import data_rows, typed_row
from .units import gib_to_gb, gpu_share, price_or_reason, value_at

__all__ = ["AzureAdapter", "AzureGpuSize", "azure_gpu_size", "gpu_sizes"]

API_BASE = "https://prices.azure.com/api"
API_URL = API_BASE + "/retail/prices"
API_VERSION = "2023-01-01-preview"
#: OData filter: Linux and Windows VM meters of the N families (every Azure GPU family is
#: NC, ND, NG, NV or NCC). ``contains(...) eq false`` is the documented way to exclude.
API_FILTER = (
    "serviceName eq 'Virtual Machines' and contains(armSkuName, 'Standard_N') "
    "and contains(productName, 'Windows') eq false"
)
#: Safety stop: ~1000 items a page; the N families are a few thousand meters in all.
MAX_PAGES = 500


@dataclasses.dataclass(frozen=True, slots=True)
class AzureGpuSize:
    """One VM size as Microsoft's size table lists it (a row of ``data/azure_vm_sizes.csv``).

    ``gpus`` may be a fraction (NVadsA10 v5 gives 1/6 of an A10); ``gpu_memory_gb`` is per
    GPU (or per slice). ``ram`` is in the unit the docs column names (``ram_unit``: "GB" or
    "GiB", Microsoft's pages use both), ``temp_disk_gib`` is always GiB per the docs.
    """

    vcpus: int
    ram: float
    ram_unit: str
    temp_disk_gib: float
    gpus: Fraction
    gpu_raw_name: str
    gpu_memory_gb: float
    form_factor: GpuFormFactor | None
    source: str  # the series page the row is transcribed from, and notes on it
    cpu_model: str | None = None
    cpu_vendor: str | None = None
    cpu_arch: str | None = None
    storage_type: StorageType | None = None
    cpu_source: str | None = None  # the series' specs include the CPU is transcribed from

    def fields(self) -> OfferFields:
        """The hardware fields every offer of this size shares."""
        gpu_count, fraction = gpu_share(float(self.gpus))
        # A slice shows its share of the memory; the catalog knows the whole board's.
        board_memory_gb = self.gpu_memory_gb / fraction if fraction else self.gpu_memory_gb
        return {
            **gpu_fields(
                self.gpu_raw_name, memory_gb=board_memory_gb, form_factor=self.form_factor
            ),
            "gpu_count": gpu_count,
            "gpu_fraction": fraction,
            "gpu_memory_gb": self.gpu_memory_gb,
            "vcpus": self.vcpus,
            "ram_gb": gib_to_gb(self.ram) if self.ram_unit == "GiB" else self.ram,
            "storage_gb": gib_to_gb(self.temp_disk_gib),
            "storage_type": self.storage_type,
            "cpu_model": self.cpu_model,
            "cpu_vendor": self.cpu_vendor,
            "cpu_arch": self.cpu_arch,
        }


@functools.cache
def gpu_sizes() -> dict[str, AzureGpuSize]:
    """VM size -> hardware, from ``data/azure_vm_sizes.csv``, read once.

    Each row is transcribed from the "Basics", "Local storage" and "Accelerators" tabs of the
    series page its ``source`` names. GPU memory is per GPU: the pages give the VM total
    (e.g. 640 GB for 8 H100), divided by the GPU count. GPU names and form factors are from
    the same pages' summaries (e.g. "eight NVIDIA H100 Tensor Core GPUs" with NVLink 4.0 ->
    SXM; NC A100 v4 "NVIDIA A100 PCIe"; NCads H100 v5 "NVIDIA H100 NVL").

    The CPU (``cpu_model``, ``cpu_vendor``, and ``cpu_arch`` where the page says
    ``[x86-64]``) is the "Processor" row of the series' specs include in MicrosoftDocs/azure-docs
    (``cpu_source`` names the file and commit); series whose include was not found leave it
    empty. ``storage_type`` is ``nvme`` where the row's source says its local disks are NVMe.
    """
    return {row["size"]: typed_row(AzureGpuSize, row) for row in data_rows("azure_vm_sizes.csv")}


@functools.cache
def _sizes_by_lower_name() -> dict[str, AzureGpuSize]:
    return {name.lower(): size for name, size in gpu_sizes().items()}


def azure_gpu_size(arm_sku_name: str) -> AzureGpuSize | None:
    """The documented hardware of a VM size (case-insensitive), or None if unknown."""
    return _sizes_by_lower_name().get(arm_sku_name.strip().lower())


# --- price items -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _PriceKind:
    """What one price means: its rental term, unit, and the suffix naming it in ids."""

    term: RentalTerm
    unit: PriceUnit
    variant: str | None  # the offer's term_variant: None for on-demand, "spot", ...
    label: str  # human suffix for instance_name
    prepaid: bool | None = None


_ON_DEMAND = _PriceKind(RentalTerm.ON_DEMAND, PriceUnit.HOUR, None, "", prepaid=False)
_SPOT = _PriceKind(RentalTerm.INTERRUPTIBLE, PriceUnit.HOUR, "spot", " (Spot)", prepaid=False)
_LOW_PRIORITY = _PriceKind(
    RentalTerm.INTERRUPTIBLE, PriceUnit.HOUR, "low-priority", " (Low Priority)", prepaid=False
)
_METER_SUFFIXES = {" spot": _SPOT, " low priority": _LOW_PRIORITY}
#: Reservations: a price for the whole term. Azure lets the buyer pay it up front or in
#: monthly instalments of the same total (learn.microsoft.com/azure/cost-management-billing/
#: reservations/prepare-buy-reservation), so whether it is prepaid is the buyer's choice.
_TERMS = {"1 year": (RentalTerm.COMMIT_1Y, "1y"), "3 years": (RentalTerm.COMMIT_3Y, "3y")}
_RESERVATION = {
    name: _PriceKind(term, PriceUnit.TERM, "reservation", f" ({years} RI)")
    for name, (term, years) in _TERMS.items()
}
#: Savings plans: an hourly rate for a 1- or 3-year hourly spend commitment, billed hourly.
_SAVINGS_PLAN = {
    name: _PriceKind(term, PriceUnit.HOUR, "savings-plan", f" ({years} savings plan)", False)
    for name, (term, years) in _TERMS.items()
}


def _price_kinds(item: Mapping[str, Any]) -> Iterator[tuple[_PriceKind, Any, str]]:
    """(kind, raw price, ref suffix) for every price one item carries.

    A pay-as-you-go item may carry savings-plan rates; a reservation item one term price.
    Raises ValueError naming an unknown ``type`` or reservation term.
    """
    price_type = str(item.get("type") or "")
    if price_type == "Consumption":
        # Spot and Low Priority are told apart from pay-as-you-go only by the meter suffix
        meter = str(item.get("meterName") or item.get("skuName") or "").strip().lower()
        kind = next((k for end, k in _METER_SUFFIXES.items() if meter.endswith(end)), _ON_DEMAND)
        yield kind, item.get("retailPrice"), ""
        if kind is _ON_DEMAND:
            for plan in item.get("savingsPlan") or []:
                term = str(value_at(plan, "term") or "").strip().lower()  # "" for no object
                if term in _SAVINGS_PLAN:
                    yield _SAVINGS_PLAN[term], plan.get("retailPrice"), f"/savings-plan/{term}"
    elif price_type == "Reservation":
        term = str(item.get("reservationTerm") or "").strip().lower()
        if term not in _RESERVATION:
            raise ValueError(f"unknown reservationTerm {item.get('reservationTerm')!r}")
        yield _RESERVATION[term], item.get("retailPrice"), ""
    else:
        raise ValueError(f"price type {price_type!r} not offered publicly")


def _items(payload: Any) -> tuple[list[Any], str | None]:
    """The ``Items`` of one page and its ``BillingCurrency``; ResponseFormatError if no page."""
    if not isinstance(payload, Mapping) or not isinstance(payload.get("Items"), list):
        raise ResponseFormatError(
            AzureAdapter.name, "a retail prices page is an object with an 'Items' list"
        )
    currency = payload.get("BillingCurrency")
    return payload["Items"], currency if isinstance(currency, str) else None


class AzureAdapter(Adapter):
    """Azure GPU VMs: pay-as-you-go, Spot, Low Priority, savings plans and reservations."""

    name: ClassVar[str] = "azure"
    title: ClassVar[str] = "Microsoft Azure"
    #: Where to rent: the portal's Create a virtual machine wizard, as Azure's tutorials link it.
    rent_url: ClassVar[str] = "https://portal.azure.com/#create/Microsoft.VirtualMachine"
    pricing_url: ClassVar[str] = (
        "https://azure.microsoft.com/pricing/details/virtual-machines/linux/"
    )
    source_url: ClassVar[str] = API_URL
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Every page of GPU VM meters, following ``NextPageLink`` until it is null.

        Stops too on a page without items (a 2023 incident returned a link past the end).
        """
        params = {"api-version": API_VERSION, "$filter": API_FILTER, "meterRegion": "'primary'"}

        async def page(link: str | None) -> Any:
            # a next link carries the query, $skip included
            url, query = (link, None) if link else (self.url("/retail/prices"), params)
            page = await self.get_json(client, url, params=query)
            _items(page)
            return page

        def next_link(page: Any) -> str | None:
            link = page.get("NextPageLink")
            return link if isinstance(link, str) and link and _items(page)[0] else None

        too_many = f"more than {MAX_PAGES} pages; stopping"
        return await self.follow_pages(page, next_link, max_pages=MAX_PAGES, too_many=too_many)

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        for page in payloads:
            items, billing_currency = _items(page)
            for item in items:
                _parse_item(item, billing_currency, result)
        return result


def _parse_item(item: Any, billing_currency: str | None, result: ParseResult) -> None:
    if not isinstance(item, Mapping):
        result.skip("item is not an object")
        return
    ref = f"azure:sku/{item.get('skuId') or item.get('meterId') or '?'}"
    if item.get("serviceName") not in (None, "Virtual Machines"):
        result.skip("not a virtual machine meter", ref)
        return
    # Windows meters: the product name ends in "Windows" (e.g. "... Series Windows")
    if str(item.get("productName") or "").strip().lower().endswith("windows"):
        result.skip("Windows price (Linux only)", ref)
        return
    if item.get("isPrimaryMeterRegion") is False:
        result.skip("non-primary meter region", ref)
        return
    sku = str(item.get("armSkuName") or "").strip()
    size = azure_gpu_size(sku) if sku else None
    if size is None:
        result.skip(f"not a known GPU VM size: {sku or '(none)'}", ref)
        return
    try:
        kinds = list(_price_kinds(item))
    except ValueError as exc:
        result.skip(str(exc), ref)
        return
    region = str(item.get("armRegionName") or "").strip() or None
    shared: OfferFields = {
        "offer_id": sku,
        "region": region,
        "country": region_country("azure", region),
        **size.fields(),
    }
    currency = item.get("currencyCode") or billing_currency or ""
    for kind, raw_price, ref_suffix in kinds:
        price = price_or_reason(raw_price)
        if isinstance(price, str):
            result.skip(price, ref + ref_suffix)
            continue
        fields: OfferFields = {
            **shared,
            "term_variant": kind.variant,
            "instance_name": sku + kind.label,
            **price_fields(
                price, PriceBasis.INSTANCE, kind.term, unit=kind.unit, currency=currency
            ),
            "prepaid": kind.prepaid,
        }
        result.add(ref + ref_suffix, **fields)
