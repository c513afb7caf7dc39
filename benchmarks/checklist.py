"""Benchmark the checklist an answer carries: its cost beside the ranking it decorates.

    uv run python benchmarks/checklist.py [--offers 21000] [--repeat 9]

On a synthetic frame (:func:`benchmarks.rank.synthetic_offers`), for a page of 20 and of
500 offers: the ranking, the checklist summaries of the page's rows as ``GET /v1/offers``
computes them (:func:`service.api.answers.checklist_counts`: find the rows in the frame,
run every item's filter, count), and the vectorised summaries ``gpuscout offers`` and the
digest use. Medians of CPU time (all threads), steadier than wall time on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from benchmarks.rank import NOW, synthetic_offers
from pricing.offer_checklist import summaries
from pricing.rank import RankOptions, rank
from service.api.answers import checklist_counts


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
    print(f"{'page':>5} {'rank':>8} {'checklist (API)':>16} {'summaries':>10}")
    for limit in (20, 500):
        options = RankOptions(now=NOW, limit=limit)
        ranked = rank(frame, options=options)
        ranking = cpu_ms(lambda o=options: rank(frame, options=o), args.repeat)
        api = cpu_ms(lambda r=ranked: checklist_counts(frame, r), args.repeat)
        vectorised = cpu_ms(lambda r=ranked: summaries(frame, r), args.repeat)
        print(f"{limit:>5} {ranking:>8.1f} {api:>16.1f} {vectorised:>10.1f}")


if __name__ == "__main__":
    main()
