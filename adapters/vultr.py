"""Vultr Cloud GPU (``vcg``) and bare-metal GPU plans, from the Vultr API v2.

Sources (https://www.vultr.com/api/#tag/plans; no key needed to list plans, a configured
``vultr_api_key`` is sent as ``Authorization: Bearer``):

* ``GET https://api.vultr.com/v2/plans?type=vcg&per_page=500`` ->
  ``{"plans": [{id, vcpu_count, ram (MiB), disk (GB), disk_count, bandwidth, monthly_cost,
  hourly_cost, monthly_cost_preemptible, hourly_cost_preemptible, type, locations,
  gpu_vram_gb, gpu_type, deploy_preemptible, ...}], "meta": {"total", "links": {"next",
  "prev"}}}``;
* ``GET https://api.vultr.com/v2/plans-metal?per_page=500`` -> ``{"plans_metal": [{id,
  physical_cpus, cpu_count, cpu_cores, cpu_threads, cpu_model, ram (MiB), disk, disk_count,
  monthly_cost, hourly_cost, ..._preemptible, type ("NVMe"/"SSD"), locations}], "meta"}``.

Both are cursor-paged: ``meta.links.next`` is the cursor for ``&cursor=``, empty at the end.

Cloud GPU plans do not say how many GPUs they have: ``gpu_vram_gb`` is the plan's total
VRAM, so a plan with less VRAM than one card is a slice (``gpu_fraction``), e.g.
``vcg-a100-1c-6g-4vram`` = 4 GB of an 80 GB A100 = 1/20. Bare-metal plans have no GPU
fields at all; the GPU count and model are in the id (``vbm-112c-2048gb-8-h100-gpu``).
Prices: ``hourly_cost`` (USD per hour) when given, else ``monthly_cost`` (USD per month);
the ``*_preemptible`` prices are separate interruptible offers. One offer per location and
term, and only for the terms the plan can be deployed with: ``deploy_ondemand`` and
``deploy_preemptible`` (``false``: none of that term in any of its ``locations``).
``location_cost`` maps a location to the prices that differ there (``monthly_cost``,
``hourly_cost``, ``monthly_cost_preemptible``, ``hourly_cost_preemptible``, the
``PlanLocationCost`` of vultr/govultr @ d81a12fb0f081fe43461ec812ecce7a1ee61fbad : plans.go);
a price it does not name is the plan's.

Vultr bills hourly up to the monthly price ("GPU Instances: billed up to 730 hours per
month ... all other server types (including ... Bare Metal): billed up to 672 hours",
https://docs.vultr.com/support/platform/billing/how-am-i-billed-for-my-servers): so an offer
with both prices carries ``billing_cap_hours_per_month = monthly / hourly`` (the verbatim 8x
H100 bare-metal plan: 16074.24 / 23.92 = 672 h), which the pricing engine applies; the
minimum billing unit is one hour (``billing_increment_s = 3600``, same page).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import Adapter, ParseResult, ResponseFormatError, gpu_fields, key_headers, price_fields
from .gpus import resolve_gpu_name, spec_fields
from .schema import GpuFormFactor, OfferFields, PriceBasis, PriceUnit, RentalTerm, StorageType
from .tables import data_rows
from .units import (
    gpu_share,
    lenient_decimal,
    mib_to_gb,
    positive_quantity,
    read_price,
    to_float,
    value_at,
    whole_count,
)

__all__ = ["VultrAdapter"]

API = "https://api.vultr.com/v2"
PLANS_URL = f"{API}/plans"
METAL_URL = f"{API}/plans-metal"
PER_PAGE = 500
MAX_PAGES = 50
#: "The minimum billing unit is one hour" (Vultr's billing page, module docstring).
BILLING_INCREMENT_S = 3600


@functools.cache
def card_memory_gb() -> dict[str, float]:
    """Memory of one whole card of each Cloud GPU type, GB, from ``data/vultr_gpu_cards.csv``
    (Vultr's Cloud GPU pages, cited per row): how a plan's ``gpu_vram_gb`` becomes a GPU
    count or a slice. A type not listed keeps its raw name and counts as one GPU of unknown
    size.
    """
    rows = data_rows("vultr_gpu_cards.csv")
    return {row["gpu_type"]: float(row["card_memory_gb"]) for row in rows}


#: Bare-metal GPU ids: "...-<count>-<gpu>-gpu".
_METAL_GPU = re.compile(r"-(?P<count>\d+)-(?P<gpu>[a-z0-9]+)-gpu$", re.IGNORECASE)
#: 8-GPU NVIDIA bare-metal machines are HGX boards (SXM), per Vultr's bare-metal GPU pages
#: ("NVIDIA HGX H100/A100", https://www.vultr.com/products/bare-metal/).
_HGX_METAL_GPUS = frozenset({"a100", "h100", "h200", "b200"})
_STORAGE_TYPES = {"nvme": StorageType.NVME, "ssd": StorageType.SSD}


def next_cursor(payload: Mapping[str, Any]) -> str | None:
    """The cursor of the next page, None on the last page."""
    cursor = value_at(payload, "meta", "links", "next")
    return cursor if isinstance(cursor, str) and cursor else None


def card_share(vram_gb: float, card_gb: float) -> tuple[int, float | None] | None:
    """(whole GPUs, fraction) of a plan with ``vram_gb`` of cards of ``card_gb`` each; ``None``
    for what is neither a slice of one card nor a whole number of them.

    >>> card_share(4, 80), card_share(160, 80), card_share(120, 80)
    ((1, 0.05), (2, None), None)
    """
    if vram_gb <= 0 or card_gb <= 0:
        return None
    cards = vram_gb / card_gb
    return gpu_share(cards) if cards < 1 or cards == int(cards) else None


class VultrAdapter(Adapter):
    """Vultr Cloud GPU plans (whole GPUs and vGPU slices) and bare-metal GPU machines."""

    name = "vultr"
    title = "Vultr"
    #: Where to rent: Vultr's pricing page, its Cloud GPU section.
    pricing_url: ClassVar[str] = "https://www.vultr.com/pricing/#cloud-gpu"
    source_url = API
    optional_credential_names = ("vultr_api_key",)  # plan listings are public
    base_url = API

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        headers = key_headers(self)
        pages: list[Any] = []
        for url, params, list_key in (
            (self.url("/plans"), {"type": "vcg", "per_page": str(PER_PAGE)}, "plans"),
            (self.url("/plans-metal"), {"per_page": str(PER_PAGE)}, "plans_metal"),
        ):
            pages.extend(await self._fetch_all(client, url, params, list_key, headers))
        return pages

    async def _fetch_all(
        self,
        client: httpx.AsyncClient,
        url: str,
        params: dict[str, str],
        list_key: str,
        headers: dict[str, str],
    ) -> list[Any]:
        async def page(cursor: str | None) -> Any:
            query = dict(params, cursor=cursor) if cursor else params
            page = await self.get_json(client, url, params=query, headers=headers)
            if not isinstance(page, dict) or not isinstance(page.get(list_key), list):
                raise ResponseFormatError(self.name, f"{url} did not return a {list_key!r} list")
            return page

        return await self.follow_pages(
            page,
            next_cursor,
            max_pages=MAX_PAGES,
            too_many=f"more than {MAX_PAGES} pages from {url}",
            repeated=f"{url} returned the same cursor twice",
        )

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        for index, payload in enumerate(payloads):
            if isinstance(payload, dict) and isinstance(payload.get("plans"), list):
                for plan in payload["plans"]:
                    _add_cloud_plan(result, plan)
            elif isinstance(payload, dict) and isinstance(payload.get("plans_metal"), list):
                for plan in payload["plans_metal"]:
                    _add_metal_plan(result, plan)
            else:
                raise ResponseFormatError(
                    self.name, f"payload {index} has neither 'plans' nor 'plans_metal' list"
                )
        return result


# --- cloud GPU ---------------------------------------------------------------------------


def _add_cloud_plan(result: ParseResult, plan: Any) -> None:
    if not isinstance(plan, dict) or not isinstance(plan.get("id"), str):
        result.skip("plan without an id")
        return
    if plan.get("type") != "vcg":
        return  # CPU plans (vc2, vhf, ...) are not GPU offers
    plan_id = plan["id"]
    ref = f"vultr:plan/{plan_id}"
    raw_gpu = plan.get("gpu_type")
    if not isinstance(raw_gpu, str) or not raw_gpu:
        result.skip("Cloud GPU plan without gpu_type", ref)
        return
    try:
        vram_gb = to_float(plan.get("gpu_vram_gb"))
    except ValueError:
        result.skip(f"gpu_vram_gb is not a number: {plan.get('gpu_vram_gb')!r}", ref)
        return
    card_gb = card_memory_gb().get(raw_gpu)
    gpu_count, fraction, memory_gb = 1, None, None
    if card_gb is not None:
        share = card_share(vram_gb or 0, card_gb)
        if share is None:
            result.skip(f"{vram_gb} GB VRAM is not a whole number of {card_gb:g} GB cards", ref)
            return
        gpu_count, fraction = share
        memory_gb = vram_gb if fraction is not None else card_gb
    # No form-factor hint: no Vultr document found says SXM or PCIe for Cloud GPU A100/H100
    # plans, and the plan record does not tell them apart, so those stay unmapped.
    hardware: OfferFields = {
        **gpu_fields(raw_gpu, memory_gb=card_gb, name=raw_gpu.replace("_", " ")),
        "gpu_count": gpu_count,
        "gpu_fraction": fraction,
        "gpu_memory_gb": memory_gb,  # a slice's share of the card it was resolved with
        "vcpus": positive_quantity(plan.get("vcpu_count")),
        "ram_gb": _ram_gb(plan.get("ram")),
        "storage_gb": _storage_gb(plan),
    }
    _add_prices(result, plan, ref, hardware)


# --- bare metal --------------------------------------------------------------------------


def _add_metal_plan(result: ParseResult, plan: Any) -> None:
    if not isinstance(plan, dict) or not isinstance(plan.get("id"), str):
        result.skip("bare-metal plan without an id")
        return
    plan_id = plan["id"]
    m = _METAL_GPU.search(plan_id)
    if m is None:
        return  # a CPU-only machine
    ref = f"vultr:plan-metal/{plan_id}"
    gpu_count = int(m["count"])
    if gpu_count <= 0:
        result.skip("bare-metal plan id names 0 GPUs", ref)
        return
    raw_gpu = m["gpu"]
    form_factor = (
        GpuFormFactor.SXM if gpu_count == 8 and raw_gpu.lower() in _HGX_METAL_GPUS else None
    )
    spec = resolve_gpu_name(raw_gpu, form_factor=form_factor)
    cpu_model = plan.get("cpu_model")
    storage_type = plan.get("type")
    hardware: OfferFields = spec_fields(spec, form_factor=form_factor) | {
        "gpu_raw_name": raw_gpu,
        "gpu_count": gpu_count,
        # Vultr does not publish the memory; it is the catalog's figure for the model.
        "gpu_memory_gb": spec.memory_gb if spec else None,
        "cpu_model": cpu_model if isinstance(cpu_model, str) and cpu_model else None,
        "cpu_sockets": whole_count(plan.get("physical_cpus")),
        "cpu_cores": positive_quantity(plan.get("cpu_cores")),
        "vcpus": positive_quantity(plan.get("cpu_threads")),
        "ram_gb": _ram_gb(plan.get("ram")),
        "storage_gb": _storage_gb(plan),
        "storage_type": _STORAGE_TYPES.get(str(storage_type).lower()),
    }
    _add_prices(result, plan, ref, hardware)


# --- prices ------------------------------------------------------------------------------


def _add_prices(
    result: ParseResult, plan: Mapping[str, Any], ref: str, hardware: OfferFields
) -> None:
    locations = plan.get("locations")
    if not isinstance(locations, list) or not any(isinstance(x, str) for x in locations):
        result.skip("plan not deployable in any location", ref)
        return
    overrides = plan.get("location_cost")
    if overrides is not None and not isinstance(overrides, dict):
        result.skip(f"location_cost is not an object: {overrides!r}", ref)
        return
    terms = []
    if plan.get("deploy_ondemand") is not False:
        terms.append((RentalTerm.ON_DEMAND, "hourly_cost", "monthly_cost"))
    if plan.get("deploy_preemptible") is not False:
        terms.append(
            (RentalTerm.INTERRUPTIBLE, "hourly_cost_preemptible", "monthly_cost_preemptible")
        )
    if not terms:
        result.skip("plan deployable neither on demand nor preemptible", ref)
        return
    base: OfferFields = hardware | {
        "offer_id": str(plan["id"]),
        "instance_name": str(plan["id"]),
        "billing_increment_s": BILLING_INCREMENT_S,
        "datacenter": True,
    }
    problems: dict[str, None] = {}  # each reason once per plan, in order
    for location in locations:
        if not isinstance(location, str) or not location:
            continue
        override = (overrides or {}).get(location)
        if override is not None and not isinstance(override, dict):
            problems[f"location_cost of {location} is not an object"] = None
            continue
        prices = {**plan, **(override or {})}
        for term, hourly_key, monthly_key in terms:
            price = _plan_price(prices, hourly_key, monthly_key)
            if price is None and term is RentalTerm.INTERRUPTIBLE:
                continue  # no preemptible option for this plan
            if isinstance(price, str) or price is None:
                problems[price or "plan without a price"] = None
                continue
            amount, unit = price
            offer: OfferFields = base | {
                "region": location,
                **price_fields(amount, PriceBasis.INSTANCE, term, unit=unit),  # USD
                "billing_cap_hours_per_month": _cap_hours(prices, hourly_key, monthly_key),
            }
            result.add(ref, **offer)
    for reason in problems:
        result.skip(reason, ref)


def _cap_hours(prices: Mapping[str, Any], hourly_key: str, monthly_key: str) -> float | None:
    """Hours a month after which the hourly price reaches the monthly one: the cap of
    Vultr's hourly billing (None unless both prices are positive numbers).

    >>> _cap_hours({"hourly_cost": 23.92, "monthly_cost": 16074.24}, "hourly_cost", "monthly_cost")
    672.0
    """
    hourly, monthly = (lenient_decimal(prices.get(k)) for k in (hourly_key, monthly_key))
    if hourly is None or monthly is None or hourly <= 0 or monthly <= 0:
        return None
    return float(monthly / hourly)


def _plan_price(
    plan: Mapping[str, Any], hourly_key: str, monthly_key: str
) -> tuple[Decimal, PriceUnit] | str | None:
    """The plan's price and unit (hourly preferred), a reason it is unusable, or None."""
    for key, unit in ((hourly_key, PriceUnit.HOUR), (monthly_key, PriceUnit.MONTH)):
        bad, not_positive = "{name} is not a number: {value!r}", "{name} is {price}"
        price = read_price(plan.get(key), key, bad=bad, absent=None, negative=not_positive)
        if price is not None:
            return price if isinstance(price, str) else (price, unit)
    return None


def _ram_gb(value: Any) -> float | None:
    """Vultr ``ram`` is in MiB (65536 for the "64gb" plan): converted to decimal GB."""
    mib = positive_quantity(value)
    return round(mib_to_gb(mib), 3) if mib else None


def _storage_gb(plan: Mapping[str, Any]) -> float | None:
    """``disk`` GB per drive x ``disk_count`` drives (1 when absent)."""
    disk = positive_quantity(plan.get("disk"))
    if disk is None:
        return None
    count = positive_quantity(plan.get("disk_count")) or 1
    return disk * count
