"""From a parsed query to response bytes: rank the in-memory frame, shape, serialize.

Kept apart from the router so the hot path is easy to see: the router looks the canonical
query up in the state's LRU and only on a miss calls :func:`ranked_page` (in a worker
thread: polars releases the GIL while it ranks).
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from typing import Any, cast

import polars as pl

from pricing.coverage import unidentified_note
from pricing.display import for_display
from pricing.rank import RankOptions, SortKey, rank

from .queries import ParsedQuery
from .state import ApiState

__all__ = [
    "GROUPS",
    "CachedPage",
    "etag_for",
    "page_header",
    "ranked_offers",
    "ranked_page",
    "time_bucket",
]

#: How the flat rank columns are grouped in each offer of the answer.
GROUPS: dict[str, tuple[str, ...]] = {
    "hardware": (
        "gpu_model", "gpu_family", "gpu_count", "gpus", "nodes", "total_gpus",
        "gpu_memory_gb", "total_gpu_memory_gb", "gpu_form_factor", "gpu_interconnect",
        "fabric", "fabric_gbps", "cpu_cores", "vcpus", "ram_gb", "storage_gb", "storage_type",
    ),
    "price": (
        "term", "term_variant", "price_amount", "price_currency", "price_unit", "price_basis",
        "usd_per_hour", "usd_per_gpu_hour", "min_rental_hours", "billing_increment_s",
        "on_demand_usd_per_hour", "break_even_hours", "break_even",
    ),
    "performance": (
        "precision", "peak_tflops", "mfu", "scaling_intra_node", "scaling_inter_node",
        "scaling", "effective_tflops",
    ),
    "job": (
        "compute_hours", "wall_clock_hours", "billed_hours", "job_cost_usd",
        "usd_per_effective_tflop_hour", "memory_needed_gb",
    ),
}  # fmt: skip
TOP_LEVEL: tuple[str, ...] = (
    "rank", "provider", "seller", "offer_id", "instance_name", "region", "country", "reliability",
    "verified", "available_now", "fetched_at", "price_age_hours",
)  # fmt: skip

#: ``now`` used for ranking is floored to this many seconds, so that a cached answer is
#: reused within the bucket (ages are "as of ``generated_at``").
TIME_BUCKET_S = 300


class CachedPage:
    """A finished answer: the body bytes and its validator."""

    __slots__ = ("body", "etag")

    def __init__(self, body: bytes, etag: str) -> None:
        self.body = body
        self.etag = etag


def time_bucket(now: datetime | None = None) -> datetime:
    ts = (now or datetime.now(UTC)).timestamp()
    return datetime.fromtimestamp(ts - ts % TIME_BUCKET_S, UTC)


def etag_for(state: ApiState, key: str) -> str:
    """A weak validator: the snapshot's tag and the canonical query."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    return f'W/"{state.tag}-{digest}"'


def _json_value(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _shape(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: _json_value(row.get(k)) for k in TOP_LEVEL}
    for group, columns in GROUPS.items():
        out[group] = {c: _json_value(row.get(c)) for c in columns}
    return out


def _rank(state: ApiState, q: ParsedQuery, now: datetime) -> pl.DataFrame:
    sort = cast(SortKey, q.sort)  # validated by the query model (queries.SortKey)
    options = RankOptions(
        precision=q.precision, limit=q.limit, sort=sort, now=now, mfu=q.mfu, scaling=q.scaling
    )
    return rank(state.frame, q.requirement, q.job, options)


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
