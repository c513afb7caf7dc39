"""The plausibility guard judges a jump both ways against a rolling baseline and accepts a
jump that repeats: a wrong answer cannot lock itself in, a real change is not frozen."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from gpuscout.adapters.schema import Offer
from gpuscout.db.guard import ACCEPTED_PREFIX, SUSPECT_PREFIX, OfferGuard, suspect_count
from gpuscout.db.snapshots import store_snapshot
from tests.db.factories import at, current, offer, ok

GUARD = OfferGuard()  # the defaults: accept_after=3, baseline of the last 5 accepted runs


def _offers(n: int) -> list[Offer]:
    return [offer("alpha", offer_id=f"o{i}") for i in range(n)]


class History:
    """A provider's run history as the store keeps it, judged by :meth:`OfferGuard.judge`
    (the same reading of the history as ``db.snapshots._guard_history``, held in lists)."""

    def __init__(self, guard: OfferGuard, first: int) -> None:
        self.guard = guard
        self.rows: list[tuple[bool, str | None, int]] = [(True, None, first)]  # newest last

    def run(self, count: int) -> bool:
        """Judge one run of ``count`` offers; whether it was accepted."""
        baseline: list[int] = []
        suspects: list[int] = []
        leading = True
        for accepted, note, stored in reversed(self.rows):
            if leading and not accepted:
                suspects.append(suspect_count(note) or 0)
                continue
            leading = False
            if accepted:
                baseline.append(stored)
                if len(baseline) >= self.guard.baseline_runs or (note or "").startswith(
                    ACCEPTED_PREFIX
                ):
                    break
        stored_now = next(s for a, _n, s in reversed(self.rows) if a)
        error, note = self.guard.judge(
            offer_count=count,
            skipped=(),
            stored_count=stored_now,
            baseline=baseline,
            suspects=suspects,
        )
        self.rows.append((error is None, error or note, count))
        return error is None


def test_up_25000x_then_back_is_accepted_after_the_stated_runs() -> None:
    history = History(GUARD, 9)
    for _ in range(5):
        assert history.run(9)
    up = [history.run(225_000) for _ in range(GUARD.accept_after)]
    assert up == [False] * (GUARD.accept_after - 1) + [True]  # accepted on the 3rd
    assert (history.rows[-1][1] or "").startswith(ACCEPTED_PREFIX)
    assert "25,000x" in (history.rows[-1][1] or "")
    assert history.run(225_000)  # the new baseline
    back = [history.run(9) for _ in range(GUARD.accept_after)]
    assert back == [False] * (GUARD.accept_after - 1) + [True]
    assert history.run(9)


def test_one_wrong_jump_accepted_by_mistake_does_not_lock_in() -> None:
    """A count the guard let through once (within its rise factor) does not make the
    right count a suspect drop: the baseline is a median of several runs."""
    history = History(OfferGuard(rise_factor=30_000), 9)
    for _ in range(5):
        assert history.run(9)
    assert history.run(225_000)  # a lenient guard let the jump through
    assert history.run(9)  # and the right answer is not refused afterwards


def test_an_inconsistent_repeat_starts_the_count_again() -> None:
    history = History(GUARD, 100)
    assert not history.run(1_000)
    assert not history.run(5_000)  # another jump, not the same count
    assert not history.run(5_100)
    assert history.run(5_050)  # three within 10% of each other in a row


@pytest.mark.parametrize("accept_after", [1, 2, 4])
def test_the_number_of_runs_is_the_setting(accept_after: int) -> None:
    history = History(OfferGuard(accept_after=accept_after), 50)
    runs = [history.run(500) for _ in range(accept_after)]
    assert runs == [False] * (accept_after - 1) + [True]


def test_the_store_applies_it_and_records_the_decision(engine: Engine) -> None:
    """On the real store: 10 offers, then a jump to 400 three times: refused twice (the
    last good offers kept), accepted the third time with the decision as the provider's
    note; then back to 10 likewise."""
    hour = 0

    def snapshot(n: int) -> tuple[bool, str | None]:
        nonlocal hour
        hour += 1
        when = at(hour)
        summary = store_snapshot(
            engine,
            [ok("alpha", _offers(n), when)],
            started_at=when,
            finished_at=when + timedelta(minutes=1),
        )
        (change,) = summary.providers
        state = current(engine, now=when)
        assert state.providers["alpha"].error == change.error
        return not change.guarded, change.error

    for _ in range(3):
        assert snapshot(10) == (True, None)
    first, second = snapshot(400), snapshot(400)
    assert not first[0] and not second[0]
    assert (first[1] or "").startswith(f"{SUSPECT_PREFIX}400 offers, rose from a baseline of 10")
    assert current(engine, now=at(hour)).frame.height == 10  # last good offers kept
    accepted, note = snapshot(400)
    assert accepted and (note or "").startswith(ACCEPTED_PREFIX)
    assert current(engine, now=at(hour)).frame.height == 400
    assert snapshot(400) == (True, None)
    back = [snapshot(10)[0] for _ in range(3)]
    assert back == [False, False, True]
