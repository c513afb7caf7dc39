"""FluidStack: GPU configurations from the platform API's available-configurations list.

API: ``GET https://platform.fluidstack.io/list_available_configurations`` with the header
``api-key: <key>`` (the FluidStack platform API as SkyPilot's catalog fetcher calls it:
skypilot-org/skypilot @ 40654dda6e31f3d9c17f0baef03959b721220afb
sky/catalog/data_fetchers/fetch_fluidstack.py). The answer is a bare JSON array, no
pagination::

    [{"gpu_type": "H100_SXM5_80GB", "gpu_counts": [1, 2, 4, 8],
      "price_per_gpu_hr": "2.89", "regions": ["norway_4_eu", "canada_2_na"]}]

``price_per_gpu_hr`` is USD per GPU-hour (SkyPilot multiplies it by the count), possibly a
string, so offers carry ``price_basis=GPU``. ``gpu_type`` names the model, form factor and
per-GPU memory (``A100_PCIE_80GB``, ``RTX_A6000_48GB``). vCPUs, RAM and disk are not returned
and stay empty. Each GPU type x count x region is one on-demand offer, its country from the
region's first word, else its last (``data/region_countries.csv``); an empty ``regions``
list means the type is not available now: one region-less offer per count with
``available_now=False``. A type listed twice gives the contract's duplicates. FluidStack
also runs a newer API
(``api.fluidstack.io/v1``) whose price format is not recorded here.
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
    ProviderError,
    ResponseFormatError,
    add_per_region,
    gpu_fields,
    key_headers,
    listed_regions,
    positive_price,
    price_fields,
)
from .schema import OfferFields, PriceBasis
from .tables import region_countries
from .units import memory_gb_in_name, text, whole_count

__all__ = ["CONFIGURATIONS_URL", "FluidStackAdapter"]

API_BASE = "https://platform.fluidstack.io"
CONFIGURATIONS_URL = API_BASE + "/list_available_configurations"

#: Nominal per-GPU memory at the end of a ``gpu_type`` (``RTX_A6000_48GB`` -> 48).
_MEMORY_IN_NAME = re.compile(r"_(\d+)GB$", re.IGNORECASE)


class FluidStackAdapter(Adapter):
    """FluidStack GPU types, one per-GPU-priced offer per count and region."""

    name: ClassVar[str] = "fluidstack"
    title: ClassVar[str] = "FluidStack"
    #: Where to rent: FluidStack's pricing page.
    pricing_url: ClassVar[str] = "https://www.fluidstack.io/pricing"
    source_url: ClassVar[str] = CONFIGURATIONS_URL
    credential_names: ClassVar[tuple[str, ...]] = ("fluidstack_api_key",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        headers = key_headers(self, "api-key", scheme="")
        url = self.url("/list_available_configurations")
        return [await self.get_json(client, url, headers=headers)]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return self.parse_records(
            payloads,
            _configurations,
            _parse_configuration,
            what="configuration",
            fetched_at=fetched_at,
        )


def _configurations(payload: Any) -> list[Any]:
    if isinstance(payload, Mapping):
        if "error" in payload or "detail" in payload:
            raise ProviderError(
                "fluidstack", f"API error: {payload.get('error') or payload.get('detail')!r}"
            )
        raise ResponseFormatError("fluidstack", "expected a JSON array of configurations")
    if not isinstance(payload, list):
        raise ResponseFormatError(
            "fluidstack", f"expected a JSON array, got {type(payload).__name__}"
        )
    return payload


def _parse_configuration(result: ParseResult, record: Mapping[str, Any]) -> None:
    gpu_type = text(record.get("gpu_type"))
    ref = f"fluidstack:gpu_type/{gpu_type or record.get('gpu_type')}"
    if gpu_type is None:
        result.skip("no gpu_type", ref)
        return
    price = positive_price(result, record.get("price_per_gpu_hr"), "price_per_gpu_hr", ref)
    if price is None:
        return
    listed_counts = record.get("gpu_counts")
    counts = (
        [c for c in map(whole_count, listed_counts) if c] if isinstance(listed_counts, list) else []
    )
    if not counts:
        result.skip(f"no usable gpu_counts ({record.get('gpu_counts')!r})", ref)
        return

    memory_gb = memory_gb_in_name(_MEMORY_IN_NAME, gpu_type)
    gpu = gpu_fields(gpu_type, memory_gb=memory_gb, name=gpu_type.replace("_", " "))
    listed = listed_regions(record.get("regions"), _country)
    for count in dict.fromkeys(counts):  # distinct, in order
        fields: OfferFields = {
            "offer_id": f"{gpu_type}x{count}",
            **gpu,
            "gpu_count": count,
            **price_fields(price, PriceBasis.GPU),
        }
        add_per_region(result, ref, fields, listed)


def _country(region: str) -> str | None:
    """ISO country from the first word of a region (``norway_4_eu`` -> ``NO``), else its
    last (``TEXAS_USA`` -> ``US``, as FluidStack's API documents its US regions), if
    ``data/region_countries.csv`` knows it."""
    words = region.lower().split("_")
    countries = region_countries("fluidstack")
    return countries.get(words[0]) or countries.get(words[-1])
