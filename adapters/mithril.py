"""Mithril (formerly Foundry, mlfoundry.com): GPU instances from its spot auction and reservations.

API: the Mithril Compute API v2 at ``https://api.mithril.ai`` (OpenAPI 3.1, "Compute API
reference", https://docs.mithril.ai/compute-api/compute-api-reference). Auth: the API key
(``fkey_...``) as ``Authorization: Bearer <key>`` (security scheme ``MithrilAPIKey``, HTTP bearer,
``bearerFormat: fkey_<key>``; "API overview and quickstart", https://docs.mithril.ai/compute-api),
from the setting ``mithril_api_key``. Calls used:

* ``GET /v2/instance-types`` ("Instance types",
  https://docs.mithril.ai/compute-api/compute-api-reference/instance-types): a JSON array of
  ``InstanceTypeModel`` ``{fid, name, num_cpus, cpu_type, ram_gb, num_gpus, gpu_type,
  gpu_memory_gb, gpu_socket, local_storage_gb, network_type, ib_count, bridge_count}``, e.g.
  ``h100.80gb.sxm``: 192 CPUs, 1800 GB RAM, 8 x H100 80 GB ``SXM5``, 7800 GB local storage,
  ``InfiniBand`` with ``ib_count`` 8. One response, no paging.
* ``GET /v2/spot/availability`` ("Get Auctions: Get the Spot availability across all regions";
  the quickstart: "Use the /v2/spot/availability endpoint to check current Spot capacity and
  pricing"; https://docs.mithril.ai/compute-api/compute-api-reference/spot): a JSON array of
  ``AuctionModel`` ``{fid, instance_type (an it_ fid), region, capacity, last_instance_price
  ("$10.00"), lowest_allocated_price, adjustable_memory, default_image_version}``. It tells
  which regions sell each instance type; it is the region list of the price calls below.
* ``GET /v2/pricing/current?instance_type=<fid>&region=<region>`` ("Get Current Prices V2":
  "Returns the current spot price, reserved price, and minimum price for a given instance
  type, optionally filtered by region";
  https://docs.mithril.ai/compute-api/compute-api-reference/pricing): ``CurrentPricesResponse``
  ``{spot_price_cents, reserved_price_cents, minimum_price_cents, max_spot_price_cents,
  max_reserved_price_cents, lowest_allocated_bid_cents, dynamic_win_price_cents,
  available_capacity, total_capacity}``, all nullable integers. One call per instance type
  and auction region; a GPU type with no auction row is asked once without a region (the
  parameter is optional) and its offers have no region.

Units. The ``*_cents`` figures are US cents per instance-hour, for the whole instance. The
API reference settles it (Mithril Compute API OpenAPI, "Mithril Compute API" 1.0.0, as
archived at api-evangelist/mithril @ 37e5c31e75b69753379df4c4bf640eee274a2cdd :
openapi/_original/mithril-compute-openapi-original.json): every price in it is attached to an
instance or an instance type, never to a GPU. ``CreateBidRequest`` and ``BidModel`` carry one
``limit_price`` ("$25.60") beside ``instance_quantity`` (4), so a bid for 4 instances states
one price per instance; ``AuctionModel`` names its price ``last_instance_price``;
``InstancePricingEvent.price_cents`` is "a price period in the history of an instance"
(``GET /v2/instances/pricing/history``: "the pricing history of a specific instance");
``HistoricalPriceSeriesModel`` is "prices for one instance type in one region"; and
``CurrentPricesResponse`` answers for an ``instance_type`` fid, with no GPU count anywhere
in it. An ``8x H100`` instance type's cents are thus the price of the 8-GPU instance. The
documentation pages agree, except one: "Bid limit price ($/instance/hr)" and "Price paid
($/instance/hr)" in the example tables of "Spot auction mechanics"; the spot-bids page asks
for "a per-instance limit price"; Mithril's CLI documents ``limit_price`` as "max
$/hour/instance" (https://docs.mithril.ai/mithril-cli/task-yaml/infra). The reservation's
"Reserved Unit Price (in $/hr)" is read the same way (its Return Credit, quoted alike in $/hr,
accrues "based on the number of instances returned"), and the pricing call prices an instance
type, not a GPU. The "Compute overview" page says in passing that a spot order states the
"maximum price per GPU-hour"; the API reference and the pages that define the auction say per
instance, and so does SkyPilot's Mithril catalog fetcher, which reads the cents as the
instance's hourly price (skypilot-org/skypilot @ 161a59fc9bac7b093f6b632ac68b1cab9bbee843 :
sky/catalog/data_fetchers/fetch_mithril.py,
``fetch_instance_pricing``: ``minimum_price_cents / 100.0`` as both its ``Price`` and
``SpotPrice`` columns). Offers are therefore ``price_basis=instance``, USD, per hour, the
cents divided by 100 exactly.

Terms:

* **Spot** (:attr:`RentalTerm.INTERRUPTIBLE`) at ``spot_price_cents``. Mithril's spot market is
  a blind second-price auction: a bid states a limit price; while it is allocated "you are
  billed at the current spot price (which will be less than or equal to your limit price)",
  and it is preempted when the spot price exceeds the limit ("Spot bids",
  https://docs.mithril.ai/compute-and-storage/spot-bids, and its "Spot auction mechanics"
  page; read in the Foundry-era copies at docs.mlfoundry.com/compute-and-storage/spot-bids).
  The current spot price is thus what an allocated instance costs now, so it is the figure
  used. Not used: ``minimum_price_cents`` (the docs do not say anyone pays it; SkyPilot uses
  it, see above), ``lowest_allocated_bid_cents`` (the lowest winning limit: a new bid must
  exceed it to be allocated while capacity is full, but is then billed the spot price),
  ``dynamic_win_price_cents``, the ``max_*`` figures and the capacities (not documented
  beyond their names), and the auction's ``last_instance_price`` (a dollar string the docs do
  not define). A null or non-positive ``spot_price_cents`` is a skipped record, never
  replaced by another figure. Spot is billed after use, so ``prepaid=False``.
* **Reserved** at ``reserved_price_cents``, as :attr:`RentalTerm.COMMIT_1D`. Reservations are
  "for exactly your desired duration, from 3 hours to 2 weeks, with 1-hour increment
  flexibility", and the price "is charged in full when making the reservation" ("Reserving
  compute", https://docs.mithril.ai/compute-and-storage/reserving-compute), hence
  ``prepaid=True``. The schema has no 3-hour term; its shortest commitment, one day, is a
  length Mithril sells, so the reserved price is offered as a 1-day commitment: a job shorter
  than a day is costed as a whole day, which can overstate a reservation's cost but never
  understates it. Mithril does not call reservations on-demand, so they are not offered as
  such. The docs say reserved prices depend on "the instance type and period you are
  reserving for", and the pricing call takes no period: the figure is Mithril's current
  reserved price for the type and region, not a quote for a given length (``GET
  /v2/reservation/quote`` needs a project and start/end times, and is not used).

Hardware. The GPU is ``gpu_type`` resolved with ``gpu_memory_gb`` (the nominal GB per GPU)
and the form factor that ``gpu_socket`` states (``SXM5`` => SXM, ``PCIe`` => PCIe; another
socket gives no hint). ``num_cpus`` (the count the CLI lists as vCPUs) is ``vcpus``, ``ram_gb``
and ``local_storage_gb`` are GB as named, ``cpu_type`` ("Intel") is the CPU vendor.
``network_type`` ``InfiniBand`` sets ``fabric``; no Mithril page found states the speed of one
link, so ``fabric_gbps`` stays empty rather than be derived from ``ib_count``.
``bridge_count`` is not documented beyond its name and is not used.

Failures. The instance-type and availability calls are the provider: if either fails, fetch
fails. A price call that still fails after its retries costs only its instance type and
region: fetch records it in a last payload (:func:`~adapters.base.failed_calls_payload`) and
parse reports it as a skipped record; only when every price call failed does the provider
fail.

Payloads: the instance-type and availability arrays as returned; each price response, which
does not repeat what was asked, wrapped by :func:`~adapters.units.query_payload` with
``{"instance_type", "region"}`` (``region`` ``null`` for an unfiltered call).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    FailedCall,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    gpu_fields,
    key_headers,
    positive_price,
    price_fields,
)
from .calls import (
    QUERY_KEY,
    CallFailure,
    failure_cause,
    gather_limited,
    keep_failures,
    key_rejected,
    query_payload,
    read_query_payload,
)
from .fabrics import named_fabric
from .schema import GpuFormFactor, OfferFields, PriceBasis, RentalTerm
from .units import cents_to_units, cpu_vendor, nominal_memory_gb, positive_quantity, whole_count

__all__ = [
    "API_BASE",
    "INSTANCE_TYPES_URL",
    "PRICING_URL",
    "QUERY_KEY",
    "RESERVED_TERM",
    "SPOT_AVAILABILITY_URL",
    "MithrilAdapter",
]

API_BASE = "https://api.mithril.ai"
INSTANCE_TYPES_URL = API_BASE + "/v2/instance-types"
SPOT_AVAILABILITY_URL = API_BASE + "/v2/spot/availability"
PRICING_URL = API_BASE + "/v2/pricing/current"

#: The term reserved prices are offered under (see the module docstring): the schema's shortest
#: commitment, a length within Mithril's documented 3 hours to 2 weeks.
RESERVED_TERM = RentalTerm.COMMIT_1D

#: The price fields read, and the term each becomes; ``prepaid`` per term (module docstring).
_PRICE_FIELDS: tuple[tuple[str, RentalTerm, bool], ...] = (
    ("spot_price_cents", RentalTerm.INTERRUPTIBLE, False),
    ("reserved_price_cents", RESERVED_TERM, True),
)
#: The listing calls, by the kind :func:`_list_kind` tells from a JSON array.
_LISTINGS: Mapping[str, str] = {
    "instance_types": "GET /v2/instance-types",
    "auctions": "GET /v2/spot/availability",
}
_KEY_HINT = " (check GPUSCOUT_MITHRIL_API_KEY)"
#: The form factor a ``gpu_socket`` states by its start ("SXM5": SXM); another gives none.
_SOCKETS = {"sxm": GpuFormFactor.SXM, "pci": GpuFormFactor.PCIE}


# --- failures ----------------------------------------------------------------------------


def _ref(fid: str, region: str | None) -> str:
    return f"mithril:{fid}@{region}" if region else f"mithril:{fid}"


# --- payload shapes ----------------------------------------------------------------------


def _list_kind(payload: list[Any]) -> str | None:
    """``"instance_types"`` or ``"auctions"`` by the keys of the entries; ``None`` if empty."""
    if not payload:
        return None
    first = payload[0]
    if isinstance(first, Mapping):
        if "num_gpus" in first and "gpu_type" in first:
            return "instance_types"
        if "instance_type" in first and "region" in first and "last_instance_price" in first:
            return "auctions"
    raise ResponseFormatError(
        MithrilAdapter.name,
        "a JSON array that is neither instance types (GET /v2/instance-types) nor auctions "
        "(GET /v2/spot/availability)",
    )


def _listing_rows(payload: Any, kind: str) -> list[Mapping[str, Any]]:
    """The entries of a listing of ``kind`` (a key of :data:`_LISTINGS`), shape checked."""
    what = _LISTINGS[kind]
    if not isinstance(payload, list):
        raise ResponseFormatError(
            MithrilAdapter.name, f"{what}: expected a JSON array, got {type(payload).__name__}"
        )
    if _list_kind(payload) not in (None, kind):
        raise ResponseFormatError(MithrilAdapter.name, f"{what}: not {kind.replace('_', ' ')}")
    if not all(isinstance(row, Mapping) for row in payload):
        raise ResponseFormatError(MithrilAdapter.name, f"{what}: an entry is not an object")
    return payload


def _price_jobs(
    gpu_types: Iterable[str], auctions: Iterable[Mapping[str, Any]]
) -> list[tuple[str, str | None]]:
    """(instance type fid, region) to price: one per auction region, else one without region."""
    wanted = set(gpu_types)
    regions: dict[str, set[str]] = {fid: set() for fid in wanted}
    for row in auctions:
        fid, region = str(row.get("instance_type") or ""), str(row.get("region") or "")
        if fid in wanted and region:
            regions[fid].add(region)
    jobs: list[tuple[str, str | None]] = []
    for fid in sorted(regions):
        jobs.extend([(fid, r) for r in sorted(regions[fid])] or [(fid, None)])
    return jobs


# --- hardware ----------------------------------------------------------------------------


def _hardware(row: Mapping[str, Any]) -> OfferFields | str:
    """The fields the offers of one instance type share, or why it is not priced."""
    count = whole_count(row.get("num_gpus"))
    if count is None:
        return f"no GPU (num_gpus {row.get('num_gpus')!r})"
    gpu_type = str(row.get("gpu_type") or "").strip()
    if not gpu_type:
        return "no gpu_type"
    socket = str(row.get("gpu_socket") or "").strip().lower()
    form = next((f for start, f in _SOCKETS.items() if socket.startswith(start)), None)
    return {
        "instance_name": str(row.get("name") or "").strip() or str(row.get("fid") or ""),
        **gpu_fields(
            gpu_type, memory_gb=nominal_memory_gb(row.get("gpu_memory_gb")), form_factor=form
        ),
        "gpu_count": count,
        "vcpus": positive_quantity(row.get("num_cpus")),
        "cpu_vendor": cpu_vendor(row.get("cpu_type")),
        "ram_gb": positive_quantity(row.get("ram_gb")),
        "storage_gb": positive_quantity(row.get("local_storage_gb")),
        "fabric": named_fabric(row.get("network_type")),
    }


# --- the adapter -------------------------------------------------------------------------


class MithrilAdapter(Adapter):
    """Mithril instance types priced per auction region: spot and 1-day reservations."""

    name: ClassVar[str] = "mithril"
    title: ClassVar[str] = "Mithril (formerly Foundry)"
    #: Where to rent: Mithril's pricing page.
    pricing_url: ClassVar[str] = "https://mithril.ai/pricing"
    source_url: ClassVar[str] = PRICING_URL
    credential_names: ClassVar[tuple[str, ...]] = ("mithril_api_key",)
    base_url = API_BASE
    #: Price calls in flight at once.
    concurrency: ClassVar[int] = 8

    # fetch -------------------------------------------------------------------------------
    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Instance types and auctions, then the current prices per GPU type and region."""
        headers = key_headers(self)
        types = await self._listing(client, self.url("/v2/instance-types"), headers)
        type_rows = _listing_rows(types, "instance_types")
        auctions = await self._listing(client, self.url("/v2/spot/availability"), headers)
        auction_rows = _listing_rows(auctions, "auctions")
        gpu_types = [
            str(row.get("fid") or "")
            for row in type_rows
            if row.get("fid") and not isinstance(_hardware(row), str)
        ]
        jobs = _price_jobs(gpu_types, auction_rows)
        pricing_url = self.url("/v2/pricing/current")

        async def one(fid: str, region: str | None) -> dict[str, Any] | CallFailure:
            params = {"instance_type": fid} | ({"region": region} if region else {})
            try:
                response = await self.get_json(client, pricing_url, params=params, headers=headers)
            except ProviderError as exc:  # the cause alone in the reason, so that it groups
                cause, ref = failure_cause(exc.reason), _ref(fid, region)  # never the body
                return CallFailure(FailedCall(ref, f"price call failed: {cause}"), cause, ref)
            return query_payload({"instance_type": fid, "region": region}, response)

        outcomes = await gather_limited(
            [functools.partial(one, *j) for j in jobs], self.concurrency
        )
        priced = [o for o in outcomes if not isinstance(o, CallFailure)]
        failures = [o for o in outcomes if isinstance(o, CallFailure)]
        hint = _KEY_HINT if any(key_rejected(f.cause) for f in failures) else ""
        kept = keep_failures(
            self.name, priced, failures, calls=len(jobs), what="price calls", hint=hint
        )
        return [types, auctions, *kept]

    async def _listing(
        self, client: httpx.AsyncClient, url: str, headers: Mapping[str, str]
    ) -> Any:
        """One listing call; a rejected key says which setting to check."""
        try:
            return await self.get_json(client, url, headers=dict(headers))
        except ProviderError as exc:
            if key_rejected(exc.reason):
                raise ProviderError(self.name, exc.reason + _KEY_HINT) from None
            raise

    # parse -------------------------------------------------------------------------------
    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        hardware: dict[str, OfferFields] = {}
        rejected: dict[str, str] = {}
        prices: list[tuple[Mapping[str, Any], Any]] = []
        payloads, failed = self.split_failed_calls(payloads)
        for payload in payloads:
            if isinstance(payload, list):
                kind = _list_kind(payload)
                rows = _listing_rows(payload, kind) if kind else []
                for row in rows if kind == "instance_types" else []:
                    fid = str(row.get("fid") or "")
                    hw = _hardware(row) if fid else "instance type without fid"
                    if isinstance(hw, str):
                        rejected[fid or repr(row.get("name"))] = hw
                    else:
                        hardware[fid] = hw
                # auctions: the shape only; the regions come with the prices
            elif isinstance(payload, Mapping):
                prices.append(self._priced(payload))
            else:
                raise ResponseFormatError(
                    self.name, f"unexpected payload type {type(payload).__name__}"
                )
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        for fid, reason in sorted(rejected.items()):
            result.skip(reason, f"mithril:instance-type/{fid}")
        for query, response in prices:
            _offers(result, query, response, hardware)
        result.skip_failed(failed)
        return result

    def _priced(self, payload: Mapping[str, Any]) -> tuple[Mapping[str, Any], Any]:
        """``(query, response)`` of a wrapped price response; anything else is an error."""
        if QUERY_KEY in payload:
            query, response = read_query_payload(payload, self.name)
            region = query.get("region")
            if not isinstance(query.get("instance_type"), str) or not (
                region is None or isinstance(region, str)
            ):
                raise ResponseFormatError(self.name, f"bad {QUERY_KEY}: {dict(query)!r}")
            return query, response
        keys = ", ".join(sorted(map(str, payload))[:6])
        raise ResponseFormatError(self.name, f"unknown payload with keys {keys}")


def _offers(
    result: ParseResult,
    query: Mapping[str, Any],
    response: Any,
    hardware: Mapping[str, OfferFields],
) -> None:
    """The spot and reserved offers of one price response."""
    fid = str(query["instance_type"])
    region = query.get("region") or None
    ref = _ref(fid, region)
    hw = hardware.get(fid)
    if hw is None:
        result.skip("instance type not in GET /v2/instance-types (hardware unknown)", ref)
        return
    if not isinstance(response, Mapping):
        result.skip("price response is not a JSON object", ref)
        return
    bad, absent = "{name} is not a positive number: {value!r}", "no {name} (null or absent)"
    for field, term, prepaid in _PRICE_FIELDS:
        # USD per instance-hour from a ``*_cents`` field, or ``None`` (skipped with the reason)
        raw = response.get(field)
        usd = positive_price(
            result, raw, field, ref, convert=cents_to_units, bad=bad, absent=absent, negative=bad
        )
        if usd is None:
            continue
        fields: OfferFields = {
            "offer_id": fid,
            "region": region,
            **hw,
            **price_fields(usd, PriceBasis.INSTANCE, term),
            "prepaid": prepaid,
        }
        result.add(ref, **fields)
