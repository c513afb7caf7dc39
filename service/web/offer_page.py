"""``GET /offer?key=``: one offer, every field its provider published, the seed's checklist
for it (met / not met / unknown, with the value behind each), its terms and its price
history; ``GET /offer/record?key=`` is the raw record as JSON.

``key`` is the offer's stored key (:attr:`adapters.schema.Offer.key`), the one
``/v1/history/offers/{key}`` takes, so the page and the API name an offer alike.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from service.api.deps import ContextDep, StateDep
from service.offer_record import checklist_of, grouped_fields, published_record, terms_of

from .charts import Series, line_chart
from .templating import templates

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

KeyQuery = Annotated[str, Query(min_length=1, max_length=1000, description="the offer key")]


def _history(engine: Any, key: str) -> list[Any]:
    if engine is None:
        return []
    from db.history import offer_price_history

    return offer_price_history(engine, key)


def _chart(points: list[Any], now: datetime) -> Any:
    """A step line of USD per GPU-hour (per hour where the GPU count is unknown)."""
    per_gpu = all(p.usd_per_gpu_hour is not None for p in points)
    values = [
        (p.valid_from, p.usd_per_gpu_hour if per_gpu else float(p.usd_per_hour)) for p in points
    ]
    last = points[-1] if points else None
    if last is not None:
        values.append((last.valid_to or now, values[-1][1]))
    unit = "$/GPU-h" if per_gpu else "$/h"
    return line_chart(
        [Series("price", values, step=True)], title=f"Price history, {unit}", unit=unit
    )


async def _offer(state: Any, context: Any, key: str) -> tuple[dict[str, Any], Any, list[Any], str]:
    row, terms = terms_of(state.frame, key)
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no current offer with key {key!r}")
    record, origin = await run_in_threadpool(
        published_record, key, row, source=state.current.source, engine=context.history
    )
    return row, terms, [record, origin], key


def _offer_banner(current: Any, provider: str) -> dict[str, Any]:
    """What the banner partial (``_banner.html``) says on the page of an offer of
    ``provider``: "Sample data" when that provider's held offers are the sample's (the
    replayed sample, or stored from it: in a mixed database, only its own provider counts),
    with their capture date. Staleness is the page's own banner (it gives the price's age)."""
    return {
        "sample": current.provider_origin(provider) == "sample",
        "note": current.provider_sample_note(provider),
        "stale_providers": [],
        "failed_providers": [],
    }


@router.get("/offer", response_class=HTMLResponse)
async def offer_page(
    request: Request, key: KeyQuery, state: StateDep, context: ContextDep
) -> HTMLResponse:
    row, terms, (record, origin), _ = await _offer(state, context, key)
    points = await run_in_threadpool(_history, context.history, key)
    now = datetime.now(UTC)
    quoted = quote(key, safe="")
    return templates().TemplateResponse(
        request,
        "offer.html",
        {
            "title": f"{row['provider']} {row['instance_name'] or row['offer_id']}",
            "key": key,
            "row": row,
            "terms": terms,
            "groups": grouped_fields(record),
            "checklist": checklist_of(state.frame, key),
            "origin": origin,
            "points": points,
            "chart": _chart(points, now) if points else None,
            "has_database": context.history is not None,
            "stale": row["provider"] in state.current.stale_providers,
            "answer": _offer_banner(state.current, row["provider"]),
            "record_url": f"/offer/record?key={quoted}",
            "history_url": f"/v1/history/offers/{quoted}",
        },
    )


@router.get("/offer/record")
async def offer_record(key: KeyQuery, state: StateDep, context: ContextDep) -> JSONResponse:
    """The offer's fields as published (the stored record; see :mod:`.offer_record`)."""
    _row, _terms, (record, origin), _ = await _offer(state, context, key)
    return JSONResponse({"key": key, "from": origin, "record": record})
