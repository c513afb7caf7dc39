"""Seeweb: Cloud Server GPU plans from the ECS API's plan list (account needed).

API: ``GET https://api.seeweb.it/ecs/v2/plans`` with the account's API token in ``X-APITOKEN``
(as dstackai/gpuhunt's ``providers/seeweb.py`` calls it live; Seeweb's own Go client,
Seeweb/cloudserver-go-client, sends it as ``Authorization: Bearer``: both headers go). One
answer, no pages: ``{"status": "ok", "plans": [...]}``. One plan, as Seeweb's Go client and
Terraform provider document the fields (``docs/data-sources/plans.md``: "hourly_price - Hourly
price in Euro", "ram - Memory size in MB") and gpuhunt and SkyPilot read the GPU ones::

    {"id": 41, "name": "ECS1GPU7", "cpu": "8", "ram": "32768", "disk": "500", "gpu": "1",
     "gpu_label": "L40s 48GB", "hourly_price": 0.85, "montly_price": 620, "windows": false,
     "available": true,
     "available_regions": [{"id": 1, "location": "it-fr2", "description": "Frosinone"}]}

Units: ``hourly_price`` is EUR per hour for the whole server; ``ram`` MB (MiB: 32768 for 32
GB); ``disk`` GB (the Go client's own example has a 20 GB disk as ``"20"``); ``gpu`` the count,
a string; ``gpu_label`` the card and its memory (``"H200 141GB"``; ``"A30"`` alone). A plan
with no GPU is a CPU plan, not an offer; ``available: false`` means the plan is withdrawn (not
a stock figure, gpuhunt's reading) and its plan is skipped, named; a Windows plan's price
carries a licence, and is not read. ``montly_price`` (sic) is not an offer: the API does not
say what a monthly price commits to. Each region in ``available_regions`` is one offer
(``location``, its country from ``data/region_countries.csv``); a plan listed in none is one
region-less offer, not available now. Seeweb's accelerators that are not GPUs the catalog
knows (Tenstorrent cards) resolve to no catalog model and are left out of the ranking.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    ParseResult,
    add_per_region,
    gpu_fields,
    payload_list,
    positive_price,
    price_fields,
    required_count,
)
from .schema import OfferFields, PriceBasis
from .tables import region_countries
from .units import lenient_float, mib_to_gb, positive, text, value_at, whole_count

__all__ = ["PLANS_URL", "SeewebAdapter"]

API_BASE = "https://api.seeweb.it/ecs/v2"
PLANS_URL = API_BASE + "/plans"

#: Per-GPU memory in a ``gpu_label`` (``"H200 141GB"`` -> 141).
_MEMORY_IN_LABEL = re.compile(r"(\d+)\s*GB", re.IGNORECASE)


class SeewebAdapter(Adapter):
    """Seeweb Cloud Server GPU plans, one on-demand EUR offer per plan and region."""

    name: ClassVar[str] = "seeweb"
    title: ClassVar[str] = "Seeweb"
    #: Where to rent: Seeweb's Cloud Server GPU page.
    pricing_url: ClassVar[str] = "https://www.seeweb.it/en/products/cloud-server-gpu"
    source_url: ClassVar[str] = PLANS_URL
    credential_names: ClassVar[tuple[str, ...]] = ("seeweb_api_token",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        [token] = self.require_credentials().values()
        headers = {
            "Accept": "application/json",
            "X-APITOKEN": token,
            "Authorization": f"Bearer {token}",
        }
        return [await self.get_json(client, self.url("/plans"), headers=headers)]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return self.parse_records(
            payloads,
            lambda payload: payload_list(payload, "plans", self.name),
            _parse_plan,
            what="plan",
            fetched_at=fetched_at,
        )


# --- pure helpers ---------------------------------------------------------------------


def _parse_plan(result: ParseResult, plan: Mapping[str, Any]) -> None:
    """The offers of one GPU plan, one per region it can be created in."""
    name = text(plan.get("name"))
    ref = f"seeweb:plan/{name}"
    label = text(plan.get("gpu_label"))
    if whole_count(plan.get("gpu"), least=0) == 0 or (plan.get("gpu") is None and not label):
        return  # a CPU plan: not an offer, and not an error either
    if name is None:
        result.skip("GPU plan without a name", ref)
        return
    if plan.get("windows") is True:
        return  # the Windows licence is in its price: the Linux plan is the offer
    if plan.get("available") is False:
        result.skip("plan not available (withdrawn)", ref)
        return
    gpu_count = required_count(result, plan.get("gpu"), "gpu", ref)
    price = positive_price(result, plan.get("hourly_price"), "hourly_price", ref)
    if gpu_count is None or price is None:
        return
    memory = _MEMORY_IN_LABEL.search(label or "")
    ram_mib = positive(lenient_float(plan.get("ram")))
    fields: OfferFields = {
        "offer_id": name,
        "instance_name": f"{name} ({gpu_count}x {label})" if label else name,
        **gpu_fields(label, memory_gb=float(memory.group(1)) if memory else None),
        "gpu_count": gpu_count,
        "vcpus": positive(lenient_float(plan.get("cpu"))),
        "ram_gb": mib_to_gb(ram_mib) if ram_mib is not None else None,
        "storage_gb": positive(lenient_float(plan.get("disk"))),
        **price_fields(price, PriceBasis.INSTANCE, currency="EUR"),
    }
    add_per_region(result, ref, fields, _regions(plan.get("available_regions")))


def _regions(listed: Any) -> list[OfferFields]:
    """Each region a plan can be created in now, with its country."""
    names = [text(value_at(r, "location")) for r in listed] if isinstance(listed, list) else []
    countries = region_countries("seeweb")
    return [
        {"region": n, "country": countries.get(n.split("-", 1)[0]), "available_now": True}
        for n in names
        if n is not None
    ]
