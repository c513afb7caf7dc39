"""Hyperbolic: the GPU nodes of its marketplace, with the GPUs free on each right now.

API: ``POST https://api.hyperbolic.xyz/v1/marketplace`` with the body ``{"filters": {}}``,
one answer ``{"instances": [...]}`` listing every node (HyperbolicLabs/Hyperbolic-AgentKit's
``get_available_gpus``, Hyperbolic's own agent toolkit: "The GPU prices are in CENTS per
hour", "Price per GPU per hour"). A key (``Authorization: Bearer``) is sent when one is
set; public clients call the listing without one. One node, as the toolkit and the coinbase
agentkit's Hyperbolic tests record it::

    {"id": "korea-amd14-78", "status": "node_ready", "reserved": false,
     "cluster_name": "angelic-mushroom-dolphin", "location": {"region": "region-1"},
     "gpus_total": 8, "gpus_reserved": 3,
     "hardware": {"gpus": [{"model": "NVIDIA-H100-80GB-HBM3", "ram": 81559,
                            "interface": "SXM5"}],
                  "cpus": [{"model": "AMD-23-49", "virtual_cores": 32}],
                  "storage": [{"capacity": 80}], "ram": [{"capacity": 1070}]},
     "pricing": {"price": {"amount": 129, "period": "hourly", "agent": "platform"}}}

Units and meaning: ``pricing.price.amount`` is US cents per GPU-hour; a GPU's ``ram`` is MiB;
the node's CPU ``virtual_cores`` and its RAM and storage ``capacity`` (GB) are the whole
node's. A renter asks a node for a GPU count (``instances/create`` takes ``cluster_name``,
``node_name`` and ``gpu_count``): each count from 1 to the GPUs free (``gpus_total`` less
``gpus_reserved``) is one offer ``<node>/<count>``, the node's CPUs, RAM and disk only on the
whole node's (the share a part gets is not published). A node that is not ``node_ready``, is
``reserved``, or has no GPU free is rented out: it gives no offer now, and is no error.
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
from .schema import OfferFields, PriceBasis
from .units import (
    cents_to_units,
    lenient_float,
    nominal_gpu_memory_gb,
    positive,
    text,
    value_at,
    whole_count,
)

__all__ = ["MARKETPLACE_URL", "HyperbolicAdapter"]

API_BASE = "https://api.hyperbolic.xyz/v1"
MARKETPLACE_URL = API_BASE + "/marketplace"


class HyperbolicAdapter(Adapter):
    """Hyperbolic marketplace nodes, one per-GPU-priced offer per GPU count free now."""

    name: ClassVar[str] = "hyperbolic"
    title: ClassVar[str] = "Hyperbolic"
    #: Where to rent: Hyperbolic's pricing page.
    pricing_url: ClassVar[str] = "https://hyperbolic.xyz/pricing"
    source_url: ClassVar[str] = MARKETPLACE_URL
    optional_credential_names: ClassVar[tuple[str, ...]] = ("hyperbolic_api_key",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        return [
            await self.post_json(
                client, self.url("/marketplace"), json={"filters": {}}, headers=key_headers(self)
            )
        ]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return self.parse_records(
            payloads,
            lambda payload: payload_list(payload, "instances", self.name),
            _parse_node,
            what="instance",
            fetched_at=fetched_at,
        )


# --- pure helpers ---------------------------------------------------------------------


def _parse_node(result: ParseResult, node: Mapping[str, Any]) -> None:
    """The offers of one node: one per GPU count free on it now."""
    node_id = text(node.get("id"))
    ref = f"hyperbolic:node/{node_id}"
    if node.get("status") != "node_ready" or node.get("reserved") is True:
        return  # rented out or not up: no offer now, and no error
    if node_id is None:
        result.skip("node without an id", ref)
        return
    total = required_count(result, node.get("gpus_total"), "gpus_total", ref)
    reserved = whole_count(node.get("gpus_reserved"), least=0) or 0
    cents = value_at(node, "pricing", "price", "amount")
    try:
        amount = cents_to_units(cents)
    except ValueError:
        amount = cents  # not a number: positive_price says so
    price = positive_price(result, amount, "pricing.price.amount", ref)
    if total is None or price is None:
        return
    gpus = value_at(node, "hardware", "gpus")
    gpu = gpus[0] if isinstance(gpus, list) and gpus and isinstance(gpus[0], Mapping) else {}
    raw = text(gpu.get("model"))
    hardware: Mapping[str, Any] = node.get("hardware") or {}
    if not isinstance(hardware, Mapping):
        hardware = {}
    whole: OfferFields = {
        "vcpus": _sum(hardware, "cpus", "virtual_cores"),
        "ram_gb": _sum(hardware, "ram", "capacity"),
        "storage_gb": _sum(hardware, "storage", "capacity"),
        "cpu_model": text(value_at(_first(hardware, "cpus"), "model")),
    }
    shared: OfferFields = {
        **gpu_fields(
            raw,
            name=raw.replace("-", " ") if raw else None,
            memory_gb=_gpu_memory_gb(gpu.get("ram")),
            form_factor=text(gpu.get("interface")),
        ),
        "instance_name": text(node.get("cluster_name")),
        "region": text(value_at(node, "location", "region")),
        "available_now": True,
        **price_fields(price, PriceBasis.GPU),
    }
    free = total - reserved
    for count in range(1, free + 1):
        fields: OfferFields = {
            **shared,
            **(whole if count == total else {}),
            "offer_id": f"{node_id}/{count}",
            "gpu_count": count,
            "available_count": free // count,
        }
        result.add(ref, **fields)


def _gpu_memory_gb(mib: Any) -> float | None:
    """A GPU's ``ram`` (MiB, 81559 for an H100 80GB) as its nominal GB (80)."""
    size = positive(lenient_float(mib))
    return nominal_gpu_memory_gb(size / 1024) if size is not None else None


def _first(hardware: Mapping[str, Any], kind: str) -> Any:
    items = hardware.get(kind)
    return items[0] if isinstance(items, list) and items else None


def _sum(hardware: Mapping[str, Any], kind: str, key: str) -> float | None:
    """The node's total of ``key`` over its ``kind`` parts (its CPUs' cores, its RAM's GB)."""
    items = hardware.get(kind)
    values = [lenient_float(value_at(i, key)) for i in items] if isinstance(items, list) else []
    found = [v for v in values if v is not None and v > 0]
    return sum(found) if found else None
