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

``regions`` lists where the size can be created; each becomes one offer. A size with no
region (or ``available: false``) is kept as one region-less offer with
``available_now=False``. The GPU model names (``nvidia_h100``) give no form factor, and
DigitalOcean's API does not publish one: an H100 stays unmapped rather than guessed. No
DigitalOcean page found states one either (the Droplet pricing page,
docs.digitalocean.com/products/droplets/details/pricing/, lists "NVIDIA H100" and "NVIDIA
H100 (8x)" only), and the size record has nothing that tells SXM from PCIe (80 GB per GPU
for both), so no form-factor hint is passed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import MIN_USD_PER_GPU_HOUR, Adapter, ParseResult, ResponseFormatError
from .gpus import resolve_gpu_name
from .schema import PriceBasis, PriceUnit, RentalTerm
from .units import (
    gib_to_gb,
    lenient_float,
    mib_to_gb,
    nominal_gpu_memory_gb,
    positive,
    to_decimal,
    to_float,
)

__all__ = ["SIZES_URL", "DigitalOceanAdapter"]

SIZES_URL = "https://api.digitalocean.com/v2/sizes"
#: The documented maximum page size of the v2 API.
PER_PAGE = 200
#: A guard against a ``links.pages.next`` that never ends.
MAX_PAGES = 50

#: Region slug prefix -> ISO country, from DigitalOcean's regional availability page
#: (docs.digitalocean.com/platform/regional-availability/: NYC, SFO and ATL are in the US,
#: AMS Amsterdam, FRA Frankfurt, LON London, TOR Toronto, SGP Singapore, BLR Bangalore,
#: SYD Sydney).
_REGION_COUNTRY: Mapping[str, str] = {
    "nyc": "US",
    "sfo": "US",
    "atl": "US",
    "ams": "NL",
    "fra": "DE",
    "lon": "GB",
    "tor": "CA",
    "sgp": "SG",
    "blr": "IN",
    "syd": "AU",
}
#: Size units in ``disk_info`` / ``vram`` -> decimal GB.
_TO_GB: Mapping[str, Callable[[float], float]] = {"gib": gib_to_gb, "gb": float}


class DigitalOceanAdapter(Adapter):
    """DigitalOcean GPU Droplet sizes, one on-demand offer per size and region."""

    name: ClassVar[str] = "digitalocean"
    title: ClassVar[str] = "DigitalOcean"
    source_url: ClassVar[str] = SIZES_URL
    credential_names: ClassVar[tuple[str, ...]] = ("digitalocean_token",)

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        token = self.require_credentials()["digitalocean_token"]
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        pages: list[Any] = []
        url: str | None = SIZES_URL
        params: dict[str, Any] | None = {"per_page": PER_PAGE}
        while url is not None and len(pages) < MAX_PAGES:
            page = await self.get_json(client, url, headers=headers, params=params)
            pages.append(page)
            url = _next_page(page)
            params = None  # the next link carries page and per_page itself
        return pages

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult()
        seen: set[str] = set()
        for payload in payloads:
            for size in _sizes(payload):
                _parse_size(result, size, seen, fetched_at)
        return result


ADAPTER = DigitalOceanAdapter


# --- pure helpers ---------------------------------------------------------------------


def _next_page(page: Any) -> str | None:
    """The absolute URL of the next page, or ``None`` on the last one."""
    if not isinstance(page, Mapping):
        return None
    links = page.get("links")
    pages = links.get("pages") if isinstance(links, Mapping) else None
    nxt = pages.get("next") if isinstance(pages, Mapping) else None
    return nxt if isinstance(nxt, str) and nxt else None


def _sizes(payload: Any) -> list[Any]:
    """The ``sizes`` list of one page; any other shape is a format error."""
    if not isinstance(payload, Mapping):
        raise ResponseFormatError(
            "digitalocean", f"expected a JSON object, got {type(payload).__name__}"
        )
    sizes = payload.get("sizes")
    if not isinstance(sizes, list):
        raise ResponseFormatError("digitalocean", "response has no 'sizes' list")
    return sizes


def _parse_size(result: ParseResult, size: Any, seen: set[str], fetched_at: datetime) -> None:
    if not isinstance(size, Mapping):
        result.skip("size is not an object")
        return
    slug = size.get("slug")
    ref = f"digitalocean:size/{slug}"
    gpu_info = size.get("gpu_info")
    if not isinstance(gpu_info, Mapping):
        return  # a CPU size: not an offer, and not an error either
    if not isinstance(slug, str) or not slug:
        result.skip("GPU size without a slug", ref)
        return
    if slug in seen:
        result.skip(f"duplicate size {slug}", ref)
        return
    seen.add(slug)
    try:
        gpu_count_f = to_float(gpu_info.get("count"))
        price = to_decimal(size.get("price_hourly"))
    except ValueError as exc:
        result.skip(f"bad number: {exc}", ref)
        return
    if gpu_count_f is None or gpu_count_f < 1 or gpu_count_f != int(gpu_count_f):
        result.skip(f"bad gpu_info.count {gpu_info.get('count')!r}", ref)
        return
    gpu_count = int(gpu_count_f)
    if price is None or price <= 0:
        result.skip(f"no positive price_hourly ({size.get('price_hourly')!r})", ref)
        return
    if price / gpu_count < MIN_USD_PER_GPU_HOUR:
        result.skip(f"absurd price: {price} USD/h for {gpu_count} GPUs", ref)
        return

    fields: dict[str, Any] = {
        "provider": "digitalocean",
        "offer_id": slug,
        "instance_name": _text(size.get("description")),
        "fetched_at": fetched_at,
        "raw_ref": ref,
        "gpu_count": gpu_count,
        "vcpus": positive(lenient_float(size.get("vcpus"))),
        "ram_gb": _ram_gb(size.get("memory")),
        "storage_gb": _storage_gb(size),
        "price_amount": price,
        "price_currency": "USD",
        "price_unit": PriceUnit.HOUR,
        "price_basis": PriceBasis.INSTANCE,
        "term": RentalTerm.ON_DEMAND,
        **_gpu_fields(gpu_info, gpu_count),
    }
    regions = size.get("regions")
    regions = [r for r in regions if isinstance(r, str) and r] if isinstance(regions, list) else []
    if not regions or size.get("available") is False:
        result.add(ref, **fields, available_now=False)
        return
    for region in regions:
        result.add(ref, **fields, region=region, country=_country(region), available_now=True)


def _gpu_fields(gpu_info: Mapping[str, Any], gpu_count: int) -> dict[str, Any]:
    """Model, vendor and per-GPU memory from ``gpu_info`` (whose ``vram`` is the total)."""
    raw = _text(gpu_info.get("model"))
    memory_gb = _per_gpu_memory_gb(gpu_info.get("vram"), gpu_count)
    fields: dict[str, Any] = {"gpu_raw_name": raw, "gpu_memory_gb": memory_gb}
    spec = resolve_gpu_name(raw, memory_gb=memory_gb) if raw else None
    if spec is not None:
        fields.update(gpu_model=spec.name, gpu_vendor=spec.vendor, gpu_form_factor=spec.form_factor)
    return fields


def _per_gpu_memory_gb(vram: Any, gpu_count: int) -> float | None:
    """Nominal memory of one GPU: the total ``vram`` amount over the GPU count.

    The nominal size is kept as quoted (640 GiB over 8 GPUs = "80 GB" each), as the GPU
    catalog keys on it; see :func:`units.nominal_gpu_memory_gb`.
    """
    if not isinstance(vram, Mapping) or str(vram.get("unit", "")).lower() not in _TO_GB:
        return None
    total = lenient_float(vram.get("amount"))
    if total is None or total <= 0:
        return None
    return nominal_gpu_memory_gb(total / gpu_count)


def _ram_gb(memory: Any) -> float | None:
    """``memory`` is in MiB (see the module docstring), converted to decimal GB."""
    mib = lenient_float(memory)
    return mib_to_gb(mib) if mib is not None and mib > 0 else None


def _storage_gb(size: Mapping[str, Any]) -> float | None:
    """Boot plus scratch disk in decimal GB, from ``disk_info`` or else ``disk`` (GB)."""
    disks = size.get("disk_info")
    total = 0.0
    found = False
    if isinstance(disks, list):
        for disk in disks:
            amount_gb = _disk_gb(disk)
            if amount_gb is not None:
                total += amount_gb
                found = True
    if found:
        return total
    disk_gb = lenient_float(size.get("disk"))
    return disk_gb if disk_gb is not None and disk_gb >= 0 else None


def _disk_gb(disk: Any) -> float | None:
    if not isinstance(disk, Mapping) or not isinstance(disk.get("size"), Mapping):
        return None
    amount = lenient_float(disk["size"].get("amount"))
    convert = _TO_GB.get(str(disk["size"].get("unit", "")).lower())
    if amount is None or amount < 0 or convert is None:
        return None
    return convert(amount)


def _country(region: str) -> str | None:
    """ISO country of a region slug (``nyc1`` -> ``US``), if the prefix is known."""
    return _REGION_COUNTRY.get(region.rstrip("0123456789").lower())


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
