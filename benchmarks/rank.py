"""Benchmark ``pricing.rank`` on synthetic offers against a bare polars baseline.

    uv run python benchmarks/rank.py [--sizes 10000 100000 1000000] [--repeat 7]

For each N it builds one frame of N realistic synthetic offers (~40 GPU models, 1-8 GPUs,
40 providers, 60 regions, three terms per configuration: on-demand, interruptible and one
commitment), then times, for a few typical requirements:

* ``rank``: qualify, placement, effective TFLOPs, the all-in job cost of every term,
  cheapest term per configuration, break-even, total order, top 50 configurations;
* the bare polars baseline: the least polars work for an answer of the same shape: the same
  requirement filter on the same join to the GPU peaks, one cost column (USD per peak
  TFLOP-hour, standing for the ranking key), the same exact two-stage top-k (the least cost
  per configuration, the 50 cheapest configurations) and their cheapest rows.

Both run on the same frame and requirement expression in this process, alternating run by
run so that load from other processes hits both alike; both collect on polars' default
engine (``POLARS_ENGINE_AFFINITY`` sets another). It prints the median time of each, their
ratio, and the process's peak RSS (sampled with psutil) while each query runs, then per N
the worst ratio and the peak RSS. Target: ratio <= 2 at every N from 10k to 3M. The peak
RSS is the whole process's, the frame and its making included.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.ma  # before polars reads arrays in threads (see synthetic_offers)
import polars as pl
import psutil

from gpuscout.adapters.gpus import Precision, catalog
from gpuscout.adapters.schema import RentalTerm
from gpuscout.pricing import Job, RankOptions, Requirement, rank
from gpuscout.pricing.expressions import qualifies
from gpuscout.pricing.frame import OFFER_SCHEMA, catalog_frame
from gpuscout.pricing.offer_facts import with_offer_facts

NOW = datetime(2026, 1, 1, tzinfo=UTC)
COMMITMENTS = [
    RentalTerm.COMMIT_1W,
    RentalTerm.COMMIT_1MO,
    RentalTerm.COMMIT_3MO,
    RentalTerm.COMMIT_1Y,
]


def synthetic_offers(n: int, seed: int = 7) -> pl.DataFrame:
    """``n`` offers (rounded down to a multiple of 3) as a ranking frame is built: in
    :data:`OFFER_SCHEMA`, with ``config_id`` and the offer facts (computed once here, as
    :func:`pricing.frame.offers_to_frame` and the database's frame do, not by every call)."""
    rng = np.random.default_rng(seed)
    specs = [s for s in catalog() if s.peak_tflops(Precision.BF16)][:40]
    configs = n // 3
    model_ix = rng.integers(0, len(specs), configs)
    counts = rng.choice([1, 2, 4, 8], configs, p=[0.4, 0.15, 0.15, 0.3])
    providers = np.array([f"provider-{i:02d}" for i in range(40)])
    regions = np.array(
        [f"{z}-{i}" for z in ("us-east", "us-west", "eu-central", "ap") for i in range(15)]
    )
    fabrics = np.array(["infiniband", "roce", "ethernet", None], dtype=object)
    peak = np.array([s.peak_tflops(Precision.BF16) for s in specs])[model_ix]
    usd_per_gpu_hour = peak / 400 * rng.uniform(0.6, 1.6, configs)

    def per_config(values: np.ndarray) -> np.ndarray:
        return np.repeat(values, 3)

    term_cols = np.empty(configs * 3, dtype=object)
    term_cols[0::3] = RentalTerm.ON_DEMAND.value
    term_cols[1::3] = RentalTerm.INTERRUPTIBLE.value
    commit = rng.integers(0, len(COMMITMENTS), configs)
    term_cols[2::3] = [COMMITMENTS[i].value for i in commit]
    commitment_hours = np.full(configs * 3, np.nan)
    commitment_hours[2::3] = [float(COMMITMENTS[i].commitment_hours or 0) for i in commit]
    discount = np.ones(configs * 3)
    discount[1::3] = rng.uniform(0.3, 0.7, configs)
    discount[2::3] = rng.uniform(0.5, 0.9, configs)
    gpus = per_config(counts).astype(float)
    usd_per_hour = per_config(usd_per_gpu_hour) * gpus * discount
    config_id = np.repeat(np.arange(configs, dtype=np.uint32), 3)
    names = np.array([s.name for s in specs])[model_ix]
    forms = np.array([s.form_factor.value for s in specs])[model_ix]
    memory = np.array([s.memory_gb or 0.0 for s in specs])[model_ix]
    rows = configs * 3
    data = {
        "provider": per_config(providers[rng.integers(0, len(providers), configs)]),
        "offer_id": per_config(np.char.add("offer-", np.arange(configs).astype(str))),
        "region": per_config(regions[rng.integers(0, len(regions), configs)]),
        "fetched_at": [NOW - timedelta(hours=1)] * rows,
        "gpu_model": per_config(names),
        "gpu_count": per_config(counts).astype(np.int32),
        "gpus": gpus,
        "gpu_memory_gb": per_config(memory),
        "gpu_form_factor": per_config(forms),
        "vcpus": gpus * 16,
        "ram_gb": gpus * 120,
        "storage_gb": gpus * 1000,
        "fabric": pl.Series(
            per_config(fabrics[rng.integers(0, len(fabrics), configs)]).tolist(), dtype=pl.String
        ),
        "fabric_gbps": per_config(rng.choice([100.0, 400.0, 1600.0, 3200.0], configs)),
        "price_amount": [None] * rows,
        "price_currency": ["USD"] * rows,
        "price_unit": ["hour"] * rows,
        "price_basis": ["instance"] * rows,
        "term": pl.Series(term_cols.tolist(), dtype=pl.String),
        "commitment_hours": commitment_hours,
        "billing_increment_s": per_config(rng.choice([1, 60, 3600], configs)),
        "usd_per_hour": usd_per_hour,
        "reliability": rng.uniform(0.9, 1.0, rows),
        "available_now": rng.random(rows) < 0.8,
    }
    # polars builds the columns of a dict of arrays in a thread pool, each asking numpy for
    # np.ma; numpy imports that submodule on first use, and two threads importing it at once
    # recursed until RecursionError (a CI run of tests/benchmarks): it is imported above
    frame = pl.DataFrame(data, nan_to_null=True).with_columns(
        price_amount=pl.col("usd_per_hour").cast(pl.Decimal(38, 12))
    )
    missing = {k: pl.lit(None, dtype=v) for k, v in OFFER_SCHEMA.items() if k not in frame.columns}
    return with_offer_facts(
        frame.with_columns(**missing)
        .with_columns(config_id=pl.Series(config_id))
        .select([pl.col(k).cast(v) for k, v in OFFER_SCHEMA.items()] + [pl.col("config_id")])
    )


REQUIREMENTS: dict[str, Requirement] = {
    "any": Requirement(),
    "8xh100": Requirement(gpus=("H100",), min_gpus=8),
    "us-24gb-no-commit": Requirement(
        regions=("us-",),
        min_gpu_memory_gb=24,
        terms=(RentalTerm.ON_DEMAND, RentalTerm.INTERRUPTIBLE),
        max_usd_per_hour=40,
    ),
}


def gpu_peaks() -> pl.DataFrame:
    """The catalog columns the baseline needs, GPUs with a BF16 peak only (as rank keeps)."""
    return (
        catalog_frame()
        .select("gpu_model", "catalog_form_factor", "catalog_memory_gb", "tflops_bf16")
        .filter(pl.col("tflops_bf16") > 0)
    )


def baseline(frame: pl.DataFrame, req: Requirement, peaks: pl.DataFrame) -> pl.DataFrame:
    """Filter, one cost column, two-stage top 50: the floor polars can do for the answer.

    The same requirement expression as rank on the same join (polars pushes its offer-only
    conditions below the join), USD per peak TFLOP-hour, the least cost of each
    configuration, the 50 cheapest configurations (ties by ``config_id``) and their
    cheapest rows, in order.
    """
    costed = (
        frame.lazy()
        .join(peaks.lazy(), on="gpu_model", how="inner")
        .filter(qualifies(req, NOW))
        .with_columns(cost=pl.col("usd_per_hour") / (pl.col("gpus") * pl.col("tflops_bf16")))
    )
    top = (
        costed.group_by("config_id")
        .agg(pl.col("cost").min())
        .bottom_k(50, by=["cost", "config_id"])
        .select("config_id")
    )
    return (
        costed.join(top, on="config_id", how="inner")
        .sort("cost", "config_id", "term")
        .unique("config_id", keep="first", maintain_order=True)
        .collect()
    )


class PeakRss:
    """Samples this process's RSS every few milliseconds while active."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._proc = psutil.Process()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            time.sleep(0.002)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


def median_ms(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Median wall time of each of ``fns``, run alternately ``repeat`` times after a warm-up."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times, strict=True):
            start = time.perf_counter()
            fn()
            out.append((time.perf_counter() - start) * 1000)
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    peaks = gpu_peaks()
    job = Job.for_hours(100)
    options = RankOptions(limit=50, now=NOW)
    print(f"polars {pl.__version__}, {psutil.cpu_count()} CPUs, job: 100 h, top 50")
    header = ("N", "requirement", "rank ms", "base ms", "ratio", "peak RSS MB")
    print("{:>9} {:<20} {:>9} {:>9} {:>6} {:>12}".format(*header))
    for n in args.sizes:
        frame = synthetic_offers(n)
        ratios = []
        with PeakRss() as all_rss:
            for name, req in REQUIREMENTS.items():
                with PeakRss() as rss:
                    ours, base = median_ms(
                        [
                            lambda f=frame, r=req: rank(f, r, job, options),
                            lambda f=frame, r=req: baseline(f, r, peaks),
                        ],
                        args.repeat,
                    )
                ratios.append(ours / base)
                print(
                    f"{frame.height:>9} {name:<20} {ours:>9.1f} {base:>9.1f} "
                    f"{ours / base:>6.2f} {rss.peak / 1e6:>12.0f}"
                )
        print(
            f"{frame.height:>9} {'(all, worst ratio)':<20} {'':>9} {'':>9} "
            f"{max(ratios):>6.2f} {all_rss.peak / 1e6:>12.0f}"
        )


if __name__ == "__main__":
    main()
