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

The OS images come from ``GET /api/v1/images`` (spec operation ``listImages``: ``{"data":
[Image...]}``, each image with ``name``, ``family``, ``version``, ``architecture`` and the
``region`` it is in; "Retrieves a list of available images by region"). An offer in a
region carries the names of that region's images (``os_images``: "Ubuntu 22.04.5 LTS",
"Lambda Stack 22.04", ...). Instance types do not state their CPU architecture, so a
region whose images are of several architectures leaves ``os_images`` unknown rather than
list images the instance may not boot; so does a region-less (sold-out) offer. A failed
images call does not fail the prices: it is a skipped record and the images stay unknown.
Lambda's image descriptions say "ML frameworks" without naming them: ``frameworks`` stays
``None``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    FailedCall,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    add_per_region,
    failed_calls_payload,
    gpu_fields,
    key_headers,
    positive_price,
    price_fields,
)
from .schema import OfferFields, PriceBasis
from .skip_summary import NO_GPU
from .tables import region_countries
from .units import cents_to_units, gib_to_gb, nominal_gpu_memory_gb, text, to_float, value_at

__all__ = ["IMAGES_URL", "LambdaAdapter"]

API_BASE = "https://cloud.lambda.ai/api/v1"
API_URL = API_BASE + "/instance-types"
IMAGES_URL = API_BASE + "/images"

# "H100 (80 GB SXM5)", "A10 (24 GB PCIe)", "Tesla V100 (16 GB)", "GH200 (96 GB)"
_GPU_DESCRIPTION = re.compile(r"^\s*(?P<name>.+?)\s*\((?P<gb>\d+(?:\.\d+)?)\s*GB\s*(?P<ff>[^)]*)\)")


class LambdaAdapter(Adapter):
    """Lambda Cloud instance types with their current regional capacity."""

    name: ClassVar[str] = "lambda"
    title: ClassVar[str] = "Lambda"
    #: Where to rent: Lambda's console, where "Launch instance" starts (Lambda's docs:
    #: cloud.lambda.ai/instances).
    rent_url: ClassVar[str] = "https://cloud.lambda.ai/instances"
    pricing_url: ClassVar[str] = "https://lambda.ai/pricing"
    source_url: ClassVar[str] = API_URL
    credential_names: ClassVar[tuple[str, ...]] = ("lambda_api_key",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """The instance types, then the images (whose failure is only a skipped record)."""
        headers = key_headers(self)
        types = await self.get_json(client, self.url("/instance-types"), headers=headers)
        try:
            images = await self.get_json(client, self.url("/images"), headers=headers)
        except ProviderError as exc:
            return [types, failed_calls_payload([FailedCall("lambda:images", exc.reason)])]
        return [types, images]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        images: dict[str, tuple[str, ...] | None] = {}
        types: list[Mapping[str, Any]] = []
        payloads, failed = self.split_failed_calls(payloads)
        result.skip_failed(failed)
        for payload in payloads:
            if isinstance(payload, Mapping) and isinstance(payload.get("data"), list):
                # a listImages answer: its ``data`` is a list (instance types are an object)
                images.update(_region_images(payload, result))
            else:
                types.append(_instance_types(payload))
        for data in types:
            for type_name, item in data.items():
                _parse_item(result, str(type_name), item, images)
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


def _region_images(
    payload: Mapping[str, Any], result: ParseResult
) -> dict[str, tuple[str, ...] | None]:
    """Each region's image names, sorted and once each; ``None`` for a region with images
    of several architectures (which of them an instance boots is not stated)."""
    names: dict[str, set[str]] = {}
    arches: dict[str, set[str]] = {}
    for image in payload["data"]:
        if not isinstance(image, Mapping):
            raise ResponseFormatError("lambda", f"an image is not an object: {image!r:.80}")
        name, region_name = text(image.get("name")), text(value_at(image, "region", "name"))
        if name is None or region_name is None:
            result.skip("image without a name or region", "lambda:images")
            continue
        names.setdefault(region_name, set()).add(name)
        arches.setdefault(region_name, set()).add(str(image.get("architecture")))
    return {
        region: tuple(sorted(found)) if len(arches[region]) == 1 else None
        for region, found in names.items()
    }


def _parse_item(
    result: ParseResult,
    type_name: str,
    item: Any,
    images: Mapping[str, tuple[str, ...] | None],
) -> None:
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
        result.skip(NO_GPU, ref)
        return
    cents = itype.get("price_cents_per_hour")
    usd_per_hour = positive_price(
        result, cents, "price_cents_per_hour", ref, convert=cents_to_units
    )
    if usd_per_hour is None:
        return

    fields: OfferFields = {
        "offer_id": str(itype.get("name") or type_name),
        "instance_name": text(itype.get("description")),
        **_gpu_fields(str(itype.get("gpu_description") or "")),
        "gpu_count": gpu_count,
        "vcpus": vcpus or None,
        "ram_gb": gib_to_gb(memory_gib) if memory_gib else None,
        "storage_gb": gib_to_gb(storage_gib) if storage_gib is not None else None,
        **price_fields(usd_per_hour, PriceBasis.INSTANCE),
    }
    regions = item.get("regions_with_capacity_available")
    listed: list[OfferFields] = [
        {
            "region": str(r.get("name") or "") or None,
            "country": _country(r.get("description")),
            "available_now": True,
            "os_images": images.get(str(r.get("name") or "")),
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
    fields = gpu_fields(raw, memory_gb=memory_gb, form_factor=form_hint)
    if fields["gpu_model"] is None and match:
        fields = gpu_fields(raw, memory_gb=memory_gb, form_factor=form_hint, name=match["name"])
    return fields


def _country(description: Any) -> str | None:
    """ISO code from the last comma-separated part of a region description, if known."""
    last = (text(description) or "").rsplit(",", 1)[-1].strip()
    return region_countries("lambda").get(last)
