"""``POST /v1/snapshots``: take a snapshot now (admin token required).

By default the snapshot runs in the background and the answer is 202 once it holds the
snapshot lock; with ``wait=true`` the request waits and answers 200 with each provider's
outcome. One snapshot at a time: 409 when one is running in this process, or when another
runner (the scheduler, another replica, a ``gpuscout snapshot``) holds the job lock of
:func:`service.snapshots.take_snapshot`. When it has been stored, this replica's in-memory
offers are refreshed before the answer (or the task) ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from gpuscout.adapters.run import ProviderRun

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


def _nothing() -> None:
    pass


async def run_snapshot(
    context: ApiContext, on_start: Callable[[], None] = _nothing
) -> list[ProviderRun]:
    """Take one snapshot, count each provider's outcome, then refresh the state."""
    assert context.snapshot_runner is not None
    runs = await context.snapshot_runner(on_start=on_start)
    for r in runs:
        context.metrics.snapshot_runs.labels(r.provider, r.status.value).inc()
    await run_in_threadpool(context.refresh_state)
    return runs


def _settle(started: asyncio.Future[None], error: Exception | None = None) -> None:
    if started.done():
        return
    if error is None:
        started.set_result(None)
    else:
        started.set_exception(error)


async def _background(context: ApiContext, started: asyncio.Future[None]) -> None:
    """Run the snapshot; ``started`` settles once it holds the lock, or fails with
    :class:`SnapshotLocked` (the request answers 409) or with the error that stopped the run
    before it held the lock (a database error: 503), or when the run ends early."""
    from ...snapshots import SnapshotLocked  # with the runner: not needed to serve offers

    loop = asyncio.get_running_loop()

    def on_start() -> None:  # called from the runner's worker thread
        loop.call_soon_threadsafe(_settle, started)

    try:
        await run_snapshot(context, on_start)
    except SnapshotLocked as locked:
        _settle(started, locked)
    except Exception as exc:  # once started, a background task has no one to answer: log it
        log.exception("snapshot failed")
        _settle(started, exc)
    finally:
        _settle(started)
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
        409: {"description": "a snapshot is already running (here, or another runner's)"},
        503: {"description": "no runner configured, or the database is unavailable"},
    },
)
async def take_snapshot(
    context: ContextDep, query: Annotated[SnapshotQuery, Query()], response: Response
) -> SnapshotOut:
    """Fetch every enabled provider now and store the snapshot."""
    from ...snapshots import SnapshotLocked  # with the runner: not needed to serve offers

    if context.snapshot_runner is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "snapshots are not configured")
    if context.snapshot_lock.locked():
        raise HTTPException(
            status.HTTP_409_CONFLICT, "a snapshot is already running in this process"
        )
    await context.snapshot_lock.acquire()
    if not query.wait:
        started = asyncio.get_running_loop().create_future()
        task = asyncio.get_running_loop().create_task(_background(context, started))
        context.background_tasks.add(task)
        task.add_done_callback(context.background_tasks.discard)
        try:
            await started
        except SnapshotLocked as locked:
            raise HTTPException(status.HTTP_409_CONFLICT, str(locked)) from None
        return SnapshotOut(status="started")
    try:
        runs = await run_snapshot(context)
    except SnapshotLocked as locked:
        raise HTTPException(status.HTTP_409_CONFLICT, str(locked)) from None
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
