"""Vast.ai: the GPU marketplace's offer search ("bundles").

API: ``POST https://console.vast.ai/api/v0/bundles/`` with a JSON filter body, answered by
``{"offers": [...]}`` (official OpenAPI spec, vast-ai/docs
api-reference/openapi/yaml/search_offers.yaml; ``vastai search offers --raw`` prints the bare
list, which :meth:`VastAiAdapter.parse` accepts too). No pagination: the body's ``limit``
caps the answer. An API key is optional for this public search (the spec asks for one; the
key is sent as ``Authorization: Bearer`` when configured). An invalid key answers HTTP 404.

Each offer is one machine (or a slice of its GPUs) listed by a host. Field meanings, from the
spec and vast-ai/vast-cli (vastai/cli/commands/offers.py):

* ``dph_base``: USD per hour for the whole offer (all ``num_gpus``), compute only;
  ``dph_total`` adds the storage of the search's ``allocated_storage``, which we do not
  fold in: storage is priced apart, ``storage_cost`` in USD per GB-month;
* ``min_bid``: the lowest interruptible ("bid") price, USD per hour for the whole offer;
* ``gpu_ram``: per-GPU memory as nvidia-smi reports it (MiB, though the spec says MB:
  24564 for an RTX 4090);
* ``cpu_cores_effective``: the vCPUs the renter gets; ``disk_space``: GB to allocate;
  ``inet_up``/``inet_down``: measured Mbit/s; ``inet_up_cost``: USD per GB sent out;
* ``reliability2`` (0-1), ``verification`` ("verified"/"unverified"/"deverified"),
  ``hosting_type`` (1 = datacenter, 0 = consumer host), ``geolocation`` ("Texas, US").

``cpu_ram`` is left out on purpose: whether it is the host's total or the offer's share is
not documented (gpuhunt scales it by ``cpu_cores_effective / cpu_cores``, the real capture
looks like a share), so ``ram_gb`` stays ``None`` rather than guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

import httpx

from .base import Adapter, ParseResult, ResponseFormatError
from .gpus import resolve_gpu_name
from .schema import PriceBasis, PriceUnit, RentalTerm, Vendor
from .units import mib_to_gb, to_decimal, to_float, whole_count

__all__ = ["BUNDLES_URL", "SEARCH_LIMIT", "VastAiAdapter"]

BUNDLES_URL = "https://console.vast.ai/api/v0/bundles/"
#: Offers per search; the API has no pagination (gpuhunt uses the same cap).
SEARCH_LIMIT = 3000

_VERIFICATION = {"verified": True, "unverified": False, "deverified": False}
_HOSTING_DATACENTER = {1: True, 0: False}
_GPU_ARCH_VENDOR = {"nvidia": Vendor.NVIDIA, "amd": Vendor.AMD, "intel": Vendor.INTEL}
_COUNTRY = re.compile(r"(?:^|,\s*)([A-Za-z]{2})$")


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
    source_url = BUNDLES_URL
    credential_names = ()
    optional_credential_names = ("vastai_api_key",)

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        headers = {}
        key = self.credentials.get("vastai_api_key")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        payload = await self.post_json(client, BUNDLES_URL, json=search_body(), headers=headers)
        return [payload]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult()
        seen: set[str] = set()
        for payload in payloads:
            for record in _offer_records(payload):
                self._parse_offer(record, result, seen, fetched_at)
        return result

    def _parse_offer(
        self, record: Any, result: ParseResult, seen: set[str], fetched_at: datetime
    ) -> None:
        if not isinstance(record, Mapping):
            result.skip("offer is not an object")
            return
        ref = f"vastai:offer/{record.get('id', record.get('ask_contract_id'))}"
        raw_gpu = record.get("gpu_name")
        if not isinstance(raw_gpu, str) or not raw_gpu.strip():
            result.skip("no gpu_name", ref)
            return
        gpu_count = whole_count(record.get("num_gpus"))
        if gpu_count is None:
            result.skip(f"bad num_gpus {record.get('num_gpus')!r}", ref)
            return
        try:
            on_demand = to_decimal(record.get("dph_base"))
            bid = to_decimal(record.get("min_bid"))
        except ValueError as exc:
            result.skip(f"bad price: {exc}", ref)
            return
        if on_demand is None or on_demand <= 0:
            result.skip(f"no positive dph_base ({record.get('dph_base')!r})", ref)
            return
        offer_id = _offer_id(record, gpu_count)
        if offer_id in seen:
            result.skip(f"duplicate offer {offer_id}", ref)
            return
        seen.add(offer_id)

        common = _common_fields(record, raw_gpu.strip(), gpu_count)
        common.update(provider=self.name, offer_id=offer_id, fetched_at=fetched_at, raw_ref=ref)
        result.add(ref, price_amount=on_demand, term=RentalTerm.ON_DEMAND, **common)
        if bid is not None and bid > 0:
            result.add(ref, price_amount=bid, term=RentalTerm.INTERRUPTIBLE, **common)


ADAPTER = VastAiAdapter


# --- pure helpers ---------------------------------------------------------------------


def _offer_records(payload: Any) -> list[Any]:
    """The offers of one response: ``{"offers": [...]}`` from the API, or the CLI's bare list."""
    if isinstance(payload, list):
        return payload
    if not isinstance(payload, Mapping):
        raise ResponseFormatError("vastai", f"expected an object, got {type(payload).__name__}")
    if "offers" not in payload:
        raise ResponseFormatError("vastai", "response has no 'offers' key")
    offers = payload["offers"]
    if not isinstance(offers, list):
        raise ResponseFormatError("vastai", f"'offers' is {type(offers).__name__}, not a list")
    return offers


def _offer_id(record: Mapping[str, Any], gpu_count: int) -> str:
    """Stable id: the physical machine and the GPU slice, which outlive one listing (ask)."""
    machine = record.get("machine_id")
    if machine is None:
        return f"ask{record.get('id')}-{gpu_count}x"
    return f"m{machine}-{gpu_count}x"


def _common_fields(record: Mapping[str, Any], raw_gpu: str, gpu_count: int) -> dict[str, Any]:
    """Everything but the price and term, shared by the on-demand and interruptible offers."""
    gpu_mib = _number(record, "gpu_ram")
    memory_gb = mib_to_gb(gpu_mib) if gpu_mib and gpu_mib > 0 else None
    spec = resolve_gpu_name(raw_gpu, memory_gb=_nominal_gib(gpu_mib))
    arch = record.get("gpu_arch")
    vendor = spec.vendor if spec else _GPU_ARCH_VENDOR.get(str(arch).lower()) if arch else None
    geolocation = record.get("geolocation")
    region = geolocation.strip() if isinstance(geolocation, str) and geolocation.strip() else None
    pcie_gen = _number(record, "pci_gen")
    storage_cost = _decimal(record, "storage_cost")
    egress = _decimal(record, "inet_up_cost")
    cuda = _number(record, "cuda_max_good")
    driver = record.get("driver_version")
    cpu_name = record.get("cpu_name")
    cpu_arch = record.get("cpu_arch")
    return {
        "region": region,
        "country": _country(region),
        "gpu_model": spec.name if spec else None,
        "gpu_raw_name": raw_gpu,
        "gpu_vendor": vendor,
        "gpu_count": gpu_count,
        "gpu_memory_gb": memory_gb,
        "gpu_form_factor": spec.form_factor if spec else None,
        "gpu_nvlink_gbs": _positive(_number(record, "bw_nvlink")),
        "gpu_pcie_gen": int(pcie_gen) if pcie_gen and 1 <= pcie_gen <= 7 else None,
        "cpu_model": cpu_name if isinstance(cpu_name, str) and cpu_name else None,
        "cpu_arch": cpu_arch if isinstance(cpu_arch, str) and cpu_arch else None,
        "vcpus": _positive(_number(record, "cpu_cores_effective")),
        "storage_gb": _non_negative(_number(record, "disk_space")),
        # Vast reports disk_bw in MB/s.
        "disk_bandwidth_mbps": _positive(_number(record, "disk_bw")),
        "public_bandwidth_up_mbps": _positive(_number(record, "inet_up")),
        "public_bandwidth_down_mbps": _positive(_number(record, "inet_down")),
        "cuda_version": str(cuda) if cuda and cuda > 0 else None,
        "driver_version": driver if isinstance(driver, str) and driver else None,
        "price_currency": "USD",
        "price_unit": PriceUnit.HOUR,
        "price_basis": PriceBasis.INSTANCE,
        "storage_price_per_gb_month": storage_cost if storage_cost and storage_cost >= 0 else None,
        "egress_price_per_gb": egress if egress is not None and egress >= 0 else None,
        "reliability": _fraction(_number(record, "reliability2") or _number(record, "reliability")),
        "verified": _VERIFICATION.get(str(record.get("verification"))),
        "datacenter": _datacenter(record.get("hosting_type")),
        "available_now": _available(record),
    }


def _nominal_gib(mib: float | None) -> float | None:
    """GPU memory in GiB, the unit GPU names quote ("80GB" = 81920 MiB), for name matching."""
    return mib / 1024 if mib and mib > 0 else None


def _country(region: str | None) -> str | None:
    """The ISO code at the end of a geolocation ("Texas, US" -> "US"; "US" -> "US")."""
    if region is None:
        return None
    match = _COUNTRY.search(region)
    return match.group(1).upper() if match else None


def _available(record: Mapping[str, Any]) -> bool | None:
    rentable, rented = record.get("rentable"), record.get("rented")
    if not isinstance(rentable, bool):
        return None
    return rentable and rented is not True


def _number(record: Mapping[str, Any], key: str) -> float | None:
    """An optional quantity; garbage becomes ``None`` (one bad field must not drop an offer)."""
    try:
        return to_float(record.get(key))
    except ValueError:
        return None


def _decimal(record: Mapping[str, Any], key: str) -> Decimal | None:
    try:
        return to_decimal(record.get(key))
    except ValueError:
        return None


def _datacenter(hosting_type: Any) -> bool | None:
    """``hosting_type`` 1 is a datacenter host, 0 a consumer one; anything else is unknown."""
    if isinstance(hosting_type, bool) or not isinstance(hosting_type, int):
        return None
    return _HOSTING_DATACENTER.get(hosting_type)


def _positive(value: float | None) -> float | None:
    return value if value is not None and value > 0 else None


def _non_negative(value: float | None) -> float | None:
    return value if value is not None and value >= 0 else None


def _fraction(value: float | None) -> float | None:
    return value if value is not None and 0 <= value <= 1 else None
