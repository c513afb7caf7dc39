"""``GET /healthz`` (the process answers) and ``GET /readyz`` (it can serve)."""

from __future__ import annotations

import logging

from fastapi import APIRouter, HTTPException, status
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from ..deps import DATABASE_UNAVAILABLE, ContextDep, NoQueryDep, current_state

__all__ = ["router"]

log = logging.getLogger("gpuscout.api")

router = APIRouter(tags=["health"], dependencies=[NoQueryDep])


class Health(BaseModel):
    status: str


class Ready(BaseModel):
    status: str
    database: str  # ok | none (no database configured)
    offers: int
    source: str


@router.get("/healthz", response_model=Health)
async def get_health() -> Health:
    """The process is up; says nothing about the database."""
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Ready,
    responses={503: {"description": "the database is unreachable or no offers are loaded"}},
)
async def get_readiness(context: ContextDep) -> Ready:
    """Ready to serve: the database answers and the current offers are in memory."""
    database = "none"
    if context.ready_check is not None:
        try:
            await run_in_threadpool(context.ready_check)
        except Exception as exc:  # the detail names driver, host, port: the log only
            log.error("readiness: database unreachable: %s", exc)
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, DATABASE_UNAVAILABLE) from exc
        database = "ok"
    state = await current_state(context)
    return Ready(
        status="ok", database=database, offers=state.frame.height, source=state.current.source
    )
