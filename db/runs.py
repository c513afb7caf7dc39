"""The record of every attempt to take a snapshot: the ``snapshot_run`` table.

A snapshot is stored in one transaction at its end (:mod:`db.snapshots`), so one killed
mid-way (SIGKILL, out of memory, a lost machine) would leave no trace. So the runner that
holds the snapshot lock writes a row ``running`` before it fetches (:func:`start_run`),
renews its ``heartbeat_at`` while it runs (:func:`beat`) and finishes it ``ok`` with the
stored snapshot's id or ``failed`` with the error (:func:`finish_run`).

A row left ``running`` is an aborted snapshot:

* the next runner, holding the lock, marks every such row ``aborted`` and reports it
  (:func:`abort_left_running`): the lock proves its holder is gone;
* a reader without the lock (``gpuscout providers``) calls a running row aborted when its
  heartbeat is older than the lease (:func:`recent_runs`).
"""

from __future__ import annotations

import dataclasses
import os
import socket
from datetime import datetime
from typing import cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .engine import write_connection
from .models import SnapshotRun

__all__ = [
    "RunRecord",
    "abort_left_running",
    "beat",
    "finish_run",
    "recent_runs",
    "run_holder",
    "start_run",
]

_run = cast(sa.Table, SnapshotRun.__table__)

RUNNING, OK, FAILED, ABORTED = "running", "ok", "failed", "aborted"


@dataclasses.dataclass(frozen=True, slots=True)
class RunRecord:
    """One snapshot attempt as recorded (``status``: running, ok, failed or aborted)."""

    id: int
    status: str
    holder: str
    started_at: datetime
    heartbeat_at: datetime
    finished_at: datetime | None
    snapshot_id: int | None
    error: str | None

    def describe(self) -> str:
        """One line: ``snapshot run 7 (host:123), started ...: aborted (...)``."""
        line = (
            f"snapshot run {self.id} ({self.holder}), started "
            f"{self.started_at.isoformat(timespec='seconds')}: {self.status}"
        )
        if self.snapshot_id is not None:
            line += f", stored snapshot {self.snapshot_id}"
        return line + (f" ({self.error})" if self.error else "")


def run_holder() -> str:
    """``host:pid`` of this process: who a running row belongs to."""
    return f"{socket.gethostname()}:{os.getpid()}"


def start_run(engine: Engine, *, at: datetime, holder: str) -> int:
    """Write a ``running`` row for a snapshot that starts ``at``; its id."""
    with write_connection(engine) as connection:
        return int(
            connection.execute(
                sa.insert(_run)
                .values(status=RUNNING, holder=holder, started_at=at, heartbeat_at=at)
                .returning(_run.c.id)
            ).scalar_one()
        )


def beat(engine: Engine, run_id: int, *, at: datetime) -> None:
    """Renew the heartbeat of a running row."""
    with write_connection(engine) as connection:
        connection.execute(
            sa.update(_run)
            .where(_run.c.id == run_id, _run.c.status == RUNNING)
            .values(heartbeat_at=at)
        )


def finish_run(
    engine: Engine,
    run_id: int,
    *,
    at: datetime,
    snapshot_id: int | None = None,
    error: str | None = None,
) -> None:
    """Finish a running row: ``ok`` (with ``snapshot_id``) or, given an ``error``, ``failed``."""
    with write_connection(engine) as connection:
        connection.execute(
            sa.update(_run)
            .where(_run.c.id == run_id)
            .values(
                status=FAILED if error is not None else OK,
                finished_at=at,
                heartbeat_at=at,
                snapshot_id=snapshot_id,
                error=error,
            )
        )


def _record(row: sa.RowMapping) -> RunRecord:
    return RunRecord(**{field.name: row[field.name] for field in dataclasses.fields(RunRecord)})


def _aborted_error(heartbeat_at: datetime) -> str:
    return (
        f"left running, last heartbeat {heartbeat_at.isoformat(timespec='seconds')}: "
        "its process died (killed?) before it finished; nothing of it was stored"
    )


def abort_left_running(engine: Engine, *, at: datetime) -> list[RunRecord]:
    """Mark every ``running`` row ``aborted`` and return them as they now are.

    Call it holding the snapshot lock, before :func:`start_run`: no live runner has a
    running row then, so each one is a snapshot whose process died.
    """
    with write_connection(engine) as connection:
        left = [
            _record(row)
            for row in connection.execute(
                sa.select(_run).where(_run.c.status == RUNNING).order_by(_run.c.id)
            ).mappings()
        ]
        for run in left:
            connection.execute(
                sa.update(_run)
                .where(_run.c.id == run.id)
                .values(status=ABORTED, finished_at=at, error=_aborted_error(run.heartbeat_at))
            )
    return [
        dataclasses.replace(r, status=ABORTED, finished_at=at, error=_aborted_error(r.heartbeat_at))
        for r in left
    ]


def recent_runs(
    target: Engine | Connection, *, now: datetime, stale_after_s: float, limit: int = 5
) -> list[RunRecord]:
    """The newest ``limit`` runs, newest first; a ``running`` one whose heartbeat is older
    than ``stale_after_s`` is reported ``aborted`` (its holder stopped renewing it)."""
    if isinstance(target, Engine):
        with target.connect() as connection:
            return recent_runs(connection, now=now, stale_after_s=stale_after_s, limit=limit)
    rows = target.execute(sa.select(_run).order_by(_run.c.id.desc()).limit(limit)).mappings()
    out = []
    for row in rows:
        run = _record(row)
        if run.status == RUNNING and (now - run.heartbeat_at).total_seconds() > stale_after_s:
            run = dataclasses.replace(run, status=ABORTED, error=_aborted_error(run.heartbeat_at))
        out.append(run)
    return out
