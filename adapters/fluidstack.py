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
and stay empty. Each GPU type x count x region is one on-demand offer; an empty ``regions``
list means the type is not available now: one region-less offer per count with
``available_now=False``. FluidStack also runs a newer API (``api.fluidstack.io/v1``) whose
price format is not recorded here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import (
    MIN_USD_PER_GPU_HOUR,
    Adapter,
    ParseResult,
    ProviderError,
    ResponseFormatError,
)
from .gpus import resolve_gpu_name, spec_fields
from .schema import PriceBasis, PriceUnit, RentalTerm
from .units import nominal_gpu_memory_gb, to_decimal, to_float

__all__ = ["CONFIGURATIONS_URL", "FluidStackAdapter"]

CONFIGURATIONS_URL = "https://platform.fluidstack.io/list_available_configurations"

#: Per-GPU memory at the end of a ``gpu_type`` (``H100_SXM5_80GB``).
_MEMORY_IN_NAME = re.compile(r"_(\d+)GB$", re.IGNORECASE)
#: Country word at the start of a FluidStack region (``norway_4_eu``).
_REGION_COUNTRY: Mapping[str, str] = {
    "norway": "NO",
    "iceland": "IS",
    "canada": "CA",
    "usa": "US",
    "us": "US",
    "germany": "DE",
    "finland": "FI",
    "sweden": "SE",
    "france": "FR",
    "netherlands": "NL",
    "uk": "GB",
    "india": "IN",
    "japan": "JP",
}


class FluidStackAdapter(Adapter):
    """FluidStack GPU types, one per-GPU-priced offer per count and region."""

    name: ClassVar[str] = "fluidstack"
    title: ClassVar[str] = "FluidStack"
    source_url: ClassVar[str] = CONFIGURATIONS_URL
    credential_names: ClassVar[tuple[str, ...]] = ("fluidstack_api_key",)

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        key = self.require_credentials()["fluidstack_api_key"]
        payload = await self.get_json(
            client, CONFIGURATIONS_URL, headers={"api-key": key, "Accept": "application/json"}
        )
        return [payload]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult()
        seen: set[str] = set()
        for payload in payloads:
            for record in _configurations(payload):
                _parse_configuration(result, record, seen, fetched_at)
        return result


ADAPTER = FluidStackAdapter


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


def _parse_configuration(
    result: ParseResult, record: Any, seen: set[str], fetched_at: datetime
) -> None:
    if not isinstance(record, Mapping):
        result.skip("configuration is not an object")
        return
    gpu_type = record.get("gpu_type")
    ref = f"fluidstack:gpu_type/{gpu_type}"
    if not isinstance(gpu_type, str) or not gpu_type.strip():
        result.skip("no gpu_type", ref)
        return
    gpu_type = gpu_type.strip()
    if gpu_type in seen:
        result.skip(f"duplicate gpu_type {gpu_type}", ref)
        return
    seen.add(gpu_type)
    try:
        price = to_decimal(record.get("price_per_gpu_hr"))
    except ValueError as exc:
        result.skip(f"bad price_per_gpu_hr: {exc}", ref)
        return
    if price is None or price <= 0:
        result.skip(f"no positive price_per_gpu_hr ({record.get('price_per_gpu_hr')!r})", ref)
        return
    if price < MIN_USD_PER_GPU_HOUR:
        result.skip(f"absurd price: {price} USD per GPU-hour", ref)
        return
    counts = _gpu_counts(record.get("gpu_counts"))
    if not counts:
        result.skip(f"no usable gpu_counts ({record.get('gpu_counts')!r})", ref)
        return

    memory_gb = _memory_gb(gpu_type)
    spec = resolve_gpu_name(gpu_type.replace("_", " "), memory_gb=memory_gb)
    regions = record.get("regions")
    regions = [r for r in regions if isinstance(r, str) and r] if isinstance(regions, list) else []
    base: dict[str, Any] = {
        "provider": "fluidstack",
        "fetched_at": fetched_at,
        "raw_ref": ref,
        "gpu_raw_name": gpu_type,
        **spec_fields(spec),
        "gpu_memory_gb": memory_gb,
        "price_amount": price,
        "price_currency": "USD",
        "price_unit": PriceUnit.HOUR,
        "price_basis": PriceBasis.GPU,
        "term": RentalTerm.ON_DEMAND,
    }
    for count in counts:
        fields = {**base, "offer_id": f"{gpu_type}x{count}", "gpu_count": count}
        if not regions:
            result.add(ref, **fields, available_now=False)
        for region in regions:
            result.add(ref, **fields, region=region, country=_country(region), available_now=True)


def _gpu_counts(value: Any) -> list[int]:
    """The distinct whole, positive GPU counts offered, in order; garbage entries dropped."""
    if not isinstance(value, list):
        return []
    counts: list[int] = []
    for item in value:
        try:
            number = to_float(item)
        except ValueError:
            continue
        if (
            number is not None
            and number >= 1
            and number == int(number)
            and int(number) not in counts
        ):
            counts.append(int(number))
    return counts


def _memory_gb(gpu_type: str) -> float | None:
    """Nominal per-GPU memory from the type name (``RTX_A6000_48GB`` -> 48), if present."""
    match = _MEMORY_IN_NAME.search(gpu_type)
    return nominal_gpu_memory_gb(float(match.group(1))) if match else None


def _country(region: str) -> str | None:
    """ISO country from the first word of a region (``norway_4_eu`` -> ``NO``), if known."""
    return _REGION_COUNTRY.get(region.split("_", 1)[0].lower())
