from __future__ import annotations

from sqlalchemy.engine import Engine

from gpuscout.db.history import offer_price_history
from gpuscout.db.retention import prune
from gpuscout.db.snapshots import store_snapshot

from .factories import at, counts, offer, ok


def build(engine: Engine) -> None:
    for day, price in ((0, "1"), (10, "2"), (20, "3")):
        when = at(days=day)
        store_snapshot(
            engine, [ok("alpha", [offer(price=price)], when)], started_at=when, finished_at=when
        )


def test_prune_drops_old_snapshots_and_old_closed_prices(engine: Engine) -> None:
    build(engine)
    assert counts(engine) == (3, 3, 3)
    result = prune(engine, now=at(days=20, hours=1), snapshots_days=15, history_days=5)
    assert (result.snapshots_deleted, result.history_deleted) == (1, 1)
    assert counts(engine) == (2, 2, 2)  # per-provider rows went with their snapshot
    points = offer_price_history(engine, offer().key)
    assert [(p.valid_from, p.valid_to) for p in points] == [
        (at(days=10), at(days=20)),
        (at(days=20), None),
    ]


def test_prune_keeps_open_prices_the_newest_snapshot_and_zero_means_forever(
    engine: Engine,
) -> None:
    build(engine)
    assert prune(engine, now=at(days=20), snapshots_days=0, history_days=0).snapshots_deleted == 0
    prune(engine, now=at(days=999), snapshots_days=1, history_days=1)
    assert counts(engine) == (1, 1, 1)  # the newest snapshot and the open price remain
