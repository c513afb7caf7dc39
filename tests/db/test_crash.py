"""A process killed (SIGKILL) in the middle of writing a snapshot leaves the previous state
intact and readable, and the next run succeeds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa
from polars.testing import assert_frame_equal
from sqlalchemy.engine import Engine

from gpuscout.db.models import Snapshot
from gpuscout.db.snapshots import store_snapshot

from .factories import T0, at, current, offer, ok

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from gpuscout.db import snapshots
    from gpuscout.db.engine import make_engine
    from tests.db.factories import at, offer, ok

    url, marker = sys.argv[1], Path(sys.argv[2])
    close = snapshots._close_history

    closed = []

    def close_then_hang(*args, **kwargs):
        closed.append(close(*args, **kwargs))
        if len(closed) == 2:  # gone and repriced rows closed, the transaction still open
            # written whole, then renamed: the test never reads a half-written marker
            marker.with_suffix(".part").write_text(str(sum(closed)))
            marker.with_suffix(".part").rename(marker)
            time.sleep(120)
        return closed[-1]

    snapshots._close_history = close_then_hang
    runs = [ok("alpha", [offer(offer_id="a", price="1")], at(1))]
    snapshots.store_snapshot(make_engine(url), runs, started_at=at(1), finished_at=at(1))
    """
)


def test_kill_mid_write_keeps_the_previous_state(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    store_snapshot(
        engine,
        [ok("alpha", [offer(offer_id="a"), offer(offer_id="b")])],
        started_at=T0,
        finished_at=T0 + timedelta(minutes=1),
    )
    before = current(engine, now=at(2))
    marker = tmp_path / "mid-write"
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, db_url, str(marker)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, "the writer died before the marker"
            assert time.monotonic() < deadline, "the writer never reached the middle"
            time.sleep(0.05)
        assert marker.read_text() == "2"  # a repriced, b gone
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)

    # readable while / after the writer died, and unchanged
    after = current(engine, now=at(2))
    assert_frame_equal(after.frame, before.frame)
    assert after.providers == before.providers and after.snapshot_id == before.snapshot_id
    summary = store_snapshot(
        engine,
        [ok("alpha", [offer(offer_id="a", price="1")], at(3))],
        started_at=at(3),
        finished_at=at(3),
    )
    assert (summary.history_added, summary.history_closed) == (1, 2)
    assert current(engine).snapshot_id == summary.snapshot_id
    with engine.connect() as c:  # (PostgreSQL may skip an id: sequences are not rolled back)
        assert c.execute(sa.select(sa.func.count()).select_from(Snapshot.__table__)).scalar() == 2
