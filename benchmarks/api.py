"""Benchmark the API over 100k synthetic current offers stored in SQLite: loading them into
the API state, then ``GET /v1/offers`` over HTTP (uvicorn on 127.0.0.1, a mix of realistic
queries driven from a separate client process).

    uv run python benchmarks/api.py [--offers 100000] [--loads 5] [--seconds 15] [--connections 8]

The offers are stored as one snapshot (not timed). Loading them into the API state (what an
API replica does at start and after every snapshot: read the stored rows, frame them, per
provider outcomes) is timed ``--loads`` times; the median is the figure to compare (base
commit 707c4c0, which built an ``Offer`` per row and framed those: 3.4 s median on the
2-core machine of the README's figures). On a shared machine the CPU time (all threads) is
the steadier figure. The server then runs ``create_app`` exactly as
``gpuscout serve`` does, on that database. The client is a small asyncio HTTP/1.1 keep-alive
client (bounded time and request count, loopback only). Prints throughput and p50/p95/p99
latency; the targets on a 2-core machine are p50 <= 10 ms, p99 <= 50 ms and >= 500
requests/s.

``--mode web`` drives the same queries as pages of the offers explorer (``GET /?...``,
:mod:`service.web`) and prints the heaviest page too (uncompressed); the targets are
p99 <= 100 ms and <= 300 kB a page.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the stored offers and loading them -----------------------------------------------
def store_offers(offers: int, directory: Path) -> str:
    """A SQLite database in ``directory`` holding ``offers`` synthetic offers; its URL."""
    sys.path.insert(0, str(ROOT))
    from adapters.collect import ProviderRun, RunStatus
    from benchmarks.synthetic import synthetic_offers
    from db.engine import make_engine, sqlite_url
    from db.migrate import upgrade
    from db.snapshots import store_snapshot

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
    from service.settings import Settings

    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=directory,
        database_url=url,
        api_cache_entries=4096,
    )


def measure_load(url: str, directory: Path, loads: int) -> float:
    """Load the stored offers into the API state ``loads`` times; the median seconds."""
    from service.api.state import StateHolder
    from service.current import load_current

    settings = _settings(url, directory)
    holder = StateHolder(lambda: load_current(settings=settings), cache_entries=4096)  # type: ignore[arg-type]
    times, cpu = [], []
    for _ in range(loads):
        started, cpu_started = time.perf_counter(), time.process_time()
        state = holder.refresh()
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    median = statistics.median(times)
    each = ", ".join(f"{t:.2f}" for t in times)
    print(
        f"load {state.frame.height} stored offers into the API state: median {median:.2f} s, "
        f"CPU {statistics.median(cpu):.2f} s (each: {each} s; load average "
        f"{os.getloadavg()[0]:.1f})",
        flush=True,
    )
    return median


# --- server ----------------------------------------------------------------------------
def serve(url: str, port: int) -> None:
    """Run the API on 127.0.0.1:port on the database at ``url`` (blocks)."""
    import uvicorn

    sys.path.insert(0, str(ROOT))
    from sqlalchemy.engine import make_url

    from service.api import create_app

    directory = Path(make_url(url).database or ".").parent  # where store_offers put it
    app = create_app(_settings(url, directory))  # type: ignore[arg-type]
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


# --- client ----------------------------------------------------------------------------
async def _request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str
) -> tuple[int, int]:
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: identity\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length = 0
    for line in lines[1:]:
        if line.lower().startswith("content-length:"):
            length = int(line.split(":", 1)[1])
    body = await reader.readexactly(length) if length else b""
    return status, len(body)


#: Where each mode sends the queries: the API, or the explorer's pages.
PREFIXES: dict[str, str] = {"api": "/v1/offers?", "web": "/?"}


async def _worker(
    port: int, deadline: float, budget: list[int], latencies: list[float], errors: list[int],
    rng: random.Random, prefix: str, sizes: list[int],
) -> None:  # fmt: skip
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.perf_counter() < deadline and budget[0] > 0:
            budget[0] -= 1
            path = prefix + rng.choice(QUERIES)
            t0 = time.perf_counter()
            status, size = await _request(reader, writer, path)
            latencies.append(time.perf_counter() - t0)
            sizes.append(size)
            if status != 200:
                errors.append(status)
    finally:
        writer.close()


async def drive(
    port: int, seconds: float, connections: int, max_requests: int, seed: int = 1,
    prefix: str = PREFIXES["api"], sizes: list[int] | None = None,
) -> tuple[list[float], list[int], float]:  # fmt: skip
    sizes = [] if sizes is None else sizes
    latencies: list[float] = []
    errors: list[int] = []
    budget = [max_requests]
    rng = random.Random(seed)
    started = time.perf_counter()
    deadline = started + seconds
    await asyncio.gather(
        *(
            _worker(
                port,
                deadline,
                budget,
                latencies,
                errors,
                random.Random(rng.random()),
                prefix,
                sizes,
            )
            for _ in range(connections)
        )
    )
    return latencies, errors, time.perf_counter() - started


def _pct(sorted_values: list[float], p: float) -> float:
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def report(title: str, latencies: list[float], errors: list[int], elapsed: float) -> None:
    xs = sorted(latencies)
    ms = [x * 1000 for x in xs]
    print(
        f"{title}: {len(xs)} requests in {elapsed:.1f} s = {len(xs) / elapsed:.0f} req/s; "
        f"p50 {_pct(ms, 50):.1f} ms, p95 {_pct(ms, 95):.1f} ms, p99 {_pct(ms, 99):.1f} ms, "
        f"max {ms[-1]:.1f} ms, mean {statistics.fmean(ms):.1f} ms; non-200: {len(errors)}",
        flush=True,
    )


def client(
    port: int, seconds: float, connections: int, max_requests: int, mode: str = "api"
) -> None:
    """Warm each query once (cold: ranks every current offer), then drive the mix."""
    cold: list[float] = []
    errors: list[int] = []
    sizes: list[int] = []
    prefix = PREFIXES[mode]

    async def warm() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for q in QUERIES:
            t0 = time.perf_counter()
            status, size = await _request(reader, writer, prefix + q)
            cold.append(time.perf_counter() - t0)
            sizes.append(size)
            if status != 200:
                errors.append(status)
        writer.close()

    t0 = time.perf_counter()
    asyncio.run(warm())
    report(
        "cold (first request of each query: ranks every current offer)",
        cold,
        errors,
        time.perf_counter() - t0,
    )
    latencies, errors, elapsed = asyncio.run(
        drive(port, seconds, connections, max_requests, prefix=prefix, sizes=sizes)
    )
    report(
        f"steady mix ({mode}: {len(QUERIES)} queries, {connections} connections)",
        latencies,
        errors,
        elapsed,
    )
    print(
        f"answer size ({mode}, uncompressed): median {statistics.median(sizes) / 1000:.1f} kB,"
        f" max {max(sizes) / 1000:.1f} kB",
        flush=True,
    )


def _wait_ready(port: int, timeout_s: float, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("server exited early")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if b" 200 " in s.recv(100):
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("server not ready in time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=5, help="timed loads into the API state")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument("--role", choices=["all", "server", "client"], default="all")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--database-url", help="server role: the database to serve")
    parser.add_argument(
        "--mode", choices=sorted(PREFIXES), default="api", help="the API, or explorer pages"
    )
    args = parser.parse_args()
    port = args.port or _free_port()
    if args.role == "server":
        serve(args.database_url, port)
        return
    if args.role == "client":
        client(port, args.seconds, args.connections, args.max_requests, args.mode)
        return
    with tempfile.TemporaryDirectory(prefix="gpuscout-api-bench-") as tmp:
        url = store_offers(args.offers, Path(tmp))
        measure_load(url, Path(tmp), args.loads)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, __file__, "--port", str(port)]
        server = subprocess.Popen([*cmd, "--role", "server", "--database-url", url], env=env)
        try:
            _wait_ready(port, 300, server)
            print(f"server ready on http://127.0.0.1:{port} (pid {server.pid})", flush=True)
            subprocess.run(
                [*cmd, "--role", "client", "--seconds", str(args.seconds),
                 "--connections", str(args.connections), "--max-requests", str(args.max_requests),
                 "--mode", args.mode],
                env=env, check=True,
            )  # fmt: skip
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
