"""``GET /metrics``: this app's Prometheus registry in the text exposition format."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..deps import ContextDep, NoQueryDep

__all__ = ["router"]

router = APIRouter(tags=["metrics"], dependencies=[NoQueryDep])


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
)
def get_metrics(context: ContextDep) -> Response:
    """Requests and latency per route, cache use, snapshot outcomes per provider."""
    return Response(generate_latest(context.metrics.registry), media_type=CONTENT_TYPE_LATEST)
