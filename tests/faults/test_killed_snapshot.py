"""A snapshot killed with SIGKILL mid-fetch (a real ``gpuscout snapshot`` process, hanging on
a local fake provider) blocks the next one for at most the short SQLite lease (PostgreSQL:
not at all, the advisory lock goes with the dead session), and the next one reports it as
aborted, as ``gpuscout providers`` does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from gpuscout.db.engine import make_engine
from gpuscout.db.migrate import upgrade
from gpuscout.db.models import SnapshotRun
from gpuscout.service.cli import app
from gpuscout.service.settings import Settings, get_settings
from gpuscout.service.snapshots import SnapshotLocked, SnapshotResult, take_snapshot

from .providers import PROVIDERS
from .server import FakeServer, Fault, running_server

ROOT = Path(__file__).resolve().parents[2]
LEASE_S = 2.0


@pytest.fixture
def hanging_lambda() -> Iterator[FakeServer]:
    with running_server({"lambda": PROVIDERS["lambda"]}) as server:
        server.faults["lambda"] = Fault.HANG
        yield server


def runs(url: str) -> list[tuple[str, str]]:
    engine = make_engine(url)
    try:
        table = SnapshotRun.__table__
        with engine.connect() as connection:
            return [
                (r.status, r.holder)
                for r in connection.execute(sa.select(table).order_by(table.c.id)).all()
            ]
    finally:
        engine.dispose()


def test_a_killed_snapshot_blocks_the_next_one_briefly_and_is_reported_aborted(
    db_url: str, tmp_path: Path, hanging_lambda: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrade(db_url)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GPUSCOUT_DATA_DIR": str(tmp_path / "data"),
        "GPUSCOUT_DATABASE_URL": db_url,
        "GPUSCOUT_LAMBDA_BASE_URL": hanging_lambda.base_url("lambda"),
        "GPUSCOUT_LAMBDA_API_KEY": "k",
        "GPUSCOUT_SNAPSHOT_LEASE_S": str(LEASE_S),
        "GPUSCOUT_HTTP_TIMEOUT_S": "120",
        "GPUSCOUT_PROVIDER_DEADLINE_S": "300",
    }
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from gpuscout.service.cli import main; main()",
            "snapshot",
            "-p",
            "lambda",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not hanging_lambda.requests:  # the child is fetching: lock held, run recorded
            assert child.poll() is None, "the snapshot process died before fetching"
            assert time.monotonic() < deadline, "the snapshot process never fetched"
            time.sleep(0.05)
        time.sleep(LEASE_S)  # past the lease's first term: the live holder renewed it
        with pytest.raises(SnapshotLocked):
            take_snapshot(Settings(database_url=db_url, snapshot_lease_s=LEASE_S), fetch=list)
        assert runs(db_url) == [("running", f"{os.uname().nodename}:{child.pid}")]
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)

    settings = Settings(database_url=db_url, snapshot_lease_s=LEASE_S)
    result: SnapshotResult | None = None
    give_up = time.monotonic() + 120  # a guard against a hang, not a speed check
    while result is None:
        try:
            result = take_snapshot(settings, fetch=lambda: [])
        except SnapshotLocked:  # SQLite: until the killed holder's lease expires
            assert time.monotonic() < give_up, "the killed holder's lock never went"
            time.sleep(0.1)

    (aborted,) = result.aborted
    assert aborted.status == "aborted" and aborted.holder.endswith(f":{child.pid}")
    assert "its process died" in (aborted.error or "")
    assert [status for status, _ in runs(db_url)] == ["aborted", "ok"]

    monkeypatch.setenv("GPUSCOUT_DATABASE_URL", db_url)
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        shown = CliRunner().invoke(app, ["providers"])
    finally:
        get_settings.cache_clear()
    assert shown.exit_code == 0, shown.output
    assert f"snapshot run {aborted.id} ({aborted.holder})" in shown.stderr
    assert "aborted (left running, last heartbeat" in shown.stderr
