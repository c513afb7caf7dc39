"""Verda (formerly DataCrunch): on-demand and spot GPU instances.

API (base ``https://api.verda.com/v1``; legacy ``https://api.datacrunch.io/v1``), as used by
the official Python SDK (DataCrunch-io/datacrunch-python, ``verda`` package):

* ``POST /oauth2/token`` with ``{"grant_type": "client_credentials", "client_id",
  "client_secret"}`` → ``{"access_token", "token_type": "Bearer", "expires_in", ...}``;
* ``GET /instance-types`` → a JSON array of instance types. ``price_per_hour`` and
  ``spot_price`` are decimal **strings** for the **whole instance** per hour in ``currency``
  (lower-case, "usd"); ``gpu_memory.size_in_gigabytes`` is the instance's **total** VRAM;
* ``GET /locations`` → ``[{"code": "FIN-01", "name", "country_code": "FI"}]``;
* ``GET /instance-availability?isSpot=true|false`` → ``[{"location_code", "availabilities":
  ["1H100.80S.30V", ...]}]``: where each type can be deployed now, per rental kind.

Prices do not vary by location. An availability response does not say which query it
answers, so :meth:`VerdaAdapter.fetch` records it as ``{"is_spot": bool, "availabilities":
<the response>}``; recorded files are decoded the same way, ``is_spot`` taken from the file
name ("spot" / "ondemand"). Per term we emit one offer per location listing the type
(``available_now=True``); a type listed nowhere gets one region-less offer with
``available_now=False``, or ``None`` when that term's availability was not fetched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import Adapter, ParseResult, ResponseFormatError, gpu_fields, price_fields
from .schema import OfferFields, PriceBasis, RentalTerm, StorageType
from .skip_summary import NO_GPU
from .units import nominal_gpu_memory_gb, strings, to_decimal, to_float, value_at

__all__ = ["VerdaAdapter"]

API_BASE = "https://api.verda.com/v1"


# "1x H100 SXM5 80GB", "8x NVidia Tesla V100": the count prefix is not part of the GPU name.
_COUNT_PREFIX = re.compile(r"^\s*\d+\s*x\s*", re.IGNORECASE)


class VerdaAdapter(Adapter):
    """Verda instance types, priced on demand and spot, placed by current availability."""

    name = "verda"
    title = "Verda (formerly DataCrunch)"
    #: Where to rent: Verda's pricing page.
    pricing_url: ClassVar[str] = "https://verda.com/pricing"
    source_url = API_BASE
    credential_names = ("verda_client_id", "verda_client_secret")
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        creds = self.require_credentials()
        token = await self.post_json(
            client,
            self.url("/oauth2/token"),
            json={
                "grant_type": "client_credentials",
                "client_id": creds["verda_client_id"],
                "client_secret": creds["verda_client_secret"],
            },
        )
        access = token.get("access_token") if isinstance(token, Mapping) else None
        if not isinstance(access, str) or not access:
            raise ResponseFormatError(self.name, "token response has no 'access_token'")
        headers = {"Authorization": f"Bearer {access}"}

        async def get(path: str, **params: str) -> Any:
            return await self.get_json(
                client, self.url(path), headers=headers, params=params or None
            )

        payloads: list[Any] = [await get("/instance-types"), await get("/locations")]
        for is_spot in (False, True):
            raw = await get("/instance-availability", isSpot=str(is_spot).lower())
            payloads.append({"is_spot": is_spot, "availabilities": raw})
        return payloads

    def decode(self, data: bytes, filename: str) -> Any:
        """JSON; an availability file is wrapped with ``is_spot`` read from its name."""
        payload = super().decode(data, filename)
        if _kind(payload) != "availability_raw":
            return payload
        lowered = filename.lower().replace("-", "_")
        if "spot" in lowered:
            return {"is_spot": True, "availabilities": payload}
        if "ondemand" in lowered or "on_demand" in lowered:
            return {"is_spot": False, "availabilities": payload}
        raise ResponseFormatError(
            self.name, f"{filename}: availability file name must say 'spot' or 'ondemand'"
        )

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        types: list[Any] = []
        countries: dict[str, str] = {}
        where: dict[bool, dict[str, list[str]]] = {}
        for payload in payloads:
            match _kind(payload):
                case "instance_types":
                    types.extend(payload)
                case "locations":
                    countries.update(
                        (str(loc["code"]), str(loc["country_code"]))
                        for loc in payload
                        if isinstance(loc, Mapping) and loc.get("code") and loc.get("country_code")
                    )
                case "availability":
                    where[bool(payload["is_spot"])] = _locations_by_type(payload)
                case _:
                    raise ResponseFormatError(
                        self.name, f"unrecognised payload: {json.dumps(payload, default=str)[:120]}"
                    )
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        for record in types:
            _parse_type(result, record, countries, where)
        return result


def _kind(payload: Any) -> str | None:
    """Which response this is, told from its content (an empty list reads as no types)."""
    if isinstance(payload, Mapping):
        if "is_spot" in payload and isinstance(payload.get("availabilities"), list):
            return "availability"
        return None
    if not isinstance(payload, list):
        return None
    first = next((p for p in payload if isinstance(p, Mapping)), None)
    if first is None:
        return "instance_types" if not payload else None
    if "location_code" in first:
        return "availability_raw"
    if "country_code" in first and "code" in first:
        return "locations"
    if "instance_type" in first:
        return "instance_types"
    return None


def _locations_by_type(payload: Mapping[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for entry in payload["availabilities"]:
        if not isinstance(entry, Mapping) or not entry.get("location_code"):
            continue
        for type_name in entry.get("availabilities") or []:
            out.setdefault(str(type_name), []).append(str(entry["location_code"]))
    return out


def _parse_type(
    result: ParseResult,
    record: Any,
    countries: Mapping[str, str],
    where: Mapping[bool, Mapping[str, list[str]]],
) -> None:
    if not isinstance(record, Mapping) or not record.get("instance_type"):
        result.skip("instance type record without 'instance_type'", None)
        return
    type_name = str(record["instance_type"])
    ref = f"verda:instance-type/{type_name}"
    try:
        gpu_count = int(to_float(value_at(record, "gpu", "number_of_gpus")) or 0)
        base = _base_fields(record, gpu_count)
        prices = {
            RentalTerm.ON_DEMAND: to_decimal(record.get("price_per_hour")),
            RentalTerm.INTERRUPTIBLE: to_decimal(record.get("spot_price")),
        }
    except ValueError as exc:
        result.skip(f"bad number: {exc}", ref)
        return
    if gpu_count <= 0:
        result.skip(NO_GPU, ref)
        return
    currency = str(record.get("currency") or "").strip().upper()
    if not currency:
        result.skip("no currency", ref)
        return
    on_demand = prices[RentalTerm.ON_DEMAND]
    for term, price in prices.items():
        if price is None or price <= 0:
            result.skip(f"no usable {term.value} price: {price}", ref)
            continue
        if term is RentalTerm.INTERRUPTIBLE and on_demand is not None and price >= on_demand:
            result.skip("spot price not below on-demand: no spot discount published", ref)
            continue
        fields = base | price_fields(price, PriceBasis.INSTANCE, term, currency=currency)
        available = where.get(term is RentalTerm.INTERRUPTIBLE)
        locations = (available or {}).get(type_name, [])
        if not locations:
            result.add(ref, **(fields | {"available_now": None if available is None else False}))
        for code in locations:
            place: OfferFields = {"region": code, "country": countries.get(code)}
            result.add(ref, **(fields | place | {"available_now": True}))


def _base_fields(record: Mapping[str, Any], gpu_count: int) -> OfferFields:
    """Hardware fields shared by every term and location of one instance type."""
    # the local disk's kind ("225GB NVME"); "dynamic" (attach volumes) says nothing
    disk = str(value_at(record, "storage", "description") or "").upper()
    disk_type = StorageType.NVME if "NVME" in disk else StorageType.SSD if "SSD" in disk else None
    total_vram_gb = to_float(value_at(record, "gpu_memory", "size_in_gigabytes"))
    per_gpu_gb = (
        nominal_gpu_memory_gb(total_vram_gb / gpu_count)
        if total_vram_gb and gpu_count > 0
        else None
    )
    raw_gpu = _COUNT_PREFIX.sub("", str(value_at(record, "gpu", "description") or "")).strip()
    return gpu_fields(raw_gpu, memory_gb=per_gpu_gb) | {
        "offer_id": str(record["instance_type"]),
        "instance_name": record.get("name") or None,
        "gpu_count": gpu_count,
        "vcpus": to_float(value_at(record, "cpu", "number_of_cores")) or None,
        "ram_gb": to_float(value_at(record, "memory", "size_in_gigabytes")) or None,
        "storage_gb": to_float(value_at(record, "storage", "size_in_gigabytes")),
        "storage_type": disk_type,
        "os_images": strings(record.get("supported_os")),
    }
