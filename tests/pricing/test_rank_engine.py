"""The engine rank collects with and the optimisations it plans with (pricing.rank.engine_for
and optimizations_for, chosen by measurement) answer exactly as the others do, at every
frame size, on both shapes of the chain."""

from __future__ import annotations

import importlib
import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pricing import Job, RankOptions, Requirement, rank
from pricing.rank import (
    STREAMING_MIN_ROWS,
    SUBEXPRESSIONS_MIN_ROWS,
    engine_for,
    optimizations_for,
    rank_plan,
)

from .factories import NOW
from .test_rank import _random_frame

rank_module = importlib.import_module("pricing.rank")


def test_the_engine_follows_the_measured_rule() -> None:
    """Streaming from STREAMING_MIN_ROWS rows when the requirement names no GPU model (most
    rows qualify), in memory otherwise (see STREAMING_MIN_ROWS's figures)."""
    small = pl.DataFrame({"x": [1]})
    large = pl.DataFrame({"x": pl.int_range(0, STREAMING_MIN_ROWS, eager=True)})
    h100 = Requirement(gpus=("H100",))
    assert engine_for(small) == engine_for(small, h100) == "in-memory"
    assert engine_for(large) == engine_for(large, Requirement(min_gpus=8)) == "streaming"
    assert engine_for(large, h100) == "in-memory"


def test_common_subexpressions_are_eliminated_only_where_most_of_a_large_frame_qualifies() -> None:
    """Planned without common-subexpression elimination or expression simplification below
    SUBEXPRESSIONS_MIN_ROWS rows or when the requirement names a GPU model (few rows
    qualify), with both otherwise; never with common-subplan elimination (the chain caches
    what it shares)."""
    small = pl.DataFrame({"x": [1]})
    large = pl.DataFrame({"x": pl.int_range(0, SUBEXPRESSIONS_MIN_ROWS, eager=True)})
    h100 = Requirement(gpus=("H100",))

    def eliminates(frame: pl.DataFrame, requirement: Requirement | None = None) -> bool:
        flags = optimizations_for(frame, requirement)
        assert flags.comm_subexpr_elim == flags.simplify_expression
        assert not flags.comm_subplan_elim
        return flags.comm_subexpr_elim

    assert not eliminates(small) and not eliminates(small, h100) and not eliminates(large, h100)
    assert eliminates(large) and eliminates(large, Requirement(min_gpus=8))


@pytest.mark.parametrize("large", [False, True], ids=["cached", "costed-again"])
def test_either_engine_with_or_without_common_subexpressions_gives_the_same_answer(
    large: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What rank collects (in memory, no common-subexpression elimination on these small
    frames) is what the streaming engine and every optimisation give."""
    if large:
        monkeypatch.setattr(rank_module, "COSTED_AGAIN_MIN_ROWS", 0)
    rng = random.Random(5)
    for _ in range(10):
        frame = _random_frame(rng)
        job = Job.for_hours(rng.choice((1, 100)), gpus=rng.choice((None, 8)))
        options = RankOptions(limit=rng.choice((None, 1, 3)), now=NOW)
        ranked = rank(frame, job=job, options=options)
        assert not optimizations_for(frame).comm_subexpr_elim
        plan = rank_plan(frame, job=job, options=options)
        for engine in ("streaming", "in-memory"):
            every = plan.collect(engine=engine, optimizations=pl.QueryOptFlags())
            assert_frame_equal(ranked, every, check_exact=True)
