"""From a parsed query to response bytes: rank the in-memory frame, shape, serialize.

Each ranking row is shaped by the fields of :class:`~service.api.answer_schema.RankedOffer`
(:data:`~service.api.answer_schema.TOP_LEVEL`, :data:`~service.api.answer_schema.GROUPS`).
The body is built as dicts and serialised with orjson (the bytes ``json.dumps`` gives with
compact separators, ~8x faster: 0.13 ms against 1.1 ms for a 120 kB answer, on every new
query). Validating every row through the models costs several times the ranking (500 rows
of 20k offers: ~140 ms against ~16 ms to rank and ~12 ms to shape and dump), so a test
checks that the dicts validate instead.

The router calls :func:`ranked_page` only on a cache miss (see
:mod:`service.api.offers_cache`), in a worker thread: polars releases the GIL while it ranks.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any, cast
from urllib.parse import urlencode

import orjson
import polars as pl

from gpuscout.pricing.coverage import left_out_plan, misfits, note_of
from gpuscout.pricing.display import for_display
from gpuscout.pricing.rank import RankedPage, RankOptions, SortKey, rank_page

from .answer_schema import GROUPS, TOP_LEVEL
from .engine_inputs import ParsedQuery
from .offer_ids import (
    KEY_COLUMNS,
    Cursor,
    encode_cursor,
    offer_id,
    offer_key,
    offer_links,
    query_digest,
)
from .offers_cache import OFFERS_PATH, CachedPage, etag_for
from .state import ApiState
from .vocabulary import rfc3339

__all__ = ["page_header", "ranked_offers", "ranked_page", "warnings_for"]

#: Every column an answer's offer shows or is keyed by.
_SHAPED_COLUMNS = tuple(
    dict.fromkeys([*KEY_COLUMNS, *TOP_LEVEL, *(c for cs in GROUPS.values() for c in cs)])
)


def _json_values(column: pl.Series, finite: bool) -> list[Any]:
    """A column's values as the answer holds them: an instant as RFC 3339 text, with
    ``finite`` a float that is not finite as null, the rest as they are. A column's kind is
    read off its first value (asking the column's dtype, or the frame's schema, cost more
    than converting the values: ~0.1 ms a page)."""
    values = column.to_list()
    first = next((v for v in values if v is not None), None)
    if isinstance(first, datetime):
        return [None if v is None else rfc3339(v) for v in values]
    if finite and isinstance(first, float):
        return [v if v is None or math.isfinite(v) else None for v in values]
    return values


def _shaped(
    rows: pl.DataFrame, checklists: list[dict[str, Any]], *, finite: bool = True
) -> list[dict[str, Any]]:
    """Ranking rows as :class:`RankedOffer` dicts (a column the ranking lacks: an error),
    each with its ``checklist`` summary: built column by column, each value converted
    once (:func:`_json_values`), and each group's dicts zipped from its columns.

    ``finite``: a float that is not finite is null in the dicts (JSON has no NaN, and the
    estimate's answer is written by ``json.dumps`` refusing one); without it, it is left to
    orjson, which writes null: the pass over every float of a page was a third of shaping
    it, on every new query."""
    values = {name: _json_values(rows.get_column(name), finite) for name in _SHAPED_COLUMNS}
    keys = [
        offer_key(dict(zip(KEY_COLUMNS, k, strict=True)))
        for k in zip(*(values[c] for c in KEY_COLUMNS), strict=True)
    ]
    top = [
        dict(zip(TOP_LEVEL, v, strict=True))
        for v in zip(*(values[c] for c in TOP_LEVEL), strict=True)
    ]
    groups = {
        group: [
            dict(zip(columns, v, strict=True))
            for v in zip(*(values[c] for c in columns), strict=True)
        ]
        for group, columns in GROUPS.items()
    }
    out = []
    for i, key in enumerate(keys):
        offer: dict[str, Any] = {"id": offer_id(key), **top[i]}
        for group, dicts in groups.items():
            offer[group] = dicts[i]
        offer["checklist"] = checklists[i]
        offer["links"] = offer_links(key, offer)
        out.append(offer)
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

    def left_out_of(unplaced: pl.LazyFrame | pl.DataFrame | None) -> pl.LazyFrame:
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


def _page_offers(
    state: ApiState, page: RankedPage, offset: int, *, finite: bool = True
) -> list[dict[str, Any]]:
    """The page's rows (from ``offset``, rounded as :func:`pricing.display.for_display`
    shows them) shaped as in the answer, each with its checklist summary
    (:meth:`ApiState.checklist_of`); ``finite``: as :func:`_shaped` takes it."""
    counts = state.checklist_of(page.offer_rows.slice(offset))
    return _shaped(for_display(page.rows.slice(offset)), counts.to_dicts(), finite=finite)


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
        "catalog_providers": cur.catalog_providers,
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
    offers = _page_offers(state, page, q.offset, finite=False)  # orjson writes null
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
    data = orjson.dumps(body)
    return CachedPage(data, etag_for(state, q.key))
