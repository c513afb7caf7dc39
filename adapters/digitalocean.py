"""DigitalOcean: GPU Droplets from the sizes catalogue.

API: ``GET https://api.digitalocean.com/v2/sizes`` (DigitalOcean API v2, "List All Droplet
Sizes"), ``Authorization: Bearer <token>``. Paginated with ``per_page`` (at most 200) and
``page``; the next page's absolute URL is in ``links.pages.next``, absent on the last page;
``meta.total`` counts all sizes. The same list holds CPU and GPU sizes; only sizes with a
``gpu_info`` object become offers. One size::

    {"slug": "gpu-h100x8-640gb", "memory": 1966080, "vcpus": 160, "disk": 2046,
     "price_monthly": 17796.48, "price_hourly": 23.92, "regions": ["nyc1"],
     "available": true, "description": "H100 GPU - 8X",
     "gpu_info": {"count": 8, "vram": {"amount": 640, "unit": "gib"}, "model": "nvidia_h100"},
     "disk_info": [{"type": "local", "size": {"amount": 2046, "unit": "gib"}},
                   {"type": "scratch", "size": {"amount": 40960, "unit": "gib"}}]}

Units (format recorded in dstackai/gpuhunt's test fixture, see tests/fixtures/digitalocean):

* ``price_hourly``: USD per hour for the whole Droplet (all its GPUs); the one on-demand
  price. ``price_monthly`` is the same rate over a calendar month (17796.48 = 23.92 x 744),
  a cap rather than a commitment, so it is not a separate offer;
* ``memory``: documented as megabytes but counted in MiB (512 for the "512 MB" Droplet,
  1966080 = 1920 x 1024 for the 8x H100 size), so it goes through :func:`mib_to_gb`;
* ``gpu_info.vram``: TOTAL GPU memory of the Droplet; per GPU it is ``amount / count``, the
  nominal figure ("80 GB" per H100);
* ``disk_info[].size``: in its own ``unit`` (``gib``); boot (``local``) and ``scratch`` disks
  are summed into ``storage_gb``. Without ``disk_info`` the ``disk`` figure (GB) is used.

``regions`` lists where the size can be created; each becomes one offer, its country from
the slug prefix (``data/region_countries.csv``). A size with no region (or ``available:
false``) is kept as one region-less offer with ``available_now=False``. The GPU model names
(``nvidia_h100``) give no form factor, and DigitalOcean's API does not publish one: an H100
stays unmapped rather than guessed. No DigitalOcean page found states one either (the
Droplet pricing page, docs.digitalocean.com/products/droplets/details/pricing/, lists
"NVIDIA H100" and "NVIDIA H100 (8x)" only), and the size record has nothing that tells SXM
from PCIe (80 GB per GPU for both), so no form-factor hint is passed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    ParseResult,
    add_per_region,
    gpu_fields,
    key_headers,
    listed_regions,
    positive_price,
    price_fields,
    required_count,
)
from .schema import OfferFields, PriceBasis
from .tables import region_countries
from .units import (
    gib_to_gb,
    lenient_float,
    mib_to_gb,
    nominal_gpu_memory_gb,
    non_negative,
    positive_quantity,
    text,
    value_at,
)

__all__ = ["SIZES_URL", "DigitalOceanAdapter"]

API_BASE = "https://api.digitalocean.com/v2"
SIZES_URL = API_BASE + "/sizes"
#: The documented maximum page size of the v2 API.
PER_PAGE = 200
#: A guard against a ``links.pages.next`` that never ends.
MAX_PAGES = 50

#: Size units in ``disk_info`` / ``vram`` -> decimal GB.
_TO_GB: Mapping[str, Callable[[float], float]] = {"gib": gib_to_gb, "gb": float}


class DigitalOceanAdapter(Adapter):
    """DigitalOcean GPU Droplet sizes, one on-demand offer per size and region."""

    name: ClassVar[str] = "digitalocean"
    title: ClassVar[str] = "DigitalOcean"
    #: Where to rent: DigitalOcean's GPU Droplet pricing page.
    pricing_url: ClassVar[str] = "https://www.digitalocean.com/pricing/gpu-droplets"
    source_url: ClassVar[str] = SIZES_URL
    credential_names: ClassVar[tuple[str, ...]] = ("digitalocean_token",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        headers = key_headers(self)
        pages: list[Any] = []
        url: str | None = self.url("/sizes")
        params: dict[str, Any] | None = {"per_page": PER_PAGE}
        while url is not None and len(pages) < MAX_PAGES:
            page = await self.get_json(client, url, headers=headers, params=params)
            pages.append(page)
            url = text(value_at(page, "links", "pages", "next"))  # None on the last page
            params = None  # the next link carries page and per_page itself
        return pages

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return self.parse_records(
            payloads, "sizes", _parse_size, what="size", fetched_at=fetched_at
        )


# --- pure helpers ---------------------------------------------------------------------


def _parse_size(result: ParseResult, size: Mapping[str, Any]) -> None:
    """The offers of one size; a size listed twice is the contract's duplicate (same key)."""
    slug = text(size.get("slug"))
    ref = f"digitalocean:size/{slug}"
    gpu_info = size.get("gpu_info")
    if not isinstance(gpu_info, Mapping):
        return  # a CPU size: not an offer, and not an error either
    if slug is None:
        result.skip("GPU size without a slug", ref)
        return
    gpu_count = required_count(result, gpu_info.get("count"), "gpu_info.count", ref)
    if gpu_count is None:
        return
    price = positive_price(result, size.get("price_hourly"), "price_hourly", ref)
    if price is None:
        return

    memory_gb = _per_gpu_memory_gb(gpu_info.get("vram"), gpu_count)
    ram_mib = positive_quantity(size.get("memory"))  # MiB (see the module docstring)
    fields: OfferFields = {
        "offer_id": slug,
        "instance_name": text(size.get("description")),
        **gpu_fields(text(gpu_info.get("model")), memory_gb=memory_gb),
        "gpu_count": gpu_count,
        "vcpus": positive_quantity(size.get("vcpus")),
        "ram_gb": mib_to_gb(ram_mib) if ram_mib is not None else None,
        "storage_gb": _storage_gb(size),
        **price_fields(price, PriceBasis.INSTANCE),
    }
    regions = size.get("regions") if size.get("available") is not False else None
    add_per_region(result, ref, fields, listed_regions(regions, _country))


def _country(region: str) -> str | None:
    """ISO country of a region slug (``nyc1`` -> ``US``), if ``data/region_countries.csv``
    knows the prefix."""
    return region_countries("digitalocean").get(region.rstrip("0123456789").lower())


def _per_gpu_memory_gb(vram: Any, gpu_count: int) -> float | None:
    """Nominal memory of one GPU: the total ``vram`` amount over the GPU count.

    The nominal size is kept as quoted (640 GiB over 8 GPUs = "80 GB" each), as the GPU
    catalog keys on it; see :func:`units.nominal_gpu_memory_gb`.
    """
    if not isinstance(vram, Mapping) or str(vram.get("unit", "")).lower() not in _TO_GB:
        return None
    total = positive_quantity(vram.get("amount"))
    return nominal_gpu_memory_gb(total / gpu_count) if total is not None else None


def _storage_gb(size: Mapping[str, Any]) -> float | None:
    """Boot plus scratch disk in decimal GB, from ``disk_info`` or else ``disk`` (GB)."""
    disks = size.get("disk_info")
    sizes = [_disk_gb(d) for d in disks] if isinstance(disks, list) else []
    found = [gb for gb in sizes if gb is not None]
    return sum(found) if found else non_negative(lenient_float(size.get("disk")))


def _disk_gb(disk: Any) -> float | None:
    amount = non_negative(lenient_float(value_at(disk, "size", "amount")))
    convert = _TO_GB.get(str(value_at(disk, "size", "unit") or "").lower())
    return convert(amount) if amount is not None and convert is not None else None
