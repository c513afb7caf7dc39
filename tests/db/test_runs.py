"""The record of snapshot attempts (db/runs.py) and the lease renewal (db/locks.py): a run
left running is aborted, found by the next runner or by a reader once its heartbeat is
stale; a live holder's short lease never lapses. Run on both databases."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from gpuscout.db import engine as db_engine
from gpuscout.db.engine import make_engine, sqlite_url, write_connection
from gpuscout.db.locks import job_lock, periodic
from gpuscout.db.migrate import upgrade
from gpuscout.db.runs import (
    abort_left_running,
    beat,
    finish_run,
    recent_runs,
    run_holder,
    start_run,
)

from .factories import at


def test_a_run_is_recorded_from_start_to_finish(engine: Engine) -> None:
    run_id = start_run(engine, at=at(0), holder="h:1")
    (running,) = recent_runs(engine, now=at(0, days=0), stale_after_s=60)
    assert (running.id, running.status, running.holder) == (run_id, "running", "h:1")
    beat(engine, run_id, at=at(1))
    finish_run(engine, run_id, at=at(2), snapshot_id=7)
    (done,) = recent_runs(engine, now=at(3), stale_after_s=60)
    assert (done.status, done.snapshot_id, done.finished_at, done.error) == ("ok", 7, at(2), None)
    assert "stored snapshot 7" in done.describe()
    failed = start_run(engine, at=at(4), holder="h:2")
    finish_run(engine, failed, at=at(5), error="OperationalError: disk full")
    assert recent_runs(engine, now=at(5), stale_after_s=60)[0].status == "failed"


def test_a_reader_calls_a_run_without_heartbeat_aborted(engine: Engine) -> None:
    run_id = start_run(engine, at=at(0), holder="h:1")
    beat(engine, run_id, at=at(0) + timedelta(seconds=30))
    fresh = recent_runs(engine, now=at(0) + timedelta(seconds=80), stale_after_s=60)
    assert fresh[0].status == "running"  # 50 s since the heartbeat: alive
    stale = recent_runs(engine, now=at(0) + timedelta(seconds=91), stale_after_s=60)
    assert stale[0].status == "aborted"
    assert "last heartbeat 2025-03-03T12:00:30+00:00" in (stale[0].error or "")


def test_the_next_runner_marks_every_run_left_running_aborted(engine: Engine) -> None:
    left = start_run(engine, at=at(0), holder="dead:1")
    done = start_run(engine, at=at(1), holder="h:2")
    finish_run(engine, done, at=at(2), snapshot_id=1)
    (aborted,) = abort_left_running(engine, at=at(3))
    assert (aborted.id, aborted.status, aborted.finished_at) == (left, "aborted", at(3))
    stored = {r.id: r.status for r in recent_runs(engine, now=at(3), stale_after_s=60)}
    assert stored == {left: "aborted", done: "ok"}
    assert abort_left_running(engine, at=at(4)) == []  # reported once


def test_run_holder_names_host_and_process() -> None:
    assert run_holder().endswith(":" + str(__import__("os").getpid()))


def test_a_renewed_lease_outlives_its_term_and_lapses_once_released(
    engine: Engine, db_url: str
) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL's advisory lock has no lease")
    with job_lock(engine, "x", lease_s=0.6, renew_every_s=0.2) as held:
        assert held
        time.sleep(1.0)  # past the first term: renewed
        with job_lock(engine, "x", lease_s=0.6) as second:
            assert not second
    with job_lock(engine, "x", lease_s=0.6) as again:
        assert again


def test_an_unrenewed_lease_of_a_vanished_holder_lapses(engine: Engine, db_url: str) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL's advisory lock has no lease")
    with job_lock(engine, "x", lease_s=0.3) as held:
        assert held
        time.sleep(0.5)
        with job_lock(engine, "x", lease_s=0.3) as taken:  # as a killed holder's would be
            assert taken


def test_periodic_calls_until_the_block_ends_and_survives_a_failing_call() -> None:
    calls: list[float] = []
    failed = threading.Event()

    def tick() -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            failed.set()
            raise RuntimeError("database is locked")

    with periodic(0.05, tick, name="test tick"):
        time.sleep(0.4)
    count = len(calls)
    time.sleep(0.15)
    assert failed.is_set() and count >= 3 and len(calls) == count


def test_a_lease_behind_another_writers_lock_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot storing its runs holds SQLite's write lock until its last provider has
    answered: a second runner waiting past the busy timeout is told the lock is held (a
    skip), not "database is locked"."""
    monkeypatch.setattr(db_engine, "SQLITE_BUSY_TIMEOUT_S", 0.2)
    url = sqlite_url(tmp_path / "locked.db")
    upgrade(url)
    engine = make_engine(url)
    try:
        with write_connection(engine) as writer:  # the storing snapshot's transaction
            writer.exec_driver_sql("CREATE TABLE busy (x INTEGER)")
            with job_lock(engine, "snapshot", lease_s=60) as got:
                assert got is False
        with job_lock(engine, "snapshot", lease_s=60) as got:
            assert got is True  # free once the writer committed
    finally:
        engine.dispose()
