"""优云智算 (UCloud CompShare): GPU instance prices by the hour, day and month, and spot.

Source: CompShare's GPU API documentation (https://www.compshare.cn/docs/gpus/..., the
pages mirrored in BennielAllan/compshare-docs @ ad2bf8f8f1e11f8521002131eea6a16c61c2413e,
2026-06-26: pages/gpus/instance/*.md). The API is UCloud's: ``POST https://api.compshare.cn``
with the parameters form-encoded, ``Action`` naming the call, signed with the account's key
pair (settings ``compshare_public_key`` / ``compshare_private_key``; :func:`signature`, the
algorithm of https://docs.ucloud.cn/api/summary/signature). Answers carry ``RetCode`` (0 is
success) and ``Message``. Calls:

* ``DescribeCompShareSupportZone`` (``Region``): every zone, ``ZoneInfo[]`` of
  ``{"Region", "Zone", "Describe"}`` ("华北二A");
* ``DescribeAvailableCompShareInstanceTypes`` (``Region``, ``Zone``):
  ``AvailableInstanceTypes[]``: ``Name`` (the GPU type: ``4090``, ``4090_48G``, ``A800``,
  ``H20``...), ``Status`` (``Normal`` / ``SoldOut``), ``GraphicsMemory.Value`` (GB per GPU),
  ``MachineSizes[]`` of ``{"Gpu": n, "Collection": [{"Cpu", "Memory": [GB...]}]}``;
* ``GetCompShareInstancePrice`` (``Region``, ``Zone``, ``GpuType``, ``Gpu``, ``Cpu``,
  ``Memory`` in MB; no ``ChargeType``: "不传则同时返回所有模式的价格", every billing mode at
  once): ``ListPriceDetails[]`` (目录价, the list price), ``PriceDetails[]`` (折后价, what the
  account is quoted), each ``{"ChargeType", "Instance"}`` with ``Instance`` the price of CPU,
  memory and GPUs in yuan, for one period of the mode.

:meth:`CompShareAdapter.fetch` asks the price of each GPU type, GPU count and the first
CPU/memory combination the type lists for it (the smallest), and keeps each price answer with
the parameters it was asked with, ``{"request": {...}, "response": {...}}`` (the answer does
not repeat them): gpuscout's own pairing, replayed as it is.

Billing modes (计费方式说明, pages/operation/charge/billdescribe.md): ``Postpay`` is pay as you
go, "按照小时计费的后付费模式，秒级计费" (per second, settled by the hour) -> on demand, per
hour; ``Day`` and ``Month`` are prepaid days and months (包日, 包月) -> ``commit_1d`` /
``commit_1mo``; ``Spot`` -> interruptible, per hour. ``Dynamic`` is not described there and is
left out. Disks are priced apart and not included. Prices are per instance, in CNY.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import (
    ACCOUNT_PRICE_VARIANT,
    Adapter,
    ParseResult,
    ResponseFormatError,
    gpu_fields,
    price_fields,
)
from .schema import OfferFields, PriceBasis, PriceUnit, RentalTerm
from .units import lenient_decimal, text, value_at, whole_count

__all__ = ["CHARGE_TYPES", "CompShareAdapter", "signature", "signed_params"]

API_BASE = "https://api.compshare.cn"
#: The region the zone list is asked in (the documented example's; the answer lists all).
ZONE_LIST_REGION = "cn-wlcb"
#: Price calls under way at once.
CONCURRENT_REQUESTS = 4

#: ChargeType -> (term, price unit, prepaid, billing increment in seconds or None).
CHARGE_TYPES: dict[str, tuple[RentalTerm, PriceUnit, bool, int | None]] = {
    "Postpay": (RentalTerm.ON_DEMAND, PriceUnit.HOUR, False, 1),
    "Spot": (RentalTerm.INTERRUPTIBLE, PriceUnit.HOUR, False, None),
    "Day": (RentalTerm.COMMIT_1D, PriceUnit.DAY, True, None),
    "Month": (RentalTerm.COMMIT_1MO, PriceUnit.MONTH, True, None),
}


def _encoded(value: Any) -> str:
    """A parameter as UCloud signs it: booleans ``true``/``false``, ``42.0`` as ``42``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def signature(params: Mapping[str, Any], private_key: str) -> str:
    """UCloud's request signature: SHA1 of every parameter, sorted by name, as name + value
    with nothing between, then the private key.

    >>> signature({"Action": "DescribeUHostInstance", "Region": "cn-bj2", "Limit": 10,
    ...            "PublicKey": "ucloudsomeone@example.com1296235120854146120"},
    ...           "46f09bb9fab4f12dfc160dae12273d5332b5debe")
    'cba5cf5ec4d4233d206b1b54951e3787350a642f'
    """
    signed = "".join(f"{name}{_encoded(params[name])}" for name in sorted(params))
    return hashlib.sha1((signed + private_key).encode("utf-8")).hexdigest()


def signed_params(params: Mapping[str, Any], public_key: str, private_key: str) -> dict[str, str]:
    """``params`` with ``PublicKey`` and their ``Signature``, encoded for the form body."""
    with_key = {**params, "PublicKey": public_key}
    return {
        **{k: _encoded(v) for k, v in with_key.items()},
        "Signature": signature(with_key, private_key),
    }


def _answer(payload: Any, action: str) -> Mapping[str, Any]:
    """A successful answer to ``action``; ``RetCode`` other than 0 names the API's error."""
    if not isinstance(payload, Mapping):
        raise ResponseFormatError(
            "compshare", f"{action}: expected a JSON object, got {type(payload).__name__}"
        )
    code = payload.get("RetCode")
    if code != 0:
        message = text(payload.get("Message")) or ""
        raise ResponseFormatError("compshare", f"{action}: RetCode {code!r} {message}".strip())
    return payload


class CompShareAdapter(Adapter):
    name = "compshare"
    title = "优云智算 UCloud CompShare"
    #: Where to rent: the platform's own address (www.compshare.cn).
    pricing_url: ClassVar[str] = "https://www.compshare.cn/"
    source_url = "https://www.compshare.cn/docs/gpus/instance/getcompshareinstanceprice"
    credential_names = ("compshare_public_key", "compshare_private_key")
    base_url = API_BASE

    async def _call(self, client: httpx.AsyncClient, params: Mapping[str, Any]) -> Any:
        keys = self.require_credentials()
        form = signed_params(params, keys["compshare_public_key"], keys["compshare_private_key"])
        answer = await self.post_json(client, self.url("/"), data=form)
        return _answer(answer, str(params["Action"]))

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        zones_answer = await self._call(
            client, {"Action": "DescribeCompShareSupportZone", "Region": ZONE_LIST_REGION}
        )
        zones = [
            (z["Region"], z["Zone"])
            for z in zones_answer.get("ZoneInfo") or []
            if isinstance(z, Mapping) and text(z.get("Region")) and text(z.get("Zone"))
        ]
        types_answers = [
            await self._call(
                client,
                {"Action": "DescribeAvailableCompShareInstanceTypes", "Region": r, "Zone": z},
            )
            for r, z in zones
        ]
        asks = [
            ask
            for (region, zone), answer in zip(zones, types_answers, strict=True)
            for ask in price_requests(region, zone, answer)
        ]
        limit = asyncio.Semaphore(CONCURRENT_REQUESTS)

        async def priced(ask: dict[str, Any]) -> dict[str, Any]:
            async with limit:
                response = await self._call(client, {"Action": "GetCompShareInstancePrice", **ask})
            return {"request": ask, "response": response}

        prices = await asyncio.gather(*(priced(ask) for ask in asks))
        return [zones_answer, *types_answers, *prices]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        types: dict[tuple[str, str], Mapping[str, Any]] = {}
        zone_names: dict[str, str] = {}
        priced: list[Mapping[str, Any]] = []
        for payload in payloads:
            if isinstance(payload, Mapping) and "request" in payload:
                priced.append(payload)
                continue
            answer = _answer(payload, str(value_at(payload, "Action") or "answer"))
            for zone in answer.get("ZoneInfo") or []:
                if isinstance(zone, Mapping) and text(zone.get("Zone")):
                    zone_names[zone["Zone"]] = text(zone.get("Describe")) or zone["Zone"]
            listed = answer.get("AvailableInstanceTypes")
            if listed is not None and not isinstance(listed, list):
                raise ResponseFormatError(self.name, "AvailableInstanceTypes is not a list")
            for kind in listed or []:
                if isinstance(kind, Mapping) and text(kind.get("Name")) and text(kind.get("Zone")):
                    types[(kind["Zone"], kind["Name"])] = kind
        if not types and not priced:
            raise ResponseFormatError(self.name, "no instance types and no prices in the answers")
        for entry in priced:
            _add_prices(result, entry, types, zone_names)
        return result


def price_requests(region: str, zone: str, answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The price asks for one zone's instance types: per type and GPU count, the first
    CPU/memory combination listed (memory in MB, as the price call takes it)."""
    asks = []
    for kind in answer.get("AvailableInstanceTypes") or []:
        name = text(value_at(kind, "Name"))
        if name is None:
            continue
        for size in value_at(kind, "MachineSizes") or []:
            gpus = whole_count(value_at(size, "Gpu"))
            combos = value_at(size, "Collection")
            if gpus is None or not isinstance(combos, list) or not combos:
                continue
            cpu = whole_count(value_at(combos[0], "Cpu"))
            memories = value_at(combos[0], "Memory")
            memory_gb = (
                whole_count(memories[0]) if isinstance(memories, list) and memories else None
            )
            if cpu is None or memory_gb is None:
                continue
            asks.append(
                {
                    "Region": region,
                    "Zone": zone,
                    "GpuType": name,
                    "Gpu": gpus,
                    "Cpu": cpu,
                    "Memory": memory_gb * 1024,
                }
            )
    return asks


def _add_prices(
    result: ParseResult,
    entry: Mapping[str, Any],
    types: Mapping[tuple[str, str], Mapping[str, Any]],
    zone_names: Mapping[str, str],
) -> None:
    ask = entry.get("request")
    ref = f"compshare:{value_at(ask, 'Zone')}/{value_at(ask, 'GpuType')}/{value_at(ask, 'Gpu')}x"
    if not isinstance(ask, Mapping):
        result.skip("price answer without its request", ref)
        return
    answer = _answer(entry.get("response"), "GetCompShareInstancePrice")
    zone, gpu_type = text(ask.get("Zone")), text(ask.get("GpuType"))
    gpus, cpu, memory_mb = (whole_count(ask.get(k)) for k in ("Gpu", "Cpu", "Memory"))
    if zone is None or gpu_type is None or gpus is None:
        result.skip("price request without Zone, GpuType or Gpu", ref)
        return
    kind = types.get((zone, gpu_type), {})
    memory = value_at(kind, "GraphicsMemory", "Value")
    memory_gb = float(memory) if isinstance(memory, int | float) and memory > 0 else None
    # "4090_48G" is the 48 GB RTX 4090; the catalog reads "4090 48G"
    gpu = gpu_fields(gpu_type, memory_gb=memory_gb, name=gpu_type.replace("_", " "))
    status = text(kind.get("Status"))
    base: OfferFields = {
        "offer_id": f"{zone}:{gpu_type}:{gpus}x",
        "instance_name": f"{gpus}x {gpu_type} ({zone_names.get(zone, zone)})",
        "region": text(ask.get("Region")),
        "country": "CN",
        **gpu,
        "gpu_count": gpus,
        "vcpus": cpu,
        "ram_gb": memory_mb / 1024 if memory_mb else None,
        "available_now": {"Normal": True, "SoldOut": False}.get(status or ""),
    }
    listed = _by_charge_type(answer.get("ListPriceDetails"))
    quoted = _by_charge_type(answer.get("PriceDetails"))
    if not listed and not quoted:
        result.skip("no positive Instance price in ListPriceDetails or PriceDetails", ref)
        return
    for charge_type, (term, unit, prepaid, increment) in CHARGE_TYPES.items():
        list_price, account_price = listed.get(charge_type), quoted.get(charge_type)
        fields: OfferFields = {**base, "prepaid": prepaid, "billing_increment_s": increment}
        first = list_price or account_price
        if first is not None:
            listed_offer: OfferFields = {
                **fields,
                **price_fields(first, PriceBasis.INSTANCE, term, unit=unit, currency="CNY"),
            }
            result.add(ref, **listed_offer)
        if list_price is not None and account_price is not None and account_price != list_price:
            quoted_offer: OfferFields = {
                **fields,
                "term_variant": ACCOUNT_PRICE_VARIANT,
                **price_fields(account_price, PriceBasis.INSTANCE, term, unit=unit, currency="CNY"),
            }
            result.add(ref, **quoted_offer)


def _by_charge_type(details: Any) -> dict[str, Decimal]:
    """``{"Month": 1068.00, ...}`` of a price list: each detail's positive ``Instance`` price
    (a float in the JSON, kept as the decimal it is written as); anything else is no price."""
    out: dict[str, Decimal] = {}
    for detail in details if isinstance(details, list) else []:
        charge_type = text(value_at(detail, "ChargeType"))
        price = lenient_decimal(value_at(detail, "Instance"))
        if charge_type and price is not None and price > 0:
            out.setdefault(charge_type, price)
    return out
