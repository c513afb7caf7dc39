"""Prime Intellect: the GPU offers of its compute marketplace (account needed).

API: ``GET https://api.primeintellect.ai/api/v1/availability/gpus`` with ``Authorization:
Bearer <key>`` (a key with "Availability -> Read", https://docs.primeintellect.ai/api-reference/
check-gpu-availability), pages of at most 100 (``page``, ``page_size``), answered as ``{"items":
[...], "totalCount": N}``. Each item is one ``GpuAvailability`` of Prime Intellect's OpenAPI
description (api.primeintellect.ai/openapi.json, as archived in api-evangelist/prime-intellect)::

    {"cloudId": "n3-H100x8", "gpuType": "H100_80GB", "socket": "PCIe",
     "provider": "hyperstack", "region": "canada", "dataCenter": "CANADA-1", "country": "CA",
     "gpuCount": 8, "gpuMemory": 80, "vcpu": {"defaultCount": 252},
     "memory": {"defaultCount": 1440}, "disk": {"defaultCount": 1000},
     "internetSpeed": 10000, "interconnect": 3200, "interconnectType": "Infiniband",
     "stockStatus": "Available", "security": "secure_cloud",
     "prices": {"onDemand": 15.2, "communityPrice": null, "isVariable": false,
                "currency": "USD"},
     "images": ["ubuntu_22_cuda_12"], "isSpot": false, "prepaidTime": null}

Prime Intellect resells other clouds' machines: ``provider`` (the upstream cloud: ``runpod``,
``lambdalabs``, ``datacrunch``, its own ``primecompute`` and ``dc_*`` datacentres...) is the
offer's ``seller``, and ``<provider>/<cloudId>`` its id. Units and meaning:

* the price is for the whole box an hour (SkyPilot's fetch_primeintellect.py: "a 2-GPU offer's
  hourly price is for the entire box"), in ``prices.currency``: ``onDemand`` for a
  ``secure_cloud`` offer, ``communityPrice`` for a ``community_cloud`` one; an offer that
  ``isSpot`` is interruptible at that price; ``prepaidTime`` hours are charged up front
  (``min_rental_hours``);
* the GPU's memory is the figure in its ``gpuType`` (``H100_80GB``): ``gpuMemory`` is
  documented per GPU but SkyPilot saw it as the box's total, so it is not read;
* ``socket`` is the form factor (PCIe, SXM2-SXM6); ``vcpu``, ``memory`` (GB) and ``disk``
  (GB) give their ``defaultCount``; ``internetSpeed`` is Mbps; an ``interconnectType`` of
  InfiniBand or RoCE with ``interconnect`` (Gbps) is the fabric;
* ``stockStatus`` ``Unavailable`` is not available now, any other level is; the region is the
  ``dataCenter``, the country ``country`` when it is an ISO code.
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
    required_count,
)
from .schema import Fabric, GpuFormFactor, OfferFields, PriceBasis, RentalTerm
from .units import lenient_float, positive, strings, text, value_at, whole_count

__all__ = ["AVAILABILITY_URL", "PrimeIntellectAdapter"]

API_BASE = "https://api.primeintellect.ai/api/v1"
AVAILABILITY_URL = API_BASE + "/availability/gpus"
#: The documented maximum page size.
PAGE_SIZE = 100
#: A guard against a ``totalCount`` never reached.
MAX_PAGES = 50

#: ``security`` -> the price field it reads, and the term variant it names (secure cloud is
#: the plain offer).
SECURITY: Mapping[str, tuple[str, str | None]] = {
    "secure_cloud": ("onDemand", None),
    "community_cloud": ("communityPrice", "community cloud"),
}
#: ``interconnectType`` words -> the cluster fabric they name.
_FABRICS = {"infiniband": Fabric.INFINIBAND, "roce": Fabric.ROCE}


class PrimeIntellectAdapter(Adapter):
    """Prime Intellect marketplace offers, one per upstream offer, priced per box."""

    name: ClassVar[str] = "primeintellect"
    title: ClassVar[str] = "Prime Intellect"
    #: Where to rent: Prime Intellect's home page (its GPU marketplace).
    pricing_url: ClassVar[str] = "https://www.primeintellect.ai/"
    source_url: ClassVar[str] = AVAILABILITY_URL
    credential_names: ClassVar[tuple[str, ...]] = ("primeintellect_api_key",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        headers = key_headers(self)
        read = 0

        async def page(number: Any) -> Any:
            params = {"page": number or 1, "page_size": PAGE_SIZE}
            url = self.url("/availability/gpus")
            return await self.get_json(client, url, headers=headers, params=params)

        def next_page(answer: Any) -> int | None:
            nonlocal read
            items = value_at(answer, "items")
            read += len(items) if isinstance(items, list) else 0
            total = whole_count(value_at(answer, "totalCount"), least=0)
            if not items or total is None or read >= total:
                return None
            return read // PAGE_SIZE + 1

        return await self.follow_pages(
            page, next_page, max_pages=MAX_PAGES, too_many=f"more than {MAX_PAGES} pages"
        )

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return self.parse_records(
            payloads,
            lambda payload: payload_list(payload, "items", self.name),
            _parse_item,
            what="availability item",
            fetched_at=fetched_at,
        )


# --- pure helpers ---------------------------------------------------------------------


def _parse_item(result: ParseResult, item: Mapping[str, Any]) -> None:
    """The offer of one marketplace item."""
    seller, cloud_id = text(item.get("provider")), text(item.get("cloudId"))
    ref = f"primeintellect:{seller}/{cloud_id}"
    if seller is None or cloud_id is None:
        result.skip("item without a provider or cloudId", ref)
        return
    security = SECURITY.get(str(item.get("security")))
    if security is None:
        result.skip(f"unknown security {item.get('security')!r}", ref)
        return
    price_key, variant = security
    prices = item.get("prices")
    currency = text(value_at(prices, "currency"))
    gpu_count = required_count(result, item.get("gpuCount"), "gpuCount", ref)
    price = positive_price(result, value_at(prices, price_key), f"prices.{price_key}", ref)
    if gpu_count is None or price is None:
        return
    if currency is None:
        result.skip("no prices.currency", ref)
        return
    gpu_type = text(item.get("gpuType"))
    model, _, memory = (gpu_type or "").rpartition("_")
    term = RentalTerm.INTERRUPTIBLE if item.get("isSpot") is True else RentalTerm.ON_DEMAND
    fields: OfferFields = {
        "offer_id": f"{seller}/{cloud_id}",
        "seller": seller,
        "instance_name": f"{gpu_count}x {gpu_type} ({seller})",
        **gpu_fields(
            gpu_type,
            name=model.replace("_", " ") or gpu_type,
            memory_gb=positive(lenient_float(memory.removesuffix("GB"))),
            form_factor=_form_factor(item.get("socket")),
        ),
        "gpu_count": gpu_count,
        "vcpus": _default(item.get("vcpu")),
        "ram_gb": _default(item.get("memory")),
        "storage_gb": _default(item.get("disk")),
        "public_bandwidth_down_mbps": positive(lenient_float(item.get("internetSpeed"))),
        "public_bandwidth_up_mbps": positive(lenient_float(item.get("internetSpeed"))),
        **_fabric(item),
        "os_images": strings(item.get("images")),
        "region": text(item.get("dataCenter")),
        "country": _iso(item.get("country")),
        "available_now": item.get("stockStatus") != "Unavailable",
        "min_rental_hours": positive(lenient_float(item.get("prepaidTime"))),
        "term_variant": variant,
        **price_fields(price, PriceBasis.INSTANCE, term, currency=currency),
    }
    result.add(ref, **fields)


def _default(spec: Any) -> float | None:
    """A ``CustomSpecValue``'s ``defaultCount`` (vCPUs, GB), if above zero."""
    return positive(lenient_float(value_at(spec, "defaultCount")))


def _form_factor(socket: Any) -> GpuFormFactor | None:
    """The documented sockets: ``PCIe``, ``SXM2``-``SXM6``."""
    name = str(socket or "").upper()
    if name == "PCIE":
        return GpuFormFactor.PCIE
    return GpuFormFactor.SXM if name.startswith("SXM") else None


def _fabric(item: Mapping[str, Any]) -> OfferFields:
    """The cluster fabric an InfiniBand or RoCE ``interconnectType`` names, with its speed."""
    kind = _FABRICS.get(str(item.get("interconnectType") or "").strip().lower())
    if kind is None:
        return {}
    return {"fabric": kind, "fabric_gbps": positive(lenient_float(item.get("interconnect")))}


def _iso(country: Any) -> str | None:
    name = text(country)
    return name.upper() if name and len(name) == 2 and name.isalpha() else None
