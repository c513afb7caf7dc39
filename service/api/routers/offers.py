"""``GET /v1/offers``: the cheapest qualifying offers for a requirement and a job, a page
at a time; ``GET /v1/offers/{offer_id}``: one current offer, every published field by group
and the renter's checklist; ``GET /v1/offers/{offer_id}/history``: its stored prices.

Validate the query (and its cursor: of this query, of this snapshot), look its canonical
key (cursor included) up in the state's cache (:mod:`service.api.offers_cache`), answer
304 if the client holds this snapshot's answer, and rank only on a miss (in a worker
thread). The answer is cached as finished bytes.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from gpuscout.service.offer_record import (
    availability_shares,
    checklist_of,
    detail_parts,
    frame_key,
    published_record,
)

from ..answer_schema import OfferDetail, OffersPage, Provenance
from ..answers import page_header, ranked_page
from ..deps import ContextDep, NoQueryDep, StateDep
from ..engine_inputs import parse_offers_query
from ..offer_ids import CursorError, decode_cursor, decode_offer_id, offer_links, query_digest
from ..offers_cache import etag_for, not_modified, page_response
from ..offers_query import (
    canonical_key,
    deprecated_names,
    deprecated_values,
    openapi_parameters,
    validate_query,
)
from ..problems import ProblemError, problem_responses
from ..serving_offers import serving_offers
from ..vocabulary import deprecation_headers
from .history import OfferHistory, offer_history_of

__all__ = ["router"]

router = APIRouter(prefix="/v1/offers", tags=["offers"])


def _offset(query: BaseModel, key: str, tag: str) -> int:
    """Where the cursor's page starts; 422 if it is not this query's, 410 if its snapshot
    is gone."""
    text = getattr(query, "cursor")  # noqa: B009
    if text is None:
        return 0
    try:
        cursor = decode_cursor(text)
        if cursor.query != query_digest(key):
            raise CursorError("the cursor belongs to another query; keep the query's parameters")
    except CursorError as exc:
        raise RequestValidationError(
            [{"type": "value_error", "loc": ("query", "cursor"), "msg": str(exc), "input": text}]
        ) from None
    if cursor.tag != tag:
        raise ProblemError(
            410,
            "the cursor belongs to an older snapshot of the offers; the ranking it pointed"
            " into is gone: ask again without cursor",
            slug="cursor-expired",
        )
    return cursor.offset


@router.get(
    "",
    response_model=OffersPage,
    responses={
        304: {"description": "If-None-Match matched: same snapshot, same query"},
        **problem_responses(410, 422, 503),
    },
    openapi_extra={"parameters": openapi_parameters()},
)
async def list_offers(request: Request, state: StateDep, context: ContextDep) -> Response:
    """List the cheapest offers for a requirement and a job.

    Ranked by USD per effective TFLOP-hour (or `sort`). Each offer carries a stable `id`,
    its price breakdown, the chosen term and why, effective TFLOPs and its factors, the age
    of its price and a link to its price history. The answer says where the data comes from
    (`source`; `sample` is the offline recording) and which providers are stale or failed,
    since their offers may be missing or old. `total` counts every qualifying
    configuration; `next` is the cursor of the next page (null on the last).
    """
    if "serve" in request.query_params:  # ranked by USD per million tokens
        answer = await run_in_threadpool(
            serving_offers, request.query_params, state, context.settings.api_max_list_items
        )
        return JSONResponse(answer)
    now = state.answer_time()
    old_names = deprecated_names(request.query_params) + deprecated_values(request.query_params)
    query = validate_query(  # 422 names the parameter
        request.query_params, context.settings.api_max_list_items
    )
    key = canonical_key(query)
    offset = _offset(query, key, state.tag)
    page = state.cache.get((key, now))
    client_etags = ",".join(request.headers.getlist("if-none-match")) or None
    max_age_s = context.settings.cache_max_age_s
    if page is not None:
        context.metrics.offers_cache.labels("hit").inc()
    else:
        # the engine's own rules, and the providers this snapshot knows: 422 too
        parsed = parse_offers_query(query, key, offset, state.known_providers)
        context.metrics.offers_cache.labels("miss").inc()
        unchanged = not_modified(etag_for(state, key), client_etags, max_age_s)
        if unchanged is not None:
            return unchanged
        page = await context.ranking(ranked_page, state, parsed, now)
        state.cache.put((key, now), page)
    response = page_response(page, client_etags, max_age_s)
    if old_names:
        deprecation_headers(old_names, response.headers)
    return response


@router.get(
    "/{offer_id}/history",
    response_model=OfferHistory,
    dependencies=[NoQueryDep],
    responses=problem_responses(404, 503, _404="no stored price for this offer id"),
)
async def get_offer_price_history(offer_id: str, context: ContextDep) -> OfferHistory:
    """Get every stored price of one offer, by the `id` of the offers' answers."""
    key = decode_offer_id(offer_id)
    if key is None:
        raise ProblemError(404, f"{offer_id!r} is not an offer id (see offers[].id)")
    return await offer_history_of(key, context)


@router.get(
    "/{offer_id}",
    response_model=OfferDetail,
    dependencies=[NoQueryDep],
    responses=problem_responses(404, 503, _404="not an offer id, or no current offer with it"),
)
async def get_offer(offer_id: str, state: StateDep, context: ContextDep) -> OfferDetail:
    """Get one current offer: every field its provider publishes, by group, and the checklist.

    The fields are grouped as the checklist groups them (compute, memory and storage, network,
    power and cooling, chassis, software, price and term, support), each group listing
    what is not published too. The checklist gives each of the checklist's items as met, not
    met or unknown (not published), with the value behind it, and the count.
    `offer_origin` says whether this offer's price is the offline sample's.
    """
    key = decode_offer_id(offer_id)
    if key is None:
        raise ProblemError(404, f"{offer_id!r} is not an offer id (see offers[].id)")
    hit = state.frame.filter(frame_key() == key)
    checklist = checklist_of(hit, key)
    if hit.is_empty() or checklist is None:
        raise ProblemError(404, f"no current offer with id {offer_id!r} (key {key!r})")
    row = hit.row(0, named=True)
    record, origin = await run_in_threadpool(
        published_record,
        key,
        row,
        source=state.current.source,
        engine=context.history,
    )
    now = state.answer_time()
    shares = await run_in_threadpool(
        availability_shares, context.history, key, now, source=state.current.source
    )
    header = page_header(state, now)
    return OfferDetail(
        **{name: header[name] for name in Provenance.model_fields},
        id=offer_id,
        key=key,
        offer_origin=state.current.provider_origin(row["provider"]),
        record_from=origin,
        **detail_parts(record, checklist),
        in_stock=shares,
        links=offer_links(key, row),
    )
