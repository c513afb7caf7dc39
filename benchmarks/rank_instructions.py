"""Instructions per ``pricing.rank`` call, counted by valgrind's callgrind.

    uv run python benchmarks/rank_instructions.py [--sizes 30 10000] [--calls 10]

A ranking of a few thousand offers takes ~5 ms, and on a shared 2-core machine its wall
time moves 10-25% between runs of ``benchmarks/rank.py``: a change of a few percent in the
ranking's fixed cost cannot be read off it. Callgrind counts the instructions a process
runs, which are the same run after run whatever else the machine does, once polars and
the BLAS under numpy run one thread each (a spinning BLAS thread counts too). For each
size and requirement of ``benchmarks/rank.py`` (the same synthetic frame, job and top 50)
it runs a child process under callgrind that ranks three warm-up calls, then ``--calls``
of them between two markers, and prints the instructions between the markers per call in
millions (M): building the plan in Python, polars' planning and the execution.

The markers are two libc calls nothing else in the child makes (``getppid`` and
``getpgrp``, through :func:`os.getppid` and :func:`os.getpgrp`): callgrind dumps its
counts on entering each (``--dump-before``), so the part between them is the rankings
alone. One process a size and requirement, where counting a run without rankings and
subtracting it took two: the imports under callgrind are most of a child's time.

To compare two commits, run it in a checkout of each (``git worktree add``); figures are
comparable on one machine and one polars build. Needs ``valgrind`` on the PATH (Debian's
package); each size takes ~30 s.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: One thread each: instruction counts then follow the work, not the scheduling.
SINGLE_THREADED = {
    "POLARS_MAX_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
#: The libc functions the child calls to mark where its counted rankings start and end.
MARKERS = ("getppid", "getpgrp")
_TOTALS = re.compile(r"^totals:\s*(\d+)", re.M)


def child(size: int, requirement: str, calls: int) -> None:
    """Rank three warm-up calls, then ``calls`` between the :data:`MARKERS` (run under
    callgrind by :func:`count`)."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.rank import NOW, REQUIREMENTS, synthetic_offers
    from gpuscout.pricing import Job, RankOptions, rank

    frame = synthetic_offers(size)
    req = REQUIREMENTS[requirement]
    job = Job.for_hours(100)
    options = RankOptions(limit=50, now=NOW)
    for _ in range(3):
        rank(frame, req, job, options)
    os.getppid()  # MARKERS[0]: counting starts
    for _ in range(calls):
        rank(frame, req, job, options)
    os.getpgrp()  # MARKERS[1]: counting ends


def count(valgrind: str, size: int, requirement: str, calls: int) -> int:
    """Instructions of ``calls`` rankings in one child process: callgrind's second part,
    between the :data:`MARKERS`."""
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "callgrind.out"
        done = subprocess.run(
            [
                valgrind, "--tool=callgrind", f"--callgrind-out-file={out}",
                *(f"--dump-before={marker}" for marker in MARKERS),
                sys.executable, __file__, "--child", str(size), requirement, str(calls),
            ],
            env={**os.environ, **SINGLE_THREADED},  # the child puts ROOT on its own path
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        parts = sorted(p.name for p in Path(directory).iterdir())
        if done.returncode != 0:
            raise SystemExit(f"callgrind run failed ({size} offers, {requirement}):\n{done.stderr}")
        # three parts: before the first marker, between them, after the second; any other
        # count means something else called a marker, and the middle part is not the calls'
        if parts != ["callgrind.out", "callgrind.out.1", "callgrind.out.2"]:
            raise SystemExit(f"expected callgrind's parts 1-3 (two markers), found {parts}")
        found = _TOTALS.search((Path(directory) / "callgrind.out.2").read_text())
        if found is None:
            raise SystemExit("callgrind's part 2 has no totals line")
        return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 10_000])
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--requirements", nargs="+", default=["any", "8xh100"])
    parser.add_argument("--child", nargs=3, metavar=("N", "REQUIREMENT", "CALLS"))
    args = parser.parse_args()
    if args.child:
        size, requirement, calls = args.child
        child(int(size), requirement, int(calls))
        return
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("valgrind is not on the PATH (Debian: apt-get install -y valgrind)")
    if args.calls < 1:
        raise SystemExit("--calls must be at least 1")
    print(f"instructions per rank call (callgrind, one thread, {args.calls} calls, top 50)")
    print(f"{'N':>9} {'requirement':<20} {'M instructions':>15}")
    for size in args.sizes:
        for requirement in args.requirements:
            counted = count(valgrind, size, requirement, args.calls)
            print(f"{size:>9} {requirement:<20} {counted / args.calls / 1e6:>15.2f}")


if __name__ == "__main__":
    main()
