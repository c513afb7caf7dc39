"""TensorDock: GPU VMs in marketplace locations, priced per GPU plus per resource.

API v2 (dashboard.tensordock.com/api/docs, "fetch hostnodes"/"locations" pages):
``GET https://dashboard.tensordock.com/api/v2/locations`` -> ``{"data": {"locations": [...]}}``
and ``GET .../hostnodes`` -> ``{"data": {"hostnodes": [...]}}``, both with
``Authorization: Bearer <token>``, no pagination, 100 requests/min per organization.

A location lists, per GPU model (``v0Name`` such as ``"h100-sxm5-80gb"``: the VRAM is in the
name), ``price_per_hr`` in USD **per GPU**, ``max_count`` GPUs per VM, the VM's resource
ceilings (``resources.max_vcpus``, ``max_ram_gb``, ``max_storage_gb``) and the add-on rates
(``pricing.per_vcpu_hr``, ``per_gb_ram_hr``, ``per_gb_storage_hr``). A VM costs
``gpus x price_per_hr + vcpus x per_vcpu_hr + ram_gb x per_gb_ram_hr + storage_gb x
per_gb_storage_hr``: the GPU price alone is not what a renter pays.

TensorDock lets the renter pick vCPUs and RAM, so there is no fixed shape. The offers here
are one configuration per GPU count (powers of two up to ``max_count``, and ``max_count``):
the location's vCPU and RAM ceilings shared out per GPU, priced with the add-on rates, as a
whole-instance hourly price. Storage stays apart as ``storage_price_per_gb_month`` (the
hourly rate times 730 h), with ``storage_gb`` the per-GPU share of ``max_storage_gb``; none
is included, and a VM is created with at least 100 GB (``boot_disk_min_gb``, from
``data/provider_disks.csv``).
Without add-on rates an offer keeps the bare per-GPU price (``price_basis=gpu``).

Hostnodes add live stock: ``available_resources.gpus[].availableCount`` summed per location
and model gives ``available_count``. A hostnodes answer on its own (no locations) yields one
set of offers per host, shaped the same way from the host's free resources.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    ParseResult,
    ResponseFormatError,
    gpu_fields,
    key_headers,
    positive_price,
    price_fields,
    required_count,
)
from .schema import OfferFields, PriceBasis
from .tables import country_code, provider_disk
from .units import (
    gbps_to_mbps,
    lenient_decimal,
    lenient_float,
    memory_gb_in_name,
    per_gb_hour_to_per_gb_month,
    positive_quantity,
    power_of_two_counts,
    value_at,
    whole_count,
)

__all__ = ["API_URL", "TensorDockAdapter", "iso_country"]

API_URL = "https://dashboard.tensordock.com/api/v2"

#: GPU memory, GB, in the ``-<n>gb`` suffix TensorDock's GPU ids carry.
_VRAM_IN_NAME = re.compile(r"-(\d+(?:\.\d+)?)gb$", re.IGNORECASE)


class TensorDockAdapter(Adapter):
    name = "tensordock"
    title = "TensorDock"
    #: Where to rent: TensorDock's dashboard deploy page.
    rent_url: ClassVar[str] = "https://dashboard.tensordock.com/deploy"
    pricing_url: ClassVar[str] = "https://www.tensordock.com/"
    source_url = API_URL
    credential_names = ("tensordock_api_token",)
    base_url = API_URL

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        headers = key_headers(self)
        paths = ("/locations", "/hostnodes")
        return [await self.get_json(client, self.url(p), headers=headers) for p in paths]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        locations: list[Any] = []
        hostnodes: list[Any] = []
        have_hostnodes = False
        for payload in payloads:
            kind, records = _records(payload)
            (locations if kind == "locations" else hostnodes).extend(records)
            have_hostnodes = have_hostnodes or kind == "hostnodes"
        stock = _stock_by_location(hostnodes) if have_hostnodes else None
        if locations:
            sites = [_location_site(r, stock, result) for r in locations]
        else:
            sites = [_hostnode_site(r, result) for r in hostnodes]
        for site in filter(None, sites):
            for gpu in site.gpus:
                for fields in _gpu_offers(site, gpu):
                    result.add(gpu.ref, **fields)
        return result


# --- the parsed shape -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Gpu:
    """One GPU model at one site: its per-GPU price, the VM ceilings that go with it and the
    add-on prices (USD per hour per vCPU, per GB of RAM, per GB of storage)."""

    ref: str
    v0_name: str
    display_name: str | None
    usd_per_gpu_hour: Decimal
    max_count: int
    max_vcpus: float | None
    max_ram_gb: float | None
    max_storage_gb: float | None
    per_vcpu: Decimal | None
    per_ram_gb: Decimal | None
    per_storage_gb: Decimal | None
    available_count: int | None


@dataclass(frozen=True, slots=True)
class _Site:
    """A location (or, for hostnodes alone, one host) and the GPUs it prices."""

    key: str
    region: str | None
    country: str | None
    gpus: tuple[_Gpu, ...]
    reliability: float | None = None
    up_mbps: float | None = None
    down_mbps: float | None = None


# --- pure helpers ---------------------------------------------------------------------


def _records(payload: Any) -> tuple[str, list[Any]]:
    """("locations" | "hostnodes", records) from one v2 answer; anything else is an error."""
    if not isinstance(payload, Mapping):
        raise ResponseFormatError("tensordock", f"expected an object, got {type(payload).__name__}")
    if "hostnodes" in payload and "data" not in payload:
        raise ResponseFormatError("tensordock", "v0 marketplace format is not supported")
    data = payload.get("data")
    if not isinstance(data, Mapping):
        raise ResponseFormatError("tensordock", "response has no 'data' object")
    for kind in ("locations", "hostnodes"):
        if kind in data:
            records = data[kind]
            if not isinstance(records, list):
                raise ResponseFormatError("tensordock", f"'data.{kind}' is not a list")
            return kind, records
    raise ResponseFormatError("tensordock", "'data' has neither 'locations' nor 'hostnodes'")


def iso_country(name: Any) -> str | None:
    """ISO alpha-2 code for a country as TensorDock writes it ("United States"; its Terraform
    mocks say "USA"; a two-letter code is kept); ``None`` if not known.

    >>> iso_country("United States"), iso_country("USA"), iso_country("Atlantis")
    ('US', 'US', None)
    """
    if isinstance(name, str) and len(name.strip()) == 2 and name.strip().isalpha():
        return name.strip().upper()
    return country_code(name)


def _region(location: Any) -> str | None:
    parts = [value_at(location, "city"), value_at(location, "stateprovince")]
    words = [p.strip() for p in parts if isinstance(p, str) and p.strip()]
    return ", ".join(words) or None


def _stock_by_location(hostnodes: list[Any]) -> Counter[tuple[str, str]]:
    """GPUs free now per (location id, v0Name), summed over that location's hosts."""
    stock: Counter[tuple[str, str]] = Counter()
    for host in hostnodes:  # an entry that is no object has neither
        loc_id = value_at(host, "location_id") or value_at(host, "location", "uuid")
        gpus = value_at(host, "available_resources", "gpus")
        for gpu in gpus if isinstance(gpus, list) else []:
            count = whole_count(gpu.get("availableCount")) if isinstance(gpu, Mapping) else None
            if loc_id and count and isinstance(gpu.get("v0Name"), str):
                stock[(str(loc_id), gpu["v0Name"])] += count
    return stock


def _location_site(
    record: Any, stock: Counter[tuple[str, str]] | None, result: ParseResult
) -> _Site | None:
    """A location's GPUs; ``stock`` (from hostnodes, if fetched) gives the free GPU counts."""
    if not isinstance(record, Mapping) or not record.get("id"):
        result.skip("location without id")
        return None
    loc_id = str(record["id"])

    def read(raw: Mapping[str, Any], ref: str) -> _Gpu | None:
        available = stock.get((loc_id, str(raw.get("v0Name"))), 0) if stock is not None else None
        return _gpu(
            raw, ref, "max_count", raw.get("resources"), raw.get("pricing"), available, result
        )

    return _Site(
        key=loc_id,
        region=_region(record),
        country=iso_country(record.get("country")),
        gpus=_site_gpus(record.get("gpus"), f"tensordock:location/{loc_id}", read, result),
    )


def _hostnode_site(record: Any, result: ParseResult) -> _Site | None:
    if not isinstance(record, Mapping) or not record.get("id"):
        result.skip("hostnode without id")
        return None
    host_id = str(record["id"])
    location, resources = record.get("location"), record.get("available_resources")
    host_limits = {
        "max_vcpus": value_at(resources, "vcpu_count"),
        "max_ram_gb": value_at(resources, "ram_gb"),
        "max_storage_gb": value_at(resources, "storage_gb"),
    }

    def read(raw: Mapping[str, Any], ref: str) -> _Gpu | None:
        available = whole_count(raw.get("availableCount"))
        return _gpu(
            raw, ref, "availableCount", host_limits, record.get("pricing"), available, result
        )

    gpus = _site_gpus(value_at(resources, "gpus"), f"tensordock:hostnode/{host_id}", read, result)
    uptime_pct = lenient_float(record.get("uptime_percentage"))
    down = positive_quantity(value_at(location, "network_speed_gbps"))
    up = positive_quantity(value_at(location, "network_speed_upload_gbps"))
    return _Site(
        key=f"host-{host_id}",
        region=_region(location),
        country=iso_country(value_at(location, "country")),
        gpus=gpus,
        reliability=uptime_pct / 100 if uptime_pct is not None and 0 <= uptime_pct <= 100 else None,
        up_mbps=gbps_to_mbps(up) if up else None,
        down_mbps=gbps_to_mbps(down) if down else None,
    )


def _site_gpus(
    raw_gpus: Any,
    site_ref: str,
    read: Callable[[Mapping[str, Any], str], _Gpu | None],
    result: ParseResult,
) -> tuple[_Gpu, ...]:
    """The priced GPUs of one site's GPU list (``read`` turns one entry into a GPU)."""
    gpus = []
    for raw in raw_gpus if isinstance(raw_gpus, list) else []:
        if not isinstance(raw, Mapping):
            result.skip("gpu entry is not an object", site_ref)
        elif (gpu := read(raw, f"{site_ref}/{raw.get('v0Name')}")) is not None:
            gpus.append(gpu)
    return tuple(gpus)


def _gpu(
    raw: Mapping[str, Any],
    ref: str,
    max_count_key: str,
    resources: Any,
    pricing: Any,
    available: int | None,
    result: ParseResult,
) -> _Gpu | None:
    """One priced GPU model, or ``None`` (recorded as skipped) when it cannot be an offer."""
    name = raw.get("v0Name")
    if not isinstance(name, str) or not name.strip():
        result.skip("gpu without v0Name", ref)
        return None
    price = positive_price(result, raw.get("price_per_hr"), "price_per_hr", ref)
    if price is None:
        return None
    max_count = required_count(result, raw.get(max_count_key), max_count_key, ref)
    if max_count is None:
        return None
    display = raw.get("displayName")
    return _Gpu(
        ref=ref,
        v0_name=name.strip(),
        display_name=display if isinstance(display, str) and display else None,
        usd_per_gpu_hour=price,
        max_count=max_count,
        max_vcpus=positive_quantity(value_at(resources, "max_vcpus")),
        max_ram_gb=positive_quantity(value_at(resources, "max_ram_gb")),
        max_storage_gb=positive_quantity(value_at(resources, "max_storage_gb")),
        per_vcpu=_rate(value_at(pricing, "per_vcpu_hr")),
        per_ram_gb=_rate(value_at(pricing, "per_gb_ram_hr")),
        per_storage_gb=_rate(value_at(pricing, "per_gb_storage_hr")),
        available_count=available,
    )


def _share(ceiling: float | None, gpus: int, max_gpus: int) -> int | None:
    """This many GPUs' share of a VM ceiling, whole units, at least 1."""
    if ceiling is None:
        return None
    return max(1, math.floor(ceiling * gpus / max_gpus))


def _gpu_offers(site: _Site, gpu: _Gpu) -> Iterator[OfferFields]:
    """Offer fields for each GPU count of one model at one site."""
    gpu_spec = gpu_fields(gpu.v0_name, memory_gb=memory_gb_in_name(_VRAM_IN_NAME, gpu.v0_name))
    storage_rate = gpu.per_storage_gb
    storage_month = per_gb_hour_to_per_gb_month(storage_rate) if storage_rate is not None else None
    disk = provider_disk("tensordock").billed_apart(storage_month)
    for count in power_of_two_counts(gpu.max_count):
        vcpus = _share(gpu.max_vcpus, count, gpu.max_count)
        ram_gb = _share(gpu.max_ram_gb, count, gpu.max_count)
        storage_gb = _share(gpu.max_storage_gb, count, gpu.max_count)
        price = _vm_price(gpu, count, vcpus, ram_gb)
        priced = price is not None
        if price is not None:
            shape = f"{count}x {gpu.display_name or gpu.v0_name}, {vcpus} vCPU, {ram_gb} GB RAM"
        else:
            price = gpu.usd_per_gpu_hour
            shape = f"{count}x {gpu.display_name or gpu.v0_name} (GPU only)"
        available = gpu.available_count // count if gpu.available_count is not None else None
        yield {
            "offer_id": f"{site.key}:{gpu.v0_name}:{count}x",
            "instance_name": shape,
            "region": site.region,
            "country": site.country,
            **gpu_spec,
            "gpu_count": count,
            "vcpus": vcpus if priced else None,
            "ram_gb": ram_gb if priced else None,
            "storage_gb": storage_gb,
            "public_bandwidth_up_mbps": site.up_mbps,
            "public_bandwidth_down_mbps": site.down_mbps,
            "reliability": site.reliability,
            **price_fields(price, PriceBasis.INSTANCE if priced else PriceBasis.GPU),
            **disk,
            "available_count": available,
            "available_now": available > 0 if available is not None else None,
        }


def _vm_price(gpu: _Gpu, count: int, vcpus: int | None, ram_gb: int | None) -> Decimal | None:
    """USD per hour for ``count`` GPUs with ``vcpus`` and ``ram_gb``; ``None`` if unpriceable."""
    if vcpus is None or ram_gb is None or gpu.per_vcpu is None or gpu.per_ram_gb is None:
        return None
    return gpu.usd_per_gpu_hour * count + gpu.per_vcpu * vcpus + gpu.per_ram_gb * ram_gb


def _rate(value: Any) -> Decimal | None:
    """A non-negative add-on rate; garbage or a negative rate is treated as unpublished."""
    rate = lenient_decimal(value)
    return rate if rate is not None and rate >= 0 else None
