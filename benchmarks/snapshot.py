"""Benchmark: store a 100k-offer snapshot, an identical one, then one with 5 % of prices
changed, on SQLite and (when reachable) PostgreSQL; print the time and rows added of each,
and the peak memory.

    uv run python benchmarks/snapshot.py [--offers 100000] [--repeat 3] [--postgres URL]

PostgreSQL is taken from ``--postgres`` or ``GPUSCOUT_TEST_POSTGRES_URL``; the benchmark
works in a schema of its own and drops it afterwards. The offers of each provider are built
when ``store_snapshot`` asks for its run (it streams the runs), and the time spent building
them is left out; ``store_snapshot`` (encoding, diffing and writing) and
``load_current_offers`` are timed. Each repetition starts from an empty database; the
summary gives the median and the worst of each step and checks them against the targets of
issue #17 (first <= 4 s, identical <= 1 s and 0 history rows added) and of issue #54 (peak
RSS, ``VmHWM``, below 1 GiB: the offers built, stored and loaded). Client CPU is printed
too, and for a PostgreSQL server on this machine the CPU of its backend: on a shared machine
the wall time follows the load, the CPU time much less.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.pool import NullPool

from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.adapters.schema import Offer, default_fx
from gpuscout.db.current import load_current_offers
from gpuscout.db.engine import make_engine, sqlite_url
from gpuscout.db.migrate import upgrade
from gpuscout.db.snapshots import store_snapshot

PROVIDERS = 20
GPUS = ["H100-SXM5-80GB", "A100-SXM4-80GB", "L40S", "RTX-4090", "H200-SXM-141GB"]


def make_offer(i: int, fetched_at: datetime, repriced: bool = False) -> Offer:
    """Offer ``i`` of the synthetic market; ``repriced``: one cent dearer."""
    cents = 20 + (i * 7919) % 880  # spread over 0.20-8.99 USD, the same for every build
    return Offer.model_validate(
        {
            "provider": f"provider{i % PROVIDERS:02d}",
            "offer_id": f"offer-{i}",
            "instance_name": f"gpu-{i % 97}x",
            "region": f"region-{i % 13}",
            "country": "US",
            "fetched_at": fetched_at,
            "gpu_model": GPUS[i % len(GPUS)],
            "gpu_raw_name": "NVIDIA " + GPUS[i % len(GPUS)],
            "gpu_count": 1 + i % 8,
            "gpu_memory_gb": 80.0,
            "vcpus": 16.0,
            "ram_gb": 128.0,
            "storage_gb": 500.0,
            "price_amount": Decimal(cents + repriced) / 100,
            "price_currency": "USD",
            "price_unit": "hour",
            "price_basis": "gpu",
            "term": "on_demand" if i % 3 else "interruptible",
            "reliability": 0.98,
            "verified": bool(i % 2),
            "available_now": True,
        }
    )


class Market:
    """The snapshot's runs, one per provider, each built only when ``store_snapshot`` asks
    for it (as a streaming fetch hands them over), so the benchmark holds one provider's
    offers at a time. The time spent building them is kept apart, to be left out."""

    def __init__(self, n: int, started_at: datetime, repriced_share: float = 0.0) -> None:
        self.n, self.started_at, self.share = n, started_at, repriced_share
        self.build_s = self.build_cpu_s = 0.0

    def __iter__(self) -> Iterator[ProviderRun]:
        rng = random.Random(7)
        for p in range(PROVIDERS):
            tick, cpu = time.perf_counter(), time.process_time()
            offers = [
                make_offer(i, self.started_at, rng.random() < self.share)
                for i in range(p, self.n, PROVIDERS)
            ]
            run = ProviderRun(offers[0].provider, RunStatus.OK, self.started_at, 1.0, offers)
            del offers
            self.build_s += time.perf_counter() - tick
            self.build_cpu_s += time.process_time() - cpu
            yield run


def peak_rss_mb() -> float | None:
    """This process's peak resident set so far (``VmHWM``), where ``/proc`` has it."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def reset_peak_rss() -> None:
    """Start :func:`peak_rss_mb` again from the current resident set (Linux's
    ``clear_refs`` 5), so each database's figure is its own."""
    with suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


@contextmanager
def postgres_schema(base: str) -> Iterator[str]:
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base, poolclass=NullPool)
    with admin.begin() as c:
        c.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    try:
        url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as c:
            c.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


TARGETS = {"first": 4.0, "identical": 1.0}
#: Issue #54: a snapshot of 1M offers peaks below 1 GiB.
PEAK_RSS_TARGET_MB = 1024


def backend_cpu(engine: Engine) -> tuple[int, float] | None:
    """The pid and CPU seconds so far of the PostgreSQL backend serving ``engine``'s pooled
    connection (the one ``store_snapshot`` checks out next), if the server runs here."""
    if engine.dialect.name != "postgresql":
        return None
    with engine.connect() as connection:
        pid = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return pid, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(label: str, url: str, n: int) -> dict[str, float]:
    """One sequence on an empty database at ``url`` with ``n`` offers: the seconds of each
    step, and of client CPU (``<step> CPU``); building the offers is left out."""
    times: dict[str, float] = {}
    upgrade(url)
    engine = make_engine(url)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    steps = [("first", 0.0), ("identical", 0.0), ("5% repriced", 0.05)]
    for i, (name, share) in enumerate(steps):
        started = t0 + timedelta(hours=i)
        market = Market(n, started, share)
        gc.collect()
        server = backend_cpu(engine)
        tick, cpu = time.perf_counter(), time.process_time()
        summary = store_snapshot(
            engine, market, started_at=started, finished_at=started + timedelta(minutes=1)
        )
        seconds = time.perf_counter() - tick - market.build_s
        cpu = time.process_time() - cpu - market.build_cpu_s
        times[name], times[f"{name} CPU"] = seconds, cpu
        server_after = backend_cpu(engine)
        server_cpu = ""
        if server and server_after and server[0] == server_after[0]:
            server_cpu = f", server CPU {server_after[1] - server[1]:5.2f} s"
        if name == "identical" and summary.history_added:
            raise SystemExit(f"{label}: identical snapshot added {summary.history_added} rows")
        print(
            f"{label:10} {name:12} {seconds:6.2f} s (client CPU {cpu:5.2f} s{server_cpu})"
            f"   offers {summary.offer_count:>7}"
            f"   history +{summary.history_added} / closed {summary.history_closed}"
            f"   (building the offers: {market.build_s:.1f} s, left out)"
        )
    tick = time.perf_counter()
    state = load_current_offers(engine, fx=default_fx())
    times["load"] = time.perf_counter() - tick
    print(f"{label:10} {'load':12} {times['load']:6.2f} s   offers {state.frame.height}")
    del state
    engine.dispose()
    peak = peak_rss_mb()
    if peak is not None:
        print(f"{label:10} peak RSS {peak:.0f} MB (VmHWM: storing, building and loading)")
        times["peak RSS MB"] = peak
    return times


def summarise(label: str, runs: list[dict[str, float]]) -> bool:
    """Print the median and worst of each step; whether every target is met."""
    met = True
    for step in runs[0]:
        values = [run[step] for run in runs]
        if step == "peak RSS MB":
            ok = max(values) < PEAK_RSS_TARGET_MB
            met &= ok
            print(
                f"{label:10} {'peak RSS':15} worst {max(values):5.0f} MB"
                f"   target < {PEAK_RSS_TARGET_MB} MB: {'met' if ok else 'NOT MET'}"
            )
            continue
        target = TARGETS.get(step)
        verdict = ""
        if target is not None:
            ok = statistics.median(values) <= target
            met &= ok
            verdict = f"   target <= {target:.0f} s: {'met' if ok else 'NOT MET'}"
        print(
            f"{label:10} {step:15} median {statistics.median(values):5.2f} s"
            f"   worst {max(values):5.2f} s{verdict}"
        )
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("GPUSCOUT_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    results: dict[str, list[dict[str, float]]] = {"sqlite": []}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            reset_peak_rss()
            url = sqlite_url(Path(tmp) / "bench.db")
            results["sqlite"].append(bench("sqlite", url, args.offers))
    if args.postgres:
        try:
            for _ in range(args.repeat):
                with postgres_schema(args.postgres) as url:
                    reset_peak_rss()
                    results.setdefault("postgres", []).append(bench("postgres", url, args.offers))
        except sa.exc.OperationalError as exc:
            print(f"postgres unreachable, skipped: {exc.orig}")
    else:
        print("postgres: no URL (--postgres or GPUSCOUT_TEST_POSTGRES_URL), skipped")
    print(f"summary of {args.repeat} run(s) each")
    met = all([summarise(label, runs) for label, runs in results.items()])
    print("targets met" if met else "targets NOT met")


if __name__ == "__main__":
    main()
