"""Oracle Cloud Infrastructure (OCI) GPU shapes, priced from Oracle's public price data.

Sources (no authentication):

* Cost Estimator shapes: ``GET https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json``
  ``{"items": [{name, hidden, status, allowPreemptible, bundleMemoryQty, gpuQty,
  gpuMemoryQty (GB, all GPUs), processorType.value, shapeType.value (vm/bm),
  subType.value, products: [{partNumber, qty, type.value (ocpu/memory/disk)}]}]}``;
* Cost Estimator products: ``.../cloudestimator2/data/products.json``
  ``{"items": [{partNumber, billingModel, pricetype, currencyCodeLocalizations:
  [{currencyCode, prices: [{model, value}]}]}]}``. (The Price List API,
  https://docs.oracle.com/en-us/iaas/Content/Billing/Tasks/signingup_topic-Estimating_Costs.htm,
  has the same items with a ``displayName``; fetch does not call it, so parse reads no
  more of it than of products.json.)

For a GPU shape the ``ocpu`` product's part number is the GPU SKU and its price is per GPU
per hour ("GPU Per Hour" in the price list), CPU and memory included; its ``qty`` is the
shape's OCPU count. Offers here are therefore priced per GPU (``price_basis=gpu``), the
``PAY_AS_YOU_GO`` USD value. Prices are global: offers carry no region.

Preemptible capacity has no price of its own in the data: a shape says whether it may run
preemptible (``allowPreemptible``), and Oracle prices it at a fixed share of on-demand:
"Preemptible capacity costs 50% less than on-demand capacity"
(https://docs.oracle.com/en-us/iaas/Content/Compute/Concepts/preemptible.htm, "Billing";
"Always 50% off your on-demand instance rates", blogs.oracle.com/cloud-infrastructure/
announcing-ga-of-oracle-preemptible-instances-vm-shapes). So a shape with
``allowPreemptible: true`` also gets an interruptible offer at :data:`PREEMPTIBLE_SHARE` of
its pay-as-you-go price, except bare-metal shapes ("Preemptible capacity does not support
bare metal instances", same docs page).

Not emitted: commitments (the only ``COMMIT`` rows are VMware nodes, not GPU shapes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import Adapter, ParseResult, ResponseFormatError, gpu_fields, price_fields
from .schema import GpuFormFactor, OfferFields, PriceBasis, RentalTerm
from .units import lenient_float, positive, to_decimal, to_float, value_at

__all__ = ["PREEMPTIBLE_SHARE", "OciAdapter"]

API_BASE = "https://www.oracle.com/a/ocom/docs/cloudestimator2/data"
SHAPES_URL = API_BASE + "/shapes.json"
PRODUCTS_URL = API_BASE + "/products.json"

CURRENCY = "USD"
PAY_AS_YOU_GO = "PAY_AS_YOU_GO"
#: Preemptible price / on-demand price: "costs 50% less than on-demand capacity" (OCI docs,
#: Compute/Concepts/preemptible.htm, "Billing"; see the module docstring).
PREEMPTIBLE_SHARE = Decimal("0.5")

#: An x86 OCPU is one physical core with hyper-threading = 2 vCPUs; an Arm (Ampere) OCPU
#: is 1 vCPU (https://docs.oracle.com/en-us/iaas/Content/Compute/References/computeshapes.htm).
VCPUS_PER_X86_OCPU = 2

_SHAPE_GPU = re.compile(r"^(?:BM|VM)\.GPU\.(?P<gpu>[A-Za-z0-9-]+)\.(?P<count>\d+)$")
_VERSION_SUFFIX = re.compile(r"[\s-]+v\d+$", re.IGNORECASE)

#: Bare-metal 8-GPU NVIDIA shapes are HGX boards (SXM with NVLink), per OCI's GPU shape
#: table (computeshapes.htm, "Bare Metal Shapes - GPU"). Other shapes: not stated here.
_HGX_BARE_METAL_GPUS = frozenset({"A100", "H100", "H200", "B200"})


def shape_kind(payload: Any) -> str:
    """Tell a payload apart by content: "shapes" or "products"."""
    if not isinstance(payload, dict) or not isinstance(payload.get("items"), list):
        raise ValueError("not an {'items': [...]} object")
    items = [i for i in payload["items"] if isinstance(i, dict)]
    if any("products" in i and "name" in i for i in items):
        return "shapes"
    if any("partNumber" in i for i in items) or not items:
        return "products"
    raise ValueError("items are neither shapes nor products")


def usd_payg_price(item: Mapping[str, Any]) -> Decimal | None:
    """The USD pay-as-you-go value of one product; None when it has none.

    Raises ValueError on a malformed or non-numeric value. Tiered entries (``rangeMin``
    above 0) are not the list price and are passed over.
    """
    for localization in item.get("currencyCodeLocalizations") or []:
        if not isinstance(localization, dict) or localization.get("currencyCode") != CURRENCY:
            continue
        for price in localization.get("prices") or []:
            if not isinstance(price, dict) or price.get("model") != PAY_AS_YOU_GO:
                continue
            if to_decimal(price.get("rangeMin")) not in (None, Decimal(0)):
                continue
            return to_decimal(price.get("value"))
    return None


class OciAdapter(Adapter):
    """OCI GPU bare-metal and VM shapes, on-demand, priced per GPU-hour."""

    name = "oci"
    title = "Oracle Cloud Infrastructure"
    #: Where to rent: Oracle's GPU compute pricing page.
    pricing_url: ClassVar[str] = "https://www.oracle.com/cloud/compute/gpu/pricing/"
    source_url = SHAPES_URL
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        # their shape is parse's to check (shape_kind)
        return [
            await self.get_json(client, self.url(p)) for p in ("/shapes.json", "/products.json")
        ]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        shapes: list[Any] = []
        prices: dict[str, Decimal | str] = {}  # part number -> USD/h, or why it has none
        for index, payload in enumerate(payloads):
            try:
                kind = shape_kind(payload)
            except ValueError as exc:
                raise ResponseFormatError(self.name, f"payload {index}: {exc}") from None
            if kind == "shapes":
                shapes.extend(payload["items"])
            else:
                _collect_prices(payload["items"], prices)
        if not shapes:
            raise ResponseFormatError(self.name, "no shapes payload (shapes.json) given")
        for shape in shapes:
            _add_shape(result, shape, prices)
        return result


def _add_shape(result: ParseResult, shape: Any, prices: Mapping[str, Decimal | str]) -> None:
    if not isinstance(shape, dict) or not isinstance(shape.get("name"), str):
        result.skip("shape without a name")
        return
    shape_name = shape["name"]
    ref = f"oci:shape/{shape_name}"
    try:
        gpu_count = to_float(shape.get("gpuQty"))
    except ValueError:
        result.skip(f"gpuQty is not a number: {shape.get('gpuQty')!r}", ref)
        return
    if not gpu_count:
        return  # a CPU shape: not a GPU offer
    if gpu_count < 0 or gpu_count != int(gpu_count):
        result.skip(f"bad gpuQty {shape.get('gpuQty')!r}", ref)
        return
    if shape.get("hidden") is True or str(shape.get("status", "ACTIVE")).upper() != "ACTIVE":
        result.skip("shape hidden or not active", ref)
        return
    ocpu = _ocpu_product(shape)
    if ocpu is None:
        result.skip("GPU shape without an ocpu (GPU SKU) product", ref)
        return
    part, ocpus = ocpu
    price = prices.get(part, f"no USD pay-as-you-go price for part {part}")
    if isinstance(price, str):
        result.skip(price, ref)
        return
    count = int(gpu_count)
    named = _SHAPE_GPU.match(shape_name)  # "BM.GPU.H100.8": H100; "BM.GPU4.8": no model
    raw_gpu = named["gpu"] if named else None
    model = _VERSION_SUFFIX.sub("", raw_gpu) if raw_gpu else None
    hgx = shape_name.startswith("BM.") and count == 8 and model in _HGX_BARE_METAL_GPUS
    form_factor = GpuFormFactor.SXM if hgx else None
    total_memory_gb = positive(lenient_float(shape.get("gpuMemoryQty")))  # all GPUs, GB
    memory_gb = total_memory_gb / count if total_memory_gb else None
    processor = _value(shape.get("processorType"))
    x86 = processor in ("intel", "amd")
    fields: OfferFields = {
        "offer_id": shape_name,
        "instance_name": shape_name,
        "region": None,
        "raw_ref": f"{ref}+part/{part}",
        **gpu_fields(raw_gpu, memory_gb=memory_gb, form_factor=form_factor, name=model),
        "gpu_raw_name": raw_gpu or shape_name,
        "gpu_count": count,
        # OCI's data marks some Intel GPU shapes (A10, A100) as "arm"; an OCPU is one
        # physical core either way, so cores are safe and vCPUs only for x86.
        "cpu_cores": ocpus,
        "vcpus": ocpus * VCPUS_PER_X86_OCPU if x86 and ocpus else None,
        "cpu_vendor": processor if x86 else None,
        "cpu_arch": "x86_64" if x86 else None,
        "ram_gb": lenient_float(shape.get("bundleMemoryQty")) or None,
        **price_fields(price, PriceBasis.GPU, currency=CURRENCY),
        "datacenter": True,
    }
    result.add(ref, **fields)
    # a bare-metal shape (``shapeType`` ``bm``, or a ``BM.`` name) is never preemptible
    bare_metal = _value(shape.get("shapeType")) == "bm" or shape_name.startswith("BM.")
    if price > 0 and shape.get("allowPreemptible") is True and not bare_metal:
        preemptible: OfferFields = {
            "price_amount": price * PREEMPTIBLE_SHARE,
            "term": RentalTerm.INTERRUPTIBLE,
            "term_variant": "preemptible",
        }
        result.add(ref, **(fields | preemptible))


def _collect_prices(items: list[Any], prices: dict[str, Decimal | str]) -> None:
    """USD pay-as-you-go price per part number; a bad one keeps its reason (first one wins)."""
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("partNumber"), str):
            continue
        part = item["partNumber"]
        try:
            value = usd_payg_price(item)
        except ValueError as exc:
            prices.setdefault(part, f"bad price for {part}: {exc}")
            continue
        if value is not None and not isinstance(prices.get(part), Decimal):
            prices[part] = value


def _value(field: Any) -> str | None:
    """``{"value": "intel"}`` -> ``"intel"`` (lower case); None if absent."""
    value = value_at(field, "value")
    return value.lower() if isinstance(value, str) else None


def _ocpu_product(shape: Mapping[str, Any]) -> tuple[str, float | None] | None:
    """(part number, OCPU count) of the shape's ``ocpu`` product, the GPU SKU."""
    for product in shape.get("products") or []:
        if not isinstance(product, dict) or _value(product.get("type")) != "ocpu":
            continue
        part = product.get("partNumber")
        if not isinstance(part, str) or not part:
            return None
        return part, positive(lenient_float(product.get("qty")))
    return None
