"""Benchmark the bulk reads of stored offers on SQLite, alone and beside a thread running
Python (as an API start's imports, or its requests while the scheduler in the same process
takes a snapshot, are).

    uv run python benchmarks/bulk_read.py [--offers 100000]

The sqlite3 module gives up the GIL around every row it steps to and takes it back after;
beside a busy thread each taking can wait the interpreter's switch interval (5 ms). Timed:
the driver's own ``fetchall`` of the current offers' provider, record and fetch time (beside
the busy thread on the first 2,000 rows only, and scaled: the whole read takes minutes);
:func:`db.engine.driver_rows`, which reads them as one JSON array SQLite makes (one step);
and the frame's own read, :func:`db.current._sqlite_records` (the records joined by SQLite
into the newline-delimited JSON polars parses). Then the reads of the price history the API
serves (SQLAlchemy queries with typed columns, reals among them): the rows of the daily
price index of H100 on-demand (``/v1/history/index``, the ``/index`` page) read by
SQLAlchemy row by row, and by :func:`db.engine.select_rows` (one step), and
:func:`db.history.daily_index` over 30 days, as the API calls it. Each is the median of
three.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STATEMENT = "SELECT provider, record, fetched_at FROM current_offer ORDER BY offer_key"
#: Rows the driver's own read takes beside the busy thread (the rest is scaled).
SAMPLE_ROWS = 2_000


def _median_s(read: Callable[[], Any], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        read()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


class Busy:
    """A thread running Python until stopped: the GIL always wanted."""

    def __enter__(self) -> Busy:
        self.stop = False
        self.thread = threading.Thread(target=self._spin)
        self.thread.start()
        return self

    def _spin(self) -> None:
        x = 0
        while not self.stop:
            for i in range(1000):
                x += i

    def __exit__(self, *exc: object) -> None:
        self.stop = True
        self.thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offers", type=int, default=100_000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import sqlalchemy as sa

    from benchmarks.api import store_offers
    from gpuscout.adapters.schema import RentalTerm
    from gpuscout.db.current import _sqlite_records
    from gpuscout.db.engine import driver_rows, make_engine, select_rows
    from gpuscout.db.history import daily_index, gpu_filter
    from gpuscout.db.models import PriceHistory

    with tempfile.TemporaryDirectory(prefix="gpuscout-bulk-read-") as tmp:
        engine = make_engine(store_offers(args.offers, Path(tmp)))
        with engine.connect() as connection:
            driver = connection.connection.driver_connection
            assert driver is not None
            rows = len(driver.execute(STATEMENT).fetchall())
            sampled = min(rows, SAMPLE_ROWS)
            sample = f"{STATEMENT} LIMIT {sampled}"
            reads: dict[str, tuple[Callable[[], Any], Callable[[], Any], float]] = {
                "driver's fetchall": (
                    lambda: driver.execute(STATEMENT).fetchall(),
                    lambda: driver.execute(sample).fetchall(),
                    rows / max(sampled, 1),
                ),
                "driver_rows (one JSON array)": (
                    lambda: driver_rows(connection, STATEMENT, ()),
                    lambda: driver_rows(connection, STATEMENT, ()),
                    1.0,
                ),
                "_sqlite_records (the frame's read)": (
                    lambda: _sqlite_records(connection, STATEMENT, ()),
                    lambda: _sqlite_records(connection, STATEMENT, ()),
                    1.0,
                ),
            }
            h = PriceHistory.__table__.c
            index = sa.select(
                h.offer_key, h.provider, h.usd_per_gpu_hour, h.valid_from, h.valid_to, h.origin
            ).where(gpu_filter("H100"), h.term == RentalTerm.ON_DEMAND.value)
            today = datetime.now(UTC).date()

            def month() -> Any:
                return daily_index(
                    connection, gpu="H100", start=today - timedelta(days=29), end=today
                )

            history = {
                "the index's rows, SQLAlchemy row by row": lambda: connection.execute(index).all(),
                "the index's rows, select_rows (one JSON array)": lambda: select_rows(
                    connection, index
                ),
                "daily_index, 30 days (the API's)": month,
            }
            index_rows = len(connection.execute(index).all())
            for name, (alone, beside, scale) in reads.items():
                alone_s = _median_s(alone)
                with Busy():
                    beside_s = _median_s(beside) * scale
                scaled = f" (scaled from {sampled:,} rows)" if scale != 1.0 else ""
                print(
                    f"{name}: {rows} rows alone {alone_s:.2f} s, beside a busy thread "
                    f"{beside_s:.2f} s{scaled}",
                    flush=True,
                )
            for name, read in history.items():
                alone_s = _median_s(read)
                with Busy():
                    beside_s = _median_s(read)
                print(
                    f"{name}: {index_rows} rows alone {alone_s:.3f} s, beside a busy thread "
                    f"{beside_s:.3f} s",
                    flush=True,
                )
        engine.dispose()


if __name__ == "__main__":
    main()
