"""JarvisLabs: GPU instances per region from the ``server_meta`` endpoint.

API: ``GET https://backendn.jarvislabs.net/misc/server_meta`` with
``Authorization: Bearer <key>`` (as dstackai/gpuhunt providers/jarvislabs.py calls it; the
regional hosts backendprod/backendn/backendeu all serve the same list of every region). No
pagination. Answer: ``{"server_meta": [...], "cpu_meta": {...}}``; CPU-only machines
(``cpu_meta``) are not GPU offers and are left out.

One ``server_meta`` row is one GPU model in one region for one workload type:

* ``price_per_hour`` and ``spot_price`` (may be null): USD **per GPU** per hour;
* ``num_gpus``: the most GPUs one instance can have, a *string* ("8"); ``vram`` likewise
  ("24", GB per GPU); ``cpus_per_gpu`` and ``ram_per_gpu`` (GB) scale with the GPU count;
* ``num_free_devices`` / ``effective_num_free_devices`` / ``spot_num_free_devices``: GPUs free;
* ``workload_type``: "vm", "container" or null (older VM-capable rows, per gpuhunt).

The same GPU and region appear once per workload type with the same price, so rows are merged
per (region, GPU): the on-demand offer comes from the VM row (null counts as VM), else the
container row; spot is sold for containers only, so interruptible offers come from the
container row's ``spot_price``. A row repeated within one workload type gives the same
offers again: the contract's dedupe keeps the first. Offers are emitted for the powers of two
up to ``num_gpus`` and ``num_gpus`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    ParseResult,
    gpu_fields,
    key_headers,
    payload_list,
    positive_price,
    price_fields,
)
from .regions import region_country
from .schema import OfferFields, PriceBasis, RentalTerm
from .units import (
    NO_POSITIVE_PRICE,
    lenient_float,
    nominal_memory_gb,
    non_negative,
    positive_quantity,
    power_of_two_counts,
    text,
    whole_count,
)

__all__ = [
    "NOT_PROVISIONED",
    "PROVISIONED_REGIONS",
    "SERVER_META_URL",
    "JarvisLabsAdapter",
    "instance_gpu_counts",
]

API_BASE = "https://backendn.jarvislabs.net"
SERVER_META_URL = API_BASE + "/misc/server_meta"

#: The regions JarvisLabs provisions instances in: those its own client has a backend host
#: for (jarvislabsai/jarvislabs@f922b55 jarvislabs/constants.py REGION_URLS, 2026-07-29:
#: india-chennai-01 backendc, india-noida-01 backendn, europe-01 backendeu). india-01
#: (backendprod) takes no new instances since 2026-04-13 (commit 3b6ea72, "Deprecate IN1
#: region for new resource creation"; IN1 now names india-chennai-01). server_meta also
#: lists rows of ``unknown-region`` (and cpu_meta names it), a region no client can create
#: an instance in. Rows of a region not here are skipped, not ranked, with the reason
#: ``region JarvisLabs does not provision (<region>)``, which the answers' coverage note
#: repeats (:mod:`adapters.skip_summary`).
PROVISIONED_REGIONS = frozenset({"india-noida-01", "india-chennai-01", "europe-01"})
NOT_PROVISIONED = "region JarvisLabs does not provision"

_KINDS = ("vm", "container")
#: Workload types in the order the on-demand offer is taken from (null is a VM row).
_ON_DEMAND_KINDS = ("vm", None, "container")


class JarvisLabsAdapter(Adapter):
    name = "jarvislabs"
    title = "JarvisLabs"
    #: Where to rent: JarvisLabs' pricing page.
    pricing_url: ClassVar[str] = "https://jarvislabs.ai/pricing"
    source_url = SERVER_META_URL
    credential_names = ("jarvislabs_api_key",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        url = self.url("/misc/server_meta")
        return [await self.get_json(client, url, headers=key_headers(self))]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        groups: dict[tuple[str, str], dict[str | None, list[Mapping[str, Any]]]] = {}
        for payload in payloads:
            for row in payload_list(payload, "server_meta", self.name):
                checked = _checked_row(row, result)
                if checked is None:
                    continue
                kind = checked.get("workload_type")
                by_kind = groups.setdefault((checked["region"], checked["gpu_type"]), {})
                by_kind.setdefault(kind if kind in _KINDS else None, []).append(checked)
        for by_kind in groups.values():
            on_demand = next((by_kind[k] for k in _ON_DEMAND_KINDS if k in by_kind), [])
            for row in on_demand:
                _emit(row, RentalTerm.ON_DEMAND, result)
            for row in by_kind.get("container", []):
                _emit(row, RentalTerm.INTERRUPTIBLE, result)
        return result


# --- pure helpers ---------------------------------------------------------------------


def _emit(row: Mapping[str, Any], term: RentalTerm, result: ParseResult) -> None:
    ref = f"jarvislabs:{row.get('region')}/{row.get('gpu_type')}/{row.get('workload_type')}"
    spot = term is RentalTerm.INTERRUPTIBLE
    key = "spot_price" if spot else "price_per_hour"
    # null spot_price: spot is not sold there (not a broken row)
    price = positive_price(
        result, row.get(key), key, ref, absent=None if spot else NO_POSITIVE_PRICE
    )
    if price is None:
        return
    gpu_type, region = row["gpu_type"], row["region"]
    kind = "container" if spot or row.get("workload_type") == "container" else "vm"
    # No form-factor hint: "H100" and "A100-80GB" (80 GB for SXM and PCIe alike) stay
    # unmapped, as no JarvisLabs document found states SXM or PCIe for them. A third-party
    # transcription of jarvislabs.ai/pricing reads "NVIDIA H100 SXM"; unused until
    # confirmed on JarvisLabs' own page.
    gpu = gpu_fields(gpu_type, memory_gb=nominal_memory_gb(row.get("vram")))
    cpus_per_gpu = positive_quantity(row.get("cpus_per_gpu"))
    ram_per_gpu = positive_quantity(row.get("ram_per_gpu"))
    free = _free_gpus(row, spot)
    for count in instance_gpu_counts(whole_count(row.get("num_gpus")) or 1):
        available = free // count if free is not None else None
        fields: OfferFields = {
            "offer_id": f"{region}:{gpu_type}:{count}x",
            "instance_name": f"{count}x {gpu_type} ({kind})",
            "region": region,
            "country": region_country("jarvislabs", region),
            **gpu,
            "gpu_count": count,
            "vcpus": cpus_per_gpu * count if cpus_per_gpu else None,
            "ram_gb": ram_per_gpu * count if ram_per_gpu else None,
            **price_fields(price, PriceBasis.GPU, term),
            "available_count": available,
            "available_now": available > 0 if available is not None else None,
        }
        result.add(ref, **fields)


#: GPU counts offered per instance: powers of two up to ``num_gpus``, and ``num_gpus``.
instance_gpu_counts = power_of_two_counts


def _checked_row(row: Any, result: ParseResult) -> dict[str, Any] | None:
    """The row with a usable GPU name and region, or ``None`` (recorded as skipped)."""
    if not isinstance(row, Mapping):
        result.skip("server_meta row is not an object")
        return None
    gpu_type, region = text(row.get("gpu_type")), text(row.get("region"))
    if gpu_type is None:
        result.skip("row without gpu_type", f"jarvislabs:{row.get('region')}/?")
        return None
    if region is None:
        result.skip("row without region", f"jarvislabs:?/{gpu_type}")
        return None
    if region not in PROVISIONED_REGIONS:
        result.skip(f"{NOT_PROVISIONED} ({region})", f"jarvislabs:{region}/{gpu_type}")
        return None
    return {**row, "gpu_type": gpu_type, "region": region}


def _free_gpus(row: Mapping[str, Any], spot: bool) -> int | None:
    """GPUs free now for this kind of rental (the effective count when given)."""
    keys = (
        ("spot_num_free_devices",) if spot else ("effective_num_free_devices", "num_free_devices")
    )
    numbers = (non_negative(lenient_float(row.get(key))) for key in keys)
    return next((int(n) for n in numbers if n is not None), None)
