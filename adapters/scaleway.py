"""Scaleway: GPU Instances from the public Product Catalog API (no account).

API: ``GET https://api.scaleway.com/product-catalog/v2alpha1/public-catalog/products``, "This
API does not require authentication" (https://www.scaleway.com/en/developers/api/product-catalog/
public-catalog). Query ``page`` (from 1), ``page_size`` and ``product_types=instance`` (the
Instance products only); the answer is ``{"products": [...], "total_count": N}``, pages asked
until ``total_count`` products are read. Field names as Scaleway's generated SDK reads them
(scaleway/scaleway-sdk-python ``scaleway/product_catalog/v2alpha1/types.py``); one product::

    {"sku": "/compute/h100_sxm_8_80g/run_fr-par-2", "product": "H100-SXM-8-80G Instance",
     "variant": "Compute H100-SXM-8-80G Instance - fr-par-2", "status": "general_availability",
     "locality": {"zone": "fr-par-2"},
     "price": {"retail_price": {"currency_code": "EUR", "units": 25, "nanos": 330800000}},
     "unit_of_measure": {"unit": "hour", "size": 1},
     "properties": {"instance": {"range": "GPU", "offer_id": "H100-SXM-8-80G"},
                    "hardware": {"cpu": {"type": "Xeon Platinum 8452Y", "arch": "x64",
                                         "virtual": {"count": 128}, "threads": 128},
                                 "ram": {"size": 1030792151040},
                                 "storage": {"description": "Block", "total": 0},
                                 "network": {"public_bandwidth": 20000000000},
                                 "gpu": {"description": "8 x NVIDIA H100-SXM", "count": 8,
                                         "type": "H100-SXM"}}}}

Units: ``retail_price`` is a ``google.type.Money`` (whole ``units``, ``nanos`` of 1e-9) in
``currency_code`` (EUR), the whole Instance's price per ``unit_of_measure`` (an hour); a price
for another unit is skipped, named. The documentation's own example puts ``unit_of_measure``
inside ``price``; the SDK reads it beside it: both are read. RAM, disk and bandwidth are in
bytes and bits per second. Only products with a ``hardware.gpu`` become offers (the CPU
Instances are not errors); one whose ``status`` says it is no longer sold (end of sale, end of
life, retired) is skipped, named. Each product is one zone (``locality.zone``), its country
from the zone's name (``data/region_countries.csv``).

What the provider states of the rest, from its documentation:

* billing: GPU Instances are billed per minute of uptime, RENDER-S per hour (Instances FAQ,
  scaleway/docs-content PR #5727, 2025-10-28): ``billing_increment_s`` 60, 3600 for RENDER-S;
* form factor: the SXM Instances say so in their name (``H100-SXM-8-80G``: "8x H100-SXM
  SXM", GPU Instance types overview, docs-content
  ``pages/gpu/reference-content/choosing-gpu-instance-type.mdx``); the per-GPU memory is the
  name's last figure (``-80G``);
* the public bandwidth is the most an Instance can send or receive to the internet (the
  Instances datasheet: "the maximum bandwidth available for internet traffic"), so it is both
  directions' figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    ParseResult,
    gpu_fields,
    payload_list,
    price_fields,
    required_count,
)
from .schema import GpuFormFactor, OfferFields, PriceBasis
from .tables import region_countries
from .units import google_money_to_decimal, lenient_float, positive, text, value_at, whole_count

__all__ = ["PRODUCTS_URL", "ScalewayAdapter"]

API_BASE = "https://api.scaleway.com"
PRODUCTS_PATH = "/product-catalog/v2alpha1/public-catalog/products"
PRODUCTS_URL = API_BASE + PRODUCTS_PATH
#: Products asked per page (the API takes any page size of 1 or more).
PAGE_SIZE = 100
#: A guard against an answer whose ``total_count`` is never reached.
MAX_PAGES = 50

#: Product statuses of something no longer sold (the SDK's PublicCatalogProductStatus).
NOT_SOLD = frozenset({"end_of_sale", "end_of_life", "retired"})
#: Seconds a GPU Instance is billed by (per minute; RENDER-S by the hour).
BILLED_PER_MINUTE_S = 60
BILLED_PER_HOUR = {"RENDER-S": 3600}
#: Per-GPU memory at the end of an offer name (``H100-SXM-8-80G`` -> 80).
_MEMORY_IN_NAME = re.compile(r"-(\d+)G$")


class ScalewayAdapter(Adapter):
    """Scaleway GPU Instances: one on-demand offer per Instance type and zone."""

    name: ClassVar[str] = "scaleway"
    title: ClassVar[str] = "Scaleway"
    #: Where to rent: Scaleway's GPU pricing page.
    pricing_url: ClassVar[str] = "https://www.scaleway.com/en/pricing/gpu/"
    source_url: ClassVar[str] = PRODUCTS_URL
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        read = 0

        async def page(number: Any) -> Any:
            params = {"page": number or 1, "page_size": PAGE_SIZE, "product_types": "instance"}
            return await self.get_json(client, self.url(PRODUCTS_PATH), params=params)

        def next_page(answer: Any) -> int | None:
            nonlocal read
            products = value_at(answer, "products")
            read += len(products) if isinstance(products, list) else 0
            total = whole_count(value_at(answer, "total_count"), least=0)
            if not products or total is None or read >= total:
                return None
            return read // PAGE_SIZE + 1

        return await self.follow_pages(
            page, next_page, max_pages=MAX_PAGES, too_many=f"more than {MAX_PAGES} pages"
        )

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return self.parse_records(
            payloads,
            lambda payload: payload_list(payload, "products", self.name),
            _parse_product,
            what="product",
            fetched_at=fetched_at,
        )


# --- pure helpers ---------------------------------------------------------------------


def _parse_product(result: ParseResult, product: Mapping[str, Any]) -> None:
    """The offer of one Instance product, if it has GPUs."""
    hardware = value_at(product, "properties", "hardware")
    gpu = value_at(hardware, "gpu")
    if not isinstance(gpu, Mapping):
        return  # a CPU Instance: not an offer, and not an error either
    sku = text(product.get("sku"))
    ref = f"scaleway:{sku}"
    offer = text(value_at(product, "properties", "instance", "offer_id")) or _offer_of(product)
    if offer is None:
        result.skip("GPU product without an offer id", ref)
        return
    status = text(product.get("status"))
    if status in NOT_SOLD:
        result.skip(f"not sold any more (status {status})", ref)
        return
    gpu_count = required_count(result, gpu.get("count"), "hardware.gpu.count", ref)
    price = _hourly_price(result, product, ref)
    if gpu_count is None or price is None:
        return
    amount, currency = price
    zone = text(value_at(product, "locality", "zone"))
    memory = _MEMORY_IN_NAME.search(offer)
    raw_gpu = text(gpu.get("type")) or text(gpu.get("description"))
    bandwidth_mbps = _mbps(value_at(hardware, "network", "public_bandwidth"))
    fields: OfferFields = {
        "offer_id": offer,
        "instance_name": text(product.get("product")),
        **gpu_fields(
            raw_gpu,
            memory_gb=float(memory.group(1)) if memory else None,
            form_factor=GpuFormFactor.SXM if "-SXM-" in offer else None,
        ),
        "gpu_count": gpu_count,
        "vcpus": positive(lenient_float(value_at(hardware, "cpu", "virtual", "count"))),
        "cpu_model": text(value_at(hardware, "cpu", "type")),
        "cpu_arch": text(value_at(hardware, "cpu", "arch")),
        "ram_gb": _gb(value_at(hardware, "ram", "size")),
        "storage_gb": _gb(value_at(hardware, "storage", "total")),
        "public_bandwidth_up_mbps": bandwidth_mbps,
        "public_bandwidth_down_mbps": bandwidth_mbps,
        "region": zone,
        "country": _country(zone),
        "billing_increment_s": BILLED_PER_HOUR.get(offer, BILLED_PER_MINUTE_S),
        **price_fields(amount, PriceBasis.INSTANCE, currency=currency),
    }
    result.add(ref, **fields)


def _offer_of(product: Mapping[str, Any]) -> str | None:
    """The offer name of ``"H100-SXM-8-80G Instance"``, where no ``offer_id`` is given."""
    name = text(product.get("product"))
    return text(name.removesuffix(" Instance")) if name else None


def _hourly_price(
    result: ParseResult, product: Mapping[str, Any], ref: str
) -> tuple[Decimal, str] | None:
    """The product's price per hour and its currency, else ``None`` (skipped, named)."""
    retail = value_at(product, "price", "retail_price")
    unit = product.get("unit_of_measure") or value_at(product, "price", "unit_of_measure")
    if not isinstance(retail, Mapping):
        result.skip("no price.retail_price", ref)
        return None
    if value_at(unit, "unit") != "hour" or whole_count(value_at(unit, "size")) != 1:
        result.skip(f"not a price per hour (unit_of_measure {unit!r})", ref)
        return None
    currency = text(retail.get("currency_code"))
    try:
        amount = google_money_to_decimal(retail.get("units"), retail.get("nanos"))
    except ValueError as exc:
        result.skip(f"bad retail_price: {exc}", ref)
        return None
    if amount <= 0 or currency is None:
        result.skip(f"bad retail_price {dict(retail)!r}", ref)
        return None
    return amount, currency


def _gb(size_bytes: Any) -> float | None:
    """A size in bytes as decimal GB; ``None`` for none (a 0-byte local disk: block only)."""
    size = positive(lenient_float(size_bytes))
    return size / 1e9 if size is not None else None


def _mbps(bits_per_second: Any) -> float | None:
    rate = positive(lenient_float(bits_per_second))
    return rate / 1e6 if rate is not None else None


def _country(zone: str | None) -> str | None:
    """ISO country of a zone (``fr-par-2`` -> FR), if ``data/region_countries.csv`` knows
    its region (``fr-par``)."""
    return region_countries("scaleway").get(zone.rsplit("-", 1)[0]) if zone else None
