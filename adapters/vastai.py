"""Vast.ai: the GPU marketplace's offer search ("bundles").

API: ``POST https://console.vast.ai/api/v0/bundles/`` with a JSON filter body, answered by
``{"offers": [...]}`` (official OpenAPI spec, vast-ai/docs
api-reference/openapi/yaml/search_offers.yaml). No pagination: the body's ``limit`` caps the
answer. ``vastai search offers --raw`` prints the ``offers`` list of that same answer
(vast-ai/vast-cli vastai/cli/commands/offers.py: ``rows = r.json()["offers"]``), so a CLI
capture is this answer without its envelope. An API key is optional for this public search
(the spec asks for one; the key is sent as ``Authorization: Bearer`` when configured). An
invalid key answers HTTP 404.

Each offer is one machine (or a slice of its GPUs) listed by a host. Field meanings, from the
spec and vast-ai/vast-cli (vastai/cli/commands/offers.py):

* ``dph_base``: USD per hour for the whole offer (all ``num_gpus``), compute only;
  ``dph_total`` adds the storage of the search's ``allocated_storage``, which we do not
  fold in: storage is priced apart, ``storage_cost`` in USD per GB per 30-day month (the
  verbatim answer's ``storage_total_cost`` is ``allocated_storage x storage_cost / 720``,
  and ``dph_total - dph_base`` that), given here per 730-hour month
  (:func:`storage_per_gb_month`). No disk is included: an instance is billed for the disk
  it is created with, 10 GB unless told (``boot_disk_min_gb``, ``data/provider_disks.csv``);
* ``min_bid``: the lowest interruptible ("bid") price, USD per hour for the whole offer;
* ``gpu_ram``: per-GPU memory as nvidia-smi reports it (MiB, though the spec says MB:
  24564 for an RTX 4090), stored as the size the card is sold by (24 GB,
  :func:`~adapters.gpus.sold_memory_gb`) as every other provider states it;
* ``cpu_cores_effective``: the vCPUs the renter gets; ``disk_space``: GB to allocate;
  ``inet_up``/``inet_down``: measured Mbit/s; ``inet_up_cost``: USD per GB sent out;
* ``reliability2`` (0-1), ``verification`` ("verified"/"unverified"/"deverified"),
  ``hosting_type`` (1 = datacenter, 0 = consumer host), ``geolocation`` ("Texas, US").

Per offer the checklist's groups get what the bundle states: ``cpu_name`` (``cpu_model``, and
``cpu_vendor`` from its brand word: "AMD EPYC ..." or "Xeon ..."), ``cpu_arch``,
``disk_bw`` (MB/s), ``inet_up``/``inet_down``, ``cuda_max_good`` ("maximum supported CUDA
version": ``cuda_version``) and ``driver_version``. Left unknown on purpose: ``cpu_cores``
is the *host's* vCPU count (the spec: "Number of virtual CPUs"), not physical cores;
``os_version`` is the host machine's Ubuntu (the spec), while a renter runs a Docker image
of their own choosing, so it is not an ``os_images`` offer; ``disk_name`` is a drive's
model ("INTEL SSDPE2KX080T8"), from which a storage type would be a guess.

``cpu_ram`` is left out on purpose: whether it is the host's total or the offer's share is
not documented (gpuhunt scales it by ``cpu_cores_effective / cpu_cores``, the real capture
looks like a share), so ``ram_gb`` stays ``None`` rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    ParseResult,
    gpu_fields,
    key_headers,
    positive_price,
    price_fields,
    required_count,
)
from .gpus import sold_memory_gb
from .regions import geolocation_country
from .schema import HOURS_PER_MONTH, OfferFields, PriceBasis, RentalTerm
from .tables import provider_disk
from .units import (
    cpu_vendor,
    gpu_vendor,
    lenient_decimal,
    lenient_float,
    non_negative,
    positive,
    text,
)

__all__ = [
    "BUNDLES_URL",
    "SEARCH_LIMIT",
    "VAST_HOURS_PER_MONTH",
    "VastAiAdapter",
    "storage_per_gb_month",
]

API_BASE = "https://console.vast.ai/api/v0"
BUNDLES_URL = API_BASE + "/bundles/"
#: Offers per search; the API has no pagination (gpuhunt uses the same cap).
SEARCH_LIMIT = 3000

_VERIFICATION = {"verified": True, "unverified": False, "deverified": False}
_HOSTING_DATACENTER = {1: True, 0: False}


def search_body(limit: int = SEARCH_LIMIT) -> dict[str, Any]:
    """The bundles filter: every rentable, unrented offer, best-scored first.

    On-demand pricing (``type``); the same answer carries ``min_bid`` for interruptible use.
    """
    return {
        "rentable": {"eq": True},
        "rented": {"eq": False},
        "external": {"eq": False},
        "type": "on-demand",
        "order": [["score", "desc"]],
        "limit": limit,
    }


class VastAiAdapter(Adapter):
    name = "vastai"
    title = "Vast.ai"
    #: Where to rent: Vast.ai's console offer search (cloud.vast.ai/create/, as Vast's
    #: guides link it).
    rent_url: ClassVar[str] = "https://cloud.vast.ai/create/"
    pricing_url: ClassVar[str] = "https://vast.ai/pricing"
    source_url = BUNDLES_URL
    optional_credential_names = ("vastai_api_key",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        payload = await self.post_json(
            client, self.url("/bundles/"), json=search_body(), headers=key_headers(self)
        )
        return [payload]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        """One on-demand and one interruptible offer per listing; a machine's GPU slice
        listed twice is the contract's duplicate (its offer id names machine and count)."""
        return self.parse_records(
            payloads, "offers", _parse_offer, what="offer", fetched_at=fetched_at
        )


def _parse_offer(result: ParseResult, record: Mapping[str, Any]) -> None:
    ref = f"vastai:offer/{record.get('id', record.get('ask_contract_id'))}"
    raw_gpu = text(record.get("gpu_name"))
    if raw_gpu is None:
        result.skip("no gpu_name", ref)
        return
    gpu_count = required_count(result, record.get("num_gpus"), "num_gpus", ref)
    if gpu_count is None:
        return
    on_demand = positive_price(result, record.get("dph_base"), "dph_base", ref)
    if on_demand is None:
        return
    # no bid price (null or 0): not sold as interruptible; a bad one skips only the bid
    min_bid = record.get("min_bid")
    bid = positive_price(result, min_bid, "min_bid", ref) if min_bid else None

    fields = _common_fields(record, raw_gpu, gpu_count)
    for price, term in ((on_demand, RentalTerm.ON_DEMAND), (bid, RentalTerm.INTERRUPTIBLE)):
        if price is not None:
            priced = fields | price_fields(price, PriceBasis.INSTANCE, term)
            result.add(ref, **priced)


#: Hours of the month Vast's ``storage_cost`` is quoted per (30 days; see the module).
VAST_HOURS_PER_MONTH = Decimal(720)


# --- pure helpers ---------------------------------------------------------------------
def storage_per_gb_month(storage_cost: Decimal) -> Decimal:
    """Vast's ``storage_cost`` (USD per GB per 30-day month) per 730-hour month, the schema's.

    >>> storage_per_gb_month(Decimal("0.72"))
    Decimal('0.730')
    """
    return storage_cost / VAST_HOURS_PER_MONTH * HOURS_PER_MONTH


def _common_fields(record: Mapping[str, Any], raw_gpu: str, gpu_count: int) -> OfferFields:
    """Everything but the price and term, shared by the on-demand and interruptible offers."""
    gpu_mib = positive(lenient_float(record.get("gpu_ram")))
    region = text(record.get("geolocation"))
    pcie_gen = lenient_float(record.get("pci_gen"))
    cuda = positive(lenient_float(record.get("cuda_max_good")))
    storage_cost = lenient_decimal(record.get("storage_cost"))
    egress = lenient_decimal(record.get("inet_up_cost"))
    vendor = gpu_vendor(record.get("gpu_arch"))
    gpu = gpu_fields(raw_gpu, memory_gb=gpu_mib / 1024 if gpu_mib else None, vendor=vendor)
    machine, ask = record.get("machine_id"), record.get("id")
    rentable = record.get("rentable")
    return {
        # stable: the physical machine and the GPU slice, which outlive one listing (ask)
        "offer_id": f"m{machine}-{gpu_count}x" if machine is not None else f"ask{ask}-{gpu_count}x",
        "region": region,
        "country": geolocation_country(region),
        # matched on GiB, the unit GPU names quote ("80GB" = 81920 MiB)
        **gpu,
        "gpu_count": gpu_count,
        "gpu_memory_gb": sold_memory_gb(gpu_mib, gpu.get("gpu_model")) if gpu_mib else None,
        "gpu_nvlink_gbs": positive(lenient_float(record.get("bw_nvlink"))),
        "gpu_pcie_gen": int(pcie_gen) if pcie_gen and 1 <= pcie_gen <= 7 else None,
        "cpu_model": text(record.get("cpu_name")),
        "cpu_vendor": cpu_vendor(record.get("cpu_name")),
        "cpu_arch": text(record.get("cpu_arch")),
        "vcpus": positive(lenient_float(record.get("cpu_cores_effective"))),
        "storage_gb": non_negative(lenient_float(record.get("disk_space"))),
        # Vast reports disk_bw in MB/s.
        "disk_bandwidth_mbps": positive(lenient_float(record.get("disk_bw"))),
        "public_bandwidth_up_mbps": positive(lenient_float(record.get("inet_up"))),
        "public_bandwidth_down_mbps": positive(lenient_float(record.get("inet_down"))),
        "cuda_version": str(cuda) if cuda else None,
        "driver_version": text(record.get("driver_version")),
        **provider_disk("vastai").billed_apart(
            storage_per_gb_month(storage_cost) if storage_cost and storage_cost >= 0 else None
        ),
        "egress_price_per_gb": egress if egress is not None and egress >= 0 else None,
        "reliability": _fraction(
            lenient_float(record.get("reliability2")) or lenient_float(record.get("reliability"))
        ),
        "verified": _VERIFICATION.get(str(record.get("verification"))),
        "datacenter": _datacenter(record.get("hosting_type")),
        # rentable and not rented; unknown without a rentable flag
        "available_now": (
            rentable and record.get("rented") is not True if isinstance(rentable, bool) else None
        ),
    }


def _datacenter(hosting_type: Any) -> bool | None:
    """``hosting_type`` 1 is a datacenter host, 0 a consumer one; anything else is unknown."""
    if isinstance(hosting_type, bool) or not isinstance(hosting_type, int):
        return None
    return _HOSTING_DATACENTER.get(hosting_type)


def _fraction(value: float | None) -> float | None:
    return value if value is not None and 0 <= value <= 1 else None
