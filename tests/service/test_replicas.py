"""Two ``gpuscout serve`` replicas on one PostgreSQL database, and a third process taking a
snapshot (``gpuscout snapshot --sample``: the recorded responses, no network): both
replicas answer ``/v1/offers`` identically before it and, once each has polled the new
snapshot, after it; neither holds the snapshot job lock (served with ``--no-scheduler``:
no scheduler child, and the lock is free for the snapshot process and for this test).

Each process runs in a process group of its own, killed whole when the test ends."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from gpuscout.db.locks import _pg_key
from gpuscout.service.snapshots import SNAPSHOT_LOCK
from tests.service.serve_process import CLI, ServeProcess

pytestmark = pytest.mark.postgres

#: Fields of an offer's row counted from the request's time, not from the snapshot.
_REQUEST_TIME_FIELDS = {"price_age_hours", "price_age_s"}
_QUERY = "/v1/offers?limit=500&sort=usd_per_gpu_hour"
#: The longest wait for a process or an answer: far above what each takes (a few seconds).
_WAIT_S = 60.0


def _env(data_dir: Path, database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSCOUT_")}
    env.update(
        GPUSCOUT_DATA_DIR=str(data_dir),
        GPUSCOUT_DATABASE_URL=database_url,
        GPUSCOUT_FX_UPDATE_HOURS="0",  # no network
        GPUSCOUT_API_REFRESH_S="0.2",
    )
    return env


def _snapshot(env: dict[str, str], *providers: str) -> None:
    """``gpuscout snapshot --sample`` of ``providers`` in a process of its own."""
    names = [a for p in providers for a in ("-p", p)]
    done = subprocess.run(
        [sys.executable, "-c", CLI, "snapshot", "--sample", *names],
        env=env,
        capture_output=True,
        text=True,
        timeout=_WAIT_S,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stderr


class Replica(ServeProcess):
    """One ``gpuscout serve --no-scheduler`` on a free port of 127.0.0.1."""

    def __init__(self, env: dict[str, str]) -> None:
        super().__init__(env, "--no-scheduler")

    def answer(self) -> dict[str, Any]:
        return dict(self.get(_QUERY).json())


@pytest.fixture
def replicas() -> Iterator[list[Replica]]:
    started: list[Replica] = []
    yield started
    for replica in started:
        replica.stop()


def _wait(replicas: list[Replica], check: Callable[[], Any], what: str) -> Any:
    """``check()``'s first true value, polled until :data:`_WAIT_S`; a replica that exits
    fails at once with its output."""
    end = time.monotonic() + _WAIT_S
    while time.monotonic() < end:
        for replica in replicas:
            if replica.process.poll() is not None:
                assert replica.process.stderr is not None
                raise AssertionError(f"gpuscout serve exited: {replica.process.stderr.read()!r}")
        try:
            found = check()
        except httpx.HTTPError:
            found = None
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out after {_WAIT_S:g} s waiting for {what}")


def _rows(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in row.items() if k not in _REQUEST_TIME_FIELDS} for row in answer["offers"]
    ]


def _answers(replicas: list[Replica], besides: str | None = None) -> list[dict[str, Any]] | None:
    """Both replicas' answers, when both answer from one snapshot (other than ``besides``)."""
    answers = [replica.answer() for replica in replicas]
    at = {answer.get("snapshot_at") for answer in answers}
    return answers if len(at) == 1 and None not in at and besides not in at else None


def _lock_free(engine: sa.Engine) -> bool:
    """Whether nobody holds the snapshot job lock of this database (taken and let go)."""
    with engine.connect() as connection:
        key = _pg_key(connection, SNAPSHOT_LOCK)
        got = connection.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key})
        if not got.scalar_one():
            return False
        connection.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        return True


def test_two_replicas_answer_alike_through_a_snapshot_taken_elsewhere(
    pg_url: str, tmp_path: Path, replicas: list[Replica]
) -> None:
    engine = sa.create_engine(pg_url, poolclass=NullPool)
    try:
        _run(pg_url, tmp_path, replicas, engine)
    finally:
        engine.dispose()


def _run(pg_url: str, tmp_path: Path, replicas: list[Replica], engine: sa.Engine) -> None:
    _snapshot(_env(tmp_path / "first", pg_url), "aws", "lambda")
    replicas.extend(Replica(_env(tmp_path / f"replica{i}", pg_url)) for i in range(2))
    before = _wait(replicas, lambda: _answers(replicas), "both replicas up")
    assert before[0]["total"] > 0
    assert _rows(before[0]) == _rows(before[1])
    for replica in replicas:  # served without the scheduler: no child process at all
        assert psutil.Process(replica.process.pid).children(recursive=True) == []
    assert _lock_free(engine)

    # a third process takes a snapshot that adds a provider; it must get the job lock
    _snapshot(_env(tmp_path / "third", pg_url), "aws", "lambda", "vastai")
    first_at = before[0]["snapshot_at"]
    after = _wait(replicas, lambda: _answers(replicas, first_at), "both replicas switched")
    assert _rows(after[0]) == _rows(after[1])
    assert after[0]["total"] > before[0]["total"]
    assert "vastai" in {row["provider"] for row in after[0]["offers"]}
    assert _lock_free(engine)
