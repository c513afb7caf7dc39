"""The benchmark scripts run end to end on tiny inputs, so they cannot rot unnoticed.

Marked ``benchmark``: the default suite deselects them and ``.ci/run`` runs them on their
own (``pytest -m benchmark``) under a hard timeout. Their figures are not checked here
(speed goals live in the scripts' own output); only that each runs, exits 0 and prints what
``docs/performance.md`` reads from it. Each script runs in a process group of its own,
killed whole when it overruns, so a server it started never outlives the test.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import POSTGRES_SKIP, POSTGRES_URL_ENV

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.benchmark


@pytest.fixture(autouse=True, scope="module")
def stop_on_sigterm() -> Iterator[None]:
    """A SIGTERM (``.ci/run``'s timeout) stops the test as Ctrl-C does, so :func:`run`
    still kills the script's process group on the way out."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    before = signal.signal(signal.SIGTERM, interrupt)
    yield
    signal.signal(signal.SIGTERM, before)


def run(script: str, *args: str, timeout: float = 180) -> str:
    """``benchmarks/<script> args``: its output; the script and its children are killed
    together if it runs past ``timeout`` seconds or the test stops early."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: servers it starts die with it
    )
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == 0, err
    return out


def test_snapshot_benchmark_reports_each_step_and_the_targets() -> None:
    out = run("snapshot.py", "--offers", "300", "--repeat", "2")
    assert "sqlite     identical" in out
    assert "history +0 / closed 0" in out  # the identical snapshot adds no history row
    assert "history +300 / closed 0" in out
    assert "summary of 2 run(s) each" in out
    assert "targets met" in out


@pytest.mark.postgres
def test_snapshot_benchmark_runs_on_postgres() -> None:
    base = os.environ.get(POSTGRES_URL_ENV)
    if not base:
        pytest.skip(POSTGRES_SKIP)
    out = run("snapshot.py", "--offers", "200", "--repeat", "1", "--postgres", base)
    assert "postgres   first" in out
    assert "postgres   identical" in out


def test_rank_benchmark_prints_ratios() -> None:
    out = run("rank.py", "--sizes", "2000", "--repeat", "1")
    assert "(all, worst ratio)" in out


def test_api_benchmark_serves_and_drives_every_phase() -> None:
    out = run(
        "api.py", "--offers", "1000", "--loads", "2", "--seconds", "0.5", "--connections", "2",
        "--workers", "1",
    )  # fmt: skip
    assert "load 1000 stored offers into the API state: first (frames" in out
    assert "--- 1 worker(s), gpuscout serve" in out
    first, after_snapshot, again = (
        re.search(rf"^{which}: ready in [\d.]+ s, CPU [\d.]+ s .*RSS [\d.]+ MB", out, re.M)
        for which in (
            r"first start, nothing kept \(frames the stored records\)",
            r"first start after a snapshot \(it kept the frame, in [\d.]+ s\)",
            r"restart \(reads the kept frame\)",
        )
    )
    assert first is not None and after_snapshot is not None and again is not None, out
    phases = (
        "cold (first request of each query",
        "cold queries (never seen",
        "cold queries at 100 req/s offered (open loop, 2 connections): 50 requests",
        "cold queries through a snapshot (server CPU includes no snapshot's) at 100 req/s",
        "cached mix, gzip",
        "steady mix (api, cached, identity)",
        "explorer first pages (web, new queries) (2 connections)",
        "explorer first pages, one visitor at a time (1 connection)",
        "explorer first pages with a filter (38 of the 40 queries), one visitor at a time (1",
    )
    for phase in phases:
        assert phase in out
    assert re.search(r"open loop, 2 connections\): .*; went out > 1 ms late: \d+$", out, re.M)
    # a snapshot stored (one provider's prices up a tenth) and kept while the queries go on
    assert re.search(r"^  through the snapshot: it ran [\d.]+ s \(stored, then the", out, re.M)
    assert "summary: cold, closed loop (2 connections)" in out
    assert "; through a snapshot: while it ran " in out
    assert "; cold at 100 req/s offered (open loop, 2 connections, latency from when" in out
    summary = (
        r"explorer first page, 2 connections .*; one visitor at a time: filtered [\d.]+ "
        r"req/s, p50 [\d.]+ ms, p99 [\d.]+ ms \(target p99 <= 100 ms\), every query [\d.]+"
    )
    assert re.search(summary, out), out


def test_cli_benchmark_times_cold_and_warm() -> None:
    out = run("cli.py", "--repeat", "1")
    assert "gpuscout: cold (new data dir)" in out
    assert "gpuscout: warm" in out
    assert "target warm median <= 1 s:" in out


def test_alerts_benchmark_reports_each_run_and_the_target() -> None:
    out = run("alerts.py", "--alerts", "60", "--offers", "300", "--searches", "12")
    assert "60 alerts over 12 searches, 300 offers" in out
    assert "run 1: evaluated in" in out and "run 2: evaluated in" in out
    assert "(target <= 5 s)" in out


def test_checklist_benchmark_prints_each_page() -> None:
    out = run("checklist.py", "--offers", "500", "--repeat", "1")
    assert "every offer's summary, once per snapshot:" in out
    assert re.search(r"^ +20 +[\d.]+ +[\d.]+ +[\d.]+$", out, re.M), out
    assert re.search(r"^ +500 +[\d.]+ +[\d.]+ +[\d.]+$", out, re.M), out


def test_no_network_snapshot_benchmark_times_the_command_and_says_why() -> None:
    out = run("snapshot_no_network.py", "--repeat", "1", timeout=180)
    assert re.search(r"run 1: [\d.]+ s wall, [\d.]+ s CPU, exit 1: error: no network", out), out
    assert "(bound: 5 s)" in out


def test_publish_benchmark_publishes_and_follows() -> None:
    out = run("publish.py", "--offers", "300")
    assert "offers: 300 of" in out
    assert re.search(r"publish: [\d.]+ s", out) and re.search(r"follow: [\d.]+ s", out)
    assert "follow unchanged:" in out


def test_history_benchmark_times_each_view_at_each_checkpoint() -> None:
    out = run("history.py", "--quick", "--postgres", "")
    assert "=== 300 offers, 1.00%/h repriced ===" in out
    for day in (3, 10, 20):
        assert re.search(
            rf"^sqlite +grown to {day} days in [\d.]+ s: [\d,]+ price rows$", out, re.M
        )
        assert re.search(
            rf"^sqlite +at +{day} days: index 30d \d+ ms  index 30d rows \d+ ms"
            r"  /index page \d+ ms  index 365d \d+ ms  hourly 24h \d+ ms  digest week \d+ ms"
            r"  rollups 1 snap \d+ ms$",
            out,
            re.M,
        ), out
    assert f"sqlite    at {day:4} days: rollups = rows" in out  # the year's index, both ways
    assert "sqlite    index 365d at 20 days:" in out
    assert "targets met" in out or "targets MISSED" in out


@pytest.mark.postgres
def test_history_benchmark_alternates_with_postgres() -> None:
    base = os.environ.get(POSTGRES_URL_ENV)
    if not base:
        pytest.skip(POSTGRES_SKIP)
    out = run("history.py", "--quick", "--postgres", base)
    assert re.search(r"^postgres +at +20 days: index 30d \d+ ms", out, re.M), out
    assert "postgres  digest week at 20 / 3 days:" in out
