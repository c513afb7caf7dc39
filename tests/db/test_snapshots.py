from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa
from polars.testing import assert_frame_equal
from sqlalchemy.engine import Engine

from gpuscout.adapters.base import SkippedRecord
from gpuscout.adapters.collect import RunStatus
from gpuscout.adapters.schema import FxTable
from gpuscout.db import snapshots
from gpuscout.db.current import Outcome
from gpuscout.db.guard import SUSPECT_PREFIX, OfferGuard
from gpuscout.db.history import offer_price_history
from gpuscout.db.models import PriceHistory, Snapshot, SnapshotProvider
from gpuscout.db.snapshots import store_snapshot
from gpuscout.pricing.frame import offers_to_frame

from .factories import T0, at, current, failed, offer, ok, skipped


def store(engine: Engine, *runs, when=T0, fx=None):
    return store_snapshot(
        engine, runs, started_at=when, finished_at=when + timedelta(minutes=1), fx=fx
    )


def history_rows(engine: Engine) -> list[tuple]:
    h = PriceHistory.__table__.c
    with engine.connect() as c:
        return [
            tuple(r)
            for r in c.execute(
                sa.select(h.offer_key, h.usd_per_hour, h.valid_from, h.valid_to).order_by(
                    h.offer_key, h.valid_from
                )
            )
        ]


def count(engine: Engine, table) -> int:
    with engine.connect() as c:
        return c.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


def test_first_snapshot_stores_offers_history_and_outcomes(engine: Engine) -> None:
    run = ok("alpha", [offer(offer_id="a"), offer(offer_id="b", price="3.5")])
    run.skipped = [SkippedRecord("no GPU"), SkippedRecord("no price")]
    summary = store(engine, run, failed("beta"), skipped("gamma"))

    assert summary.offer_count == 2 and summary.history_added == 2
    assert summary.history_closed == 0
    by = {p.provider: p for p in summary.providers}
    assert by["alpha"].offers_added == 2 and by["beta"].status is RunStatus.ERROR
    assert by["beta"].offers_kept == 0  # nothing stored before: nothing to keep
    state = current(engine, now=at(1))
    assert state.frame["offer_id"].to_list() == ["a", "b"]
    # lossless round trip, fetched_at included: the frame the offers themselves give
    assert_frame_equal(state.frame, offers_to_frame(run.offers), check_exact=True)
    assert state.source == "database" and state.fx.as_of
    assert state.snapshot_id == summary.snapshot_id
    assert state.snapshot_at == T0 + timedelta(minutes=1)
    outcomes = {name: p.outcome for name, p in state.providers.items()}
    assert outcomes == {"alpha": Outcome.OK, "beta": Outcome.FAILED, "gamma": Outcome.SKIPPED}
    assert state.providers["beta"].error == "HTTP 503"
    assert state.providers["gamma"].error == "credential not set"
    with engine.connect() as c:
        rows = {
            r.provider: r
            for r in c.execute(sa.select(SnapshotProvider.__table__).order_by("provider"))
        }
        snap = c.execute(sa.select(Snapshot.__table__)).one()
    assert rows["alpha"].status == "ok" and rows["alpha"].offer_count == 2
    assert rows["alpha"].skipped_count == 2 and rows["alpha"].duration_s == 0.5
    assert rows["beta"].status == "error" and rows["beta"].error == "HTTP 503"
    assert rows["gamma"].status == "skipped" and rows["gamma"].offer_count == 0
    assert (snap.started_at, snap.finished_at) == (T0, T0 + timedelta(minutes=1))
    assert snap.history_added == 2


def test_unchanged_snapshot_adds_no_history(engine: Engine) -> None:
    offers = [offer(offer_id=f"o{i}", price=f"{i + 1}.25") for i in range(5)]
    store(engine, ok("alpha", offers))
    before = history_rows(engine)
    summary = store(engine, ok("alpha", offers, at(1)), when=at(1))
    assert summary.history_added == summary.history_closed == 0
    assert summary.providers[0].offers_updated == 0
    assert history_rows(engine) == before
    # the current offers carry the new fetch time
    assert set(current(engine).frame["fetched_at"]) == {at(1)}


def test_equal_price_spelled_differently_is_unchanged(engine: Engine) -> None:
    store(engine, ok("alpha", [offer(price="2.50")]))
    summary = store(engine, ok("alpha", [offer(price="2.5")], at(1)), when=at(1))
    assert summary.history_added == 0


def test_price_change_closes_old_row_and_opens_new(engine: Engine) -> None:
    store(engine, ok("alpha", [offer(offer_id="a", price="2.00"), offer(offer_id="b")]))
    summary = store(
        engine,
        ok("alpha", [offer(offer_id="a", price="1.80"), offer(offer_id="b")], at(1)),
        when=at(1),
    )
    assert (summary.history_added, summary.history_closed) == (1, 1)
    assert summary.providers[0].prices_changed == 1
    key = offer(offer_id="a").key
    points = offer_price_history(engine, key)
    assert [(p.usd_per_hour, p.valid_from, p.valid_to) for p in points] == [
        (Decimal("2.000000"), T0, at(1)),
        (Decimal("1.800000"), at(1), None),
    ]
    assert current(engine).frame["price_amount"][0] == Decimal("1.80")


def test_raw_price_fields_are_kept_exactly(engine: Engine) -> None:
    raw = offer(
        price="1234.567890123456789",
        price_currency="EUR",
        price_unit="month",
        price_basis="gpu",
        gpu_count=8,
        term="commit_1y",
    )
    store(engine, ok("alpha", [raw]))
    (point,) = offer_price_history(engine, raw.key)
    assert point.price_amount == Decimal("1234.567890123456789")
    assert (point.price_currency, point.price_unit, point.price_basis, point.term) == (
        "EUR",
        "month",
        "gpu",
        "commit_1y",
    )
    assert point.usd_per_hour == raw.usd_per_hour
    assert point.usd_per_gpu_hour == pytest.approx(float(raw.usd_per_hour) / 8)


def test_new_prices_convert_with_the_fx_table_in_use(engine: Engine) -> None:
    """USD figures are memoised per price; a new FX table (``gpuscout fx update``) must not
    reuse those of the old one, nor the old one those of the new."""
    store(engine, ok("alpha", [offer(offer_id="a", price="100", price_currency="EUR")]))
    half = FxTable(
        as_of="test", source="test", units_per_usd={"USD": Decimal(1), "EUR": Decimal(2)}
    )
    fresh = offer(offer_id="b", price="100", price_currency="EUR")
    store(engine, ok("alpha", [fresh]), when=at(1), fx=half)
    (point,) = offer_price_history(engine, fresh.key)
    assert point.usd_per_hour == Decimal("50.000000")
    third = offer(offer_id="c", price="100", price_currency="EUR")
    store(engine, ok("alpha", [fresh, third]), when=at(2))  # the shipped table again
    (point,) = offer_price_history(engine, third.key)
    assert point.usd_per_hour == third.usd_per_hour != Decimal("50.000000")


def test_offer_that_disappears_is_closed_and_reopens_when_back(engine: Engine) -> None:
    a, b = offer(offer_id="a"), offer(offer_id="b")
    store(engine, ok("alpha", [a, b]))
    gone = store(engine, ok("alpha", [a], at(1)), when=at(1))
    assert (gone.history_added, gone.history_closed) == (0, 1)
    assert gone.providers[0].offers_removed == 1
    assert current(engine).frame["offer_id"].to_list() == ["a"]
    back = store(engine, ok("alpha", [a, b], at(2)), when=at(2))
    assert (back.history_added, back.history_closed) == (1, 0)
    assert [(p.valid_from, p.valid_to) for p in offer_price_history(engine, b.key)] == [
        (T0, at(1)),
        (at(2), None),
    ]


def test_failing_provider_keeps_its_last_good_offers_marked_stale(engine: Engine) -> None:
    store(engine, ok("alpha", [offer("alpha")]), ok("beta", [offer("beta")]))
    moved = offer("beta", offer_id="o2")
    summary = store(engine, failed("alpha", at(3)), ok("beta", [moved], at(3)), when=at(3))
    assert summary.history_closed == 1  # beta's first offer vanished; alpha's stays open
    assert {p.provider: p.offers_kept for p in summary.providers} == {"alpha": 1, "beta": 0}

    state = current(engine, now=at(5))
    frame = state.frame
    assert list(zip(frame["provider"], frame["offer_id"], strict=True)) == [
        ("alpha", "o1"),
        ("beta", "o2"),
    ]
    alpha = state.providers["alpha"]
    assert alpha.stale and alpha.outcome is Outcome.STALE
    assert alpha.last_status is RunStatus.ERROR and alpha.error == "HTTP 503"
    assert (alpha.fetched_at, alpha.last_attempt_at) == (T0, at(3))
    assert alpha.offer_count == 1 and alpha.price_age_s(at(5)) == 5 * 3600
    assert state.stale_providers == ["alpha"] and state.failed_providers == ["alpha"]
    assert not state.providers["beta"].stale
    assert state.note is not None and "alpha (5.0 h old)" in state.note

    store(engine, skipped("alpha", at(4)), when=at(4))  # skipped keeps them too
    state = current(engine)
    assert state.frame.height == 2 and state.providers["alpha"].outcome is Outcome.STALE
    assert state.failed_providers == []  # skipped now, not failed
    # a later success replaces them and clears the flag
    store(engine, ok("alpha", [offer("alpha", price="9")], at(6)), when=at(6))
    state = current(engine, now=at(6))
    assert not state.providers["alpha"].stale and state.frame["price_amount"][0] == 9


def test_per_offer_fetch_time_survives(engine: Engine) -> None:
    early = offer(offer_id="x", fetched_at=at(-1))
    run = ok("alpha", [offer(offer_id="y")])
    run.offers.append(early)
    store(engine, run)
    frame = current(engine).frame
    assert dict(zip(frame["offer_id"], frame["fetched_at"], strict=True)) == {"x": at(-1), "y": T0}


def test_crash_mid_write_rolls_back_and_next_run_succeeds(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store(engine, ok("alpha", [offer(offer_id="a"), offer(offer_id="b")]))
    before = (current(engine, now=at(1)).frame, history_rows(engine))

    def boom(*args, **kwargs):
        raise RuntimeError("killed mid-write")

    # history rows are already closed when the current offers are written: fail there
    monkeypatch.setattr(snapshots, "_bulk_insert", boom)
    with pytest.raises(RuntimeError, match="killed mid-write"):
        store(engine, ok("alpha", [offer(offer_id="a", price="1")], at(1)), when=at(1))
    after = (current(engine, now=at(1)).frame, history_rows(engine))
    assert_frame_equal(after[0], before[0])
    assert after[1] == before[1]
    assert count(engine, Snapshot.__table__) == 1

    monkeypatch.undo()
    summary = store(engine, ok("alpha", [offer(offer_id="a", price="1")], at(2)), when=at(2))
    assert (summary.history_added, summary.history_closed) == (1, 2)
    assert count(engine, Snapshot.__table__) == 2


def test_repeated_key_keeps_the_last_offer(engine: Engine) -> None:
    store(engine, ok("alpha", [offer(price="2"), offer(price="3")]))
    (only,) = current(engine).frame["price_amount"]
    assert only == 3


def test_session_target_joins_the_callers_transaction(engine: Engine) -> None:
    from sqlalchemy.orm import Session

    with Session(engine) as session:
        store(session, ok("alpha", [offer()]))
        session.rollback()
    assert count(engine, Snapshot.__table__) == 0
    with Session(engine) as session:
        store(session, ok("alpha", [offer()]))
        session.commit()
    assert count(engine, Snapshot.__table__) == 1


def test_a_key_stored_by_another_run_is_not_taken_over(engine: Engine) -> None:
    # a price-sheet adapter ("sheet") emits offers in the name of provider "alpha"
    store(engine, ok("sheet", [offer("alpha", "x", "5")]))
    summary = store(engine, ok("alpha", [offer("alpha", "x", "4"), offer("alpha", "y")]))
    assert summary.providers[0].offers_added == 1
    frame = current(engine).frame
    assert sorted(zip(frame["offer_id"], frame["price_amount"], strict=True)) == [
        ("x", Decimal("5")),
        ("y", Decimal("2.00")),
    ]


# --- the plausibility guard (db/guard.py): a suspect ok run keeps the last good offers ----


def _many(provider: str, n: int, price: str = "2.00") -> list:
    return [offer(provider, offer_id=f"o{i}", price=price) for i in range(n)]


def _suspect(engine: Engine, run, when=at(1)):
    summary = store(engine, run, when=when)
    (change,) = summary.providers
    state = current(engine, now=when)
    return change, state.providers[run.provider], state


@pytest.mark.parametrize("answer", ["empty list", "all records rejected"])
def test_an_ok_run_without_offers_keeps_the_last_good_ones(engine: Engine, answer: str) -> None:
    """An empty list, or records all rejected (prices of 0...), is not "the provider has
    nothing": stored as a failed run naming the guard, the stored offers stay (stale)."""
    store(engine, ok("alpha", _many("alpha", 3)))
    run = ok("alpha", [], at(1))
    if answer == "all records rejected":
        run.skipped = [SkippedRecord("no positive price (0)", f"alpha:o{i}") for i in range(3)]
    change, status, state = _suspect(engine, run)
    assert change.guarded and change.status is RunStatus.ERROR and change.offers_kept == 3
    assert change.error is not None and change.error.startswith(SUSPECT_PREFIX)
    assert "0 offers (3 stored)" in change.error
    if answer == "all records rejected":
        assert change.error.endswith("; skipped: 3 x no positive price (0)")
    assert state.frame.height == 3 and status.stale
    assert status.last_status is RunStatus.ERROR and status.error == change.error
    assert status.fetched_at == T0 and status.offer_count == 3
    assert history_rows(engine)[0][3] is None  # the price rows stay open
    with engine.connect() as c:
        row = c.execute(
            sa.select(SnapshotProvider.__table__.c.status, SnapshotProvider.__table__.c.error)
            .order_by(SnapshotProvider.__table__.c.snapshot_id.desc())
            .limit(1)
        ).one()
    assert tuple(row) == ("error", change.error)


def test_a_large_drop_is_suspect_a_small_one_is_not(engine: Engine) -> None:
    store(engine, ok("alpha", _many("alpha", 100)))
    change, status, state = _suspect(engine, ok("alpha", _many("alpha", 40), at(1)))
    assert change.guarded and state.frame.height == 100 and status.stale
    assert "40 offers, fell from a baseline of 100 (-60%" in (change.error or "")
    # a fall by half of the baseline, or by no more than min_count offers, is taken
    change, status, state = _suspect(engine, ok("alpha", _many("alpha", 50), at(2)), when=at(2))
    assert not change.guarded and change.status is RunStatus.OK and state.frame.height == 50
    # the baseline is now the median of the accepted runs, 75 (of 100 and 50)
    change, _, state = _suspect(engine, ok("alpha", _many("alpha", 55), at(3)), when=at(3))
    assert not change.guarded and state.frame.height == 55  # 20 fewer: not more than 20
    change, _, state = _suspect(engine, ok("alpha", _many("alpha", 20), at(4)), when=at(4))
    assert change.guarded and "fell from a baseline of 55" in (change.error or "")


def test_mostly_skipped_records_are_suspect_even_for_a_new_provider(engine: Engine) -> None:
    run = ok("alpha", _many("alpha", 2), at(1))
    run.skipped = [SkippedRecord("bad price: 'n/a'", f"alpha:x{i}") for i in range(30)]
    change, status, state = _suspect(engine, run)
    assert change.guarded and state.frame.is_empty()
    assert "30 of 32 records skipped (94%; guard: more than 90%)" in (change.error or "")
    assert status.last_status is RunStatus.ERROR and status.fetched_at is None


def test_the_thresholds_are_the_callers(engine: Engine) -> None:
    store(engine, ok("alpha", _many("alpha", 100)))
    lenient = OfferGuard(drop_share=1.0)
    summary = store_snapshot(
        engine,
        [ok("alpha", _many("alpha", 5), at(1))],
        started_at=at(1),
        finished_at=at(1),
        guard=lenient,
    )
    assert not summary.providers[0].guarded
    assert current(engine).frame.height == 5
