"""Benchmark the checklist an answer carries: its cost beside the ranking it decorates.

    uv run python benchmarks/checklist.py [--offers 21000] [--repeat 9]

On a synthetic frame (:func:`benchmarks.rank.synthetic_offers`): the checklist summary of
every offer, as the API's state counts it once per snapshot
(:attr:`service.api.state.ApiState.checklist`), then for a page of 20 and of 500 offers
the ranking, what a page then pays for its rows' summaries (fetched by offer row), and the
vectorised summaries ``gpuscout offers`` and the digest use (find the rows in the frame,
run every item's filter, count). Medians of CPU time (all threads), steadier than wall
time on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from benchmarks.rank import NOW, synthetic_offers
from gpuscout.pricing.offer_checklist import counts_frame, summaries
from gpuscout.pricing.rank import RankOptions, rank, rank_page


def cpu_ms(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offers", type=int, default=21000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    frame = synthetic_offers(args.offers)
    print(f"{frame.height} offers; median CPU ms of {args.repeat} runs")
    per_snapshot = cpu_ms(lambda: counts_frame(frame), args.repeat)
    print(f"every offer's summary, once per snapshot: {per_snapshot:.1f} ms")
    counts = counts_frame(frame)
    print(f"{'page':>5} {'rank':>8} {'page summaries':>15} {'summaries':>10}")
    for limit in (20, 500):
        options = RankOptions(now=NOW, limit=limit)
        page = rank_page(frame, options=options)
        ranking = cpu_ms(lambda o=options: rank(frame, options=o), args.repeat)
        fetched = cpu_ms(lambda p=page: counts[p.offer_rows].rows(named=True), args.repeat)
        vectorised = cpu_ms(lambda p=page: summaries(frame, p.rows), args.repeat)
        print(f"{limit:>5} {ranking:>8.1f} {fetched:>15.2f} {vectorised:>10.1f}")


if __name__ == "__main__":
    main()
