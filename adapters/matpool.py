"""矩池云 (Matpool): the GPU market's resource pools and their hourly prices, no account.

Source of the format: the market page's own client (``https://matgo.cn/host-market/gpu``)
reads ``GET https://matgo.cn/api/machine_pools?machine_category=0&page=N&per_page=100``
without a token; a public client, quziang/matpool-gpu @ 9fef9bf5fa719a5836591f16655aa4c501efef7b
(references/inventory.md and scripts/matpool_inventory.py, "checked 2026-09-07" against the
site's JavaScript), documents the call and its fields. It is the website's market API, not a
published contract: a change of shape is a :class:`~adapters.base.ResponseFormatError`.

* ``machine_category=0`` is the GPU market (an integer: the string ``gpu`` is refused);
* the answer is ``{"pools": [...], "pagination": {"num_pages": N}}``, perhaps with
  ``"code": 0`` (a non-zero ``code`` is the API's error); :meth:`MatpoolAdapter.fetch` reads
  every page;
* one pool: ``gpu_model`` (the full GPU name, ``"NVIDIA RTX A2000"``), ``domain`` (the
  region id; region 1 is ``0``), ``driver_version``, ``max_available_units`` (units rentable
  now: not a reservation), ``resource_pool_id`` and ``machine``, a representative machine
  whose ``hardware`` holds ``gpu.gpuName``, ``gpu.gpuRamMB``, ``gpu.gpuIds`` (the GPUs of one
  unit), ``machine.cpuName``, ``machine.ramMB``, ``machine.diskGB`` and the price of one
  unit ("份") per hour: ``discountPriceMillicent`` (the price charged, after the market's
  discount), else ``priceMillicent``, in 1/100000 yuan ("``/ 100000`` 为折扣后的元/小时/份").

One offer per pool, on demand, per instance (one unit, its GPUs the ``gpuIds``), in CNY per
hour, exact (:func:`millicent_to_yuan`). Matpool bills by the hour or by the second? Its
documents were not found in the corpora: ``billing_increment_s`` is left unknown.
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
    ProviderError,
    ResponseFormatError,
    gpu_fields,
    price_fields,
)
from .schema import OfferFields, PriceBasis
from .units import cpu_vendor, lenient_float, nominal_gpu_memory_gb, text, value_at

__all__ = ["MARKET_URL", "PER_PAGE", "MatpoolAdapter", "millicent_to_yuan", "page_count"]

API_BASE = "https://matgo.cn"
MARKET_URL = API_BASE + "/api/machine_pools"
#: Pools asked per page (the page size the documented client uses).
PER_PAGE = 100
#: Pages read at most: a server that never stops paging must not hold the run.
MAX_PAGES = 100
#: 1/100000 yuan per unit: the market's "millicent".
_MILLICENTS_PER_YUAN = Decimal(100000)


def millicent_to_yuan(value: Any) -> Decimal | None:
    """A price in the market's millicents (1/100000 yuan) as exact yuan; a value that is not a
    positive whole number is ``None``.

    >>> millicent_to_yuan(135000)
    Decimal('1.35')
    """
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return Decimal(value) / _MILLICENTS_PER_YUAN


class MatpoolAdapter(Adapter):
    name = "matpool"
    title = "矩池云 Matpool"
    #: Where to rent: the GPU market page the adapter's API serves (adapters/matpool.py).
    rent_url: ClassVar[str] = "https://matgo.cn/host-market/gpu"
    pricing_url: ClassVar[str] = "https://matgo.cn/host-market/gpu"
    source_url = MARKET_URL
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Every page of the GPU market, as the documented client reads them: page 1, then
        each next page up to ``pagination.num_pages``."""
        pages: list[Any] = []
        last = 1
        while len(pages) < last:
            if len(pages) >= MAX_PAGES:
                raise ProviderError(self.name, f"more than {MAX_PAGES} pages of pools")
            params = {"machine_category": 0, "page": len(pages) + 1, "per_page": PER_PAGE}
            answer = await self.get_json(
                client,
                self.url("/api/machine_pools"),
                params=params,
                headers={"Accept": "application/json"},
            )
            _check_envelope(answer)
            pages.append(answer)
            last = page_count(answer)
        return pages

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        for payload in payloads:
            _check_envelope(payload)
        return self.parse_records(payloads, "pools", _add_pool, what="pool", fetched_at=fetched_at)


def _check_envelope(payload: Any) -> None:
    """A page is an object with a ``pools`` list and, if any, ``code`` 0."""
    if not isinstance(payload, Mapping):
        raise ResponseFormatError(
            "matpool", f"expected a JSON object, got {type(payload).__name__}"
        )
    code = payload.get("code", 0)
    if code != 0:
        message = text(payload.get("msg")) or text(payload.get("message")) or ""
        raise ResponseFormatError("matpool", f"market API error code {code!r}: {message}")
    if not isinstance(payload.get("pools"), list):
        raise ResponseFormatError("matpool", "response has no 'pools' list")


def page_count(payload: Any) -> int:
    """``pagination.num_pages`` of a page (1 when the answer gives none); a value that is
    not a whole number from 1 to :data:`MAX_PAGES` is a :class:`ResponseFormatError`: the
    listing may be incomplete."""
    pages = value_at(payload, "pagination", "num_pages")
    if pages is None:
        return 1
    if isinstance(pages, bool) or not isinstance(pages, int) or not 1 <= pages <= MAX_PAGES:
        raise ResponseFormatError("matpool", f"bad pagination.num_pages {pages!r}")
    return pages


def _add_pool(result: ParseResult, pool: Mapping[str, Any]) -> None:
    pool_id = text(pool.get("resource_pool_id"))
    gpu_name = text(pool.get("gpu_model")) or text(
        value_at(pool, "machine", "hardware", "gpu", "gpuName")
    )
    ref = f"matpool:{pool_id or '?'}"
    if pool_id is None:
        result.skip("pool without resource_pool_id", ref)
        return
    if gpu_name is None:
        result.skip("pool without a GPU (gpu_model)", ref)
        return
    hardware = value_at(pool, "machine", "hardware")
    if not isinstance(hardware, Mapping):
        result.skip("pool without machine.hardware", ref)
        return
    gpu_ids = value_at(hardware, "gpu", "gpuIds")
    if not isinstance(gpu_ids, list) or not gpu_ids:
        result.skip("pool without the GPUs of a unit (hardware.gpu.gpuIds)", ref)
        return
    key = "discountPriceMillicent" if "discountPriceMillicent" in hardware else "priceMillicent"
    yuan = millicent_to_yuan(hardware.get(key))
    if yuan is None:
        result.skip(f"bad {key} {hardware.get(key)!r}", ref)
        return
    memory_mb = lenient_float(value_at(hardware, "gpu", "gpuRamMB"))
    # sizes in MB of 1024 (the T4's 16 GB is 16384): GPU memory as its nominal GB
    memory = nominal_gpu_memory_gb(memory_mb / 1024) if memory_mb and memory_mb > 0 else None
    ram_mb = lenient_float(value_at(hardware, "machine", "ramMB"))
    disk_gb = lenient_float(value_at(hardware, "machine", "diskGB"))
    cpu = text(value_at(hardware, "machine", "cpuName"))
    domain = pool.get("domain")
    # the market's region ids count from 0 for its region 1 ("1 区对应 0")
    region = f"{domain + 1}区" if isinstance(domain, int) and not isinstance(domain, bool) else None
    units = pool.get("max_available_units")
    available = (
        units if isinstance(units, int) and not isinstance(units, bool) and units >= 0 else None
    )
    fields: OfferFields = {
        "offer_id": pool_id,
        "instance_name": f"{len(gpu_ids)}x {gpu_name}",
        "region": region,
        "country": "CN",
        **gpu_fields(gpu_name, memory_gb=memory),
        "gpu_count": len(gpu_ids),
        "cpu_model": cpu,
        "cpu_vendor": cpu_vendor(cpu),
        "ram_gb": ram_mb / 1024 if ram_mb and ram_mb > 0 else None,
        "storage_gb": disk_gb if disk_gb and disk_gb > 0 else None,
        "driver_version": text(pool.get("driver_version")),
        **price_fields(yuan, PriceBasis.INSTANCE, currency="CNY"),
        "available_count": available,
        "available_now": available > 0 if available is not None else None,
    }
    result.add(ref, **fields)
