"""The scheduler wiring and the single-runner guarantee, on a real database."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.engine import Engine

from gpuscout.db.locks import job_lock
from gpuscout.service.digest.schedule import DIGEST_JOB_ID
from gpuscout.service.scheduler import SNAPSHOT_JOB_ID, build_scheduler, run_snapshot_job
from gpuscout.service.settings import Settings
from gpuscout.service.snapshots import SNAPSHOT_LOCK
from tests.db.factories import current, offer, ok


def settings_for(db_url: str, tmp_path, **extra) -> Settings:
    return Settings(data_dir=tmp_path, database_url=db_url, **extra)


def test_build_scheduler_configures_without_starting(tmp_path) -> None:
    settings = Settings(
        data_dir=tmp_path, snapshot_interval_minutes=30, snapshot_jitter_s=45, misfire_grace_s=600
    )
    scheduler = build_scheduler(settings, job=lambda: None)
    assert not scheduler.running
    job = scheduler.get_job(SNAPSHOT_JOB_ID)
    assert job.coalesce is True and job.max_instances == 1
    assert job.misfire_grace_time == 600
    assert isinstance(job.trigger, IntervalTrigger)
    assert job.trigger.interval == timedelta(minutes=30) and job.trigger.jitter == 45
    digest = scheduler.get_job(DIGEST_JOB_ID)
    assert digest is not None and digest.max_instances == 1


def test_scheduler_without_digests(tmp_path) -> None:
    scheduler = build_scheduler(Settings(data_dir=tmp_path), job=lambda: None, digests=False)
    assert scheduler.get_job(DIGEST_JOB_ID) is None


def fetch_slowly(started: threading.Event | None = None):
    def fetch():
        if started is not None:
            started.set()
        time.sleep(1.0)
        now = datetime.now(UTC)
        return [ok("alpha", [offer()], now)]

    return fetch


def test_two_concurrent_runners_take_exactly_one_snapshot(
    engine: Engine, db_url: str, tmp_path
) -> None:
    settings = settings_for(db_url, tmp_path)
    results: list[object] = []
    barrier = threading.Barrier(2)

    def runner() -> None:
        barrier.wait()
        results.append(run_snapshot_job(settings, fetch=fetch_slowly()))

    threads = [threading.Thread(target=runner) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    taken = [r for r in results if r is not None]
    assert len(results) == 2 and len(taken) == 1
    assert current(engine).snapshot_id == 1
    # the lock is free again, but a snapshot that recent makes the next runner skip
    assert run_snapshot_job(settings, fetch=fetch_slowly()) is None
    later = datetime.now(UTC) + timedelta(hours=1)
    assert run_snapshot_job(settings, fetch=fetch_slowly(), now=lambda: later) is not None


def test_a_held_lock_is_logged_and_skipped(
    engine: Engine, db_url: str, tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_for(db_url, tmp_path)
    caplog.set_level(logging.INFO, logger="gpuscout.scheduler")
    with job_lock(engine, SNAPSHOT_LOCK):
        assert run_snapshot_job(settings, fetch=fetch_slowly(), engine=engine) is None
    assert "snapshot skipped: another runner is taking a snapshot now" in caplog.text
    assert current(engine).snapshot_id is None


def test_job_lock_is_exclusive_and_released(engine: Engine) -> None:
    with (
        job_lock(engine, "x") as first,
        job_lock(engine, "x") as second,
        job_lock(engine, "y") as other,
    ):
        assert (first, second, other) == (True, False, True)
    with job_lock(engine, "x") as again:
        assert again


def _snapshot_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "gpuscout.scheduler" and r.getMessage().startswith("snapshot")
    ]


def test_each_run_logs_one_line_counting_outcomes_and_the_first_failure_warns(
    engine: Engine, db_url: str, tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.db.factories import failed, skipped

    settings = settings_for(db_url, tmp_path)
    caplog.set_level(logging.INFO, logger="gpuscout")
    error = "network error on https://pricing.example/offers: [Errno -2] Name not known"
    runs = [
        ok("alpha", [offer()]),
        failed("beta", error=error),
        failed("gamma", error="HTTP 503"),
        skipped("delta"),
    ]
    assert run_snapshot_job(settings, fetch=lambda: runs) is not None
    [line] = _snapshot_lines(caplog)
    assert line.levelno == logging.WARNING
    text = line.getMessage()
    assert text.startswith("snapshot 1 stored: 1 offers")
    assert "providers: 1 ok, 2 failed, 1 skipped" in text
    assert text.endswith(f"first failure: beta: {error}")

    caplog.clear()
    later = datetime.now(UTC) + timedelta(hours=1)
    every_ok = [ok("alpha", [offer()]), skipped("delta")]
    assert run_snapshot_job(settings, fetch=lambda: every_ok, now=lambda: later) is not None
    [line] = _snapshot_lines(caplog)
    assert line.levelno == logging.INFO
    assert "providers: 1 ok, 0 failed, 1 skipped" in line.getMessage()
    assert "failure" not in line.getMessage()

    caplog.clear()
    assert run_snapshot_job(settings, fetch=lambda: every_ok, now=lambda: later) is None
    [line] = _snapshot_lines(caplog)  # skipped (one too recent): one line says so
    assert line.levelno == logging.INFO and line.getMessage().startswith("snapshot skipped")
