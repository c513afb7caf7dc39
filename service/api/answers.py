"""From a parsed query to response bytes: rank the in-memory frame, shape, serialize.

Each ranking row is shaped by the fields of :class:`~service.api.answer_schema.RankedOffer`
(:data:`~service.api.answer_schema.TOP_LEVEL`, :data:`~service.api.answer_schema.GROUPS`).
The body is built as dicts and ``json.dumps``: validating every row through the models
costs several times the ranking (500 rows of 20k offers: ~140 ms against ~16 ms to rank and
~12 ms to shape and dump), so a test checks that the dicts validate instead.

The router calls :func:`ranked_page` only on a cache miss (see
:mod:`service.api.offers_cache`), in a worker thread: polars releases the GIL while it ranks.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any, cast

import polars as pl

from adapters.sample import SAMPLE_NOTE
from pricing.coverage import left_out, left_out_note
from pricing.display import for_display
from pricing.rank import RankOptions, SortKey, rank

from .answer_schema import GROUPS, TOP_LEVEL
from .offers_cache import CachedPage, etag_for
from .offers_query import ParsedQuery
from .state import ApiState

__all__ = ["page_header", "ranked_offers", "ranked_page", "warnings_for"]


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
    sort = cast(SortKey, q.sort)  # validated by the query model (queries.SortKey)
    options = RankOptions(
        precision=q.precision, limit=q.limit, sort=sort, now=now, mfu=q.mfu, scaling=q.scaling
    )
    return rank(state.frame, q.requirement, q.job, options)


def warnings_for(state: ApiState) -> list[str]:
    cur = state.current
    out = []
    if cur.sample:
        out.append(cur.note or SAMPLE_NOTE)
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
    if cur.fx_note:
        out.append(cur.fx_note)
    return out


def ranked_offers(state: ApiState, q: ParsedQuery, now: datetime) -> list[dict[str, Any]]:
    """The ranked offers of a query, shaped as in the answer (blocking)."""
    return [_shape(row) for row in for_display(_rank(state, q, now)).iter_rows(named=True)]


def page_header(state: ApiState, now: datetime) -> dict[str, Any]:
    """What every answer about offers says about its data."""
    cur = state.current
    return {
        "source": cur.source,
        "sample": cur.sample,
        "origin": cur.origin,
        "sample_providers": cur.sample_providers,
        "note": cur.note,
        "fx_as_of": cur.fx.as_of,
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
    note = left_out_note(state.frame, q.requirement, now, precision=q.precision, job=q.job)
    if note:
        header["warnings"] = [*header["warnings"], note]
    body = {
        **header,
        "left_out": left_out(
            state.frame, q.requirement, now, precision=q.precision, job=q.job
        ).to_dicts(),
        "query": json.loads(q.key),
        "count": len(offers),
        "offers": offers,
    }
    data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    return CachedPage(data, etag_for(state, q.key))
