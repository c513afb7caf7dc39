"""Shadeform: the GPU marketplace aggregating many clouds' instance types.

API: ``GET https://api.shadeform.ai/v1/instances/types`` (docs.shadeform.ai API reference,
"Instance Types"), auth header ``X-API-KEY: <key>``. Optional filters (``cloud``,
``region``, ``num_gpus``, ``gpu_type``, ``available``, ``sort``) are not sent: we want every
type with its availability. One response, no pagination::

    {"instance_types": [{"cloud": "hyperstack", "shade_instance_type": "A6000",
       "cloud_instance_type": "gpu_1x_a6000",
       "configuration": {"memory_in_gb", "storage_in_gb", "vcpus", "num_gpus", "gpu_type",
                         "interconnect": "pcie" | "sxm", "vram_per_gpu_in_gb",
                         "os_options": [...], "gpu_manufacturer", "nvlink": bool},
       "hourly_price": 210, "deployment_type": "vm" | "container" | "baremetal",
       "availability": [{"region", "available", "display_name": "US, Wichita, KS"}],
       "boot_time": {"min_boot_in_sec", "max_boot_in_sec"}}]}

``price_fields`` is an integer in US cents per hour for the whole instance (210 = $2.10/h).
Each (cloud, cloud instance type, region) is one on-demand offer; ``offer_id`` is
``<cloud>:<cloud_instance_type>`` (the underlying cloud's own type name) and ``seller`` the
cloud; a type listed twice gives the contract's duplicates. A type with no region listed is
one region-less offer with ``available_now=False``. The docs' own example
is inconsistent (shade type "A6000", ``gpu_type`` "A100", 48 GB): the GPU is resolved from
``gpu_type`` with the memory and interconnect as hints, and a contradiction leaves it
unmapped (``gpu_model=None``) rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    ParseResult,
    add_per_region,
    gpu_fields,
    key_headers,
    positive_price,
    price_fields,
    required_count,
)
from .schema import GpuFormFactor, GpuInterconnect, OfferFields, PriceBasis
from .units import (
    cents_to_units,
    gpu_vendor,
    lenient_float,
    nominal_memory_gb,
    non_negative,
    positive_quantity,
    strings,
    text,
)

__all__ = ["TYPES_URL", "ShadeformAdapter"]

API_BASE = "https://api.shadeform.ai/v1"
TYPES_URL = API_BASE + "/instances/types"

_FORM_FACTOR = {"pcie": GpuFormFactor.PCIE, "sxm": GpuFormFactor.SXM}


class ShadeformAdapter(Adapter):
    """Shadeform instance types, one offer per underlying cloud type and region."""

    name: ClassVar[str] = "shadeform"
    title: ClassVar[str] = "Shadeform"
    #: Where to rent: Shadeform's platform console.
    rent_url: ClassVar[str] = "https://platform.shadeform.ai/"
    pricing_url: ClassVar[str] = "https://www.shadeform.ai/"
    source_url: ClassVar[str] = TYPES_URL
    credential_names: ClassVar[tuple[str, ...]] = ("shadeform_api_key",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        headers = key_headers(self, "X-API-KEY", scheme="")
        return [await self.get_json(client, self.url("/instances/types"), headers=headers)]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return self.parse_records(
            payloads, "instance_types", _parse_type, what="instance type", fetched_at=fetched_at
        )


def _parse_type(result: ParseResult, record: Mapping[str, Any]) -> None:
    cloud = text(record.get("cloud"))
    cloud_type = text(record.get("cloud_instance_type"))
    ref = f"shadeform:{cloud}/{cloud_type}"
    if cloud is None or cloud_type is None:
        result.skip("no cloud or cloud_instance_type", ref)
        return
    config = record.get("configuration")
    if not isinstance(config, Mapping):
        result.skip("no configuration object", ref)
        return
    gpu_count = required_count(result, config.get("num_gpus"), "num_gpus", ref)
    if gpu_count is None:
        return
    price = positive_price(
        result, record.get("hourly_price"), "hourly_price", ref, convert=cents_to_units
    )
    if price is None:
        return

    form = _FORM_FACTOR.get(str(config.get("interconnect", "")).lower())
    fields: OfferFields = {
        "offer_id": f"{cloud}:{cloud_type}",
        "seller": cloud,  # the cloud that runs the machine; Shadeform resells it
        "instance_name": text(record.get("shade_instance_type")),
        "gpu_count": gpu_count,
        "vcpus": positive_quantity(config.get("vcpus")),
        "ram_gb": positive_quantity(config.get("memory_in_gb")),
        "storage_gb": non_negative(lenient_float(config.get("storage_in_gb"))),
        "os_images": strings(config.get("os_options")),
        **price_fields(price, PriceBasis.INSTANCE),
        **gpu_fields(
            text(config.get("gpu_type")),
            memory_gb=nominal_memory_gb(config.get("vram_per_gpu_in_gb")),
            form_factor=form,
            vendor=gpu_vendor(config.get("gpu_manufacturer")),
        ),
        "gpu_interconnect": _interconnect(form, config.get("nvlink"), gpu_count),
    }
    regions = record.get("availability")
    listed: list[OfferFields] = [
        {
            "region": text(r.get("region")),
            "country": _country(r.get("display_name")),
            "available_now": r["available"] if isinstance(r.get("available"), bool) else None,
        }
        for r in (regions if isinstance(regions, list) else [])
        if isinstance(r, Mapping) and text(r.get("region"))
    ]
    add_per_region(result, ref, fields, listed)


def _interconnect(
    form: GpuFormFactor | None, nvlink: Any, gpu_count: int
) -> GpuInterconnect | None:
    """The GPU-to-GPU link of a multi-GPU instance, from ``interconnect`` and ``nvlink``.

    NVLink on SXM boards is the NVLink switch fabric; NVLink on PCIe cards is a bridge; PCIe
    cards without it talk over PCIe. One GPU has no GPU-to-GPU link: ``None``.
    """
    if gpu_count < 2 or not isinstance(nvlink, bool) or form is None:
        return None
    if nvlink:
        return (
            GpuInterconnect.NVLINK if form is GpuFormFactor.SXM else GpuInterconnect.NVLINK_BRIDGE
        )
    return GpuInterconnect.PCIE if form is GpuFormFactor.PCIE else None


def _country(display_name: Any) -> str | None:
    """ISO code at the start of a display name (``"US, Wichita, KS"`` -> ``"US"``)."""
    head = (text(display_name) or "").split(",", 1)[0].strip()
    return head.upper() if len(head) == 2 and head.isalpha() else None
