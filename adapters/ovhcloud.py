"""OVHcloud: Public Cloud GPU instances from the public order catalog (no account).

API: ``GET https://eu.api.ovh.com/v1/order/catalog/public/cloud?ovhSubsidiary=FR``, OVHcloud's
order catalog, public (listed among the ``/order/catalog/public/*`` operations of the OVHcloud
API, https://eu.api.ovh.com/console; read without credentials by OVHcloud's own manager,
ovh/manager ``getCloudCatalog``, and by the collectors named in ``tests/fixtures/ovhcloud``).
One JSON document: ``locale`` (``currencyCode``, ``subsidiary``, ``taxRate``) and ``addons``,
each instance flavour one addon per way of paying for it::

    {"planCode": "h100-380.consumption", "invoiceName": "h100-380",
     "product": "publiccloud-instance", "pricingType": "consumption",
     "pricings": [{"capacities": ["consumption"], "interval": 1, "intervalUnit": "hour",
                   "price": 280000000, "type": "consumption"}],
     "blobs": {"commercial": {"brick": "gpu"}, "tags": ["active"],
               "technical": {"cpu": {"cores": 30}, "memory": {"size": 380},
                             "gpu": {"model": "H100", "number": 1, "memory": {"size": 80}},
                             "storage": {"disks": [{"number": 1, "capacity": 200,
                                                    "technology": "NVMe"}]},
                             "os": {"family": "linux"}}}}

Units: ``price`` is in 10^-8 of the locale's currency (280000000 = 2.80 EUR), before tax (the
``taxRate`` is OVHcloud's, not added); ``memory.size`` and the GPU's ``memory.size`` are GB;
a disk's ``capacity`` is GB. Offers:

* ``<flavour>.consumption`` (``intervalUnit`` hour): the hourly, on-demand price, "billed for
  every commenced hour" (``billing_increment_s`` 3600);
* ``<flavour>.monthly.postpaid`` (``intervalUnit`` month): the monthly rate, "up to 50% less
  expensive compared to an hourly rate", "each month commenced will be billed" and no way
  back to hourly: a month's commitment (``commit_1mo``, priced per month);
* any other pricing (a ``.3AZ`` or local-zone variant, a setup fee) is not read.

(Billing as OVHcloud's guide "Public Cloud Instances - Switching from hourly to monthly
billing" states it, help.ovhcloud.com KB0050553, updated 2025-09-04.)

Only addons of ``product`` ``publiccloud-instance`` with a ``technical.gpu`` become offers, and
no Windows flavour (``win-``): its price carries a licence. The catalog names no region a
flavour is sold in: offers carry none, and no availability.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    ParseResult,
    ResponseFormatError,
    gpu_fields,
    price_fields,
    required_count,
)
from .schema import OfferFields, PriceBasis, PriceUnit, RentalTerm, StorageType
from .units import lenient_float, positive, text, to_decimal, value_at

__all__ = ["CATALOG_URL", "OvhCloudAdapter"]

API_BASE = "https://eu.api.ovh.com/v1"
CATALOG_PATH = "/order/catalog/public/cloud"
CATALOG_URL = API_BASE + CATALOG_PATH
#: The subsidiary asked: OVHcloud France, prices in euros.
SUBSIDIARY = "FR"
#: ``price`` counts this many units per unit of currency.
PRICE_UNITS_PER_CURRENCY = Decimal(10) ** 8

#: The plan-code suffixes read: the term, price unit, pricing interval and billing increment
#: (seconds; ``None`` for a commitment) of each.
PLANS: Mapping[str, tuple[RentalTerm, PriceUnit, str, int | None]] = {
    "consumption": (RentalTerm.ON_DEMAND, PriceUnit.HOUR, "hour", 3600),
    "monthly.postpaid": (RentalTerm.COMMIT_1MO, PriceUnit.MONTH, "month", None),
}

#: Disk technologies as the catalog writes them -> the schema's storage types.
_STORAGE = {"nvme": StorageType.NVME, "ssd": StorageType.SSD, "hdd": StorageType.HDD}


class OvhCloudAdapter(Adapter):
    """OVHcloud Public Cloud GPU flavours: hourly and monthly offers, priced per instance."""

    name: ClassVar[str] = "ovhcloud"
    title: ClassVar[str] = "OVHcloud"
    #: Where to rent: OVHcloud's Public Cloud prices page.
    pricing_url: ClassVar[str] = "https://www.ovhcloud.com/en/public-cloud/prices/"
    source_url: ClassVar[str] = f"{CATALOG_URL}?ovhSubsidiary={SUBSIDIARY}"
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        params = {"ovhSubsidiary": SUBSIDIARY}
        return [await self.get_json(client, self.url(CATALOG_PATH), params=params)]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        for payload in payloads:
            currency = text(value_at(payload, "locale", "currencyCode"))
            addons = value_at(payload, "addons")
            if currency is None or not isinstance(addons, list):
                raise ResponseFormatError(
                    self.name, "a catalog needs locale.currencyCode and an 'addons' list"
                )
            for addon in addons:
                if isinstance(addon, Mapping):
                    _parse_addon(result, addon, currency)
                else:
                    result.skip("addon is not an object")
        return result


# --- pure helpers ---------------------------------------------------------------------


def _parse_addon(result: ParseResult, addon: Mapping[str, Any], currency: str) -> None:
    """The offer of one GPU flavour's plan, if it is an hourly or monthly instance plan."""
    technical = value_at(addon, "blobs", "technical")
    gpu = value_at(technical, "gpu")
    plan = text(addon.get("planCode"))
    if addon.get("product") != "publiccloud-instance" or not isinstance(gpu, Mapping):
        return  # not a GPU instance: another product of the catalog
    flavour, _, kind = (plan or "").partition(".")
    ref = f"ovhcloud:{plan}"
    if kind not in PLANS or flavour.startswith("win-"):
        return  # another way of paying (3AZ, local zone) or a Windows licence: not read
    term, unit, interval, increment_s = PLANS[kind]
    gpu_count = required_count(result, gpu.get("number"), "technical.gpu.number", ref)
    price = _price(result, addon.get("pricings"), interval, ref)
    if gpu_count is None or price is None:
        return
    disks = value_at(technical, "storage", "disks")
    fields: OfferFields = {
        "offer_id": flavour,
        "instance_name": text(addon.get("invoiceName")) or flavour,
        **gpu_fields(
            text(gpu.get("model")),
            memory_gb=positive(lenient_float(value_at(gpu, "memory", "size"))),
        ),
        "gpu_count": gpu_count,
        "vcpus": positive(lenient_float(value_at(technical, "cpu", "cores"))),
        "cpu_model": text(value_at(technical, "cpu", "model")),
        "ram_gb": positive(lenient_float(value_at(technical, "memory", "size"))),
        **_storage(disks),
        "billing_increment_s": increment_s,
        **price_fields(price, PriceBasis.INSTANCE, term, unit=unit, currency=currency),
    }
    result.add(ref, **fields)


def _price(result: ParseResult, pricings: Any, interval: str, ref: str) -> Decimal | None:
    """The plan's price per ``interval`` (hour or month) in currency units, else ``None``
    (skipped, named)."""
    listed = pricings if isinstance(pricings, list) else []
    found = [
        p
        for p in listed
        if isinstance(p, Mapping) and p.get("intervalUnit") == interval and p.get("interval") == 1
    ]
    if not found:
        result.skip(f"no pricing per {interval}", ref)
        return None
    try:
        raw = to_decimal(found[0].get("price"))
    except ValueError:
        raw = None
    if raw is None or raw <= 0:
        result.skip(f"bad price {found[0].get('price')!r}", ref)
        return None
    return raw / PRICE_UNITS_PER_CURRENCY


def _storage(disks: Any) -> OfferFields:
    """Local disks: total GB and their kind, where the catalog states them."""
    listed = [d for d in disks if isinstance(d, Mapping)] if isinstance(disks, list) else []
    sizes = [
        (positive(lenient_float(d.get("capacity"))), positive(lenient_float(d.get("number"))))
        for d in listed
    ]
    total = sum(size * (count or 1) for size, count in sizes if size is not None)
    kinds = {_STORAGE.get(str(d.get("technology", "")).lower()) for d in listed}
    return {
        "storage_gb": total or None,
        "storage_type": kinds.pop() if len(kinds) == 1 else None,
    }
