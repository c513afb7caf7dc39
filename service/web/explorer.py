"""``GET /``: the offers explorer, the ranked answer of ``/v1/offers`` as a page.

The query string is the page's state and uses the API's parameter names, so a link to a
page is a link to the same question of the API (the page links to it). Blank form fields
are dropped before the query is read; anything else the API refuses is shown by the form,
naming the parameter, with a 422.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams

from gpuscout.service.api.answers import warnings_for
from gpuscout.service.api.app_context import ApiContext
from gpuscout.service.api.deps import ContextDep, StateDep
from gpuscout.service.api.offers_query import MAX_LIMIT, OffersQuery
from gpuscout.service.api.serving_offers import serving_offers
from gpuscout.service.api.state import ApiState

from .form import clean_query, form_groups, presentation
from .offers_data import QueryError, offer_key, offer_path, offers_answer, query_errors
from .templating import templates

__all__ = ["SORTS", "router"]

router = APIRouter(include_in_schema=False)

#: How many more configurations "Show more" adds to the page.
MORE = 20
#: The configurations a page shows without a ``limit``: the API's default.
DEFAULT_LIMIT: int = OffersQuery.model_fields["limit"].default

#: Table columns the answer can be ordered by (the API's ``sort`` values), with headers.
SORTS: dict[str, str] = {
    "usd_per_effective_tflop_hour": "$ / eff. TFLOP-h",
    "usd_per_gpu_hour": "$ / GPU-h",
    "usd_per_hour": "$ / h",
    "job_cost_usd": "Job cost",
}


@router.get("/", response_class=HTMLResponse)
async def explorer(request: Request, state: StateDep, context: ContextDep) -> HTMLResponse:
    """The ranked offers for the query string, with the form that makes it."""
    params = clean_query(request.query_params)
    if params.get("serve"):  # the workload switch: serving a model, by $ per million tokens
        return await _serving(request, params, state, context)
    answer, errors = None, []
    try:
        answer = await offers_answer(state, params, context)
    except QueryError as exc:
        errors = exc.errors
    for offer in (answer or {}).get("offers", []):
        offer["page"] = offer_path(offer_key(offer))
    sort = params.get("sort", "usd_per_effective_tflop_hour")
    shown_limit = int(answer["query"].get("limit", DEFAULT_LIMIT)) if answer else DEFAULT_LIMIT
    return templates().TemplateResponse(
        request,
        "explorer.html",
        {
            "title": "GPU offers",
            "answer": answer,
            # the coverage note; the warnings about the data are the banner's
            "notes": [
                w for w in (answer or {}).get("warnings", []) if w not in warnings_for(state)
            ],
            # and the rows providers skipped: what no ranking holds (a warning of the data,
            # but the banner says what is stale or failed, this section what is not ranked)
            "skipped": state.current.skipped_lines if answer else [],
            "errors": errors,
            "error_params": {e["param"] for e in errors},
            "groups": form_groups(params),
            "shown": presentation(params),
            "params": params,
            "sort": sort,
            "sorts": SORTS,
            "api_url": "/v1/offers" + (f"?{params}" if params else ""),
            # the page shows a query's first page: "more" raises its limit, up to the API's
            "more_limit": min(shown_limit + MORE, MAX_LIMIT) if shown_limit < MAX_LIMIT else None,
        },
        status_code=422 if errors else 200,
    )


async def _serving(
    request: Request, params: QueryParams, state: ApiState, context: ApiContext
) -> HTMLResponse:
    """The serving answer of ``/v1/offers?serve=...`` for the query string, as a page."""
    answer, errors = None, []
    try:
        answer = await run_in_threadpool(
            serving_offers, params, state, context.settings.api_max_list_items
        )
    except RequestValidationError as exc:
        errors = query_errors(exc)
    return templates().TemplateResponse(
        request,
        "serving.html",
        {
            "title": "Serving a model",
            "answer": answer,
            "errors": errors,
            "error_params": {e["param"] for e in errors},
            "groups": form_groups(params),
            "shown": presentation(params),
            "params": params,
            "api_url": f"/v1/offers?{params}",
        },
        status_code=422 if errors else 200,
    )
