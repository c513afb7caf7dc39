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


#: Put before the child's code: at exit it writes the peak RSS of its own program image
#: (``VmHWM``), which starts at ``exec``. ``ru_maxrss`` (``wait4``) also counts the fork
#: before the ``exec``, when the child still maps the test process: a loaded test worker of
#: 500 MB made a small child look as large.
_PEAK = """
import atexit as _atexit, sys as _sys
def _peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                _sys.stderr.write("\\n@@VmHWM " + line.split()[1] + "\\n")
_atexit.register(_peak)
"""
_MARK = "\n@@VmHWM "


def run_measured(code: str, *args: str) -> ChildRun:
    """Run ``python -c code args``; its exit code, output and peak RSS: ``VmHWM`` of its own
    image where ``/proc`` has it, else ``ru_maxrss`` from ``wait4`` (Linux: KiB)."""
    child = subprocess.Popen(
        [sys.executable, "-c", _PEAK + code, *args],
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
    stderr = err.decode()
    peak_kib: float = usage.ru_maxrss
    if _MARK in stderr:
        stderr, _, mark = stderr.rpartition(_MARK)
        peak_kib = float(mark.split()[0])
    return ChildRun(child.returncode, out.decode(), stderr, peak_kib / 1024)
