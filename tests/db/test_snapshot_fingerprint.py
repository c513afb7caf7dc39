"""An identical run is told by one aggregate (``db.snapshots._Fingerprint``); any other runs
the per-offer comparison. Both on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from gpuscout.db import snapshots
from gpuscout.db.snapshots import _Encoded, _Fingerprint, store_snapshot

from .factories import T0, at, current, offer, ok


def store(engine: Engine, run, when=T0):
    return store_snapshot(engine, [run], started_at=when, finished_at=when + timedelta(minutes=1))


def _offers(n: int = 40):
    # enough records that their hashes take both signs, and so both halves' sums carry
    return [offer(offer_id=f"o{i}", price=f"{i + 1}.5", vcpus=float(i + 1)) for i in range(n)]


def test_the_stored_fingerprint_is_the_runs_computed_in_python(engine: Engine) -> None:
    run = ok("alpha", _offers())
    store(engine, run)
    encoded = _Encoded(run)
    assert {h < 0 for h in encoded.record_hashes} == {True, False}
    with engine.connect() as connection:
        stored = _Fingerprint.stored(connection, "alpha")
        assert stored == encoded.fingerprint
        assert _Fingerprint.stored(connection, "nobody") == _Fingerprint(0, 0, 0, 0)
    assert encoded.same_as(stored)


def test_an_identical_run_skips_the_per_offer_comparison(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store(engine, ok("alpha", _offers()))
    compared = []
    per_offer = snapshots._store_offers
    monkeypatch.setattr(
        snapshots, "_store_offers", lambda *a, **k: compared.append(1) or per_offer(*a, **k)
    )
    summary = store(engine, ok("alpha", _offers(), at(1)), when=at(1))
    assert compared == []
    (change,) = summary.providers
    assert (change.offer_count, change.offers_updated, change.history_added) == (40, 0, 0)
    assert set(current(engine).frame["fetched_at"]) == {at(1)}


def _own_time(run):
    run.offers[-1] = run.offers[-1].model_copy(update={"fetched_at": at(-1)})


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda r: r.offers.__setitem__(-1, offer(offer_id="o39", vcpus=9.0)), id="field"
        ),
        pytest.param(lambda r: r.offers.__setitem__(-1, offer(offer_id="new")), id="swapped"),
        pytest.param(lambda r: r.offers.append(r.offers[0]), id="repeated-key"),
        pytest.param(_own_time, id="own-time"),
    ],
)
def test_a_run_that_differs_in_one_offer_is_compared_offer_by_offer(engine: Engine, change) -> None:
    store(engine, ok("alpha", _offers()))
    run = ok("alpha", _offers(), at(1))
    change(run)
    with engine.connect() as connection:
        assert not _Encoded(run).same_as(_Fingerprint.stored(connection, "alpha"))
    (stored,) = store(engine, run, when=at(1)).providers
    assert stored.offer_count == len({o.key for o in run.offers})
    frame = current(engine).frame
    assert sorted(frame["offer_id"]) == sorted({o.offer_id for o in run.offers})
    assert frame["fetched_at"].to_list().count(at(-1)) == (change is _own_time)
