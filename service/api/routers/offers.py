"""``GET /v1/offers``: the cheapest qualifying offers for a requirement and a job.

A repeated query string is answered before routing (:mod:`service.api.offers_cache`).
Here: validate the query, look its canonical key up in the same cache, answer 304 if the
client holds this snapshot's answer, and rank only on a miss (in a worker thread). The
answer is cached as finished bytes under both keys.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from ..answer_schema import OffersPage
from ..answers import ranked_page
from ..deps import ContextDep, StateDep
from ..offers_cache import (
    etag_for,
    if_none_match,
    not_modified,
    page_response,
    raw_key,
    time_bucket,
)
from ..offers_query import canonical_key, openapi_parameters, parse_offers_query, validate_query

__all__ = ["router"]

router = APIRouter(prefix="/v1/offers", tags=["offers"])


class InvalidQuery(BaseModel):
    """FastAPI's 422 shape: each error names the parameter (``loc``) and why (``msg``)."""

    detail: list[dict[str, Any]]


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
    query = validate_query(  # 422 names the parameter
        request.query_params, context.settings.api_max_list_items
    )
    key = canonical_key(query)
    page = state.cache.get((key, now))
    client_etags = if_none_match(request.scope)
    max_age_s = context.settings.cache_max_age_s
    if page is not None:
        context.metrics.offers_cache.labels("hit").inc()
    else:
        parsed = parse_offers_query(query, key)  # the engine's own rules: 422 too
        context.metrics.offers_cache.labels("miss").inc()
        unchanged = not_modified(etag_for(state, key), client_etags, max_age_s)
        if unchanged is not None:
            return unchanged
        page = await run_in_threadpool(ranked_page, state, parsed, now)
        state.cache.put((key, now), page)
    state.cache.put((raw_key(request.scope), now), page)  # the fast path's key
    return page_response(page, client_etags, max_age_s)
