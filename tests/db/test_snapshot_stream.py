"""``store_snapshot`` streams its runs: it takes each from the iterator once the one before
is stored, writes a run larger than a chunk in chunks, and commits once at the end, so a
failure anywhere (the iterator's too) leaves the previous state whole."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from gpuscout.adapters.run import ProviderRun, RunStatus
from gpuscout.db import snapshots
from gpuscout.db.snapshots import store_snapshot

from .factories import T0, at, counts, current, offer, ok


def _store(engine: Engine, runs, when=T0):
    return store_snapshot(engine, runs, started_at=when, finished_at=when + timedelta(minutes=1))


def _offers(provider: str, n: int, price: str = "2.00"):
    return [offer(provider, f"o{i}", price, vcpus=float(i + 1)) for i in range(n)]


class _Offers(list):  # type: ignore[type-arg]
    """A list that can be referred to weakly."""


def test_each_run_is_let_go_before_the_next_is_asked_for(engine: Engine) -> None:
    alive: list[bool] = []

    def runs() -> Iterator[ProviderRun]:
        offers = _Offers(_offers("alpha", 3))
        gone = weakref.ref(offers)
        yield ProviderRun("alpha", RunStatus.OK, T0, 0.5, offers=offers)
        del offers
        alive.append(gone() is not None)
        yield ok("beta", _offers("beta", 2))

    summary = _store(engine, runs())
    assert alive == [False]
    assert [(c.provider, c.offer_count) for c in summary.providers] == [("alpha", 3), ("beta", 2)]
    assert current(engine).frame.height == 5


def test_a_run_larger_than_a_chunk_is_written_in_chunks(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "CHUNK", 4)
    _store(engine, [ok("alpha", _offers("alpha", 10))])
    summary = _store(engine, [ok("alpha", _offers("alpha", 9, "2.50"), at(1))], when=at(1))
    (change,) = summary.providers
    assert (change.offer_count, change.offers_removed, change.prices_changed) == (9, 1, 9)
    assert (change.history_added, change.history_closed) == (9, 10)
    frame = current(engine, now=at(1)).frame
    assert frame.height == 9 and set(frame["usd_per_hour"]) == {2.5}


def test_an_iterator_that_fails_midway_leaves_the_previous_state(engine: Engine) -> None:
    _store(engine, [ok("alpha", _offers("alpha", 3))])
    before = counts(engine)

    def runs() -> Iterator[ProviderRun]:
        yield ok("alpha", _offers("alpha", 2, "9.00"), at(1))
        raise RuntimeError("the fetch broke")

    with pytest.raises(RuntimeError, match="the fetch broke"):
        _store(engine, runs(), when=at(1))
    assert counts(engine) == before
    assert set(current(engine).frame["usd_per_hour"]) == {2.0}


def test_a_provider_twice_in_an_iterator_is_refused_and_nothing_is_stored(
    engine: Engine,
) -> None:
    runs = iter([ok("alpha", _offers("alpha", 1)), ok("alpha", _offers("alpha", 2))])
    with pytest.raises(ValueError, match="alpha: two runs in one snapshot"):
        _store(engine, runs)
    assert counts(engine) == (0, 0, 0)
