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
from urllib.parse import urlencode

import polars as pl

from pricing.coverage import left_out_plan, misfits, note_of
from pricing.display import for_display
from pricing.rank import RankedPage, RankOptions, SortKey, rank_page

from .answer_schema import GROUPS, TOP_LEVEL
from .offer_ids import Cursor, encode_cursor, history_link, offer_id, offer_key, query_digest
from .offers_cache import OFFERS_PATH, CachedPage, etag_for
from .offers_query import ParsedQuery
from .state import ApiState
from .vocabulary import rfc3339

__all__ = ["page_header", "ranked_offers", "ranked_page", "warnings_for"]


def _json_value(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime):
        return rfc3339(value)
    return value


def _shape(row: dict[str, Any], checklist: dict[str, Any]) -> dict[str, Any]:
    """One ranking row as a :class:`RankedOffer` dict (a column the ranking lacks: KeyError),
    with its ``checklist`` summary."""
    key = offer_key(row)
    out: dict[str, Any] = {"id": offer_id(key)}
    out.update((k, _json_value(row[k])) for k in TOP_LEVEL)
    for group, columns in GROUPS.items():
        out[group] = {c: _json_value(row[c]) for c in columns}
    out["checklist"] = checklist
    out["links"] = {"history": history_link(key)}
    return out


def _options(q: ParsedQuery, now: datetime, limit: int | None) -> RankOptions:
    sort = cast(SortKey, q.sort)  # validated by the query model (queries.SortKey)
    return RankOptions(
        precision=q.precision, limit=limit, sort=sort, now=now, mfu=q.mfu, scaling=q.scaling
    )


def _rank(state: ApiState, q: ParsedQuery, now: datetime, *, noted: bool = False) -> RankedPage:
    """The ranking down to the end of this page, and the total of every page; ``noted``:
    with the configurations the job cannot be placed on and the coverage note's rows
    (:func:`~pricing.coverage.left_out`, in :attr:`RankedPage.also`), collected together."""
    options = _options(q, now, q.offset + q.limit)
    if not noted:
        return rank_page(state.frame, q.requirement, q.job, options)

    def left_out_of(unplaced: pl.LazyFrame | None) -> pl.LazyFrame:
        return left_out_plan(
            state.frame, q.requirement, now, precision=q.precision, job=q.job,
            unrankable=state.unrankable, unplaced=unplaced,
        )  # fmt: skip

    return rank_page(state.frame, q.requirement, q.job, options, unplaced=True, also=left_out_of)


def _query_string(canonical: dict[str, Any]) -> str:
    pairs = []
    for name, value in canonical.items():
        for v in value if isinstance(value, list) else [value]:
            pairs.append((name, str(v).lower() if isinstance(v, bool) else str(v)))
    return urlencode(pairs)


def _pagination(state: ApiState, q: ParsedQuery, total: int, count: int) -> dict[str, Any]:
    """``total``, the ``next`` cursor (null on the last page) and the page's ``links``."""
    canonical = json.loads(q.key)
    self_link = f"{OFFERS_PATH}?{_query_string(canonical)}".rstrip("?")
    end = q.offset + count
    cursor = None
    next_link = None
    if count and end < total:
        cursor = encode_cursor(Cursor(state.tag, query_digest(q.key), end))
        next_link = f"{OFFERS_PATH}?{_query_string({**canonical, 'cursor': cursor})}"
    return {
        "total": total,
        "offset": q.offset,
        "next": cursor,
        "links": {"self": self_link, "next": next_link},
    }


def warnings_for(state: ApiState) -> list[str]:
    """What every answer on ``state`` warns about its data (kept per state)."""
    return list(state.warnings)


def _page_offers(state: ApiState, page: RankedPage, offset: int) -> list[dict[str, Any]]:
    """The page's rows (from ``offset``) shaped as in the answer, each with its checklist
    summary (:meth:`ApiState.checklist_of`)."""
    rows = for_display(page.rows.slice(offset))
    counts = state.checklist_of(page.offer_rows.slice(offset))
    return [
        _shape(row, checklist)
        for row, checklist in zip(
            rows.iter_rows(named=True), counts.iter_rows(named=True), strict=True
        )
    ]


def ranked_offers(state: ApiState, q: ParsedQuery, now: datetime) -> list[dict[str, Any]]:
    """The ranked offers of a query, shaped as in the answer (blocking)."""
    return _page_offers(state, _rank(state, q, now), q.offset)


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
        "snapshot_at": rfc3339(cur.snapshot_at) if cur.snapshot_at else None,
        "generated_at": rfc3339(now),
        "stale_providers": list(cur.stale_providers),
        "failed_providers": list(cur.failed_providers),
        "warnings": warnings_for(state),
    }


def ranked_page(state: ApiState, q: ParsedQuery, now: datetime) -> CachedPage:
    """Rank, shape and serialize one answer (blocking: run in a worker thread)."""
    page = _rank(state, q, now, noted=True)
    offers = _page_offers(state, page, q.offset)
    header = page_header(state, now)
    left = page.also
    assert left is not None  # asked for by ``noted``
    fits = misfits(
        state.frame, left, q.requirement, now, precision=q.precision, job=q.job,
        unplaced=page.unplaced,
    )  # fmt: skip
    note = note_of(left, fits)
    if note:
        header["warnings"] = [*header["warnings"], note]
    body = {
        **header,
        "left_out": left.to_dicts(),
        "query": json.loads(q.key),
        "count": len(offers),
        **_pagination(state, q, page.total, len(offers)),
        "offers": offers,
    }
    data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    return CachedPage(data, etag_for(state, q.key))
