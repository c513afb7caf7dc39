"""``GET /offer?key=``: one offer, every field its provider published, the renter's checklist
for it (met / not met / unknown, with the value behind each), its terms and its price
history; ``GET /offer/record?key=`` is the raw record as JSON.

``key`` is the offer's stored key (:attr:`adapters.schema.Offer.key`), the one
``/v1/history/offers/{key}`` takes, so the page and the API name an offer alike; the page
takes the API's ``id`` of an offer too (``/offer?id=``), as ``gpuscout offer`` does. An
offer no longer listed (a bookmark of one the latest snapshot dropped) is a page saying so,
with where its price history stays, not a JSON problem.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, JSONResponse
from markupsafe import escape
from starlette.concurrency import run_in_threadpool

from gpuscout.service.api.deps import ContextDep, StateDep
from gpuscout.service.api.offer_ids import decode_offer_id, offer_links
from gpuscout.service.offer_record import (
    availability_shares,
    checklist_of,
    grouped_fields,
    published_record,
    terms_of,
)

from .charts import Series, line_chart
from .layout import message_page
from .templating import templates

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

KeyQuery = Annotated[str, Query(min_length=1, max_length=1000, description="the offer key")]
OptionalKey = Annotated[str | None, Query(max_length=1000, description="the offer key")]
OptionalId = Annotated[
    str | None,
    Query(alias="id", max_length=2000, description="the offer id of /v1/offers"),
]


def _history(engine: Any, key: str) -> list[Any]:
    if engine is None:
        return []
    from gpuscout.db.history import offer_price_history

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


def _message(title: str, body: str, status_code: int) -> HTMLResponse:
    return HTMLResponse(message_page(title, body, nav="offers"), status_code=status_code)


def _not_listed(key: str) -> HTMLResponse:
    """An offer the current snapshot does not hold: said, with its price history's link."""
    history = f"/v1/history/offers/{quote(key, safe='')}"
    body = (
        f"<p>No current offer has the key <code>{escape(key)}</code>. Its provider may "
        "have stopped listing it since you saw it; what price history gpuscout stored of it "
        f'stays at <a href="{escape(history)}">{escape(history)}</a>.</p>'
        '<p><a href="/">See the current offers</a></p>'
    )
    return _message("Offer not listed", body, status.HTTP_404_NOT_FOUND)


@router.get("/offer", response_class=HTMLResponse)
async def offer_page(
    request: Request,
    state: StateDep,
    context: ContextDep,
    key: OptionalKey = None,
    offer_id: OptionalId = None,
) -> HTMLResponse:
    key, offer_id = key or None, offer_id or None  # a blank one names nothing
    if key is None and offer_id is not None:
        key = decode_offer_id(offer_id)
        if key is None:
            body = (
                f"<p><code>{escape(offer_id)}</code> is not an offer id. An offer's id is the "
                '<code>id</code> of <a href="/v1/offers">/v1/offers</a>.</p>'
            )
            return _message("Not an offer id", body, status.HTTP_422_UNPROCESSABLE_CONTENT)
    if key is None:
        body = (
            "<p>Name an offer: <code>/offer?key=&lt;its key&gt;</code> or "
            '<code>/offer?id=&lt;its id&gt;</code>; <a href="/">the offers</a> link to '
            "theirs.</p>"
        )
        return _message("Which offer?", body, status.HTTP_422_UNPROCESSABLE_CONTENT)
    try:
        row, terms, (record, origin), _ = await _offer(state, context, key)
    except HTTPException as exc:
        if exc.status_code != status.HTTP_404_NOT_FOUND:
            raise
        return _not_listed(key)
    points = await run_in_threadpool(_history, context.history, key)
    now = datetime.now(UTC)
    shares = await run_in_threadpool(
        availability_shares, context.history, key, now, source=state.current.source
    )
    quoted = quote(key, safe="")
    return templates().TemplateResponse(
        request,
        "offer.html",
        {
            "title": f"{row['provider']}{' / ' + row['seller'] if row['seller'] else ''}: "
            f"{row['instance_name'] or row['offer_id']}",  # as the page's heading says
            "key": key,
            "row": row,
            "terms": terms,
            "groups": grouped_fields(record),
            "checklist": checklist_of(state.frame, key),
            "origin": origin,
            "points": points,
            "availability": shares,
            "chart": _chart(points, now) if points else None,
            "has_database": context.history is not None,
            "stale": row["provider"] in state.current.stale_providers,
            "answer": _offer_banner(state.current, row["provider"]),
            "rent": offer_links(key, row)["rent"],
            "record_url": f"/offer/record?key={quoted}",
            "history_url": f"/v1/history/offers/{quoted}",
        },
    )


@router.get("/offer/record")
async def offer_record(key: KeyQuery, state: StateDep, context: ContextDep) -> JSONResponse:
    """The offer's fields as published (the stored record; see :mod:`.offer_record`)."""
    _row, _terms, (record, origin), _ = await _offer(state, context, key)
    return JSONResponse({"key": key, "from": origin, "record": record})
