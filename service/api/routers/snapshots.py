"""``POST /v1/snapshots``: take a snapshot now (admin token required).

By default the snapshot runs in the background and the answer is 202; with ``wait=true``
the request waits and answers 200 with each provider's outcome. One snapshot at a time per
process (409 otherwise); across processes the scheduler's guard applies. When it has been
stored, this replica's in-memory offers are refreshed before the answer (or the task) ends.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from adapters.collect import ProviderRun

from ..app_context import ApiContext
from ..deps import AdminDep, ContextDep

__all__ = ["router", "run_snapshot"]

log = logging.getLogger("gpuscout.api")

router = APIRouter(prefix="/v1/snapshots", tags=["snapshots"])


class SnapshotQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    wait: bool = Field(default=False, description="answer when the snapshot is stored")


class ProviderRunOut(BaseModel):
    provider: str
    outcome: str
    offer_count: int
    duration_s: float
    error: str | None


class SnapshotOut(BaseModel):
    status: str = Field(description="started | done")
    runs: list[ProviderRunOut] = Field(default_factory=list)
    offers_loaded: int | None = None


async def run_snapshot(context: ApiContext) -> list[ProviderRun]:
    """Take one snapshot, count each provider's outcome, then refresh the state."""
    assert context.snapshot_runner is not None
    runs = await context.snapshot_runner()
    for r in runs:
        context.metrics.snapshot_runs.labels(r.provider, r.status.value).inc()
    await run_in_threadpool(context.refresh_state)
    return runs


async def _background(context: ApiContext) -> None:
    try:
        await run_snapshot(context)
    except Exception:  # a background task has no one to answer: log it
        log.exception("snapshot failed")
    finally:
        context.snapshot_lock.release()


@router.post(
    "",
    response_model=SnapshotOut,
    dependencies=[AdminDep],
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        200: {"model": SnapshotOut, "description": "with wait=true: the snapshot is stored"},
        401: {"description": "no admin token"},
        403: {"description": "wrong admin token"},
        409: {"description": "a snapshot is already running in this process"},
        503: {"description": "this app cannot take snapshots (no runner configured)"},
    },
)
async def take_snapshot(
    context: ContextDep, query: Annotated[SnapshotQuery, Query()], response: Response
) -> SnapshotOut:
    """Fetch every enabled provider now and store the snapshot."""
    if context.snapshot_runner is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "snapshots are not configured")
    if context.snapshot_lock.locked():
        raise HTTPException(status.HTTP_409_CONFLICT, "a snapshot is already running")
    await context.snapshot_lock.acquire()
    if not query.wait:
        task = asyncio.get_running_loop().create_task(_background(context))
        context.background_tasks.add(task)
        task.add_done_callback(context.background_tasks.discard)
        return SnapshotOut(status="started")
    try:
        runs = await run_snapshot(context)
    finally:
        context.snapshot_lock.release()
    response.status_code = status.HTTP_200_OK
    state = context.holder.state
    return SnapshotOut(
        status="done",
        runs=[
            ProviderRunOut(
                provider=r.provider,
                outcome=r.status.value,
                offer_count=r.offer_count,
                duration_s=r.duration_s,
                error=r.error,
            )
            for r in runs
        ],
        offers_loaded=state.frame.height if state is not None else None,
    )
