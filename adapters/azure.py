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
from the VM size name looked up in :data:`GPU_SIZES`, a table transcribed from Microsoft's
"Sizes in series" pages (learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/
<series>; markdown in MicrosoftDocs/azure-compute-docs, articles/virtual-machines/sizes/
gpu-accelerated/). A size not in the table (non-GPU or an unknown new series) is skipped
with its reason rather than guessed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any, ClassVar

import httpx

from .base import (
    MIN_USD_PER_GPU_HOUR,
    Adapter,
    ParseResult,
    ProviderError,
    ResponseFormatError,
)
from .gpus import resolve_gpu_name, spec_fields
from .schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm, usd_per_hour
from .units import gib_to_gb, to_decimal

__all__ = ["GPU_SIZES", "AzureAdapter", "AzureGpuSize", "azure_gpu_size"]

log = logging.getLogger("gpuscout.adapters.azure")

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


_DOCS = "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/"


@dataclasses.dataclass(frozen=True, slots=True)
class AzureGpuSize:
    """One VM size as Microsoft's size table lists it.

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
    doc: str

    @property
    def ram_gb(self) -> float:
        return gib_to_gb(self.ram) if self.ram_unit == "GiB" else self.ram


def _series(
    doc_page: str,
    gpu_raw_name: str,
    form_factor: GpuFormFactor | None,
    ram_unit: str,
    rows: Sequence[tuple[str, int, float, float, str, float]],
) -> dict[str, AzureGpuSize]:
    """Rows of (size, vCPUs, RAM, temp disk GiB, GPUs as "n" or "1/6", GPU memory per GPU)."""
    return {
        size: AzureGpuSize(
            vcpus=vcpus,
            ram=ram,
            ram_unit=ram_unit,
            temp_disk_gib=temp_gib,
            gpus=Fraction(gpus),
            gpu_raw_name=gpu_raw_name,
            gpu_memory_gb=mem,
            form_factor=form_factor,
            doc=_DOCS + doc_page,
        )
        for size, vcpus, ram, temp_gib, gpus, mem in rows
    }


_SXM, _PCIE = GpuFormFactor.SXM, GpuFormFactor.PCIE

#: VM size -> hardware, from the "Basics", "Local storage" and "Accelerators" tabs of each
#: series page (``doc``). GPU memory is per GPU: the pages give the VM total (e.g. 640 GB for
#: 8 H100), divided here by the GPU count. GPU names and form factors are from the same
#: pages' summaries (e.g. "eight NVIDIA H100 Tensor Core GPUs" with NVLink 4.0 -> SXM;
#: NC A100 v4 "NVIDIA A100 PCIe"; NCads H100 v5 "NVIDIA H100 NVL").
GPU_SIZES: dict[str, AzureGpuSize] = {
    # ND H100 v5: 8x H100 80GB with NVLink 4.0, 1024 GiB temp + 8 NVMe (28 TiB total).
    **_series(
        "ndh100v5-series",
        "NVIDIA H100 80GB",
        _SXM,
        "GB",
        [("Standard_ND96isr_H100_v5", 96, 1900, 1024 + 28 * 1024, "8", 80)],
    ),
    # ND H200 v5: 8x H200, 1128 GB GPU memory in all.
    **_series(
        "nd-h200-v5-series",
        "NVIDIA H200",
        _SXM,
        "GB",
        [("Standard_ND96isr_H200_v5", 96, 1850, 1024 + 28 * 1024, "8", 141)],
    ),
    # ND MI300X v5: 8x AMD Instinct MI300X, 1535 GB GPU memory in all (192 GB each).
    **_series(
        "ndmi300xv5-series",
        "AMD Instinct MI300X",
        GpuFormFactor.OAM,
        "GB",
        [("Standard_ND96isr_MI300X_v5", 96, 1850, 1000 + 28 * 1024, "8", 192)],
    ),
    # ND GB200 v6: 4 Blackwell GPUs (2 GB200 superchips) per VM, 192 GB each.
    **_series(
        "nd-gb200-v6-series",
        "NVIDIA GB200",
        GpuFormFactor.SUPERCHIP,
        "GiB",
        [("Standard_ND128isr_NDR_GB200_v6", 128, 900, 16 * 1000**4 / 1024**3, "4", 192)],
    ),
    # ND A100 v4: 8x A100 40GB (NVLink 3.0), 320 GB GPU memory in all.
    **_series(
        "ndasra100v4-series",
        "NVIDIA A100 40GB",
        _SXM,
        "GiB",
        [("Standard_ND96asr_v4", 96, 900, 6000, "8", 40)],
    ),
    # NDm A100 v4: 8x A100 80GB (NVLink 3.0).
    **_series(
        "ndma100v4-series",
        "NVIDIA A100 80GB",
        _SXM,
        "GB",
        [("Standard_ND96amsr_A100_v4", 96, 1900, 6400, "8", 80)],
    ),
    # NDv2: 8x V100 32GB NVLink, 256 GB GPU memory in all.
    **_series(
        "ndv2-series",
        "NVIDIA Tesla V100 32GB",
        _SXM,
        "GB",
        [("Standard_ND40rs_v2", 40, 672, 2948, "8", 32)],
    ),
    # NC A100 v4: 1-4x A100 80GB PCIe.
    **_series(
        "nca100v4-series",
        "NVIDIA A100 80GB PCIe",
        _PCIE,
        "GB",
        [
            ("Standard_NC24ads_A100_v4", 24, 220, 64, "1", 80),
            ("Standard_NC48ads_A100_v4", 48, 440, 128, "2", 80),
            ("Standard_NC96ads_A100_v4", 96, 880, 256, "4", 80),
        ],
    ),
    # NCads H100 v5: 1-2x H100 NVL 94GB.
    **_series(
        "ncadsh100v5-series",
        "NVIDIA H100 NVL",
        _PCIE,
        "GB",
        [
            ("Standard_NC40ads_H100_v5", 40, 320, 3576, "1", 94),
            ("Standard_NC80adis_H100_v5", 80, 640, 7152, "2", 94),
        ],
    ),
    # NCCads H100 v5 (confidential): 1x H100 NVL 94GB.
    **_series(
        "nccadsh100v5-series",
        "NVIDIA H100 NVL",
        _PCIE,
        "GB",
        [("Standard_NCC40ads_H100_v5", 40, 320, 800, "1", 94)],
    ),
    # NCasT4 v3: 1-4x T4 16GB.
    **_series(
        "ncast4v3-series",
        "NVIDIA Tesla T4",
        _PCIE,
        "GiB",
        [
            ("Standard_NC4as_T4_v3", 4, 28, 176, "1", 16),
            ("Standard_NC8as_T4_v3", 8, 56, 352, "1", 16),
            ("Standard_NC16as_T4_v3", 16, 110, 352, "1", 16),
            ("Standard_NC64as_T4_v3", 64, 440, 2816, "4", 16),
        ],
    ),
    # NCv3: 1-4x V100 16GB (retired 2025-09-30; kept while meters are still published).
    **_series(
        "ncv3-series",
        "NVIDIA Tesla V100 16GB PCIe",
        _PCIE,
        "GB",
        [
            ("Standard_NC6s_v3", 6, 112, 736, "1", 16),
            ("Standard_NC12s_v3", 12, 224, 1474, "2", 16),
            ("Standard_NC24s_v3", 24, 448, 2948, "4", 16),
            ("Standard_NC24rs_v3", 24, 448, 2948, "4", 16),
        ],
    ),
    # NC RTX PRO 6000 Blackwell Server Edition v6 (preview): 1-2 GPUs, 96 GB each.
    **_series(
        "nc-rtxpro6000-bse-v6-series",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        _PCIE,
        "GB",
        [
            ("Standard_NC128ds_xl_RTXPRO6000BSE_v6", 128, 512, 1024, "1", 96),
            ("Standard_NC256ds_xl_RTXPRO6000BSE_v6", 256, 1024, 2048, "2", 96),
            ("Standard_NC320ds_xl_RTXPRO6000BSE_v6", 320, 1280, 2048, "2", 96),
            ("Standard_NC128lds_xl_RTXPRO6000BSE_v6", 128, 256, 1024, "1", 96),
            ("Standard_NC256lds_xl_RTXPRO6000BSE_v6", 256, 512, 2048, "2", 96),
            ("Standard_NC320lds_xl_RTXPRO6000BSE_v6", 320, 640, 2048, "2", 96),
        ],
    ),
    # NVadsA10 v5: partitions of an A10 24GB (1/6, 1/3, 1/2) up to 2 whole GPUs.
    **_series(
        "nvadsa10v5-series",
        "NVIDIA A10",
        _PCIE,
        "GiB",
        [
            ("Standard_NV6ads_A10_v5", 6, 55, 180, "1/6", 4),
            ("Standard_NV12ads_A10_v5", 12, 110, 360, "1/3", 8),
            ("Standard_NV18ads_A10_v5", 18, 220, 720, "1/2", 12),
            ("Standard_NV36ads_A10_v5", 36, 440, 1440, "1", 24),
            ("Standard_NV36adms_A10_v5", 36, 880, 2880, "1", 24),
            ("Standard_NV72ads_A10_v5", 72, 880, 2880, "2", 24),
        ],
    ),
    # NVads V710 v5: partitions of an AMD Radeon Pro V710 (24 GB per GPU per the table).
    **_series(
        "nvadsv710-v5-series",
        "AMD Radeon Pro V710",
        _PCIE,
        "GB",
        [
            ("Standard_NV4ads_V710_v5", 4, 16, 256, "1/6", 4),
            ("Standard_NV8ads_V710_v5", 8, 32, 512, "1/3", 8),
            ("Standard_NV12ads_V710_v5", 12, 64, 768, "1/2", 12),
            ("Standard_NV24ads_V710_v5", 24, 128, 1536, "1", 24),
            ("Standard_NV28adms_V710_v5", 28, 160, 1536, "1", 24),
        ],
    ),
    # NVv3: 1-4 GPUs of Tesla M60 (8 GB each; retiring 2026-09-30).
    **_series(
        "nvv3-series",
        "NVIDIA Tesla M60",
        _PCIE,
        "GB",
        [
            ("Standard_NV12s_v3", 12, 112, 320, "1", 8),
            ("Standard_NV24s_v3", 24, 224, 640, "2", 8),
            ("Standard_NV48s_v3", 48, 448, 1280, "4", 8),
        ],
    ),
}


def azure_gpu_size(arm_sku_name: str) -> AzureGpuSize | None:
    """The documented hardware of a VM size (case-insensitive), or None if unknown."""
    return _SIZES_LOWER.get(arm_sku_name.strip().lower())


_SIZES_LOWER = {k.lower(): v for k, v in GPU_SIZES.items()}


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
#: Reservations: a price for the whole term. Azure lets the buyer pay it up front or in
#: monthly instalments of the same total (learn.microsoft.com/azure/cost-management-billing/
#: reservations/prepare-buy-reservation), so whether it is prepaid is the buyer's choice.
_RESERVATION = {
    "1 year": _PriceKind(RentalTerm.COMMIT_1Y, PriceUnit.TERM, "reservation", " (1y RI)"),
    "3 years": _PriceKind(RentalTerm.COMMIT_3Y, PriceUnit.TERM, "reservation", " (3y RI)"),
}
#: Savings plans: an hourly rate for a 1- or 3-year hourly spend commitment, billed hourly.
_SAVINGS_PLAN = {
    "1 year": _PriceKind(
        RentalTerm.COMMIT_1Y, PriceUnit.HOUR, "savings-plan", " (1y savings plan)", False
    ),
    "3 years": _PriceKind(
        RentalTerm.COMMIT_3Y, PriceUnit.HOUR, "savings-plan", " (3y savings plan)", False
    ),
}


def _consumption_kind(meter_name: str) -> _PriceKind:
    """Spot and Low Priority are told apart from pay-as-you-go only by the meter suffix."""
    name = meter_name.strip().lower()
    if name.endswith(" spot"):
        return _SPOT
    if name.endswith(" low priority"):
        return _LOW_PRIORITY
    return _ON_DEMAND


def _is_windows(product_name: str) -> bool:
    """Windows meters: the product name ends in "Windows" (e.g. "... Series Windows")."""
    return product_name.strip().lower().endswith("windows")


def _price_kinds(item: Mapping[str, Any]) -> Iterator[tuple[_PriceKind, Any, str]]:
    """(kind, raw price, ref suffix) for every price one item carries.

    A pay-as-you-go item may carry savings-plan rates; a reservation item one term price.
    Raises ValueError naming an unknown ``type`` or reservation term.
    """
    price_type = str(item.get("type") or "")
    if price_type == "Consumption":
        kind = _consumption_kind(str(item.get("meterName") or item.get("skuName") or ""))
        yield kind, item.get("retailPrice"), ""
        if kind is _ON_DEMAND:
            for plan in item.get("savingsPlan") or []:
                if not isinstance(plan, Mapping):
                    continue
                term = str(plan.get("term") or "").strip().lower()
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
    source_url: ClassVar[str] = API_URL
    credential_names: ClassVar[tuple[str, ...]] = ()
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Every page of GPU VM meters, following ``NextPageLink`` until it is null.

        Stops too on a page without items (a 2023 incident returned a link past the end).
        """
        pages: list[Any] = []
        url: str | None = self.url("/retail/prices")
        params: dict[str, str] | None = {
            "api-version": API_VERSION,
            "$filter": API_FILTER,
            "meterRegion": "'primary'",
        }
        while url is not None:
            if len(pages) >= MAX_PAGES:
                raise ProviderError(self.name, f"more than {MAX_PAGES} pages; stopping")
            page = await self.get_json(client, url, params=params)
            items, _ = _items(page)
            pages.append(page)
            link = page.get("NextPageLink")
            url = link if isinstance(link, str) and link and items else None
            params = None  # the link carries the query, $skip included
        return pages

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult()
        seen: set[str] = set()
        for page in payloads:
            items, billing_currency = _items(page)
            for item in items:
                self._parse_item(item, billing_currency, fetched_at, result, seen)
        return result

    def _parse_item(
        self,
        item: Any,
        billing_currency: str | None,
        fetched_at: datetime,
        result: ParseResult,
        seen: set[str],
    ) -> None:
        if not isinstance(item, Mapping):
            result.skip("item is not an object")
            return
        ref = f"azure:sku/{item.get('skuId') or item.get('meterId') or '?'}"
        if item.get("serviceName") not in (None, "Virtual Machines"):
            result.skip("not a virtual machine meter", ref)
            return
        if _is_windows(str(item.get("productName") or "")):
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
        region = str(item.get("armRegionName") or "").strip() or None
        currency = item.get("currencyCode") or billing_currency
        try:
            kinds = list(_price_kinds(item))
        except ValueError as exc:
            result.skip(str(exc), ref)
            return
        for kind, raw_price, ref_suffix in kinds:
            self._add_offer(
                result,
                seen,
                ref=ref + ref_suffix,
                sku=sku,
                size=size,
                kind=kind,
                raw_price=raw_price,
                currency=currency,
                region=region,
                fetched_at=fetched_at,
            )

    def _add_offer(
        self,
        result: ParseResult,
        seen: set[str],
        *,
        ref: str,
        sku: str,
        size: AzureGpuSize,
        kind: _PriceKind,
        raw_price: Any,
        currency: Any,
        region: str | None,
        fetched_at: datetime,
    ) -> None:
        try:
            price = to_decimal(raw_price)
        except ValueError:
            result.skip(f"price is not a number: {raw_price!r}", ref)
            return
        if price is None:
            result.skip("no price", ref)
            return
        fraction = size.gpus if size.gpus < 1 else None
        gpu_count = 1 if fraction is not None else int(size.gpus)
        gpus = float(fraction) if fraction is not None else float(gpu_count)
        if (
            price > 0
            and isinstance(currency, str)
            and _usd_per_gpu_hour(price, currency, kind, gpu_count, gpus) < MIN_USD_PER_GPU_HOUR
        ):
            result.skip(f"absurd price {price} {currency} for a data-centre GPU", ref)
            return
        offer_id = sku
        key = f"{offer_id}|{region}|{kind.term.value}|{kind.variant}"
        if key in seen:
            result.skip("duplicate meter for the same size, region and term", ref)
            return
        # A slice shows its share of the memory; the catalog knows the whole board's.
        board_memory_gb = size.gpu_memory_gb / gpus if fraction is not None else size.gpu_memory_gb
        spec = resolve_gpu_name(
            size.gpu_raw_name, memory_gb=board_memory_gb, form_factor=size.form_factor
        )
        offer = result.add(
            ref,
            provider=self.name,
            offer_id=offer_id,
            term_variant=kind.variant,
            instance_name=sku + kind.label,
            region=region,
            fetched_at=fetched_at,
            raw_ref=ref,
            gpu_raw_name=size.gpu_raw_name,
            **spec_fields(spec, form_factor=size.form_factor),
            gpu_count=gpu_count,
            gpu_fraction=float(fraction) if fraction is not None else None,
            gpu_memory_gb=size.gpu_memory_gb,
            vcpus=size.vcpus,
            ram_gb=size.ram_gb,
            storage_gb=gib_to_gb(size.temp_disk_gib),
            price_amount=price,
            price_currency=currency,
            price_unit=kind.unit,
            price_basis=PriceBasis.INSTANCE,
            term=kind.term,
            prepaid=kind.prepaid,
        )
        if offer is not None:
            seen.add(key)


def _usd_per_gpu_hour(
    price: Decimal, currency: str, kind: _PriceKind, gpu_count: int, gpus: float
) -> Decimal:
    """USD per GPU-hour of a whole-VM price, for the sanity floor; huge if not computable."""
    try:
        per_hour = usd_per_hour(
            price_amount=price,
            price_currency=currency,
            price_unit=kind.unit,
            price_basis=PriceBasis.INSTANCE,
            term=kind.term,
            gpu_count=gpu_count,
        )
    except (KeyError, ValueError):
        return Decimal("Infinity")  # unknown currency: Offer validation names it
    return per_hour / Decimal(str(gpus))


ADAPTER = AzureAdapter
