"""Run a Python snippet in a child process and read the child's own peak memory, so a test
can bound what a hostile peer costs without measuring the test process itself."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys


@dataclasses.dataclass(frozen=True)
class ChildRun:
    exit_code: int
    stdout: str
    stderr: str
    peak_rss_mb: float


def run_measured(code: str, *args: str) -> ChildRun:
    """Run ``python -c code args``; its exit code, output and peak RSS (``ru_maxrss`` of
    this child alone, from ``wait4``: Linux counts it in KiB)."""
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    out = child.stdout.read()  # the child writes little: reading to EOF cannot block on it
    err = child.stderr.read()
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    child.stdout.close()
    child.stderr.close()
    return ChildRun(child.returncode, out.decode(), err.decode(), usage.ru_maxrss / 1024)
