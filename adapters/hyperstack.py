"""Hyperstack (NexGen Cloud): GPU VM flavors joined with the pricebook.

API base ``https://infrahub-api.nexgencloud.com/v1`` (Infrahub API, docs.hyperstack.cloud),
auth header ``api_key: <key>`` (not ``Authorization``). Two calls, no pagination:

* ``GET /core/flavors`` -> ``{"status": true, "message": "...", "data": [{"gpu": "H100-80G-PCIe",
  "region_name": "NORWAY-1", "flavors": [Flavor_Fields...]}]}``, grouped by GPU model and
  region. A flavor (schema "Flavor_Fields" in the API reference): ``id``, ``name``
  (``n3-H100x8``), ``region_name``, ``cpu`` (vCPUs), ``ram`` (GB), ``disk`` (root disk, GB),
  ``ephemeral`` (local disk wiped on delete, GB), ``gpu`` (model, ``""`` on CPU flavors),
  ``gpu_count``, ``stock_available``. ``status: false`` is an API error. No prices here.
* ``GET /pricebook`` -> a bare list of ``{"id", "name", "value", "original_value",
  "discount_applied", "start_time", "end_time"}``; ``value`` is USD per hour, often a string.

How the pricebook joins the flavors is not documented. Two public clients key it by the GPU
model name and multiply ``value`` by ``gpu_count`` (skypilot-org/skypilot
sky/catalog/data_fetchers/fetch_hyperstack.py; sagemathinc/cocalc's Hyperstack pricing
module, which also reads ``Cloud-SSD`` and ``PublicIP`` entries): an entry named like the
flavor group's ``gpu`` is therefore a price per GPU-hour (``price_basis=GPU``). An entry named
like the flavor itself is read as a price for that flavor only once the pricebook proves its
basis: some GPU model has flavors of n1 < n2 GPUs priced in the ratio n2/n1 (whole VM) or
equal (per GPU). Without such a pair, flavor-named prices are skipped, not guessed.

``value`` is what the key's account pays (``discount_applied`` marks an account discount;
``original_value`` is the list price). The offer is priced at the list price,
``original_value``, else ``value``; where ``value`` differs from it, a second offer at
``value`` carries ``term_variant="account price"``
(:data:`~adapters.base.ACCOUNT_PRICE_VARIANT`): another key may not be quoted it.
Only on-demand prices are read; GPU memory comes from the model name when it carries it
(``H100-80G-PCIe``), else it is left empty.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import (
    ACCOUNT_PRICE_VARIANT,
    Adapter,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    gpu_fields,
    key_headers,
    payload_list,
    price_fields,
)
from .schema import OfferFields, PriceBasis
from .tables import country_code
from .units import (
    lenient_decimal,
    lenient_float,
    memory_gb_in_name,
    non_negative,
    positive_quantity,
    read_price,
    text,
    whole_count,
)

__all__ = ["API_BASE", "FLAVORS_URL", "PRICEBOOK_URL", "HyperstackAdapter"]

API_BASE = "https://infrahub-api.nexgencloud.com/v1"
FLAVORS_URL = f"{API_BASE}/core/flavors"
PRICEBOOK_URL = f"{API_BASE}/pricebook"
#: How far two prices may be from an exact ratio and still prove a price basis.
_RATIO_TOLERANCE = Decimal("0.05")

#: Per-GPU memory inside a Hyperstack GPU model name: ``H100-80G-SXM5``, ``A100-80G-PCIe``.
_MEMORY_IN_NAME = re.compile(r"-(\d+)G(?:-|$)")


class HyperstackAdapter(Adapter):
    """Hyperstack GPU flavors per region, priced from the pricebook."""

    name = "hyperstack"
    title = "Hyperstack"
    #: Where to rent: Hyperstack's GPU pricing page.
    pricing_url: ClassVar[str] = "https://www.hyperstack.cloud/gpu-pricing"
    source_url = API_BASE
    credential_names = ("hyperstack_api_key",)
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        headers = key_headers(self, "api_key", scheme="")
        paths = ("/core/flavors", "/pricebook")
        return [await self.get_json(client, self.url(p), headers=headers) for p in paths]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        groups: list[Any] = []
        prices: dict[str, Decimal] = {}
        account_prices: dict[str, Decimal] = {}
        price_problems: dict[str, str] = {}
        for payload in payloads:
            if isinstance(payload, list):  # the pricebook; the flavors answer is an object
                _read_pricebook(payload, prices, price_problems, account_prices)
            elif isinstance(payload, Mapping) and payload.get("status") is False:
                raise ProviderError(self.name, f"API error: {payload.get('message')!r}")
            else:
                groups.extend(payload_list(payload, "data", self.name))
        if not groups:
            raise ResponseFormatError("hyperstack", "no flavors response among the payloads")
        flavors = list(_flavors(groups))
        flavor_basis = _flavor_price_basis(flavors, prices)
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        for group_gpu, flavor in flavors:
            offers = _parse_flavor(result, group_gpu, flavor, prices, price_problems, flavor_basis)
            if offers is not None:
                ref, fields, key = offers
                result.add(ref, **fields)
                if key in account_prices:
                    account: OfferFields = {
                        "price_amount": account_prices[key],
                        "term_variant": ACCOUNT_PRICE_VARIANT,
                    }
                    result.add(ref, **(fields | account))
        return result


# --- payloads -------------------------------------------------------------------------


def _read_pricebook(
    payload: list[Any],
    prices: dict[str, Decimal],
    problems: dict[str, str],
    account_prices: dict[str, Decimal],
) -> None:
    """Name -> list USD per hour (and the account's, where it differs); unusable entries are
    remembered with their reason."""
    for entry in payload:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue  # not a priced item; nothing to attach a reason to
        name = entry["name"]
        listed, paid = entry.get("original_value"), entry.get("value")
        raw = listed if listed not in (None, "") else paid
        value = read_price(raw, "pricebook value", bad="bad {name} {value!r}")
        if not isinstance(value, Decimal):  # the reason (every case has one)
            problems[name] = str(value)
            continue
        prices[name] = value
        account = lenient_decimal(paid) if raw is listed else None
        if account is not None and 0 < account != value:
            account_prices[name] = account


def _flavors(groups: list[Any]) -> list[tuple[str, Any]]:
    """(group GPU model, flavor) pairs, flattening the GPU x region groups."""
    out: list[tuple[str, Any]] = []
    for group in groups:
        if not isinstance(group, Mapping) or not isinstance(group.get("flavors"), list):
            out.append(("", group))  # reported as a broken record by _parse_flavor
            continue
        gpu = group.get("gpu")
        out.extend((gpu if isinstance(gpu, str) else "", flavor) for flavor in group["flavors"])
    return out


def _flavor_price_basis(
    flavors: list[tuple[str, Any]], prices: Mapping[str, Decimal]
) -> PriceBasis | None:
    """Whether prices named after flavors are per VM or per GPU, proven by the data.

    Among flavors of the same GPU model with flavor-named prices, a pair priced in the ratio
    of their GPU counts proves whole-VM prices; a pair priced the same proves per-GPU prices.
    No pair, or pairs that disagree, leaves the basis unknown (``None``).
    """
    by_gpu: dict[str, dict[int, Decimal]] = {}
    for group_gpu, flavor in flavors:
        if not isinstance(flavor, Mapping):
            continue
        name, gpu = flavor.get("name"), flavor.get("gpu") or group_gpu
        count = whole_count(flavor.get("gpu_count"))  # a CPU flavor's 0 proves nothing
        if isinstance(name, str) and name in prices and isinstance(gpu, str) and gpu and count:
            by_gpu.setdefault(gpu, {})[count] = prices[name]
    verdicts: set[PriceBasis] = set()
    for counts in by_gpu.values():
        pairs = sorted(counts.items())
        for (n1, p1), (n2, p2) in itertools.pairwise(pairs):
            if _close(p2 / p1, Decimal(n2) / Decimal(n1)):
                verdicts.add(PriceBasis.INSTANCE)
            elif _close(p2 / p1, Decimal(1)):
                verdicts.add(PriceBasis.GPU)
            else:
                return None
    return verdicts.pop() if len(verdicts) == 1 else None


def _close(ratio: Decimal, expected: Decimal) -> bool:
    return abs(ratio - expected) <= _RATIO_TOLERANCE * expected


# --- one flavor -----------------------------------------------------------------------


def _parse_flavor(
    result: ParseResult,
    group_gpu: str,
    flavor: Any,
    prices: Mapping[str, Decimal],
    price_problems: Mapping[str, str],
    flavor_basis: PriceBasis | None,
) -> tuple[str, OfferFields, str] | None:
    """One flavor's offer fields at the list price, with its ref and the pricebook name that
    priced it; None (a skip recorded, or a CPU flavor) for none. A flavor listed twice in a
    region is the contract's duplicate."""
    if not isinstance(flavor, Mapping):
        result.skip("flavor (or flavor group) is not an object")
        return None
    name = flavor.get("name")
    region = text(flavor.get("region_name"))
    ref = f"hyperstack:flavor/{flavor.get('id')}"
    if not isinstance(name, str) or not name:
        result.skip("flavor without a name", ref)
        return None
    gpu_count = whole_count(flavor.get("gpu_count"), least=0)
    raw_gpu = text(flavor.get("gpu")) or text(group_gpu)
    if gpu_count is None:
        result.skip(f"bad gpu_count {flavor.get('gpu_count')!r}", ref)
        return None
    if gpu_count == 0 or raw_gpu is None:
        return None  # a CPU flavor: not an offer
    priced = _price(name, raw_gpu, prices, flavor_basis)
    if isinstance(priced, str):
        result.skip(price_problems.get(raw_gpu) or price_problems.get(name) or priced, ref)
        return None
    key, price, basis = priced
    disks = (non_negative(lenient_float(flavor.get(k))) for k in ("disk", "ephemeral"))
    storage = [gb for gb in disks if gb is not None]
    stock = flavor.get("stock_available")
    fields: OfferFields = {
        "offer_id": name,
        "instance_name": text(flavor.get("display_name")),
        "region": region,
        # ISO country from the word before the dash (``NORWAY-1`` -> ``NO``), if known
        "country": country_code(region.split("-", 1)[0]) if region else None,
        **gpu_fields(raw_gpu, memory_gb=memory_gb_in_name(_MEMORY_IN_NAME, raw_gpu)),
        "gpu_count": gpu_count,
        "vcpus": positive_quantity(flavor.get("cpu")),
        "ram_gb": positive_quantity(flavor.get("ram")),
        "storage_gb": sum(storage) if storage else None,
        **price_fields(price, basis),
        "available_now": stock if isinstance(stock, bool) else None,
    }
    return ref, fields, key


def _price(
    flavor_name: str,
    gpu: str,
    prices: Mapping[str, Decimal],
    flavor_basis: PriceBasis | None,
) -> tuple[str, Decimal, PriceBasis] | str:
    """The pricebook name that prices the flavor, its price and basis, or why there is none."""
    if gpu in prices:
        return gpu, prices[gpu], PriceBasis.GPU
    if flavor_name in prices:
        if flavor_basis is None:
            return "pricebook prices flavors but their basis (VM or GPU) is not proven"
        return flavor_name, prices[flavor_name], flavor_basis
    return f"no pricebook entry for {gpu!r} or {flavor_name!r}"
