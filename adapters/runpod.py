"""RunPod: GPU pod list prices per cloud and term, from the REST v2 catalog and GraphQL.

RunPod's supported API is REST v2 (https://docs.runpod.io/api-reference-v2; an API key on
every request): with a key its catalog, ``GET /v2/catalog/gpus`` per cloud (below), gives
each GPU type's list price (``price.secure``/``price.community``, USD per GPU-hour), the
largest pod (``maxCount``) and the CUDA versions, and that list price wins. The GraphQL API
(``POST https://api.runpod.io/graphql`` with ``{"query": ...}``; runpod/docs
sdks/graphql/manage-pods.mdx; the same ``gpuTypes`` fields are queried by runpod-python
runpod/api/queries/gpus.py, dstackai/gpuhunt providers/runpod.py and SkyPilot's
fetch_runpod.py) is deprecated (the adapter's ``lifecycle``): it is read without a key, and
with one for what REST v2 does not publish (spot, savings plans, Instant Clusters, the 1-GPU
machine's vCPU and RAM); with a key its failure (a 410 once it is gone) costs only those, a
skipped record. One GraphQL request returns every GPU type, no pagination; an API key
(``Authorization: Bearer``) is sent when configured. GraphQL errors come back with HTTP 200
as ``{"errors": [...]}``: they are a provider error here.

Prices are USD per GPU per hour (``price_basis=gpu``):

* ``securePrice`` / ``communityPrice``: on-demand in Secure Cloud (RunPod's datacenters) and
  Community Cloud (individual hosts); 0 or null where the type is not offered in that cloud;
* ``secureSpotPrice`` / ``communitySpotPrice``: interruptible (spot), often null;
* ``oneWeekPrice``, ``oneMonthPrice``, ``threeMonthPrice``, ``sixMonthPrice``: savings-plan
  rates, the hourly equivalent per GPU for that commitment; the API does not say for which
  cloud, so those offers leave ``datacenter`` unset;
* ``clusterPrice``: Instant Clusters (multi-node), per GPU-hour, in ``nodeGroupDatacenters``.

Disk is billed apart and not in this API: the container disk (the OS, 20 GB unless told)
and the volume disk at the documented $0.10 per GB-month while the pod runs
(``data/provider_disks.csv``).

A pod may hold 1 to ``maxGpuCount{Secure,Community}Cloud`` GPUs; offers are emitted for the
powers of two up to that ceiling and the ceiling itself. vCPUs and RAM are only published by
``lowestPrice`` (for the GPU count asked, here 1, per cloud through GraphQL aliases
``secureLowestPrice`` / ``communityLowestPrice``), so only 1-GPU offers carry them; its
``stockStatus`` (High/Medium/Low, null = none) gives ``available_now``. MIG slices ("... MIG
1g.24gb") are offered as one GPU fraction (slice memory / full GPU memory).

``lowestPrice`` also prices that 1-GPU machine (runpod/docs sdks/graphql/manage-pods.mdx,
"Get GPU type details": ``lowestPrice(input: {gpuCount: 1}) { uninterruptablePrice }``):
``uninterruptablePrice`` (USD per GPU-hour on demand) is the 1-GPU on-demand offer of a cloud
without a list price, and ``minimumBidPrice`` (per GPU-hour, null without spot capacity) an
interruptible 1-GPU offer with ``term_variant="minimum bid"``. An unaliased ``lowestPrice``
(the query the docs, runpod-python and SkyPilot send, without ``secureCloud``) belongs to the
type's only cloud; for a type in both clouds its bid is an ``any-cloud`` offer.

CUDA versions are not in GraphQL; the REST v2 catalog states them (runpod/docs
api-reference-v2/openapi.json, ``GET /v2/catalog/gpus``, schema ``GpuType.cudaVersions``:
"CUDA versions offered by machines with this GPU type, each tagged with current capacity",
items ``{"version": "12.8", "available": true}``; present only with
``include=AVAILABILITY`` and ``product``, scoped by ``count`` and ``cloud``). That API needs
the key (bearer auth required), so with a key configured the fetch asks it once per cloud
for 1-GPU pods (``include=AVAILABILITY&product=POD&count=1&cloud=SECURE|COMMUNITY``, each
answer kept with its query, :func:`~adapters.calls.query_payload`), and the 1-GPU offers of
that cloud carry the newest version offered as ``cuda_version`` (its machines may be full
now: ``available_now`` says that). Larger pods, the savings plans and clusters may run on
other machines: their CUDA stays unknown, as it does without a key, for a type the catalog
lists without versions (AMD) and when a catalog call fails (a skipped record; the prices
stand).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import (
    Adapter,
    FailedCall,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    failed_calls_payload,
    gpu_fields,
    key_headers,
    payload_list,
    positive_price,
    price_fields,
)
from .calls import QUERY_KEY, query_payload, read_query_payload
from .declarations import Lifecycle, LifecycleState
from .gpus import get_gpu
from .schema import OfferFields, PriceBasis, RentalTerm
from .tables import DATA_DIR, package_text, provider_disk
from .units import (
    gpu_vendor,
    positive_quantity,
    power_of_two_counts,
    value_at,
    whole_count,
)

__all__ = [
    "BID_VARIANT",
    "CATALOG_URL",
    "GPU_TYPES_QUERY",
    "GRAPHQL_URL",
    "RunPodAdapter",
    "datacenter_country",
]

API_BASE = "https://api.runpod.io"
GRAPHQL_URL = API_BASE + "/graphql"
CATALOG_URL = API_BASE + "/v2/catalog/gpus"
#: The catalog's ``cloud`` values, by this module's cloud names.
_CATALOG_CLOUDS = {"secure": "SECURE", "community": "COMMUNITY"}
_CUDA_VERSION = re.compile(r"^\d+(?:\.\d+)*$")

#: ``term_variant`` of an interruptible offer priced at the minimum bid (:func:`_bid_fields`).
BID_VARIANT = "minimum bid"

#: Every GPU type with its list, spot, savings-plan and cluster prices, and the cheapest
#: 1-GPU machine in each cloud (aliases keep the two ``lowestPrice`` answers apart): the
#: GraphQL document ``data/runpod_gpu_types.graphql``.
GPU_TYPES_QUERY = package_text(DATA_DIR, "runpod_gpu_types.graphql").strip()

_CLOUDS = ("secure", "community")
#: Savings-plan price fields and the commitment each buys.
_COMMITMENTS = (
    ("oneWeekPrice", RentalTerm.COMMIT_1W),
    ("oneMonthPrice", RentalTerm.COMMIT_1MO),
    ("threeMonthPrice", RentalTerm.COMMIT_3MO),
    ("sixMonthPrice", RentalTerm.COMMIT_6MO),
)
_IN_STOCK = {"high": True, "medium": True, "low": True, "none": False}
_MIG = re.compile(r"\bMIG\s+(\d+g\.\d+gb)\b", re.IGNORECASE)
#: Datacenter ids are "<country>-<state>-<n>" ("US-KS-2") or "<area>-<country>-<n>"
#: ("EUR-IS-1", "EU-RO-1", "AP-JP-1"); these are the area prefixes.
_AREA_PREFIXES = frozenset({"EU", "EUR", "AP", "OC", "SA", "AF", "ME", "NA"})


class RunPodAdapter(Adapter):
    name = "runpod"
    title = "RunPod"
    #: Where to rent: RunPod's console deploy page (console.runpod.io/deploy, as RunPod
    #: templates link it).
    rent_url: ClassVar[str] = "https://console.runpod.io/deploy"
    pricing_url: ClassVar[str] = "https://www.runpod.io/pricing"
    source_url = GRAPHQL_URL
    optional_credential_names = ("runpod_api_key",)
    base_url = API_BASE
    lifecycle = Lifecycle(
        LifecycleState.DEPRECATED,
        since="2026-09-17",
        reason="its GraphQL API (read without a key, and for spot and savings-plan prices) is"
        " rate-limited, its end (HTTP 410) announced for early 2027; with a key list prices"
        " come from REST API v2, which needs the key",
        source="https://docs.runpod.io/api-reference-v2",
    )

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """With a key: the supported REST v2 catalog per cloud (list prices, pod sizes, CUDA),
        then the deprecated GraphQL for what REST v2 does not publish (spot, savings plans,
        clusters, the 1-GPU machine's vCPU and RAM), whose failure is then only a skipped
        record. Without a key: GraphQL alone (REST v2 needs the key)."""
        headers = key_headers(self)
        if "Authorization" not in headers:
            return [await self._graphql(client, headers)]
        catalogs = await self._catalogs(client, headers)
        answered = any(isinstance(c, Mapping) and QUERY_KEY in c for c in catalogs)
        try:
            return [await self._graphql(client, headers), *catalogs]
        except ProviderError as exc:
            if not answered:
                raise
            failed = FailedCall("runpod:graphql", f"GraphQL prices not fetched: {exc.reason}")
            return [*catalogs, failed_calls_payload([failed])]

    async def _graphql(self, client: httpx.AsyncClient, headers: dict[str, str]) -> Any:
        payload = await self.post_json(
            client, self.url("/graphql"), json={"query": GPU_TYPES_QUERY}, headers=headers
        )
        _raise_graphql_errors(payload)
        return payload

    async def _catalogs(self, client: httpx.AsyncClient, headers: dict[str, str]) -> list[Any]:
        """The REST v2 catalog of 1-GPU pods per cloud, for the CUDA versions; a failed call
        is a skipped record (the GraphQL prices stand)."""
        out: list[Any] = []
        failed: list[FailedCall] = []
        for cloud, value in _CATALOG_CLOUDS.items():
            query = {"include": "AVAILABILITY", "product": "POD", "count": 1, "cloud": value}
            try:
                answer = await self.get_json(
                    client, self.url("/v2/catalog/gpus"), params=query, headers=headers
                )
            except ProviderError as exc:
                failed.append(FailedCall(f"runpod:catalog/{cloud}", exc.reason))
                continue
            out.append(query_payload(query, answer))
        return out + ([failed_calls_payload(failed)] if failed else [])

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        graphql: list[Any] = []
        cuda: dict[tuple[str, str], str] = {}
        listed: dict[str, dict[str, Any]] = {}
        payloads, failed = self.split_failed_calls(payloads)
        for payload in payloads:
            if isinstance(payload, Mapping) and QUERY_KEY in payload:
                query, answer = read_query_payload(payload, self.name)
                cuda.update(_catalog_cuda(query, answer))
                for type_id, fields in _catalog_listing(query, answer).items():
                    listed.setdefault(type_id, {}).update(fields)
            else:
                graphql.append(payload)
        records = _with_catalog(graphql, listed)

        def parse_type(result: ParseResult, record: Mapping[str, Any]) -> None:
            ref = f"runpod:gpuType/{record.get('id')}"
            skips = len(result.skipped)
            offers = list(_offers_of(record, ref, result, cuda))
            for fields in offers:
                result.add(ref, **fields)
            if not offers and len(result.skipped) == skips:
                result.skip("no price in any cloud or term", ref)

        result = self.parse_records(
            [records], lambda listing: listing, parse_type, what="gpuType", fetched_at=fetched_at
        )
        result.skip_failed(failed)
        return result


# --- pure helpers ---------------------------------------------------------------------


def _raise_graphql_errors(payload: Any) -> None:
    """GraphQL reports failures in-band, with HTTP 200: turn them into a ProviderError."""
    if isinstance(payload, Mapping) and payload.get("errors"):
        errors = payload["errors"]
        messages = (
            [str(e.get("message", e)) if isinstance(e, Mapping) else str(e) for e in errors]
            if isinstance(errors, list)
            else [str(errors)]
        )
        raise ProviderError("runpod", "GraphQL errors: " + "; ".join(messages)[:300])


def _gpu_type_records(payload: Any) -> list[Any]:
    _raise_graphql_errors(payload)
    data = value_at(payload, "data")
    if not isinstance(data, Mapping):
        raise ResponseFormatError("runpod", "response has no 'data' object")
    return payload_list(data, "gpuTypes", "runpod")


def _catalog_listing(query: Mapping[str, Any], answer: Any) -> dict[str, dict[str, Any]]:
    """Each GPU type of one cloud's REST v2 catalog answer under the GraphQL names its fields
    mean (runpod/docs api-reference-v2/openapi.json, schema ``GpuType``): ``price.<cloud>``,
    "list price in USD per hour for a single GPU of this type", is ``<cloud>Price``;
    ``maxCount.<cloud>``, the largest pod, is ``maxGpuCount<Cloud>Cloud``; ``<cloud>`` (bool)
    is ``<cloud>Cloud``; ``name``, ``manufacturer``, ``memory`` (GB) are ``displayName``,
    ``manufacturer``, ``memoryInGb``. Only the asked cloud's price is taken."""
    cloud = next((c for c, v in _CATALOG_CLOUDS.items() if v == query.get("cloud")), None)
    gpus = value_at(answer, "gpus")
    if cloud is None or not isinstance(gpus, list):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for gpu in gpus:
        if not isinstance(gpu, Mapping) or not isinstance(gpu.get("id"), str):
            continue
        price, count = gpu.get("price"), gpu.get("maxCount")
        out[gpu["id"]] = {
            "id": gpu["id"],
            "displayName": gpu.get("name"),
            "manufacturer": gpu.get("manufacturer"),
            "memoryInGb": gpu.get("memory"),
            f"{cloud}Cloud": gpu.get(cloud),
            f"{cloud}Price": price.get(cloud) if isinstance(price, Mapping) else None,
            f"maxGpuCount{cloud.capitalize()}Cloud": (
                count.get(cloud) if isinstance(count, Mapping) else None
            ),
        }
    return out


def _with_catalog(graphql: Sequence[Any], listed: Mapping[str, Mapping[str, Any]]) -> list[Any]:
    """The GraphQL GPU types, each with the supported REST v2 catalog's list price and pod
    ceiling where it lists the type (the catalog's word wins), then the types only the
    catalog lists (GraphQL failed, or does not name them)."""
    records: list[Any] = []
    seen: set[str] = set()
    for payload in graphql:
        for record in _gpu_type_records(payload):
            if isinstance(record, Mapping) and record.get("id") in listed:
                seen.add(record["id"])
                catalog = {k: v for k, v in listed[record["id"]].items() if v is not None}
                record = {**record, **{k: v for k, v in catalog.items() if k != "displayName"}}
            records.append(record)
    return records + [dict(r) for type_id, r in listed.items() if type_id not in seen]


def _catalog_cuda(query: Mapping[str, Any], answer: Any) -> dict[tuple[str, str], str]:
    """(cloud, GPU type id) -> the newest CUDA version the catalog's machines offer, for the
    1-GPU pods of one cloud's catalog answer (``query`` is what it was asked)."""
    cloud = next((c for c, v in _CATALOG_CLOUDS.items() if v == query.get("cloud")), None)
    gpus = value_at(answer, "gpus")
    if cloud is None or query.get("count") != 1 or not isinstance(gpus, list):
        raise ResponseFormatError("runpod", "a catalog answer is not {'gpus': [...]} of 1-GPU pods")
    out: dict[tuple[str, str], str] = {}
    for gpu in gpus:
        versions = gpu.get("cudaVersions") if isinstance(gpu, Mapping) else None
        found = [
            str(v["version"])
            for v in (versions if isinstance(versions, list) else [])
            if isinstance(v, Mapping) and _CUDA_VERSION.match(str(v.get("version", "")))
        ]
        if found and isinstance(gpu.get("id"), str):
            out[(cloud, gpu["id"])] = max(found, key=lambda v: tuple(map(int, v.split("."))))
    return out


def _offers_of(
    record: Mapping[str, Any],
    ref: str,
    result: ParseResult,
    cuda: Mapping[tuple[str, str], str],
) -> Iterator[OfferFields]:
    """Offer fields for every cloud, GPU count and term one GPU type is priced at; the
    1-GPU offers of a cloud carry its catalog's CUDA version (``cuda``, by cloud and id)."""
    type_id = record.get("id")
    if not isinstance(type_id, str) or not type_id.strip():
        result.skip("gpuType without id", ref)
        return
    # a pod's disk, which the GraphQL API does not price: the documented $/GB-month of the
    # container and volume disks, none included, and the container disk every pod has
    gpu = provider_disk("runpod").billed_apart() | _gpu_fields(record, type_id)
    name = record.get("displayName") or type_id
    is_slice = gpu.get("gpu_mig_profile") is not None

    def offer(kind: str, count: int, term: RentalTerm, price: Decimal) -> OfferFields:
        version = cuda.get((kind, type_id)) if count == 1 else None
        return gpu | {
            "cuda_version": version,
            "offer_id": f"{type_id}:{kind}:{count}x",
            "instance_name": f"{count}x {name}",
            "gpu_count": count,
            **price_fields(price, PriceBasis.GPU, term),
        }

    for cloud in _CLOUDS:
        if record.get(f"{cloud}Cloud") is False:
            continue
        counts = [1] if is_slice else _cloud_counts(record, cloud)
        lowest = _cloud_quote(record, cloud)
        in_cloud: OfferFields = {"datacenter": cloud == "secure"}
        for term, price_key in (
            (RentalTerm.ON_DEMAND, f"{cloud}Price"),
            (RentalTerm.INTERRUPTIBLE, f"{cloud}SpotPrice"),
        ):
            price = _price(record, price_key, result, ref)
            if price is None and term is RentalTerm.ON_DEMAND:
                # no list price: the 1-GPU quote's on-demand price, for 1 GPU only
                price = _price(lowest, "uninterruptablePrice", result, ref)
                if price is not None:
                    yield offer(cloud, 1, term, price) | _lowest_fields(lowest, 1) | in_cloud
                continue
            if price is None:
                continue
            for count in counts:
                yield offer(cloud, count, term, price) | _lowest_fields(lowest, count) | in_cloud
        bid = _price(lowest, "minimumBidPrice", result, ref)
        if bid is not None:
            yield offer(cloud, 1, RentalTerm.INTERRUPTIBLE, bid) | _bid_fields(lowest) | in_cloud
    quote = record.get("lowestPrice")
    if isinstance(quote, Mapping) and _quote_cloud(record) is None:
        # a quote for whichever cloud is cheapest: its bid, cloud unknown
        bid = _price(quote, "minimumBidPrice", result, ref)
        if bid is not None:
            yield offer("any-cloud", 1, RentalTerm.INTERRUPTIBLE, bid) | _bid_fields(quote)
    plan_counts = [1] if is_slice else _cloud_counts(record, None)
    for price_key, term in _COMMITMENTS:
        price = _price(record, price_key, result, ref)
        if price is None:
            continue
        for count in plan_counts:
            yield offer("savings-plan", count, term, price)
    # Instant Cluster nodes: ``clusterPrice`` per GPU-hour, one offer per datacenter
    price = _price(record, "clusterPrice", result, ref)
    node_gpus = whole_count(record.get("maxGpuCount"))
    if price is None or node_gpus is None or is_slice:
        return
    datacenters = record.get("nodeGroupDatacenters")
    for dc in datacenters if isinstance(datacenters, list) else []:
        dc_id = dc.get("id") if isinstance(dc, Mapping) else None
        if isinstance(dc_id, str) and dc_id:
            yield offer("cluster", node_gpus, RentalTerm.ON_DEMAND, price) | {
                "instance_name": f"Instant Cluster node {node_gpus}x {name}",
                "region": dc_id,
                "country": datacenter_country(dc_id),
                "multi_node": True,
                "datacenter": True,
            }


def _gpu_fields(record: Mapping[str, Any], type_id: str) -> OfferFields:
    """GPU model, vendor, memory and (for a MIG slice) its profile and fraction."""
    memory_gb = positive_quantity(record.get("memoryInGb"))
    mig = _MIG.search(type_id)
    vendor = gpu_vendor(record.get("manufacturer"))
    # a slice's memory would contradict the parent GPU's: resolve the parent by name
    fields = gpu_fields(type_id, memory_gb=None if mig else memory_gb, vendor=vendor)
    model = fields.get("gpu_model")
    parent = get_gpu(model) if mig and model else None
    fraction = memory_gb / parent.memory_gb if parent and parent.memory_gb and memory_gb else None
    return fields | {
        "gpu_memory_gb": memory_gb,
        "gpu_mig_profile": mig.group(1) if mig else None,
        "gpu_fraction": fraction if fraction is not None and 0 < fraction < 1 else None,
    }


def _lowest_fields(lowest: Mapping[str, Any], count: int) -> OfferFields:
    """vCPU, RAM (GB) and stock from a 1-GPU ``lowestPrice`` quote: only valid for 1 GPU."""
    stock = lowest.get("stockStatus", ...)  # absent: unknown; null: out of stock
    word = str(stock).strip().lower()
    available = None if stock is ... else stock is not None and _IN_STOCK.get(word)
    if count != 1:
        return {"available_now": available}
    return {
        "vcpus": positive_quantity(lowest.get("minVcpu")),
        "ram_gb": positive_quantity(lowest.get("minMemory")),
        "available_now": available,
    }


def _quote_cloud(record: Mapping[str, Any]) -> str | None:
    """The cloud an unaliased ``lowestPrice`` quote is for: the only one the type is
    offered in (``secureCloud``/``communityCloud``); None when both may be."""
    offered = [c for c in _CLOUDS if record.get(f"{c}Cloud") is not False]
    return offered[0] if len(offered) == 1 else None


def _cloud_quote(record: Mapping[str, Any], cloud: str) -> Mapping[str, Any]:
    """The ``lowestPrice`` quote of one cloud: its alias (``secureLowestPrice``), else an
    unaliased ``lowestPrice`` when the type is offered in that cloud only; else empty."""
    quote = record.get(f"{cloud}LowestPrice")
    if not isinstance(quote, Mapping) and _quote_cloud(record) == cloud:
        quote = record.get("lowestPrice")
    return quote if isinstance(quote, Mapping) else {}


def _bid_fields(quote: Mapping[str, Any]) -> OfferFields:
    """An interruptible offer from ``lowestPrice.minimumBidPrice``, labelled a bid.

    RunPod's spot pods are rented by bidding per GPU-hour (``runpodctl start pod --bid``:
    "bid per gpu for spot price", docs.runpod.io/runpodctl/reference/runpodctl_start_pod);
    ``minimumBidPrice`` is the lowest bid the quote's 1-GPU machine accepts now (runpod-python
    ``get_gpu`` docs example: ``minimumBidPrice`` 1.158 beside ``uninterruptablePrice`` 1.89
    for an A100 80GB PCIe). A higher bid may be needed later and an outbid pod stops: the
    variant says it is a bid, not a list price.
    """
    return _lowest_fields(quote, 1) | {"term_variant": BID_VARIANT}


def _cloud_counts(record: Mapping[str, Any], cloud: str | None) -> list[int]:
    """Pod sizes in one cloud (``None``: any cloud), from the max-GPU ceiling it publishes."""
    own = whole_count(record.get(f"maxGpuCount{cloud.capitalize()}Cloud")) if cloud else None
    high = own or whole_count(record.get("maxGpuCount"))
    low = whole_count(record.get("minPodGpuCount")) or 1
    return power_of_two_counts(high, low) if high else [low]


def _price(
    record: Mapping[str, Any], key: str, result: ParseResult, ref: str | None
) -> Decimal | None:
    """A positive price, or ``None`` when absent/0 (not offered); garbage is a recorded skip."""
    negative = "negative {name} ({price})"
    return positive_price(
        result, record.get(key), key, ref, absent=None, zero=None, negative=negative
    )


def datacenter_country(dc_id: str) -> str | None:
    """The ISO country code a RunPod datacenter id carries ("EUR-IS-1" -> "IS").

    >>> datacenter_country("US-KS-2"), datacenter_country("AP-JP-1")
    ('US', 'JP')
    """
    parts = dc_id.upper().split("-")
    if len(parts) < 2:
        return None
    code = parts[1] if parts[0] in _AREA_PREFIXES else parts[0]
    return code if len(code) == 2 and code.isalpha() else None
