"""Lium: every rentable GPU node, from its public nodes feed (no account).

API: ``GET https://lium.io/api/public/v1/nodes``, unauthenticated, one JSON document with the
whole inventory (no pages). Lium documents it as a public feed whose fields are only ever
added under ``/public/v1`` (https://docs.lium.io/developers/public-nodes-feed, as quoted by
dstackai/gpuhunt's ``src/gpuhunt/providers/lium.py``; SkyPilot's
``sky/catalog/data_fetchers/fetch_lium.py`` reads the same feed). One node::

    {"id": "f092246d-...", "gpu_model": "H200", "gpu_count": 8, "available_gpu_count": 5,
     "price_per_gpu_hour": 3.99, "min_rentable_gpu_count": 1, "gpu_memory_gb": 140,
     "cpu_count": 192, "ram_gb": 2015, "disk_gb": 3575, "tier": "secure",
     "country": "United States", "country_code": "US", "region": "MS", "city": "Jackson",
     "rent_url": "https://lium.io/browse-pods/f092246d-...", "price_per_node_hour": 31.92}

Units and meaning (gpuhunt's reading of the feed contract, and its recorded feed):

* ``price_per_gpu_hour``: USD per GPU-hour, so offers are priced per GPU;
* a node is rented whole or in part: any GPU count from ``min_rentable_gpu_count`` (1 when
  absent) to ``available_gpu_count`` (the GPUs free now: the feed's live utilisation) is an
  order, and gets the host's CPUs, RAM and disk in proportion to its share of the node's
  GPUs. Each such count is one offer (``<id>/<count>``), ``available_count`` how many of it
  the free GPUs hold now; a node with fewer GPUs free than its smallest order gives none;
* ``tier``: ``secure`` is an on-demand node, ``spot`` one that can be taken back (SkyPilot
  leaves spot nodes out for that reason): interruptible. Another tier is skipped, named;
* ``country_code`` and ``region`` (a subdivision code, ``MS``, ``13``) make the region, the
  ISO 3166-2 code ``US-MS``; a node without a country is skipped (gpuhunt does the same);
* ``gpu_memory_gb``: per GPU, as the host reports it (140 for an H200 of 141 GB), passed to
  the catalog lookup as a hint; ``ram_gb`` and ``disk_gb`` are the whole host's.

Lium publishes no billing increment, fabric or storage kind in the feed; they stay empty.
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
    payload_list,
    positive_price,
    price_fields,
    required_count,
)
from .schema import OfferFields, PriceBasis, RentalTerm
from .units import lenient_float, positive, text, whole_count

__all__ = ["NODES_URL", "LiumAdapter"]

API_BASE = "https://lium.io/api/public/v1"
NODES_URL = API_BASE + "/nodes"

#: The feed's ``tier`` -> the rental term of its nodes.
TIERS: Mapping[str, RentalTerm] = {
    "secure": RentalTerm.ON_DEMAND,
    "spot": RentalTerm.INTERRUPTIBLE,
}


class LiumAdapter(Adapter):
    """Lium GPU nodes, one per-GPU-priced offer per rentable GPU count of each node."""

    name: ClassVar[str] = "lium"
    title: ClassVar[str] = "Lium"
    #: Where to rent: the feed's own rent_url of each node (lium.io/browse-pods/<node id>,
    #: adapters/lium.py).
    rent_url: ClassVar[str] = "https://lium.io/browse-pods/{offer_id_head}"
    pricing_url: ClassVar[str] = "https://lium.io/"
    source_url: ClassVar[str] = NODES_URL
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        return [await self.get_json(client, self.url("/nodes"))]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return self.parse_records(
            payloads,
            lambda payload: payload_list(payload, "nodes", self.name),
            _parse_node,
            what="node",
            fetched_at=fetched_at,
        )


# --- pure helpers ---------------------------------------------------------------------


def _parse_node(result: ParseResult, node: Mapping[str, Any]) -> None:
    """The offers of one node: one per GPU count it can be rented with now."""
    node_id = text(node.get("id"))
    ref = f"lium:node/{node_id}"
    if node_id is None:
        result.skip("node without an id", ref)
        return
    gpu_count = required_count(result, node.get("gpu_count"), "gpu_count", ref)
    free = whole_count(node.get("available_gpu_count"), least=0)
    price = positive_price(result, node.get("price_per_gpu_hour"), "price_per_gpu_hour", ref)
    if gpu_count is None or price is None:
        return
    if free is None:
        result.skip(f"bad available_gpu_count {node.get('available_gpu_count')!r}", ref)
        return
    term = TIERS.get(str(node.get("tier")))
    if term is None:
        result.skip(f"unknown tier {node.get('tier')!r}", ref)
        return
    country = text(node.get("country_code"))
    if country is None:
        result.skip("node without a country_code", ref)
        return
    smallest = whole_count(node.get("min_rentable_gpu_count")) or 1
    counts = range(smallest, min(free, gpu_count) + 1)
    if not counts:
        result.skip("fewer GPUs free than the smallest order", ref)
        return
    subdivision = text(node.get("region"))
    raw_gpu = text(node.get("gpu_model"))
    shared: OfferFields = {
        **gpu_fields(raw_gpu, memory_gb=positive(lenient_float(node.get("gpu_memory_gb")))),
        "region": f"{country.upper()}-{subdivision.upper()}" if subdivision else country.upper(),
        "country": country.upper(),
        "available_now": True,
        **price_fields(price, PriceBasis.GPU, term),
    }
    for count in counts:
        share = count / gpu_count
        fields: OfferFields = {
            **shared,
            "offer_id": f"{node_id}/{count}",
            "instance_name": f"{count}x {raw_gpu}" if raw_gpu else None,
            "gpu_count": count,
            "vcpus": _part(node.get("cpu_count"), share),
            "ram_gb": _part(node.get("ram_gb"), share),
            "storage_gb": _part(node.get("disk_gb"), share),
            "available_count": free // count,
        }
        result.add(ref, **fields)


def _part(value: Any, share: float) -> float | None:
    """``share`` of a host's quantity (CPUs, GB of RAM or disk), rounded to a hundredth;
    ``None`` where the host does not state it or the share comes to nothing."""
    whole = positive(lenient_float(value))
    return positive(round(whole * share, 2)) if whole is not None else None
