"""``GET /v1/offers``: the cheapest qualifying offers for a requirement and a job.

The hot path: validate the query, build its canonical key, answer 304 if the client holds
this snapshot's answer, else look the key up in the state's LRU; only a miss ranks (in a
worker thread). The answer is cached as finished bytes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ..deps import ContextDep, StateDep
from ..offers_cache import raw_key
from ..offers_query import canonical_key, openapi_parameters, parse_offers_query, validate_query
from ..answers import CachedPage, etag_for, ranked_page, time_bucket

__all__ = ["OffersPage", "RankedOffer", "cache_headers", "not_modified", "router"]

router = APIRouter(prefix="/v1/offers", tags=["offers"])


class Hardware(BaseModel):
    gpu_model: str
    gpu_family: str | None
    gpu_count: int
    gpus: float = Field(description="GPUs per instance; a slice counts as its fraction")
    nodes: int = Field(description="instances rented side by side for the job")
    total_gpus: float
    gpu_memory_gb: float | None
    total_gpu_memory_gb: float | None
    gpu_form_factor: str | None
    gpu_interconnect: str | None
    fabric: str | None
    fabric_gbps: float | None
    cpu_cores: float | None
    vcpus: float | None
    ram_gb: float | None
    storage_gb: float | None
    storage_type: str | None


class Price(BaseModel):
    term: str = Field(description="the chosen (cheapest for the job) rental term")
    price_amount: str | None = Field(description="as published, exact, in price_currency")
    price_currency: str
    price_unit: str
    price_basis: str
    usd_per_hour: float = Field(description="whole instance")
    usd_per_gpu_hour: float | None
    min_rental_hours: float | None
    billing_increment_s: int | None
    on_demand_usd_per_hour: float | None
    break_even_hours: float | None
    break_even: str | None = Field(description="why this term, against on-demand")


class Performance(BaseModel):
    precision: str
    peak_tflops: float = Field(description="dense peak per GPU at the precision")
    mfu: float
    scaling_intra_node: float
    scaling_inter_node: float
    scaling: float
    effective_tflops: float = Field(description="total GPUs x peak x mfu x scaling")


class JobCost(BaseModel):
    compute_hours: float | None
    wall_clock_hours: float | None
    billed_hours: float | None
    job_cost_usd: float | None
    usd_per_effective_tflop_hour: float | None
    memory_needed_gb: float | None


class RankedOffer(BaseModel):
    rank: int
    provider: str
    seller: str | None = Field(
        description="who rents it out when the provider lists others' machines"
        " (an aggregator's cloud, a price sheet's seller); null: the provider itself"
    )
    offer_id: str
    instance_name: str | None
    region: str | None
    country: str | None
    reliability: float | None
    verified: bool | None
    available_now: bool | None
    fetched_at: datetime
    price_age_hours: float | None = Field(description="age of the price at generated_at")
    hardware: Hardware
    price: Price
    performance: Performance
    job: JobCost


class InvalidQuery(BaseModel):
    """FastAPI's 422 shape: each error names the parameter (``loc``) and why (``msg``)."""

    detail: list[dict[str, Any]]


class OffersPage(BaseModel):
    source: str = Field(description="database | sample")
    sample: bool = Field(description="true: recorded sample prices, not live")
    note: str | None
    snapshot_at: datetime | None
    generated_at: datetime
    stale_providers: list[str] = Field(description="last fetch failed; older offers shown")
    failed_providers: list[str] = Field(description="no offers from them; some may be hidden")
    warnings: list[str]
    query: dict[str, object] = Field(description="the query in canonical form")
    count: int
    offers: list[RankedOffer]


def cache_headers(etag: str, max_age_s: int) -> dict[str, str]:
    return {"ETag": etag, "Cache-Control": f"public, max-age={max_age_s}"}


def not_modified(request: Request, etag: str) -> bool:
    """True if ``If-None-Match`` holds ``etag`` (weak comparison, ``*`` matches)."""
    header = request.headers.get("if-none-match")
    if not header:
        return False
    bare = etag.removeprefix("W/")
    for token in header.split(","):
        token = token.strip()
        if token == "*" or token.removeprefix("W/") == bare:
            return True
    return False


@router.get(
    "",
    response_model=OffersPage,
    responses={
        304: {"description": "If-None-Match matched: same snapshot, same query"},
        422: {"model": InvalidQuery, "description": "invalid or unknown parameters"},
        503: {"description": "the current offers could not be loaded"},
    },
    openapi_extra={"parameters": openapi_parameters()},
)
async def list_offers(request: Request, state: StateDep, context: ContextDep) -> Response:
    """The cheapest offers for the requirement and job, by USD per effective TFLOP-hour.

    Each offer carries its price breakdown, the chosen term and why, effective TFLOPs and
    its factors, and the age of its price. The answer says where the data comes from
    (``source``; ``sample`` is the offline recording) and which providers are stale or
    failed, since their offers may be missing or old.
    """
    now = time_bucket()
    raw = raw_key(request.scope)
    # Fast path: this exact query string was answered from this snapshot in this bucket.
    page: CachedPage | None = state.cache.get((raw, now))
    parsed = None
    if page is None:
        query = validate_query(request.query_params)  # 422 names the parameter
        key = canonical_key(query)
        page = state.cache.get((key, now))
        if page is None:
            parsed = parse_offers_query(query, key)  # the engine's own rules: 422 too
    context.metrics.offers_cache.labels("miss" if parsed is not None else "hit").inc()
    etag = page.etag if page is not None else etag_for(state, parsed.key)  # type: ignore[union-attr]
    headers = cache_headers(etag, context.settings.cache_max_age_s)
    if not_modified(request, etag):
        return Response(status_code=304, headers=headers)
    if page is None:
        assert parsed is not None
        page = await run_in_threadpool(ranked_page, state, parsed, now)
        state.cache.put((parsed.key, now), page)
    state.cache.put((raw, now), page)
    return Response(page.body, media_type="application/json", headers=headers)
