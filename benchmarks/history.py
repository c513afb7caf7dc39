"""Benchmark: the history views over a growing synthetic price history, at 30 days, one
year and two years of history, for 10k and 100k offers, on SQLite and PostgreSQL.

    uv run python benchmarks/history.py [--offers 10000,100000] [--days 30,365,730]
                                        [--churn-per-hour 0.01] [--repeat 3]
                                        [--postgres URL] [--quick]

Each database starts with one snapshot of ``--offers`` synthetic offers
(:mod:`benchmarks.synthetic`) stored by ``store_snapshot``. The history then grows by
``--churn-per-hour`` of the offers repriced per hour (change-only rows, as the store writes
them), a week at a time: the week's price rows are written in bulk through the store's own
row builder and bulk insert (a binary COPY on PostgreSQL), and the rollups through
``update_rollups``, the function each snapshot calls (hour rows for the last week only, as
a snapshot keeps them). At each ``--days`` checkpoint the
history is what a database of that age holds, the script checks that the rollups give
the year's index the price rows give, and times, alternating between
the databases, the median of ``--repeat`` runs of:

* ``index 30d``: ``GET /v1/history/index?gpus=H100`` (``daily_index`` and its label)
* ``index 30d rows``: the same from the price rows valid in the window (what a view that
  leaves a provider out reads), for comparison
* ``/index page``: the same, the current spread and 7-day availability per provider
* ``index 365d``: a year's index view
* ``hourly 24h``: ``GET /v1/history/index?gpus=H100&interval=hour`` (the last 24 hours)
* ``digest week``: the digest's ``week_over_week``
* ``rollups 1 snap``: what a snapshot adds: ``update_rollups`` for its day (rolled back)

Targets (issue #54): at the last checkpoint, ``index 30d``, ``/index page`` and ``digest
week`` take at most 2x their time at the first; ``index 365d`` <= 200 ms. PostgreSQL is
taken from ``--postgres`` or ``GPUSCOUT_TEST_POSTGRES_URL`` (a schema of its own, dropped
afterwards). ``--quick`` is a tiny run for the smoke test.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.snapshot import postgres_schema  # noqa: E402
from benchmarks.synthetic import synthetic_offers  # noqa: E402
from gpuscout.adapters.collect import ProviderRun, RunStatus  # noqa: E402
from gpuscout.adapters.schema import Offer, default_fx  # noqa: E402
from gpuscout.db.current import load_current_offers  # noqa: E402
from gpuscout.db.engine import make_engine, sqlite_url  # noqa: E402
from gpuscout.db.history import (  # noqa: E402
    daily_index,
    hourly_index,
    index_label,
    week_over_week,
)
from gpuscout.db.migrate import upgrade  # noqa: E402
from gpuscout.db.models import PriceHistory  # noqa: E402
from gpuscout.db.rollups import HOURLY_DAYS, update_rollups  # noqa: E402
from gpuscout.db.snapshots import (  # noqa: E402
    HISTORY_COLUMNS,
    _bulk_insert,
    _Columns,
    store_snapshot,
)
from gpuscout.service.web.index_page import current_spread, stock_by_provider  # noqa: E402

T0 = datetime(2024, 1, 1, tzinfo=UTC)
GPU, TERM = "H100", "on_demand"
#: The repriced row's columns: the store's own, and when it closes.
COLUMNS = (*HISTORY_COLUMNS, "valid_to", "closed_snapshot_id")
#: Price moves, relative to the offer's first price (cents of a dollar per dollar).
FACTORS = [Decimal(100 + f) / 100 for f in range(-15, 16)]
VIEWS = (
    "index 30d",
    "index 30d rows",
    "/index page",
    "index 365d",
    "hourly 24h",
    "digest week",
    "rollups 1 snap",
)
TARGET_RATIO, TARGET_YEAR_S = 2.0, 0.2
_history = PriceHistory.__table__


class History:
    """One database whose price history grows to each checkpoint."""

    def __init__(self, label: str, url: str, offers: list[Offer], churn_per_hour: float) -> None:
        self.label, self.churn_per_hour = label, churn_per_hour
        upgrade(url)
        self.engine = make_engine(url)
        by: dict[str, list[Offer]] = {}
        for o in offers:
            by.setdefault(o.provider, []).append(o.model_copy(update={"fetched_at": T0}))
        runs = [ProviderRun(p, RunStatus.OK, T0, 1.0, offers=os_) for p, os_ in by.items()]
        store_snapshot(self.engine, runs, started_at=T0, finished_at=T0)
        with self.engine.connect() as c:
            first = c.execute(sa.select(*(_history.c[n] for n in HISTORY_COLUMNS))).all()
        self.first = [tuple(row) for row in first]  # each offer's first row, in key order
        self.rng = np.random.default_rng(3)
        self.until = T0
        self.frame = load_current_offers(self.engine, fx=default_fx(), now=T0).frame

    def grow(self, days: int) -> float:
        """Grow the history to ``days`` after T0; the seconds it took."""
        started = time.perf_counter()
        start, end = self.until, T0 + timedelta(days=days)
        span_s = (end - start).total_seconds()
        n = len(self.first)
        changes = int(n * self.churn_per_hour * span_s / 3600)
        who = self.rng.integers(0, n, changes)
        at = self.rng.uniform(0, span_s, changes)
        order = np.lexsort((at, who))
        who, at = who[order], at[order]
        same_next = np.append(who[1:] == who[:-1], False)
        closes = np.where(same_next, np.append(at[1:], np.inf), np.inf)
        factor = self.rng.integers(0, len(FACTORS), changes)
        with self.engine.begin() as c:
            columns = _Columns(c, default_fx())
            # the rows open at ``start`` close at their offer's first change of the span
            firsts = np.append(True, who[1:] != who[:-1]) if changes else np.array([], bool)
            closing = [
                (columns.time(start + timedelta(seconds=float(t))), self.first[i][0])
                for i, t in zip(who[firsts], at[firsts], strict=True)
            ]
            mark = "?" if c.dialect.paramstyle == "qmark" else "%s"
            driver = c.connection.driver_connection
            assert driver is not None
            cursor = driver.cursor()
            cursor.executemany(
                f"UPDATE price_history SET valid_to = {mark}, closed_snapshot_id = 0"
                f" WHERE offer_key = {mark} AND valid_to IS NULL",
                closing,
            )
            cursor.close()
            week = 7 * 86400.0
            for piece in np.arange(0, span_s, week):
                chosen = (at >= piece) & (at < piece + week)
                columns = _Columns(c, default_fx())  # its time cache lives for a week
                rows = [
                    self._row(columns, int(i), start, float(t), float(close), int(f))
                    for i, t, close, f in zip(
                        who[chosen], at[chosen], closes[chosen], factor[chosen], strict=True
                    )
                ]
                _bulk_insert(c, _history, COLUMNS, rows, columns)
                last = start + timedelta(seconds=min(piece + week, span_s) - 1e-6)
                # hour rows only for the last week: the ones a snapshot keeps
                kept = HOURLY_DAYS if piece + week >= span_s else 0
                update_rollups(
                    c,
                    first=start + timedelta(seconds=float(piece)),
                    last=last,
                    hourly_days=kept,
                )
        self.until = end
        if self.engine.dialect.name == "postgresql":
            # what autovacuum does to a table grown this much: without it the planner
            # reads the window's rows with a sequential scan of the history
            autocommit = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            with autocommit as c:
                c.exec_driver_sql("VACUUM ANALYZE price_history")
        return time.perf_counter() - started

    def _row(
        self, columns: Any, i: int, start: datetime, at_s: float, close_s: float, f: int
    ) -> tuple[Any, ...]:
        key, provider, model, gpus, term, region, country, amount, currency, unit, basis = (
            self.first[i][:11]
        )
        usd, per_gpu = self.first[i][11:13]
        factor = FACTORS[f]
        amount, usd = Decimal(amount) * factor, Decimal(usd) * factor
        sqlite = columns.sqlite
        valid_to = None if close_s == np.inf else start + timedelta(seconds=close_s)
        return (
            key,
            provider,
            model,
            gpus,
            term,
            region,
            country,
            str(amount) if sqlite else amount,
            currency,
            unit,
            basis,
            str(usd) if sqlite else usd,
            None if per_gpu is None else per_gpu * float(factor),
            hash((key, f)) >> 1,
            columns.time(start + timedelta(seconds=at_s)),
            0,
            "live",
            None if valid_to is None else columns.time(valid_to),
            None if valid_to is None else 0,
        )

    def rows(self) -> int:
        with self.engine.connect() as c:
            return int(c.execute(sa.select(sa.func.count()).select_from(_history)).scalar_one())

    def check(self) -> bool:
        """The year's index from the rollups is the one the price rows give, and has
        offers."""
        end = (self.until - timedelta(microseconds=1)).date()
        start = end - timedelta(days=364)
        rolled = daily_index(self.engine, gpu=GPU, start=start, end=end, term=TERM)
        rows = daily_index(self.engine, gpu=GPU, start=start, end=end, term=TERM, exclude=("-",))
        return rolled.equals(rows) and int(rolled["offers"][-1]) > 0

    def views(self) -> dict[str, Callable[[], object]]:
        now = self.until
        end = (now - timedelta(microseconds=1)).date()

        def index(days: int) -> object:
            start = end - timedelta(days=days - 1)
            frame = daily_index(self.engine, gpu=GPU, start=start, end=end, term=TERM)
            return frame, index_label(self.engine, frame, gpu=GPU, start=start, end=end)

        def page() -> object:
            spread = current_spread(self.frame, GPU, TERM)
            return index(30), spread, stock_by_provider(self.engine, self.frame, GPU, TERM, now)

        def hours(count: int) -> object:
            last = (now - timedelta(microseconds=1)).replace(minute=0, second=0, microsecond=0)
            first = last - timedelta(hours=count - 1)
            return hourly_index(self.engine, gpu=GPU, start=first, end=last, term=TERM)

        def one_snapshot() -> None:
            with self.engine.connect() as c, c.begin() as transaction:
                update_rollups(c, first=now - timedelta(minutes=1), last=now - timedelta(minutes=1))
                transaction.rollback()

        def scan(days: int) -> object:
            start = end - timedelta(days=days - 1)
            # a provider left out: the price rows valid in the window, not the rollups
            return daily_index(
                self.engine, gpu=GPU, start=start, end=end, term=TERM, exclude=("-",)
            )

        return {
            "index 30d": lambda: index(30),
            "index 30d rows": lambda: scan(30),
            "/index page": page,
            "index 365d": lambda: index(365),
            "hourly 24h": lambda: hours(24),
            "digest week": lambda: week_over_week(self.engine, until=now),
            "rollups 1 snap": one_snapshot,
        }


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def measure(dbs: list[History], repeat: int) -> dict[tuple[str, str], float]:
    """Each view on each database, alternating, ``repeat`` times: the median seconds."""
    seen: dict[tuple[str, str], list[float]] = {}
    views = {db.label: db.views() for db in dbs}
    for _ in range(repeat):
        for view in VIEWS:
            for db in dbs:
                seen.setdefault((db.label, view), []).append(timed(views[db.label][view]))
    return {key: statistics.median(times) for key, times in seen.items()}


def run(offers: int, days: list[int], churn: float, repeat: int, pg: str | None) -> bool:
    print(f"\n=== {offers} offers, {churn:.2%}/h repriced ===", flush=True)
    book = synthetic_offers(offers, seed=11, now=T0)
    met = True
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="gpuscout-history-"))
        urls = [("sqlite", sqlite_url(Path(tmp) / "history.db"))]
        if pg:
            urls.append(("postgres", stack.enter_context(postgres_schema(pg))))
        dbs = [History(label, url, book, churn) for label, url in urls]
        results: dict[int, dict[tuple[str, str], float]] = {}
        for day in days:
            for db in dbs:
                grew = db.grow(day)
                print(
                    f"{db.label:9} grown to {day} days in {grew:.1f} s: {db.rows():,} price rows",
                    flush=True,
                )
            for db in dbs:
                same = db.check()
                met &= same
                print(f"{db.label:9} at {day:4} days: {'rollups = rows' if same else 'DIFFER'}")
            results[day] = measure(dbs, repeat)
            for db in dbs:
                figures = "  ".join(
                    f"{view} {results[day][(db.label, view)] * 1000:.0f} ms" for view in VIEWS
                )
                print(f"{db.label:9} at {day:4} days: {figures}", flush=True)
        first, last = days[0], days[-1]
        for db in dbs:
            for view in ("index 30d", "/index page", "digest week"):
                ratio = results[last][(db.label, view)] / results[first][(db.label, view)]
                ok = ratio <= TARGET_RATIO
                met &= ok
                print(
                    f"{db.label:9} {view} at {last} / {first} days: {ratio:.2f}x"
                    f" (target <= {TARGET_RATIO}x) {'ok' if ok else 'MISSED'}"
                )
            year = results[last][(db.label, "index 365d")]
            ok = year <= TARGET_YEAR_S
            met &= ok
            print(
                f"{db.label:9} index 365d at {last} days: {year * 1000:.0f} ms"
                f" (target <= {TARGET_YEAR_S * 1000:.0f} ms) {'ok' if ok else 'MISSED'}"
            )
        for db in dbs:
            db.engine.dispose()
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offers", default="10000,100000")
    parser.add_argument("--days", default="30,365,730")
    parser.add_argument("--churn-per-hour", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("GPUSCOUT_TEST_POSTGRES_URL"))
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.offers, args.days, args.repeat = "300", "3,10,20", 1
    sizes = [int(x) for x in args.offers.split(",")]
    days = [int(x) for x in args.days.split(",")]
    if days != sorted(days) or days[0] < 1:
        raise SystemExit("--days: increasing day counts, from 1")
    met = all([run(n, days, args.churn_per_hour, args.repeat, args.postgres) for n in sizes])
    print("\ntargets met" if met else "\ntargets MISSED")


if __name__ == "__main__":
    main()
