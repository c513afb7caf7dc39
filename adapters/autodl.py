"""AutoDL: the GPU market's machines and their hourly (按量, pay-as-you-go) prices.

AutoDL publishes no price API; its elastic-deployment API (https://www.autodl.com/docs/esd_api_doc/)
answers stock, not prices. The market page of the console reads the machines and their
prices from the console's own API with the user's login token (``Authorization: <token>``,
the setting ``autodl_token``): an account is needed. Format as a public client calls it,
mfznttkx/autodl-gpuhunter @ 66bed8f71e96820b2b19b25d0b43e1cbe56e15ee (2024-03-04) :
gpuhunter/autodl_client.py (its docstrings quote the answers):

* ``GET https://fe-config-backend.autodl.com/api/v1/autodl/region/tag``: the region groups,
  ``[{"region_sign": ["west-B", "west-C"], "region_name": "西北B区", ...}]``;
* ``POST https://api.autodl.com/api/v1/machine/region/gpu_type`` with
  ``{"region_sign_list": [...]}``: the GPU names of a region group,
  ``[{"RTX 4090": {"idle_gpu_num": 3, "total_gpu_num": 2686}}, ...]``;
* ``POST https://api.autodl.com/api/v1/user/machine/list`` with ``{"charge_type": "payg",
  "page_size": 20, "page_index": N, "gpu_idle_num": 1, "region_sign_list": [...],
  "gpu_type_name": [...]}``: one page of machines with a free GPU, ``{"list": [...],
  "max_page": M}``. A machine: ``machine_id``, ``machine_alias`` ("063机"), ``region_name``
  ("西北B区"), ``region_sign``, ``gpu_name`` ("RTX 4090"), ``gpu_idle_num`` and
  ``gpu_order_num`` (GPUs free / orderable now), ``highest_cuda_version``, ``cpu_per_gpu``,
  ``mem_per_gpu`` (bytes), ``payg`` (pay-as-you-go sold), ``payg_price`` (2720).

Every answer is ``{"code": "Success", "msg": ..., "data": ...}``; another ``code`` is the
API's error, named in a :class:`~adapters.base.ResponseFormatError`.

``payg_price`` is an integer of 1/1000 yuan (厘) per GPU-hour: 2720 is the market's
"￥2.72/时" for one RTX 4090 (the unit as independent clients read it, e.g. "payg_price: int
# 单位:厘,即 1/1000 元"; no AutoDL document states it). CPU cores and memory come with each
GPU (``cpu_per_gpu``, ``mem_per_gpu``), so an offer of n GPUs has n times them; offers are
emitted for the powers of two up to the GPUs orderable now and that number itself (one GPU
where none is free, marked not available). AutoDL also rents by the day, week and month
(包日/包周/包月); those prices are not in this answer and are not invented here.
"""

from __future__ import annotations

import asyncio
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
from .units import lenient_float, power_of_two_counts, text, value_at, whole_count

__all__ = ["MACHINE_LIST_PATH", "PAGE_SIZE", "AutoDLAdapter", "li_to_yuan"]

#: ``{host}`` is ``api`` for the market and ``fe-config-backend`` for the region list.
API_BASE = "https://{host}.autodl.com"
REGIONS_PATH = "/api/v1/autodl/region/tag"
GPU_TYPES_PATH = "/api/v1/machine/region/gpu_type"
MACHINE_LIST_PATH = "/api/v1/user/machine/list"
#: Machines asked per page, as the documented client asks.
PAGE_SIZE = 20
#: Pages of one region group read at most (2,000 machines).
MAX_PAGES = 100
#: Region groups asked at once.
CONCURRENT_REGIONS = 4
_OK_CODES = frozenset({"Success", "OK"})
_LI_PER_YUAN = Decimal(1000)


def li_to_yuan(value: Any) -> Decimal | None:
    """An AutoDL price in 厘 (1/1000 yuan, a whole number) as exact yuan, else ``None``.

    >>> li_to_yuan(2720)
    Decimal('2.72')
    """
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return Decimal(value) / _LI_PER_YUAN


def answer_data(payload: Any) -> Any:
    """The ``data`` of an AutoDL answer; an answer that is not ``{"code": "Success", "data":
    ...}`` is a :class:`ResponseFormatError` naming its code and message."""
    if not isinstance(payload, Mapping):
        raise ResponseFormatError("autodl", f"expected a JSON object, got {type(payload).__name__}")
    code = payload.get("code")
    if code not in _OK_CODES:
        message = text(payload.get("msg")) or ""
        raise ResponseFormatError("autodl", f"API error code {code!r}: {message}".rstrip(": "))
    if "data" not in payload:
        raise ResponseFormatError("autodl", "answer has no 'data'")
    return payload["data"]


class AutoDLAdapter(Adapter):
    name = "autodl"
    title = "AutoDL"
    #: Where to rent: the platform's own address (its GPU market is its home page).
    pricing_url: ClassVar[str] = "https://www.autodl.com/"
    source_url = "https://api.autodl.com" + MACHINE_LIST_PATH
    credential_names = ("autodl_token",)
    base_url = API_BASE

    def _headers(self) -> dict[str, str]:
        token = self.require_credentials()["autodl_token"]
        return {"Authorization": token, "Accept": "application/json"}

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """The machine pages of every region group (regions, then each group's GPU names,
        then its machines page by page)."""
        headers = self._headers()
        regions = answer_data(
            await self.get_json(
                client, self.url(REGIONS_PATH, host="fe-config-backend"), headers=headers
            )
        )
        if not isinstance(regions, list):
            raise ResponseFormatError(self.name, "region list is not a list")
        groups = [signs for r in regions if (signs := _region_signs(r))]
        limit = asyncio.Semaphore(CONCURRENT_REGIONS)

        async def one(signs: list[str]) -> list[Any]:
            async with limit:
                return await self._region_pages(client, headers, signs)

        pages = await asyncio.gather(*(one(signs) for signs in groups))
        return [page for group in pages for page in group]

    async def _region_pages(
        self, client: httpx.AsyncClient, headers: dict[str, str], signs: list[str]
    ) -> list[Any]:
        kinds = answer_data(
            await self.post_json(
                client,
                self.url(GPU_TYPES_PATH, host="api"),
                headers=headers,
                json={"region_sign_list": signs},
            )
        )
        names = sorted({name for kind in kinds or [] if isinstance(kind, Mapping) for name in kind})
        if not names:
            return []
        pages: list[Any] = []
        last = 1
        while len(pages) < last:
            if len(pages) >= MAX_PAGES:
                raise ProviderError(self.name, f"more than {MAX_PAGES} pages of machines")
            body = {
                "charge_type": "payg",
                "page_size": PAGE_SIZE,
                "page_index": len(pages) + 1,
                "gpu_idle_num": 1,
                "region_sign_list": signs,
                "gpu_type_name": names,
            }
            page = await self.post_json(
                client, self.url(MACHINE_LIST_PATH, host="api"), headers=headers, json=body
            )
            pages.append(page)
            last = whole_count(value_at(answer_data(page), "max_page")) or 1
        return pages

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        def machines(payload: Any) -> list[Any]:
            listed = value_at(answer_data(payload), "list")
            if not isinstance(listed, list):
                raise ResponseFormatError(self.name, "machine list answer has no 'data.list'")
            return listed

        return self.parse_records(
            payloads, machines, _add_machine, what="machine", fetched_at=fetched_at
        )


def _region_signs(region: Any) -> list[str]:
    signs = value_at(region, "region_sign")
    return [s for s in signs if isinstance(s, str) and s] if isinstance(signs, list) else []


def _add_machine(result: ParseResult, machine: Mapping[str, Any]) -> None:
    machine_id = text(machine.get("machine_id"))
    ref = f"autodl:{machine_id or '?'}"
    if machine_id is None:
        result.skip("machine without machine_id", ref)
        return
    gpu_name = text(machine.get("gpu_name"))
    if gpu_name is None:
        result.skip("machine without gpu_name", ref)
        return
    if machine.get("payg") is False:
        result.skip("pay-as-you-go not sold on this machine (payg false)", ref)
        return
    price = li_to_yuan(machine.get("payg_price"))
    if price is None:
        result.skip(f"bad payg_price {machine.get('payg_price')!r}", ref)
        return
    orderable = whole_count(machine.get("gpu_order_num"), least=0)
    cpu_per_gpu = lenient_float(machine.get("cpu_per_gpu"))
    mem_bytes = lenient_float(machine.get("mem_per_gpu"))
    ram_per_gpu = mem_bytes / 1e9 if mem_bytes and mem_bytes > 0 else None
    region = text(machine.get("region_name")) or text(machine.get("region_sign"))
    alias = text(machine.get("machine_alias"))
    gpu = gpu_fields(gpu_name)
    for count in power_of_two_counts(max(orderable or 0, 1)):
        available = orderable // count if orderable is not None else None
        fields: OfferFields = {
            "offer_id": f"{machine_id}:{count}x",
            "instance_name": f"{count}x {gpu_name}" + (f" ({alias})" if alias else ""),
            "region": region,
            "country": "CN",
            **gpu,
            "gpu_count": count,
            "vcpus": cpu_per_gpu * count if cpu_per_gpu and cpu_per_gpu > 0 else None,
            "ram_gb": round(ram_per_gpu * count, 3) if ram_per_gpu else None,
            "cuda_version": text(machine.get("highest_cuda_version")),
            **price_fields(price, PriceBasis.GPU, currency="CNY"),
            "available_count": available,
            "available_now": available > 0 if available is not None else None,
        }
        result.add(ref, **fields)
