"""``GET /alert`` and ``POST /alert``: a price alert on the explorer's search, for people.

The form posts here (form-encoded, works without JavaScript); the alert goes through the
very code of ``POST /v1/alerts`` (:func:`service.api.routers.alerts.create`: the same double
opt-in, limits and webhook checks). Its requirement and job are the explorer's query string
the form was opened with (``/alert?gpus=H100&min_gpus=8``), as for the digest's form; the
confirmation and unsubscribe pages are the digest's, in the same look.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams

from gpuscout.service.alerts.condition import METRICS, SERVE_METRIC
from gpuscout.service.alerts.manager import AlertRequest
from gpuscout.service.api.deps import SavedSearchProvidersDep, SettingsDep
from gpuscout.service.api.routers.alerts import AlertAccepted, create
from gpuscout.service.api.routers.subscriptions import ManagerDep
from gpuscout.service.validation_text import error_message

from .same_origin import require_same_origin
from .subscribe_page import render_form, search_form, search_from_query, serve_from_query

__all__ = ["CONDITIONS", "METRIC_LABELS", "router"]

router = APIRouter(include_in_schema=False)

#: The kinds of condition, as the form offers them.
CONDITIONS: dict[str, str] = {
    "below": "the price is at or below a threshold",
    "in_stock": "a matching offer is available now",
    "drop": "the price drops by a percentage below its 7-day median",
}
#: What the price is measured in, as the form offers it (:data:`METRICS`).
METRIC_LABELS: dict[str, str] = {
    "usd_per_gpu_hour": "USD per GPU-hour",
    "usd_per_effective_tflop_hour": "USD per effective TFLOP-hour",
    "job_cost_usd": "USD for the whole job",
    "usd_per_m_tokens": "USD per million output tokens (a serving search)",
}

#: A validation error's location -> the label of the control it is about.
_FIELD_LABELS = {
    "email": "Email address",
    "name": "Name of the alert",
    "condition": "Alert me when",
    "kind": "Alert me when",
    "metric": "Price measured in",
    "threshold": "Threshold",
    "drop_pct": "Drop",
    "webhooks": "Webhook URL",
}


def _render(request: Request, status_code: int = 200, **context: Any) -> HTMLResponse:
    page: dict[str, Any] = {"title": "Price alert", "nav": "alert", "webhook": ""}
    page |= {"conditions": CONDITIONS, "metrics": METRIC_LABELS}
    metric = SERVE_METRIC if context.get("serve") else METRICS[0]
    page |= {"kind": "below", "metric": metric, "threshold": "", "drop_pct": ""}
    return render_form(request, "alert.html", page, status_code, **context)


def _error(error: Any) -> str:
    """A validation error as a sentence naming the control it is about."""
    named = [str(p) for p in error["loc"] if str(p) in _FIELD_LABELS]
    label = _FIELD_LABELS[named[-1]] if named else "Alert"
    return f"{label}: {error_message(error)}"


@router.get("/alert", response_class=HTMLResponse)
async def alert_form(
    request: Request, settings: SettingsDep, providers: SavedSearchProvidersDep
) -> HTMLResponse:
    return search_form(request, settings.api_max_list_items, providers, _render)


@router.post("/alert", response_class=HTMLResponse, dependencies=[Depends(require_same_origin)])
async def alert_post(
    request: Request,
    settings: SettingsDep,
    manager: ManagerDep,
    providers: SavedSearchProvidersDep,
) -> HTMLResponse:
    """The form's post (``application/x-www-form-urlencoded``; the app's body limit applies).

    Only the fields of the chosen condition are read: a threshold typed before choosing
    "drop" is ignored, not an error."""
    form = QueryParams((await request.body()).decode("utf-8", "replace"))
    field = {k: form.get(k, "").strip() for k in ("email", "name", "webhook", "kind")}
    field |= {k: form.get(k, "").strip() for k in ("metric", "threshold", "drop_pct")}
    query = form.get("query", "")
    requirement, job, errors = search_from_query(query, settings.api_max_list_items, providers)
    serve, serve_errors = serve_from_query(query)
    errors += serve_errors
    shown = {"query": query, "requirement": requirement, "job": job, "serve": serve, **field}
    if errors:
        return _render(request, 422, errors=errors, **shown)
    default_metric = METRICS[0] if serve is None else SERVE_METRIC
    condition: dict[str, Any] = {"kind": field["kind"], "metric": field["metric"] or default_metric}
    if field["kind"] == "below":
        condition["threshold"] = field["threshold"] or None
    elif field["kind"] == "drop":
        condition["drop_pct"] = field["drop_pct"] or None
    try:
        body = AlertRequest(
            email=field["email"],
            name=field["name"],
            requirement=requirement,
            job=job,
            serve=serve,
            condition=condition,
            webhooks=(field["webhook"],) if field["webhook"] else (),
        )
    except ValidationError as exc:
        return _render(request, 422, errors=[_error(e) for e in exc.errors()], **shown)
    answer = await run_in_threadpool(create, request, body, manager, settings, providers)
    if not isinstance(answer, AlertAccepted):  # a limit (409, 429) or a refused webhook (422)
        detail = json.loads(bytes(answer.body)).get("detail", "refused")
        return _render(request, answer.status_code, errors=[detail], **shown)
    return _render(request, 202, done=answer, **shown)
