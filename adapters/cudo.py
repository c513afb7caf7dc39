"""Cudo Compute: GPU virtual machines composed per resource, and bare-metal machines.

API base ``https://rest.compute.cudo.org/v1`` (docs: cudocompute.com/docs/api), key sent as
``Authorization: Bearer <API key>``. Two catalogue calls, each one JSON object
``{"machineTypes": [...]}`` without pagination:

* ``GET /vms/machine-types-2`` — VM families per data centre. A VM has **no fixed size**: its
  hourly price is ``vcpus × vcpuPriceHr + GiB RAM × memoryGibPriceHr + gpus × gpuPriceHr``
  (plus disk per GiB-hour and an optional public IPv4), under constraints such as
  ``minVcpuPerGpu`` and ``min/maxVcpuPerMemoryGib``; ``maxGpuFree`` is the largest GPU count
  one VM can get now. ``prices[]``, when present, repeats the unit prices per
  ``commitmentTerm``. All prices are decimal strings in USD.
* ``GET /machine-types`` — bare-metal formats: fixed hardware, ``prices[].priceHr`` per
  machine-hour per ``commitmentTerm``, ``machinesFree`` machines free now.

How VM offers are built (our rule, stated here because Cudo has no instance sizes): for each
GPU family and each GPU count 1..``maxGpuFree`` we price the **smallest VM Cudo allows** with
that many GPUs: ``vcpus = max(minVcpu, gpus × minVcpuPerGpu)`` and the least whole GiB of
RAM the vCPU-per-GiB bounds allow (at least ``minMemoryGib``). That is the price floor of
the configuration; more vCPUs or RAM cost their unit prices on top (the ranking flags a VM
too small to run a job). Disk is not in the hourly price and none is included
(``storage_included_gb = 0``): every GiB is billed at ``minStorageGibPriceHr``, given per
GB-month in ``storage_price_per_gb_month``, and a VM needs its boot disk
(``boot_disk_min_gb``, from ``data/provider_disks.csv``). Nor is the public IPv4 that makes
the VM reachable: ``ipv4PriceHr`` per hour, in ``ipv4_price_per_hour``.

Commitment terms (enum of the "purchase a commitment" API page): NONE, 1_MONTH, 3_MONTHS,
6_MONTHS, 12_MONTHS, 24_MONTHS, 36_MONTHS, 60_MONTHS; 24 and 60 months have no
:class:`RentalTerm` and are skipped with a reason.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import Adapter, ParseResult, gpu_fields, key_headers, positive_price, price_fields
from .declarations import Lifecycle, LifecycleState
from .fabrics import named_fabric
from .schema import OfferFields, PriceBasis, RentalTerm
from .tables import provider_disk
from .units import (
    gib_to_gb,
    nominal_gpu_memory_gb,
    per_gib_hour_to_per_gb_month,
    to_decimal,
    to_float,
)

__all__ = ["CudoAdapter"]

API_BASE = "https://rest.compute.cudo.org/v1"


COMMITMENT_TERMS: Mapping[str, RentalTerm] = {
    "COMMITMENT_TERM_NONE": RentalTerm.ON_DEMAND,
    "COMMITMENT_TERM_1_MONTH": RentalTerm.COMMIT_1MO,
    "COMMITMENT_TERM_3_MONTHS": RentalTerm.COMMIT_3MO,
    "COMMITMENT_TERM_6_MONTHS": RentalTerm.COMMIT_6MO,
    "COMMITMENT_TERM_12_MONTHS": RentalTerm.COMMIT_1Y,
    "COMMITMENT_TERM_36_MONTHS": RentalTerm.COMMIT_3Y,
}


log = logging.getLogger("gpuscout.adapters.cudo")


class CudoAdapter(Adapter):
    """Cudo Compute VM GPU families (composed) and bare-metal machines (fixed)."""

    name = "cudo"
    title = "Cudo Compute"
    #: Where to rent: Cudo Compute's pricing page.
    pricing_url: ClassVar[str] = "https://www.cudocompute.com/pricing"
    source_url = API_BASE
    #: The VM catalogue is public; the bare-metal one needs the key (request.md for Cudo:
    #: "no auth needed for this catalog call"; other endpoints take a Bearer key).
    optional_credential_names = ("cudo_api_key",)
    base_url = API_BASE
    lifecycle = Lifecycle(
        LifecycleState.RETIRED,
        since="2026-03-31",
        reason="CUDO Compute closed its public on-demand platform",
        source="dstackai/dstack PR #4018; dstackai/gpuhunt #237 dropped the provider",
    )

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        headers = key_headers(self)
        paths = ["/vms/machine-types-2"]
        if "Authorization" in headers:
            paths.append("/machine-types")
        else:
            log.info("cudo: no GPUSCOUT_CUDO_API_KEY, bare-metal machines not fetched")
        return [await self.get_json(client, self.url(path), headers=headers) for path in paths]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return self.parse_records(
            payloads, "machineTypes", _parse_item, what="machine type", fetched_at=fetched_at
        )


def _parse_item(result: ParseResult, item: Mapping[str, Any]) -> None:
    if "machineType" in item:
        _parse_vm(result, item)
    elif "id" in item and "prices" in item:
        _parse_bare_metal(result, item)
    else:
        result.skip("neither a VM family nor a bare-metal machine type")


# --- VMs ---------------------------------------------------------------------------------


def _parse_vm(result: ParseResult, item: Mapping[str, Any]) -> None:
    family, dc = str(item.get("machineType") or ""), str(item.get("dataCenterId") or "")
    ref = f"cudo:vm/{dc}/{family}"
    raw_gpu = str(item.get("gpuModel") or "").strip()
    if not raw_gpu or not item.get("gpuModelId"):
        result.skip("no GPU (CPU-only VM family)", ref)
        return
    try:
        max_gpus = int(to_float(item.get("maxGpuFree")) or 0)
        min_vcpu_per_gpu = to_float(item.get("minVcpuPerGpu")) or 0.0
        min_vcpu = to_float(item.get("minVcpu")) or 1.0
        min_memory_gib = to_float(item.get("minMemoryGib")) or 1.0
        max_vcpu_per_gib = _bound(item.get("maxVcpuPerMemoryGib"))
        gpu_memory = to_float(item.get("gpuMemoryGib"))
        max_storage_gib = to_float(item.get("maxStorageGibFree"))
        storage_price = _price(item.get("minStorageGibPriceHr"))
        ipv4_price = _price(item.get("ipv4PriceHr"))
        terms = _vm_term_prices(item)
    except ValueError as exc:
        result.skip(f"bad number: {exc}", ref)
        return
    gpu_memory_gb = nominal_gpu_memory_gb(gpu_memory) if gpu_memory else None
    base: OfferFields = gpu_fields(raw_gpu, memory_gb=gpu_memory_gb) | {
        "region": dc or None,
        "country": _country(dc),
        "cpu_model": str(item.get("cpuModel") or "") or None,
        **provider_disk("cudo").billed_apart(
            per_gib_hour_to_per_gb_month(storage_price) if storage_price is not None else None
        ),
        # the most disk one VM can be given now; none of it is included
        "storage_gb": gib_to_gb(max_storage_gib) if max_storage_gib else None,
        "ipv4_price_per_hour": ipv4_price if ipv4_price is not None and ipv4_price >= 0 else None,
    }
    counts = range(1, max_gpus + 1) if max_gpus > 0 else range(1, 2)
    for commitment, unit_prices in terms:
        if (term := _term(commitment, result, ref)) is None:
            continue
        for gpus in counts:
            vcpus = max(min_vcpu, math.ceil(gpus * min_vcpu_per_gpu))
            ram_gib = max(min_memory_gib, math.ceil(vcpus / max_vcpu_per_gib))
            try:
                price = _compose(unit_prices, vcpus=vcpus, ram_gib=ram_gib, gpus=gpus)
            except ValueError as exc:
                result.skip(f"bad {commitment} price: {exc}", ref)
                break
            if price is None or price <= 0:
                result.skip(f"no usable {commitment} price", ref)
                break
            vm: OfferFields = {
                "offer_id": f"{family}/{gpus}gpu",
                "instance_name": f"{family} {gpus}x {raw_gpu} {vcpus:g} vCPU {ram_gib:g} GiB",
                "gpu_count": gpus,
                "vcpus": float(vcpus),
                "ram_gb": gib_to_gb(ram_gib),
                **price_fields(price, PriceBasis.INSTANCE, term),
                "available_now": max_gpus >= gpus,
            }
            result.add(ref, **(base | vm))


def _vm_term_prices(item: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(commitment term, unit prices) pairs: ``prices[]`` if given, else the top level."""
    prices = item.get("prices")
    if isinstance(prices, list) and prices:
        return [
            (str(p.get("commitmentTerm") or "COMMITMENT_TERM_NONE"), p)
            for p in prices
            if isinstance(p, Mapping)
        ]
    return [("COMMITMENT_TERM_NONE", item)]


def _compose(
    unit_prices: Mapping[str, Any], *, vcpus: float, ram_gib: float, gpus: int
) -> Decimal | None:
    """USD per hour of one VM from Cudo's per-unit hourly prices; None if a price is absent."""
    vcpu, ram, gpu = (
        _price(unit_prices.get(k)) for k in ("vcpuPriceHr", "memoryGibPriceHr", "gpuPriceHr")
    )
    if vcpu is None or ram is None or gpu is None:
        return None
    return vcpu * Decimal(str(vcpus)) + ram * Decimal(str(ram_gib)) + gpu * gpus


def _price(value: Any) -> Decimal | None:
    """A Cudo money value: ``{"value": "0.002200"}`` (or a bare number/string)."""
    if isinstance(value, Mapping):
        value = value.get("value")
    return to_decimal(value)


def _bound(value: Any) -> float:
    """An upper bound that may be absent or the string "Infinity" (no bound)."""
    if value is None or str(value).strip().lower() in ("", "infinity", "inf"):
        return math.inf
    bound = to_float(value)
    if bound is None or bound <= 0:
        raise ValueError(f"not a positive bound: {value!r}")
    return bound


# --- bare metal --------------------------------------------------------------------------


def _parse_bare_metal(result: ParseResult, item: Mapping[str, Any]) -> None:
    machine_id = str(item.get("id") or "")
    ref = f"cudo:machine-type/{machine_id}"
    raw_gpu = str(item.get("gpuModel") or item.get("gpuModelId") or "").strip()
    try:
        gpus = int(to_float(item.get("gpus")) or 0)
        memory_gib = to_float(item.get("memoryGib"))
        disks, disk_gib = to_float(item.get("disks")), to_float(item.get("diskSizeGib"))
        free = to_float(item.get("machinesFree"))
        cores = to_float(item.get("cpuCores"))
    except ValueError as exc:
        result.skip(f"bad number: {exc}", ref)
        return
    if gpus <= 0 or not raw_gpu:
        result.skip("no GPU (CPU-only machine type)", ref)
        return
    base: OfferFields = gpu_fields(raw_gpu) | {
        "offer_id": machine_id,
        "instance_name": machine_id,
        "gpu_count": gpus,
        "cpu_model": str(item.get("cpuModel") or "") or None,
        "cpu_arch": str(item.get("architecture") or "") or None,
        "cpu_cores": cores or None,
        "ram_gb": gib_to_gb(memory_gib) if memory_gib else None,
        "storage_gb": gib_to_gb(disks * disk_gib) if disks and disk_gib else None,
        # a bare-metal format comes with its disks
        "storage_included_gb": gib_to_gb(disks * disk_gib) if disks and disk_gib else None,
        "fabric": named_fabric(item.get("networkType")),
        "available_now": None if free is None else free > 0,
        "available_count": int(free) if free is not None and free >= 0 else None,
    }
    for entry in item.get("prices") or []:
        if not isinstance(entry, Mapping):
            result.skip("price entry is not an object", ref)
            continue
        commitment = str(entry.get("commitmentTerm") or "COMMITMENT_TERM_NONE")
        if (term := _term(commitment, result, ref)) is None:
            continue
        price = positive_price(
            result, entry.get("priceHr"), f"{commitment} priceHr", ref, convert=_price
        )
        if price is None:
            continue
        dc = str(entry.get("dataCenterId") or item.get("dataCenterId") or "")
        place: OfferFields = {"region": dc or None, "country": _country(dc)}
        result.add(ref, **(base | place | price_fields(price, PriceBasis.INSTANCE, term)))


# --- shared ------------------------------------------------------------------------------


def _term(commitment: str, result: ParseResult, ref: str) -> RentalTerm | None:
    """The rental term of a Cudo commitment; one we have no term for is a recorded skip."""
    term = COMMITMENT_TERMS.get(commitment)
    if term is None:
        result.skip(f"commitment term {commitment!r} has no rental term here", ref)
    return term


def _country(data_center_id: str) -> str | None:
    """Cudo data-centre ids start with the ISO country code ("no-luster-1", "gb-...")."""
    prefix = data_center_id.split("-", 1)[0]
    return prefix.upper() if len(prefix) == 2 and prefix.isalpha() else None
