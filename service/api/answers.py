"""The answer about offers: its models, and how a parsed query becomes its bytes.

The pydantic models (:class:`OffersPage`, :class:`RankedOffer` and its four groups) are the
one declaration of the answer's shape: the router declares them as its response model (the
OpenAPI schema) and :func:`ranked_page` shapes each ranking row by reading their fields
(:data:`TOP_LEVEL`, :data:`GROUPS`), so a column added to a model is in the answer. The
body itself is built as dicts and ``json.dumps``: validating every row through the models
would cost more than ranking it (a test checks that the dicts validate).

The router calls :func:`ranked_page` only on a cache miss (see
:mod:`service.api.offers_cache`), in a worker thread: polars releases the GIL while it ranks.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from pricing.coverage import unidentified_note
from pricing.display import for_display
from pricing.rank import SORT_KEYS, rank

from .offers_cache import CachedPage, etag_for
from .offers_query import ParsedQuery
from .state import ApiState

__all__ = [
    "GROUPS",
    "TOP_LEVEL",
    "OffersPage",
    "Provenance",
    "RankedOffer",
    "page_header",
    "ranked_offers",
    "ranked_page",
    "warnings_for",
]


class _Answer(BaseModel):
    """A part of an answer: exactly these keys, no others."""

    model_config = ConfigDict(extra="forbid")


class Hardware(_Answer):
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


class Price(_Answer):
    term: str = Field(description="the chosen (cheapest for the job) rental term")
    term_variant: str | None = Field(
        description="what tells apart prices of one configuration, location and term"
        ' ("spot" vs "low-priority", a payment option, a spot zone)'
    )
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


class Performance(_Answer):
    precision: str
    peak_tflops: float = Field(description="dense peak per GPU at the precision")
    mfu: float
    scaling_intra_node: float
    scaling_inter_node: float
    scaling: float
    effective_tflops: float = Field(description="total GPUs x peak x mfu x scaling")


class JobCost(_Answer):
    compute_hours: float | None
    wall_clock_hours: float | None
    billed_hours: float | None
    job_cost_usd: float | None
    usd_per_effective_tflop_hour: float | None
    memory_needed_gb: float | None


class RankedOffer(_Answer):
    """One ranked offer: who and where at the top level, the rest in four groups."""

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


class Provenance(_Answer):
    """What every answer about offers says about where its data comes from."""

    source: str = Field(description="database | sample")
    sample: bool = Field(description="true: recorded sample prices, not live")
    note: str | None
    warnings: list[str]


class OffersPage(Provenance):
    snapshot_at: datetime | None
    generated_at: datetime
    stale_providers: list[str] = Field(description="last fetch failed; older offers shown")
    failed_providers: list[str] = Field(description="no offers from them; some may be hidden")
    query: dict[str, object] = Field(description="the query in canonical form")
    count: int
    offers: list[RankedOffer]


def _layout(model: type[BaseModel]) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """A model's plain fields, and each nested model's fields under the nested one's name."""
    top: list[str] = []
    groups: dict[str, tuple[str, ...]] = {}
    for name, info in model.model_fields.items():
        nested = info.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            groups[name] = tuple(nested.model_fields)
        else:
            top.append(name)
    return tuple(top), groups


#: Which ranking columns an offer of the answer holds at its top level, and which in each
#: group, read from :class:`RankedOffer`: the models are the one declaration of the shape.
TOP_LEVEL, GROUPS = _layout(RankedOffer)


def _json_value(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _shape(row: dict[str, Any]) -> dict[str, Any]:
    """One ranking row as a :class:`RankedOffer` dict (a column the ranking lacks: KeyError)."""
    out = {k: _json_value(row[k]) for k in TOP_LEVEL}
    for group, columns in GROUPS.items():
        out[group] = {c: _json_value(row[c]) for c in columns}
    return out


def _rank(state: ApiState, q: ParsedQuery, now: datetime) -> pl.DataFrame:
    req, job = q.requirement, q.job
    if q.sort == "usd_per_effective_tflop_hour":
        return rank(
            state.frame, req, job, precision=q.precision, limit=q.limit, now=now,
            mfu=q.mfu, scaling=q.scaling,
        )  # fmt: skip
    every = rank(
        state.frame, req, job, precision=q.precision, limit=None, now=now,
        mfu=q.mfu, scaling=q.scaling,
    )  # fmt: skip
    return (
        every.sort([q.sort, *SORT_KEYS], nulls_last=True)
        .head(q.limit)
        .with_columns(rank=pl.int_range(1, pl.len() + 1).cast(every.schema["rank"]))
    )


def warnings_for(state: ApiState) -> list[str]:
    cur = state.current
    out = []
    if cur.source == "sample":
        out.append(cur.note or "offline sample: recorded prices, not live")
    if cur.stale_providers:
        out.append(
            "stale providers (last fetch failed; their older offers are included): "
            + ", ".join(cur.stale_providers)
        )
    if cur.failed_providers:
        out.append(
            "failed providers (no offers from them; cheaper offers may be missing): "
            + ", ".join(cur.failed_providers)
        )
    return out


def ranked_offers(state: ApiState, q: ParsedQuery, now: datetime) -> list[dict[str, Any]]:
    """The ranked offers of a query, shaped as in the answer (blocking)."""
    return [_shape(row) for row in for_display(_rank(state, q, now)).iter_rows(named=True)]


def page_header(state: ApiState, now: datetime) -> dict[str, Any]:
    """What every answer about offers says about its data."""
    cur = state.current
    return {
        "source": cur.source,
        "sample": cur.source == "sample",
        "note": cur.note,
        "snapshot_at": cur.snapshot_at.isoformat() if cur.snapshot_at else None,
        "generated_at": now.isoformat(),
        "stale_providers": list(cur.stale_providers),
        "failed_providers": list(cur.failed_providers),
        "warnings": warnings_for(state),
    }


def ranked_page(state: ApiState, q: ParsedQuery, now: datetime) -> CachedPage:
    """Rank, shape and serialize one answer (blocking: run in a worker thread)."""
    offers = ranked_offers(state, q, now)
    header = page_header(state, now)
    left_out = unidentified_note(state.frame, q.requirement, now)
    if left_out:
        header["warnings"] = [*header["warnings"], left_out]
    body = {
        **header,
        "query": json.loads(q.key),
        "count": len(offers),
        "offers": offers,
    }
    data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    return CachedPage(data, etag_for(state, q.key))
