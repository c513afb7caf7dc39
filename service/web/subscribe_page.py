"""``GET /subscribe`` and ``POST /subscribe``: the weekly digest's form, for people.

The form posts here (form-encoded, works without JavaScript); the subscription goes through
the very code of ``POST /v1/subscriptions`` (:func:`service.api.routers.subscriptions.subscribe`:
the same double opt-in, the same limits). The digest's requirement and job are the
explorer's query string the form was opened with (``/subscribe?gpus=H100&hours=10``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams

from gpuscout.pricing.job import Job
from gpuscout.pricing.serve_rank import ServeRequest
from gpuscout.service.api.deps import SavedSearchProvidersDep, SettingsDep
from gpuscout.service.api.engine_inputs import parse_offers_query
from gpuscout.service.api.offers_query import canonical_key, validate_query
from gpuscout.service.api.routers.subscriptions import ManagerDep, SubscriptionAccepted, subscribe
from gpuscout.service.api.serving_offers import SERVE_PARAMS
from gpuscout.service.digest.subscriptions import SubscriptionRequest
from gpuscout.service.validation_text import error_message

from .form import clean_query
from .same_origin import require_same_origin
from .templating import templates

__all__ = ["render_form", "router", "search_form", "search_from_query", "serve_from_query"]

router = APIRouter(include_in_schema=False)


def search_from_query(
    query: str, max_items: int | None, providers: Collection[str] | None = None
) -> tuple[Any, Job, list[str]]:
    """The requirement and job of an explorer query string (errors as sentences): what the
    digest's and the alert's forms save. A provider name not in ``providers`` (the state's
    known names, :func:`service.api.deps.saved_search_providers`; ``None``: not checked)
    is refused as the explorer refuses it, one in another case spelled as the offers do."""
    try:
        valid = validate_query(clean_query(QueryParams(query)), max_items)
        parsed = parse_offers_query(valid, canonical_key(valid), providers=providers)
    except RequestValidationError as exc:
        return None, Job.for_hours(1), [f"{e['loc'][-1]}: {error_message(e)}" for e in exc.errors()]
    return parsed.requirement, parsed.job or Job.for_hours(1), []


def serve_from_query(query: str) -> tuple[ServeRequest | None, list[str]]:
    """The serve request of an explorer query string in serve mode (``?serve=MODEL&...``),
    ``None`` without ``serve``; errors as sentences, as ``/v1/offers?serve=`` words them."""
    params = QueryParams(query)
    if not params.get("serve"):
        return None, []
    try:
        return ServeRequest.model_validate({k: params[k] for k in SERVE_PARAMS if k in params}), []
    except ValidationError as exc:
        return None, [
            f"{'.'.join(map(str, e['loc'])) or 'serve'}: {error_message(e)}" for e in exc.errors()
        ]


def render_form(
    request: Request,
    template: str,
    page: dict[str, Any],
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    """A form page (the digest's or an alert's): ``page`` holds its title, nav entry and
    the blank values of its controls, ``context`` what this request fills in; never cached,
    since it carries what the visitor typed."""
    return templates().TemplateResponse(
        request,
        template,
        {"errors": [], "done": None, "email": "", "name": "", **page, **context},
        status_code=status_code,
        headers={"Cache-Control": "no-store"},
    )


def search_form(
    request: Request,
    max_items: int | None,
    providers: Collection[str] | None,
    render: Callable[..., HTMLResponse],
) -> HTMLResponse:
    """A saved-search form opened on the explorer's query string (the digest's, an
    alert's): ``render`` shows it with that query's requirement and job, or with why it
    cannot be saved (422, as the explorer refuses it)."""
    query = str(clean_query(request.query_params))
    requirement, job, errors = search_from_query(query, max_items, providers)
    serve, serve_errors = serve_from_query(query)
    errors += serve_errors
    status_code = 422 if errors else 200
    return render(
        request,
        status_code,
        query=query,
        requirement=requirement,
        job=job,
        serve=serve,
        errors=errors,
    )


def _render(request: Request, status_code: int = 200, **context: Any) -> HTMLResponse:
    page = {"title": "Weekly digest", "nav": "subscribe", "time_zone": "UTC"}
    return render_form(request, "subscribe.html", page, status_code, **context)


@router.get("/subscribe", response_class=HTMLResponse)
async def subscribe_form(
    request: Request, settings: SettingsDep, providers: SavedSearchProvidersDep
) -> HTMLResponse:
    return search_form(request, settings.api_max_list_items, providers, _render)


@router.post("/subscribe", response_class=HTMLResponse, dependencies=[Depends(require_same_origin)])
async def subscribe_post(
    request: Request,
    settings: SettingsDep,
    manager: ManagerDep,
    providers: SavedSearchProvidersDep,
) -> HTMLResponse:
    """The form's post (``application/x-www-form-urlencoded``, read here: no multipart
    parser is needed for four text fields; the app's body size limit applies)."""
    form = QueryParams((await request.body()).decode("utf-8", "replace"))
    email, name = form.get("email", "").strip(), form.get("name", "").strip()
    time_zone = form.get("time_zone", "").strip() or "UTC"
    query = form.get("query", "")
    requirement, job, errors = search_from_query(query, settings.api_max_list_items, providers)
    serve, serve_errors = serve_from_query(query)
    errors += serve_errors
    shown = {"query": query, "requirement": requirement, "job": job, "serve": serve}
    shown |= {"email": email, "name": name, "time_zone": time_zone}
    if errors:
        return _render(request, 422, errors=errors, **shown)
    try:
        body = SubscriptionRequest(
            email=email,
            name=name,
            time_zone=time_zone,
            requirement=requirement,
            job=job,
            serve=serve,
        )
    except ValidationError as exc:
        errors = [f"{e['loc'][0]}: {error_message(e)}" for e in exc.errors()]
        return _render(request, 422, errors=errors, **shown)
    answer = await run_in_threadpool(subscribe, request, body, manager, settings, providers)
    if not isinstance(answer, SubscriptionAccepted):  # 429: a limit is reached
        import json

        detail = json.loads(bytes(answer.body)).get("detail", "too many requests")
        return _render(request, answer.status_code, errors=[detail], **shown)
    return _render(request, 202, done=answer, **shown)
