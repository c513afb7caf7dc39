"""Availability shares from stored snapshots: counted by hand over small histories."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from gpuscout.db.availability import availability, stock_of
from gpuscout.db.models import OfferStock
from gpuscout.db.retention import prune
from gpuscout.db.snapshots import store_snapshot

from .factories import at, failed, offer, ok


def store(engine: Engine, hour: float, *runs) -> None:
    when = at(hour)
    store_snapshot(engine, runs, started_at=when, finished_at=when + timedelta(minutes=1))


def shares(engine: Engine, hour: float, **kwargs) -> dict[tuple[str, int], tuple]:
    with engine.connect() as c:
        frame = availability(c, at(hour), **kwargs)
    return {
        (r["offer_key"].split("|")[1], r["days"]): (
            r["snapshots"],
            r["available_snapshots"],
            r["share"],
            r["mean_count"],
        )
        for r in frame.iter_rows(named=True)
    }


def test_listed_offers_are_available_unless_stated_otherwise() -> None:
    assert stock_of(None, None) == (True, None)
    assert stock_of(True, 3) == (True, 3)
    assert stock_of(False, None) == (False, None)
    assert stock_of(None, 0) == (False, 0)


def test_share_counts_the_providers_successful_snapshots(engine: Engine) -> None:
    a = offer("alpha", "a", available_count=2)
    b = offer("alpha", "b")
    # hour 0: a (2) and b; hour 1: a sold out, b; hour 2: alpha failed (counts neither
    # way); hour 3: a (4), b gone; hour 4: a (4) and b back
    store(engine, 0, ok("alpha", [a, b], at(0)))
    store(engine, 1, ok("alpha", [a.model_copy(update={"available_count": 0}), b], at(1)))
    store(engine, 2, failed("alpha", at(2)))
    store(engine, 3, ok("alpha", [a.model_copy(update={"available_count": 4})], at(3)))
    store(engine, 4, ok("alpha", [a.model_copy(update={"available_count": 4}), b], at(4)))
    got = shares(engine, 5)
    # 4 successful snapshots; a available in 3 of them with counts 2, 4, 4
    assert got[("a", 7)] == (4, 3, 0.75, pytest.approx(10 / 3))
    assert got[("b", 7)] == (4, 3, 0.75, None)  # listed at hours 0, 1 and 4
    assert got[("a", 30)] == got[("a", 7)]


def test_a_new_offer_counts_from_when_it_was_first_listed(engine: Engine) -> None:
    store(engine, 0, ok("alpha", [offer("alpha", "a")], at(0)))
    store(engine, 1, ok("alpha", [offer("alpha", "a"), offer("alpha", "new")], at(1)))
    store(engine, 2, ok("alpha", [offer("alpha", "a"), offer("alpha", "new")], at(2)))
    got = shares(engine, 3, keys=None)
    assert got[("new", 7)][:3] == (2, 2, 1.0)
    assert got[("a", 7)][:3] == (3, 3, 1.0)


def test_windows_keep_their_own_snapshots(engine: Engine) -> None:
    a = offer("alpha", "a")
    sold_out = a.model_copy(update={"available_now": False})
    store(engine, -24 * 20, ok("alpha", [sold_out], at(-24 * 20)))  # 20 days ago: sold out
    store(engine, 0, ok("alpha", [a], at(0)))
    store(engine, 1, ok("alpha", [a], at(1)))
    got = shares(engine, 2)
    assert got[("a", 7)][:3] == (2, 2, 1.0)
    assert got[("a", 30)][:3] == (3, 2, pytest.approx(2 / 3))


def test_another_providers_snapshots_do_not_count(engine: Engine) -> None:
    store(engine, 0, ok("alpha", [offer("alpha", "a")], at(0)), ok("beta", [offer("beta", "b")]))
    store(engine, 1, ok("beta", [offer("beta", "b")], at(1)))  # alpha not asked
    got = shares(engine, 2)
    assert got[("a", 7)][:3] == (1, 1, 1.0)
    assert got[("b", 7)][:3] == (2, 2, 1.0)


def test_an_identical_snapshot_keeps_the_stock_and_counts(engine: Engine) -> None:
    a = offer("alpha", "a", available_count=1)
    for hour in range(3):
        store(engine, hour, ok("alpha", [a], at(hour)))
    with engine.connect() as c:
        rows = c.execute(sa.select(sa.func.count()).select_from(OfferStock.__table__)).scalar()
    assert rows == 1  # change-only
    assert shares(engine, 3)[("a", 7)] == (3, 3, 1.0, 1.0)


def test_stock_of_offers_stored_before_stock_was_recorded(engine: Engine) -> None:
    a = offer("alpha", "a")
    store(engine, 0, ok("alpha", [a], at(0)))
    with engine.begin() as c:  # as a database upgraded with offers already stored
        c.execute(sa.delete(OfferStock.__table__))
    store(engine, 1, ok("alpha", [a], at(1)))  # identical: the stock is recorded anyway
    assert shares(engine, 2)[("a", 7)][:3] == (1, 1, 1.0)


def test_keys_select_offers_and_no_snapshot_is_no_share(engine: Engine) -> None:
    assert shares(engine, 0) == {}
    store(engine, 0, ok("alpha", [offer("alpha", "a"), offer("alpha", "b")], at(0)))
    key = offer("alpha", "a").key
    assert set(shares(engine, 1, keys=[key])) == {("a", 7), ("a", 30)}


def test_retention_prunes_closed_stock_rows(engine: Engine) -> None:
    a = offer("alpha", "a")
    store(engine, 0, ok("alpha", [a.model_copy(update={"available_now": False})], at(0)))
    store(engine, 1, ok("alpha", [a], at(1)))
    prune(engine, now=at(24 * 10), snapshots_days=0, history_days=5)
    with engine.connect() as c:
        left = c.execute(sa.select(OfferStock.available)).scalars().all()
    assert left == [True]  # the closed sold-out row went, the open one stays
