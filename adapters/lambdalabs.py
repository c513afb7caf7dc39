"""Lambda (Lambda Cloud, lambda.ai): on-demand GPU instances.

API: ``GET https://cloud.lambda.ai/api/v1/instance-types`` (Lambda Cloud API spec v1.8.3,
operation ``listInstanceTypes``). Auth: the API key as ``Authorization: Bearer <key>``; the
spec also allows HTTP Basic with the key as user name. One response, no pagination::

    {"data": {"<instance type name>": {
        "instance_type": {"name", "description", "gpu_description", "price_cents_per_hour",
                          "specs": {"vcpus", "memory_gib", "storage_gib", "gpus"}},
        "regions_with_capacity_available": [
            {"name": "us-east-1", "description": "Virginia, USA"}]}}}

``price_cents_per_hour`` is an integer in US cents per hour for the whole instance (all its
GPUs). Lambda publishes one on-demand price per type, the same in every region; there is no
spot or reserved price in the API. ``regions_with_capacity_available`` lists where the type
can be launched right now: we emit one offer per such region (``available_now=True``; the
country from the description's last part, ``data/region_countries.csv``), and one
region-less offer with ``available_now=False`` for a type sold out everywhere.
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
    key_headers,
    positive_price,
)
from .gpus import resolve_gpu_name, spec_fields
from .schema import OfferFields, PriceBasis, PriceUnit, RentalTerm
from .tables import region_countries
from .units import cents_to_units, gib_to_gb, nominal_gpu_memory_gb, text, to_float

__all__ = ["LambdaAdapter"]

API_BASE = "https://cloud.lambda.ai/api/v1"
API_URL = API_BASE + "/instance-types"

# "H100 (80 GB SXM5)", "A10 (24 GB PCIe)", "Tesla V100 (16 GB)", "GH200 (96 GB)"
_GPU_DESCRIPTION = re.compile(r"^\s*(?P<name>.+?)\s*\((?P<gb>\d+(?:\.\d+)?)\s*GB\s*(?P<ff>[^)]*)\)")


class LambdaAdapter(Adapter):
    """Lambda Cloud instance types with their current regional capacity."""

    name: ClassVar[str] = "lambda"
    title: ClassVar[str] = "Lambda"
    source_url: ClassVar[str] = API_URL
    credential_names: ClassVar[tuple[str, ...]] = ("lambda_api_key",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        return [await self.get_json(client, self.url("/instance-types"), headers=key_headers(self))]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult()
        for payload in payloads:
            for type_name, item in _instance_types(payload).items():
                _parse_item(result, str(type_name), item, fetched_at)
        return result


def _instance_types(payload: Any) -> Mapping[str, Any]:
    """The ``data`` map of one response; a Lambda error envelope is a provider error."""
    if not isinstance(payload, Mapping):
        raise ResponseFormatError("lambda", f"expected a JSON object, got {type(payload).__name__}")
    if "error" in payload and "data" not in payload:
        error = payload["error"]
        detail = error.get("message", error) if isinstance(error, Mapping) else error
        raise ProviderError("lambda", f"API error: {detail}")
    data = payload.get("data")
    if not isinstance(data, Mapping):
        raise ResponseFormatError("lambda", "'data' is missing or not an object of instance types")
    return data


def _parse_item(result: ParseResult, type_name: str, item: Any, fetched_at: datetime) -> None:
    ref = f"lambda:instance-type/{type_name}"
    if not isinstance(item, Mapping) or not isinstance(item.get("instance_type"), Mapping):
        result.skip("record has no 'instance_type' object", ref)
        return
    itype: Mapping[str, Any] = item["instance_type"]
    specs = itype.get("specs")
    if not isinstance(specs, Mapping):
        result.skip("instance type has no 'specs'", ref)
        return
    try:
        gpu_count = int(to_float(specs.get("gpus")) or 0)
        vcpus = to_float(specs.get("vcpus"))
        memory_gib = to_float(specs.get("memory_gib"))
        storage_gib = to_float(specs.get("storage_gib"))
    except ValueError as exc:
        result.skip(f"bad number: {exc}", ref)
        return
    if gpu_count <= 0:
        result.skip("no GPU (CPU-only instance type)", ref)
        return
    cents = itype.get("price_cents_per_hour")
    usd_per_hour = positive_price(
        result, cents, "price_cents_per_hour", ref, convert=cents_to_units
    )
    if usd_per_hour is None:
        return

    fields: OfferFields = {
        "provider": "lambda",
        "offer_id": str(itype.get("name") or type_name),
        "instance_name": text(itype.get("description")),
        "fetched_at": fetched_at,
        "raw_ref": ref,
        **_gpu_fields(str(itype.get("gpu_description") or "")),
        "gpu_count": gpu_count,
        "vcpus": vcpus or None,
        "ram_gb": gib_to_gb(memory_gib) if memory_gib else None,
        "storage_gb": gib_to_gb(storage_gib) if storage_gib is not None else None,
        "price_amount": usd_per_hour,
        "price_currency": "USD",
        "price_unit": PriceUnit.HOUR,
        "price_basis": PriceBasis.INSTANCE,
        "term": RentalTerm.ON_DEMAND,
    }
    regions = item.get("regions_with_capacity_available")
    listed: list[OfferFields] = [
        {
            "region": str(r.get("name") or "") or None,
            "country": _country(r.get("description")),
            "available_now": True,
        }
        for r in (regions if isinstance(regions, list) else [])
        if isinstance(r, Mapping)
    ]
    add_per_region(result, ref, fields, listed)


def _gpu_fields(gpu_description: str) -> OfferFields:
    """GPU model, memory and form factor from Lambda's ``gpu_description``.

    The memory in the parentheses is the nominal per-GPU figure ("80 GB"); the word after
    it (SXM5, SXM4, PCIe), when present, is the form factor.
    """
    raw = gpu_description.strip()
    match = _GPU_DESCRIPTION.match(raw)
    memory_gb = nominal_gpu_memory_gb(float(match["gb"])) if match else None
    words = match["ff"].lower() if match else ""
    form_hint = "sxm" if "sxm" in words else "pcie" if "pcie" in words else None
    spec = resolve_gpu_name(raw, memory_gb=memory_gb, form_factor=form_hint) if raw else None
    if spec is None and match:
        spec = resolve_gpu_name(match["name"], memory_gb=memory_gb, form_factor=form_hint)
    return {"gpu_raw_name": raw or None, "gpu_memory_gb": memory_gb, **spec_fields(spec)}


def _country(description: Any) -> str | None:
    """ISO code from the last comma-separated part of a region description, if known."""
    last = (text(description) or "").rsplit(",", 1)[-1].strip()
    return region_countries("lambda").get(last)


ADAPTER = LambdaAdapter
