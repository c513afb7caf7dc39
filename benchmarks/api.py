"""Benchmark the API over 100k synthetic current offers stored in SQLite: loading them into
the API state, starting ``gpuscout serve``, then ``GET /v1/offers`` and the explorer over
HTTP (uvicorn on 127.0.0.1, driven from a separate client process).

    uv run python benchmarks/api.py [--offers 100000] [--loads 5] [--seconds 15]
        [--connections 8] [--rate 100] [--workers 1,2] [--snapshot-nice 0] [--no-bytecode]

The offers are stored as one snapshot (not timed). Loading them into the API state (what an
API replica does at start and after every snapshot) is timed ``--loads`` times: the first
load frames the stored records, then the frame is kept in the database as a snapshot keeps
it (:func:`db.current.keep_current_frame`), and the others read it back; on a shared
machine the CPU time (all threads) is the steadier figure. Then, for each ``--workers``
count, the real ``gpuscout serve --no-scheduler --workers N`` starts on that database four
times: a first start with nothing kept (each worker frames the records), a first start
after a snapshot kept the frame (the last step of every snapshot, run here in a process of
its own as the scheduler's, and timed), a first start with an empty data dir and a restart.
The servers run as
installed: with their bytecode (written once, untimed; ``--no-bytecode`` keeps
``PYTHONDONTWRITEBYTECODE``, about a second more a process). The client (a small asyncio
HTTP/1.1 keep-alive client, loopback only, its own process) drives the restarted server:

* **warm-up**: the first request of each of 40 realistic queries (kept for comparison);
* **cold**: queries the cache has never seen (each of the 40 with a unique, never binding
  price cap), in a closed loop: ``--connections`` connections, each sending its next
  request as soon as the last one is answered: the capacity, target >= 100 req/s;
* **cold at a rate**: new cold queries in an open loop: one request every 1/``--rate``
  seconds (100 req/s unless told; ``--rate 0`` skips it) on the first free of up to
  ``--connections`` connections, each timed from when it was due, not from when it went
  out, so a server that falls behind shows as latency growing, not as a lower rate (the
  requests that went out more than 1 ms late are counted): targets p50 <= 15 ms,
  p99 <= 50 ms at 100 req/s;
* **cold through a snapshot**: the same open loop, a snapshot taken a quarter into it by a
  process of its own, as the scheduler's on this machine (one provider's prices up a
  tenth, stored, then the frame kept: :func:`reprice_as_a_snapshot_does`); the server,
  polling every second here, refreshes from the database meanwhile. Printed: the latency
  of the requests due while the snapshot ran (its CPU on the server's cores), and from its
  end until 2 s after the last worker answered from the old snapshot (the refresh: it
  must not show as a spike), against the rest of the phase; ``--snapshot-nice 10`` runs
  the snapshot below the server's priority, as deploy/ runs the scheduler;
* **cached**: the 40 queries again, over and over, asking for gzip (compressed by
  Starlette's ``GZipMiddleware``) and then identity: target >= 4,000 req/s with gzip;
* **explorer**: the first page of new queries at ``/`` (``--mode web`` of the earlier
  script), on ``--connections`` connections (the capacity), then one visitor at a time
  (one connection, the next page asked as the last arrives: the time a page takes with
  no queue before it), over every query and over the filtered ones (:data:`FILTERED`: a
  requirement parameter or a preset; the two others, a job alone and a sort alone, rank
  every offer): targets p99 <= 100 ms for a filtered page and <= 300 kB a page
  (uncompressed).

Cold queries are measured twice because a closed loop cannot check latency targets: with
N connections always busy, the mean latency is N / throughput (Little's law), so 8
connections at 100 req/s read 80 ms however quickly each query is ranked, and p50 <= 15 ms
there would take about 530 req/s. The closed loop measures the capacity (the throughput
target); the latency targets are for a given offered rate, which only an open loop sets.
The explorer's target gives no rate: its page time is read one visitor at a time, and the
8-connection figure is its capacity.

Printed per worker count: time from start to ``/readyz`` of the three starts (target <= 2 s
with 100k offers) and the CPU seconds they took, the server's RSS once ready and after the
drive (each process; target <= 400 MB a worker), and each phase's
throughput and p50/p95/p99, with the client's and the server's CPU seconds, since the
client shares the machine's cores with the server; with several workers, also each server
process's seconds (the workers, the parent and multiprocessing's resource tracker), which
show how the kernel spread the phase's connections over the workers: every worker accepts
on the one socket uvicorn's parent bound, and the first awake takes every connection
waiting, so the 8 connections a phase opens together often all land on one worker.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qsl

ROOT = Path(__file__).resolve().parents[1]

#: Realistic queries: model families, counts, terms, regions, budgets and job sizes.
QUERIES: tuple[str, ...] = (
    "gpus=H100&min_gpus=8&max_gpus=8",
    "gpus=H100&min_gpus=8&hours=720",
    "gpus=H100&min_gpus=1&max_gpus=1&hours=24",
    "gpus=H100&terms=on_demand&limit=10",
    "gpus=H100&fabrics=infiniband&min_gpus=8&params=7e10&tokens=1e12&job_gpus=64",
    "gpus=H200&min_gpus=8",
    "gpus=B200&hours=100",
    "gpus=A100&min_gpus=8&max_gpus=8&regions=us",
    "gpus=A100-SXM4-80GB&hours=10",
    "gpus=A100&min_gpu_memory_gb=80&gpu_hours=1000",
    "gpus=L40S&max_usd_per_gpu_hour=1.0",
    "gpus=L40S,L4&regions=eu",
    "gpus=RTX-4090&terms=interruptible&hours=5",
    "gpus=RTX-4090,RTX-3090&max_usd_per_hour=1",
    "gpus=RTX-4090&params=1e9&tokens=2e10",
    "gpus=MI300X&min_gpus=8",
    "gpus=MI300X,H100&min_total_gpu_memory_gb=640",
    "gpus=GAUDI2",
    "preset=8xh100",
    "preset=8xh100-ib&hours=168",
    "preset=1xh100&terms=on_demand,interruptible",
    "preset=24gb-consumer&limit=50",
    "preset=48gb-workstation&regions=us-east",
    "preset=8xa100&max_commitment_hours=730",
    "min_gpus=8&countries=DE,SE,NO",
    "verified_only=true&available_now=true&limit=10",
    "datacenter_only=true&min_reliability=0.98",
    "providers=lambda,runpod&gpus=H100",
    "exclude_providers=vastai&gpus=A100",
    "params=7e9&tokens=2e11&job_gpus=8",
    "params=7e10&tokens=1e12&job_gpus=256&gpus=H100",
    "gpu_hours=10000&gpus=H100,H200",
    "hours=1&sort=usd_per_hour",
    "hours=720&sort=job_cost_usd&gpus=A100",
    "precision=fp8&gpus=H100&min_gpus=8",
    "precision=fp16&gpus=L4",
    "min_vcpus=64&min_ram_gb=512&gpus=H100",
    "min_storage_gb=2000&storage_types=nvme&gpus=A100",
    "terms=commit_1y,commit_3y&gpus=H100&min_gpus=8",
    "max_price_age_hours=6&gpus=H100",
)


def _filtered(queries: Sequence[str]) -> tuple[str, ...]:
    """The queries that filter the offers: a requirement parameter or a preset. The others
    (a job, a sort, a limit) rank every offer, as the explorer's unfiltered page does."""
    sys.path.insert(0, str(ROOT))
    from gpuscout.service.api.offers_query import REQUIREMENT_PARAMS

    names = {*REQUIREMENT_PARAMS, "preset"}
    return tuple(q for q in queries if any(k in names for k, _ in parse_qsl(q)))


#: The queries the explorer's target is about: "a filtered explorer page" (#16).
FILTERED: tuple[str, ...] = _filtered(QUERIES)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the stored offers and loading them -----------------------------------------------
def store_offers(offers: int, directory: Path) -> str:
    """A SQLite database in ``directory`` holding ``offers`` synthetic offers; its URL."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.synthetic import synthetic_offers
    from gpuscout.adapters.collect import ProviderRun, RunStatus
    from gpuscout.db.engine import make_engine, sqlite_url
    from gpuscout.db.migrate import upgrade
    from gpuscout.db.snapshots import store_snapshot

    url = sqlite_url(directory / "api-bench.db")
    upgrade(url)
    started = time.perf_counter()
    at = datetime.now(UTC)
    data = synthetic_offers(offers, now=at)
    by_provider: dict[str, list[object]] = {}
    for o in data:
        by_provider.setdefault(o.provider, []).append(o)
    runs = [ProviderRun(p, RunStatus.OK, at, 1.0, offers=os_) for p, os_ in by_provider.items()]  # type: ignore[arg-type]
    engine = make_engine(url)
    try:
        store_snapshot(engine, runs, started_at=at, finished_at=datetime.now(UTC))
    finally:
        engine.dispose()
    took = time.perf_counter() - started
    print(f"stored {len(data)} synthetic offers in {took:.1f} s (not timed below)", flush=True)
    return url


def _settings(url: str, directory: Path) -> object:
    from gpuscout.service.settings import Settings

    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=directory,
        database_url=url,
        api_cache_entries=4096,
    )


def measure_load(url: str, directory: Path, loads: int) -> float:
    """Load the stored offers into the API state ``loads`` times: the first frames the
    stored records (no kept frame yet), then the frame is kept as a snapshot keeps it and
    the others read it. Returns the median seconds of those."""
    from gpuscout.db.current import keep_current_frame
    from gpuscout.db.engine import make_engine
    from gpuscout.service.api.state import StateHolder
    from gpuscout.service.current import load_current
    from gpuscout.service.fx import fx_table

    forget_kept(url, directory)
    settings = _settings(url, directory)
    holder = StateHolder(lambda: load_current(settings=settings), cache_entries=4096)  # type: ignore[arg-type]
    times, cpu = [], []
    for _ in range(max(2, loads)):
        started, cpu_started = time.perf_counter(), time.process_time()
        state = holder.refresh()
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
        if len(times) == 1:
            engine = make_engine(url)
            keep_current_frame(engine, fx_table(settings))
            engine.dispose()
    median = statistics.median(times[1:])
    each = ", ".join(f"{t:.2f}" for t in times[1:])
    print(
        f"load {state.frame.height} stored offers into the API state: first (frames the "
        f"stored records, keeps the frame) {times[0]:.2f} s, CPU {cpu[0]:.2f} s; then "
        f"(reads the kept frame) median {median:.2f} s, CPU {statistics.median(cpu[1:]):.2f} s "
        f"(each: {each} s; load average {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    return median


#: Seconds of quiet after the drive before the steady RSS is read.
STEADY_AFTER_S = 3.0


# --- server ----------------------------------------------------------------------------
def _server_env(url: str, directory: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GPUSCOUT_DATABASE_URL": url,
        "GPUSCOUT_DATA_DIR": str(directory),
        "GPUSCOUT_API_CACHE_ENTRIES": "4096",
        # poll for a new snapshot every second (30 s unless told): the phase through a
        # snapshot sees the refresh within its 15 s
        "GPUSCOUT_API_REFRESH_S": "1",
    }
    return env


def write_bytecode(url: str, directory: Path) -> None:
    """Import what a server imports once, untimed, so that every timed start reads the
    bytecode as an installed one does (the Docker image compiles it at build)."""
    code = (
        "import gpuscout.service.cli, gpuscout.service.api.app, gpuscout.service.current, uvicorn"
    )
    subprocess.run([sys.executable, "-c", code], env=_server_env(url, directory), check=True)


def start_server(
    url: str, directory: Path, port: int, workers: int, log: Path
) -> subprocess.Popen[bytes]:
    """``gpuscout serve --no-scheduler --workers N`` on the database at ``url``."""
    cmd = [sys.executable, "-c", "from gpuscout.service.cli import main; main()", "serve"]
    cmd += ["--no-scheduler", "--port", str(port), "--workers", str(workers)]
    with log.open("ab") as out:
        return subprocess.Popen(
            cmd, env=_server_env(url, directory), cwd=directory, stdout=out, stderr=out
        )


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            out += [int(c) for c in (task / "children").read_text().split()]
    return out


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux ``/proc``)."""
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += _children(p)
    return tree


def cpu_by_process(pid: int) -> dict[int, float]:
    """User + system CPU seconds of each process of ``pid``'s tree so far."""
    seconds = {}
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[p] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return seconds


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid``'s process tree so far."""
    return sum(cpu_by_process(pid).values())


def tree_memory_mb(pid: int) -> tuple[list[float], float]:
    """Each process's RSS and the tree's PSS (shared pages counted once), in MB."""
    rss, pss = [], 0.0
    for p in process_tree(pid):
        try:
            status = Path(f"/proc/{p}/status").read_text()
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
        except OSError:
            continue
        rss.append(int(status.split("VmRSS:")[1].split()[0]) / 1024)
        pss += int(rollup.split("\nPss:")[1].split()[0]) / 1024
    return rss, pss


# --- client ----------------------------------------------------------------------------
async def _request(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    path: str,
    encoding: str = "identity",
) -> tuple[int, int, str]:
    """One request on a keep-alive connection: its status, body size and ETag (or "")."""
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: {encoding}\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length, etag = 0, ""
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value)
        elif name.lower() == "etag":
            etag = value.strip()
    body = await reader.readexactly(length) if length else b""
    return status, len(body), etag


#: Where each mode sends the queries: the API, or the explorer's pages.
PREFIXES: dict[str, str] = {"api": "/v1/offers?", "web": "/?"}
#: Never-repeated suffixes: a price cap no offer comes near, new for every request.
_UNIQUE = itertools.count(1)


def unique(query: str) -> str:
    """``query`` as the cache has never seen it: the same ranking under a new cap."""
    cap = "max_usd_per_gpu_hour" if "max_usd_per_hour" in query else "max_usd_per_hour"
    return f"{query}&{cap}={1_000_000 + next(_UNIQUE)}"


class Phase:
    """What one phase of the drive collected."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[int] = []
        self.sizes: list[int] = []
        self.elapsed = 0.0
        #: Open loop only: the requests that went out more than 1 ms after they were due.
        self.late: int | None = None
        #: Open loop only: when the phase began (``perf_counter``), and per answer when it
        #: was due, its latency and the snapshot tag of its ETag (what the answer was
        #: ranked from), in the order they were answered.
        self.started = 0.0
        self.answers: list[tuple[float, float, str]] = []

    def record(self, latency_s: float, status: int, size: int) -> None:
        """One answered request."""
        self.latencies.append(latency_s)
        self.sizes.append(size)
        if status != 200:
            self.errors.append(status)


async def _worker(
    port: int, deadline: float, budget: list[int], phase: Phase, rng: random.Random,
    path_of: Callable[[str], str], encoding: str, queries: Sequence[str],
) -> None:  # fmt: skip
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.perf_counter() < deadline and budget[0] > 0:
            budget[0] -= 1
            path = path_of(rng.choice(queries))
            t0 = time.perf_counter()
            status, size, _ = await _request(reader, writer, path, encoding)
            phase.record(time.perf_counter() - t0, status, size)
    finally:
        writer.close()


async def drive(
    port: int, seconds: float, connections: int, max_requests: int,
    path_of: Callable[[str], str], encoding: str = "identity", seed: int = 1,
    queries: Sequence[str] = QUERIES,
) -> Phase:  # fmt: skip
    phase = Phase()
    budget = [max_requests]
    rng = random.Random(seed)
    started = time.perf_counter()
    deadline = started + seconds
    seeds = [random.Random(rng.random()) for _ in range(connections)]
    args = (path_of, encoding, queries)
    await asyncio.gather(*(_worker(port, deadline, budget, phase, r, *args) for r in seeds))
    phase.elapsed = time.perf_counter() - started
    return phase


#: An open-loop request that goes out later than this after it was due counts as late.
LATE_S = 0.001
#: The open loop's timer wakes this long before a request is due: the event loop's sleeps
#: end up to a millisecond late (epoll waits whole milliseconds, rounded up), which alone
#: would count most requests as late.
WAKE_EARLY_S = 0.0015


async def drive_open(
    port: int, seconds: float, connections: int, rate: float, max_requests: int,
    path_of: Callable[[str], str], seed: int = 1,
) -> Phase:  # fmt: skip
    """Open loop: a request due every ``1 / rate`` seconds for ``seconds``, each on the first
    free of ``connections`` keep-alive connections (waiting for one if all are busy), its
    latency from when it was due (no coordinated omission: a stall counts in full)."""
    phase = Phase()
    late = 0
    rng = random.Random(seed)
    conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(connections)]
    free: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    for conn in conns:
        free.put_nowait(conn)

    async def send(due: float, path: str) -> None:
        nonlocal late
        conn = await free.get()
        late += time.perf_counter() - due > LATE_S
        status, size, etag = await _request(*conn, path)
        latency = time.perf_counter() - due
        phase.record(latency, status, size)
        phase.answers.append((due, latency, etag.rpartition("-")[0]))
        free.put_nowait(conn)

    started = phase.started = time.perf_counter()
    sent = []
    for i in range(min(max_requests, math.ceil(seconds * rate))):  # all due in the phase
        due = started + i / rate
        await asyncio.sleep(due - WAKE_EARLY_S - time.perf_counter())
        while time.perf_counter() < due:  # the last stretch: yield to the answers in flight
            await asyncio.sleep(0)
        sent.append(asyncio.create_task(send(due, path_of(rng.choice(QUERIES)))))
    await asyncio.gather(*sent)
    phase.elapsed, phase.late = time.perf_counter() - started, late
    for _reader, writer in conns:
        writer.close()
    return phase


#: When, into the phase through a snapshot, the snapshot begins (a share of the phase).
SNAPSHOT_AT = 0.25
#: How long after a worker first answers from the new snapshot its window still runs:
#: the other workers' refreshes, and the new state's first answers (an empty cache).
AFTER_SWITCH_S = 2.0


async def drive_through_snapshot(
    port: int, seconds: float, connections: int, rate: float, max_requests: int,
    path_of: Callable[[str], str], snapshot: list[str],
) -> tuple[Phase, float, float]:  # fmt: skip
    """The open loop of :func:`drive_open`, with ``snapshot`` (a command) run as a process
    of its own a quarter into the phase: what a scheduler does on this machine, the API
    refreshing from the database meanwhile. Returns the phase and when the snapshot process
    began and ended (``perf_counter``)."""
    times: list[float] = []

    async def take() -> None:
        await asyncio.sleep(seconds * SNAPSHOT_AT)
        times.append(time.perf_counter())
        process = await asyncio.create_subprocess_exec(
            *snapshot, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        _, err = await process.communicate()
        times.append(time.perf_counter())
        if process.returncode:
            raise SystemExit(f"the snapshot failed: {err.decode(errors='replace')[-2000:]}")

    phase, _ = await asyncio.gather(
        drive_open(port, seconds, connections, rate, max_requests, path_of), take()
    )
    return phase, times[0], times[1]


def report_snapshot_window(phase: Phase, began: float, ended: float) -> str:
    """Print the latency of the requests due while the snapshot ran, and from its end until
    :data:`AFTER_SWITCH_S` after the last worker switched to it (each worker refreshes on
    its own: the last answer ranked from the old snapshot marks the last switch), against
    the rest of the phase; returns the refresh window's figures."""
    old = phase.answers[0][2]
    new = [due for due, _, tag in phase.answers if tag and tag != old]
    last_old = max(due for due, _, tag in phase.answers if tag == old)
    switched = last_old + AFTER_SWITCH_S if new else None

    def figures(low: float, high: float | None) -> str:
        ms = sorted(
            latency * 1000
            for due, latency, _ in phase.answers
            if (high is None and not began <= due <= (switched or ended))
            or (high is not None and low <= due <= high)
        )
        if not ms:
            return "no requests"
        return (
            f"{len(ms)} requests, p50 {_pct(ms, 50):.1f} ms, p99 {_pct(ms, 99):.1f} ms, max "
            f"{ms[-1]:.1f} ms"
        )

    running = figures(began, ended)
    refresh = figures(ended, switched) if switched is not None else "NO answer from it"
    first = f"{min(new) - began:.2f} s" if new else "never"
    print(
        f"  through the snapshot: it ran {ended - began:.2f} s (stored, then the frame kept),"
        f" the first answer from it {first} after it began; while it ran: {running}; from "
        f"its end to {AFTER_SWITCH_S:g} s after the last worker switched (the refresh): "
        f"{refresh}; the rest of the phase: {figures(0.0, None)}",
        flush=True,
    )
    return f"while it ran {running}; the refresh {refresh}"


def _pct(sorted_values: list[float], p: float) -> float:
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def report(title: str, phase: Phase, cpu: str = "") -> tuple[float, float, float]:
    """Print a phase's figures; returns (req/s, p50 ms, p99 ms)."""
    ms = sorted(x * 1000 for x in phase.latencies)
    rate = len(ms) / phase.elapsed
    print(
        f"{title}: {len(ms)} requests in {phase.elapsed:.1f} s = {rate:.0f} req/s; "
        f"p50 {_pct(ms, 50):.1f} ms, p95 {_pct(ms, 95):.1f} ms, p99 {_pct(ms, 99):.1f} ms, "
        f"max {ms[-1]:.1f} ms, mean {statistics.fmean(ms):.1f} ms; non-200: "
        f"{len(phase.errors)}{cpu}"
        + ("" if phase.late is None else f"; went out > 1 ms late: {phase.late}"),
        flush=True,
    )
    return rate, _pct(ms, 50), _pct(ms, 99)


def client(
    port: int, seconds: float, connections: int, max_requests: int, server_pid: int | None,
    rate: float = 0.0, snapshot: list[str] | None = None,
) -> None:  # fmt: skip
    """Warm each query once, then the cold (closed loop, then open loop at ``rate`` unless
    0, then the same through ``snapshot`` if given), cached (gzip, identity) and explorer
    phases."""
    warm = Phase()

    async def warm_up() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for q in QUERIES:
            t0 = time.perf_counter()
            status, size, _ = await _request(reader, writer, PREFIXES["api"] + q)
            warm.record(time.perf_counter() - t0, status, size)
        writer.close()

    t0 = time.perf_counter()
    asyncio.run(warm_up())
    warm.elapsed = time.perf_counter() - t0
    report("cold (first request of each query: ranks every current offer, one connection)", warm)

    def measured(
        title: str, phase: Phase, server_cpu: dict[int, float], own_cpu: float, rate: float,
        conns: int,
    ) -> str:  # fmt: skip
        """Print a phase's figures with the CPU it took; its summary."""
        own = time.process_time() - own_cpu
        cpu = f"; CPU: client {own:.1f} s"
        if server_pid:
            by_process = {
                p: s - server_cpu.get(p, 0.0) for p, s in cpu_by_process(server_pid).items()
            }
            used = sum(by_process.values())
            per = used / max(1, len(phase.latencies)) * 1000
            cpu += f", server {used:.1f} s ({per:.2f} ms a request"
            if len(by_process) > 2:  # several workers: how evenly the kernel spread them
                shares = sorted(by_process.values(), reverse=True)
                cpu += f"; by process {' + '.join(f'{s:.1f}' for s in shares)} s"
            cpu += ")"
        how = f"at {rate:g} req/s offered (open loop, {conns} connections)" if rate else ""
        closed = f"({conns} connection{'s' if conns != 1 else ''})"
        figures = report(f"{title} {how or closed}", phase, cpu)
        late = "" if phase.late is None else f", {phase.late} went out > 1 ms late"
        return f"{figures[0]:.0f} req/s, p50 {figures[1]:.1f} ms, p99 {figures[2]:.1f} ms{late}"

    def run(
        title: str, path_of: Callable[[str], str], encoding: str, rate: float = 0.0,
        conns: int = connections, queries: Sequence[str] = QUERIES,
    ) -> tuple[Phase, str]:  # fmt: skip
        """A closed-loop phase on ``conns`` connections over ``queries``, or an open-loop
        one at ``rate`` requests a second."""
        server_cpu = cpu_by_process(server_pid) if server_pid else {}
        own_cpu = time.process_time()
        phase = asyncio.run(
            drive_open(port, seconds, conns, rate, max_requests, path_of)
            if rate
            else drive(port, seconds, conns, max_requests, path_of, encoding, queries=queries)
        )
        return phase, measured(title, phase, server_cpu, own_cpu, rate, conns)

    api, web = PREFIXES["api"], PREFIXES["web"]
    # every worker process has its own cache: fill each before the cached phases
    asyncio.run(drive(port, min(seconds, 2.0), connections, max_requests, lambda q: api + q))
    _, cold = run("cold queries (never seen by the cache)", lambda q: api + unique(q), "identity")
    at_rate = ""
    if rate:
        _, figures = run("cold queries", lambda q: api + unique(q), "identity", rate)
        at_rate = (
            f"; cold at {rate:g} req/s offered (open loop, {connections} connections, latency "
            f"from when each was due) {figures} (target p50 <= 15, p99 <= 50 ms at 100 req/s)"
        )
    if rate and snapshot:
        server_cpu = cpu_by_process(server_pid) if server_pid else {}
        own_cpu = time.process_time()
        phase, began, ended = asyncio.run(
            drive_through_snapshot(
                port, seconds, connections, rate, max_requests, lambda q: api + unique(q),
                snapshot,
            )
        )  # fmt: skip
        title = "cold queries through a snapshot (server CPU includes no snapshot's)"
        measured(title, phase, server_cpu, own_cpu, rate, connections)
        window = report_snapshot_window(phase, began, ended)
        at_rate += f"; through a snapshot: {window}"
    _, gz = run("cached mix, gzip", lambda q: api + q, "gzip")
    ident, plain = run("steady mix (api, cached, identity)", lambda q: api + q, "identity")

    def new_page(query: str) -> str:
        return web + unique(query)

    pages, first = run("explorer first pages (web, new queries)", new_page, "gzip")
    _, alone = run("explorer first pages, one visitor at a time", new_page, "gzip", conns=1)
    _, filtered = run(
        f"explorer first pages with a filter ({len(FILTERED)} of the {len(QUERIES)} queries),"
        " one visitor at a time", new_page, "gzip", conns=1, queries=FILTERED,
    )  # fmt: skip
    sizes = ident.sizes + warm.sizes
    print(
        f"answer size (api, uncompressed): median {statistics.median(sizes) / 1000:.1f} kB, "
        f"max {max(sizes) / 1000:.1f} kB",
        flush=True,
    )
    heaviest = asyncio.run(_heaviest_page(port))
    print(f"heaviest explorer page (uncompressed): {heaviest / 1000:.1f} kB", flush=True)
    print(
        f"summary: cold, closed loop ({connections} connections) {cold} (target >= 100 req/s)"
        f"{at_rate}; cached gzip {gz} (target >= 4,000 req/s); cached identity {plain}; "
        f"explorer first page, {connections} connections {first}; one visitor at a time: "
        f"filtered {filtered} (target p99 <= 100 ms), every query {alone}; heaviest "
        f"{heaviest / 1000:.0f} kB (target <= 300 kB)",
        flush=True,
    )
    del pages


async def _heaviest_page(port: int) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sizes = []
    for q in QUERIES:
        _status, size, _ = await _request(reader, writer, PREFIXES["web"] + q)
        sizes.append(size)
    writer.close()
    return max(sizes)


def _wait_ready(port: int, timeout_s: float, server: subprocess.Popen[bytes]) -> float:
    """Seconds until ``/readyz`` answers 200 (polled every 20 ms)."""
    started = time.perf_counter()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("server exited early")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if b" 200 " in s.recv(100):
                    return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.02)
    raise SystemExit("server not ready in time")


@dataclasses.dataclass(frozen=True)
class Start:
    """One start of the server, up to ``/readyz`` answering 200."""

    ready_s: float
    cpu_s: float
    rss: list[float]
    pss: float

    def __str__(self) -> str:
        rss = ", ".join(f"{r:.0f}" for r in self.rss)
        return (
            f"ready in {self.ready_s:.2f} s, CPU {self.cpu_s:.2f} s (all processes), RSS {rss}"
            f" MB (each process), PSS {self.pss:.0f} MB"
        )


def start(
    url: str, directory: Path, port: int, workers: int, log: Path
) -> tuple[subprocess.Popen[bytes], Start]:
    """Start the server and time it to ready; the figures of that start."""
    server = start_server(url, directory, port, workers, log)
    try:
        ready_s = _wait_ready(port, 300, server)
        cpu_s = tree_cpu_s(server.pid)
        rss, pss = tree_memory_mb(server.pid)
    except BaseException:
        stop(server, log)
        raise
    return server, Start(ready_s, cpu_s, rss, pss)


def stop(server: subprocess.Popen[bytes], log: Path, failed: bool = False) -> None:
    if failed:
        sys.stderr.write(log.read_text(errors="replace")[-4000:])
    server.terminate()
    server.wait(timeout=30)


def keep_as_a_snapshot_does(url: str, directory: Path) -> float:
    """The last step of a snapshot (:func:`db.current.keep_current_frame`), in a process of
    its own as the scheduler's: frame the stored offers, keep the frame. Its seconds."""
    code = (
        "import time; t = time.perf_counter()\n"
        "from gpuscout.db.current import keep_current_frame\n"
        "from gpuscout.service.fx import fx_table\n"
        "from gpuscout.service.settings import get_settings\n"
        "from gpuscout.db.engine import make_engine\n"
        "s = get_settings(); e = make_engine(s.database_url)\n"
        "keep_current_frame(e, fx_table(s)); e.dispose()\n"
        "print(time.perf_counter() - t)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=_server_env(url, directory), cwd=directory,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(done.stdout.split()[-1])


def reprice_as_a_snapshot_does(url: str, directory: Path) -> None:
    """A snapshot in which one provider (the one with the most offers) raised every price
    by a tenth, stored and its frame kept as the scheduler's snapshot does
    (:func:`db.current.keep_current_frame`), in this process: the API's replicas notice the
    new snapshot at their next poll and refresh from the frame kept."""
    os.environ.update(GPUSCOUT_DATABASE_URL=url, GPUSCOUT_DATA_DIR=str(directory))
    from decimal import Decimal

    import sqlalchemy as sa

    from gpuscout.adapters.collect import ProviderRun, RunStatus
    from gpuscout.db.current import keep_current_frame
    from gpuscout.db.engine import make_engine
    from gpuscout.db.records import decode_offers
    from gpuscout.db.snapshots import store_snapshot
    from gpuscout.service.fx import fx_table
    from gpuscout.service.settings import get_settings

    settings = get_settings()
    fx = fx_table(settings)
    engine = make_engine(url)
    at = datetime.now(UTC)
    try:
        with engine.connect() as connection:
            provider = connection.execute(
                sa.text(
                    "SELECT provider FROM current_offer GROUP BY provider "
                    "ORDER BY count(*) DESC, provider LIMIT 1"
                )
            ).scalar_one()
            records = connection.execute(
                sa.text("SELECT record FROM current_offer WHERE provider = :p ORDER BY offer_key"),
                {"p": provider},
            ).scalars()
            offers = decode_offers(((r, at) for r in records), fx)
        dearer = [
            o.model_copy(update={"price_amount": o.price_amount * Decimal("1.1")}) for o in offers
        ]
        run = ProviderRun(provider, RunStatus.OK, at, 1.0, offers=dearer)
        store_snapshot(engine, [run], started_at=at, finished_at=datetime.now(UTC), fx=fx)
        keep_current_frame(engine, fx)
    finally:
        engine.dispose()


def forget_kept(url: str, directory: Path) -> None:
    """Remove every kept frame: the data dir's and the database's (``kept_frame``)."""
    import shutil

    import sqlalchemy as sa

    from gpuscout.db.engine import make_engine

    shutil.rmtree(directory / "cache", ignore_errors=True)
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(sa.text("DELETE FROM kept_frame"))
    finally:
        engine.dispose()


def bench_workers(url: str, directory: Path, workers: int, args: argparse.Namespace) -> None:
    """Start ``gpuscout serve`` with ``workers`` processes four times: a first start with
    nothing kept (each worker frames the stored records), a first start after a snapshot
    kept the frame (as the scheduler's does after each snapshot), a start with an empty
    data dir (as on another host) and a restart; drive the restarted server, stop it."""
    import shutil

    port = args.port or _free_port()
    log = directory / f"serve-{workers}.log"
    forget_kept(url, directory)
    server, first = start(url, directory, port, workers, log)
    stop(server, log)
    forget_kept(url, directory)
    kept_s = keep_as_a_snapshot_does(url, directory)
    server, after_snapshot = start(url, directory, port, workers, log)
    stop(server, log)
    shutil.rmtree(directory / "cache", ignore_errors=True)
    server, other_host = start(url, directory, port, workers, log)
    stop(server, log)
    server, again = start(url, directory, port, workers, log)
    load = os.getloadavg()[0]
    processes = "" if workers == 1 else "; processes: parent, workers, resource tracker"
    print(
        f"--- {workers} worker(s), gpuscout serve (target ready <= 2 s, RSS <= 400 MB a "
        f"worker; load average {load:.1f}{processes}):\nfirst start, nothing kept (frames the "
        f"stored records): {first}\nfirst start after a snapshot (it kept the frame, in "
        f"{kept_s:.2f} s): {after_snapshot}\nfirst start on another host (a data dir "
        f"without the frame: reads the database's): {other_host}\nrestart (reads the kept "
        f"frame): {again}",
        flush=True,
    )
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run(
            [sys.executable, __file__, "--role", "client", "--port", str(port),
             "--seconds", str(args.seconds), "--connections", str(args.connections),
             "--max-requests", str(args.max_requests), "--server-pid", str(server.pid),
             "--rate", str(args.rate), "--url", url, "--data-dir", str(directory),
             "--snapshot-nice", str(args.snapshot_nice)],
            env=env, check=True,
        )  # fmt: skip
        rss, pss = tree_memory_mb(server.pid)
        print(
            f"after the drive: RSS {', '.join(f'{r:.0f}' for r in rss)} MB, PSS {pss:.0f} MB",
            flush=True,
        )
        # steady: polars' allocator gives freed pages back within about 1.5 s of quiet
        # (jemalloc's dirty and muzzy decay), so the answers in flight are not counted
        time.sleep(STEADY_AFTER_S)
        rss, pss = tree_memory_mb(server.pid)
        print(
            f"steady ({STEADY_AFTER_S:g} s later): RSS {', '.join(f'{r:.0f}' for r in rss)} MB"
            f" (target <= 400 MB a worker), PSS {pss:.0f} MB",
            flush=True,
        )
    except BaseException:
        stop(server, log, failed=True)
        raise
    stop(server, log)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=5, help="timed loads into the API state")
    parser.add_argument("--seconds", type=float, default=15.0, help="of each phase")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument(
        "--rate", type=float, default=100.0,
        help="req/s of the open-loop cold phase, after the closed-loop one (0: skip it)",
    )  # fmt: skip
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument("--workers", default="1,2", help="worker counts to serve with, in turn")
    parser.add_argument("--role", choices=["all", "client", "snapshot"], default="all")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--server-pid", type=int, help="client role: the server to watch")
    parser.add_argument(
        "--snapshot-nice", type=int, default=0,
        help="run the snapshot of the phase through one at this niceness (as deploy/ runs the "
        "scheduler below the API: compose's cpu_shares)",
    )  # fmt: skip
    parser.add_argument("--url", help="client and snapshot roles: the server's database")
    parser.add_argument("--data-dir", type=Path, help="client and snapshot roles: its data dir")
    parser.add_argument(
        "--no-bytecode", action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE if set: every server process compiles its imports",
    )  # fmt: skip
    args = parser.parse_args()
    if not args.no_bytecode:  # the servers run as installed: their imports read .pyc files
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.role == "snapshot":
        reprice_as_a_snapshot_does(args.url, args.data_dir)
        return
    if args.role == "client":
        snapshot = None
        if args.url and args.data_dir:
            snapshot = ["nice", "-n", str(args.snapshot_nice)] if args.snapshot_nice else []
            snapshot += [sys.executable, __file__, "--role", "snapshot", "--url", args.url]
            snapshot += ["--data-dir", str(args.data_dir)]
        client(
            args.port, args.seconds, args.connections, args.max_requests, args.server_pid,
            args.rate, snapshot,
        )  # fmt: skip
        return
    with tempfile.TemporaryDirectory(prefix="gpuscout-api-bench-") as tmp:
        directory = Path(tmp)
        url = store_offers(args.offers, directory)
        measure_load(url, directory, args.loads)
        write_bytecode(url, directory)
        for workers in (int(w) for w in args.workers.split(",")):
            bench_workers(url, directory, workers, args)


if __name__ == "__main__":
    main()
