"""The engine rank collects with and the optimisations it plans with (pricing.rank.engine_for and
optimizations_for, chosen by measurement) answer exactly as the others do, at every
frame size, on both shapes of the chain."""

from __future__ import annotations

import importlib
import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from gpuscout.pricing import Job, RankOptions, Requirement, offers_to_frame, rank
from gpuscout.pricing import expressions as ex
from gpuscout.pricing.model_rows import ByModel
from gpuscout.pricing.rank import (
    STREAMING_MIN_ROWS,
    SUBEXPRESSIONS_MIN_ROWS,
    engine_for,
    optimizations_for,
    rank_page,
    rank_plan,
    rows_read,
)

from .factories import NOW, make_offer
from .test_rank import _random_frame

rank_module = importlib.import_module("gpuscout.pricing.rank")


def test_the_engine_follows_the_measured_rule() -> None:
    """Streaming from STREAMING_MIN_ROWS rows when the requirement names no GPU model (most
    rows qualify), in memory otherwise (see STREAMING_MIN_ROWS's figures)."""
    small = pl.DataFrame({"x": [1]})
    large = pl.DataFrame({"x": pl.int_range(0, STREAMING_MIN_ROWS, eager=True)})
    h100 = Requirement(gpus=("H100",))
    assert engine_for(small) == engine_for(small, h100) == "in-memory"
    assert engine_for(large) == engine_for(large, Requirement(min_gpus=8)) == "streaming"
    assert engine_for(large, h100) == "in-memory"


def test_the_optimisations_follow_the_rows_a_ranking_reads() -> None:
    """Below SUBEXPRESSIONS_MIN_ROWS rows read, no common-subexpression or common-subplan
    elimination nor (but for a plan grouping each configuration's rows) expression
    simplification; from there, every optimisation when no GPU
    model is named, all but common-subexpression elimination when one is. The API's frame
    in runs of one model reads only the named models' runs."""
    small = pl.DataFrame({"x": [1]})
    large = pl.DataFrame({"x": pl.int_range(0, SUBEXPRESSIONS_MIN_ROWS, eager=True)})
    h100 = Requirement(gpus=("H100",))

    def flags(offers: pl.DataFrame | ByModel, requirement: Requirement | None = None) -> str:
        f = optimizations_for(offers, requirement)
        on = (f.comm_subexpr_elim, f.simplify_expression, f.comm_subplan_elim)
        return {(False, False, False): "few", (False, True, True): "named", (True,) * 3: "all"}[on]

    assert flags(small) == flags(small, h100) == "few"
    assert flags(large) == flags(large, Requirement(min_gpus=8)) == "all"
    assert flags(large, h100) == "named"
    # a frame of SUBEXPRESSIONS_MIN_ROWS offers, a few of them H100s, in runs by model
    h100s = make_offer(offer_id="h", gpu_model="H100-SXM5-80GB")
    others = [make_offer(offer_id=f"l{i}", gpu_model="L4") for i in range(3)]
    frame = offers_to_frame([h100s, *others])
    many = pl.concat([frame] * (SUBEXPRESSIONS_MIN_ROWS // 4 + 1)).with_columns(
        config_id=pl.int_range(pl.len(), dtype=pl.UInt32)
    )
    by_model = ByModel.of(many)
    assert rows_read(by_model, h100) == many.height // 4
    assert rows_read(by_model) == rows_read(many, h100) == many.height
    assert flags(by_model, h100) == "few" and flags(by_model) == "all"
    # a plan that groups each configuration's rows (another sort, or no limit) keeps the
    # simplification that makes its sort_by().first() a minimum
    for options in (RankOptions(sort="job_cost_usd"), RankOptions(limit=None)):
        grouped = optimizations_for(small, h100, options)
        assert grouped.simplify_expression and not grouped.comm_subexpr_elim
        assert not grouped.comm_subplan_elim
    assert not optimizations_for(small, h100, RankOptions()).simplify_expression


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


def test_a_requirement_without_a_constraint_plans_no_filter() -> None:
    """A requirement without a constraint qualifies by :data:`~pricing.expressions.ALWAYS`,
    which :func:`~pricing.expressions.where` plans no filter for (see the next test)."""
    lazy = pl.LazyFrame({"x": [1]})
    assert ex.qualifies(Requirement(), NOW) is ex.ALWAYS
    assert ex.where(lazy, ex.ALWAYS) is lazy
    assert ex.where(lazy, pl.col("x") > 0) is not lazy


def test_a_ranking_without_a_constraint_over_16k_rows_answers() -> None:
    """polars 2.1's in-memory engine without expression simplification (a ranking of
    fewer than SUBEXPRESSIONS_MIN_ROWS rows read) fails a filter by a literal True on a
    frame of one chunk of 16,384 rows or more with two threads or more: a query with no
    constraint, the API's ``params=7e9&tokens=2e11&job_gpus=8`` over 20k offers, was a
    500."""
    models = ("H100-SXM5-80GB", "L4")
    frame = offers_to_frame([make_offer(offer_id=m, gpu_model=m) for m in models])
    many = (
        pl.concat([frame] * 10_000)
        .with_columns(config_id=pl.int_range(pl.len(), dtype=pl.UInt32))
        .rechunk()
    )
    assert 16_384 <= many.height < SUBEXPRESSIONS_MIN_ROWS
    assert not optimizations_for(many).simplify_expression
    job = Job.model_validate({"params": 7e9, "tokens": 2e11, "gpus": 8})
    options = RankOptions(limit=3, now=NOW)
    for requirement in (None, Requirement()):
        page = rank_page(many, requirement, job, options, unplaced=True)
        assert page.rows.height == 3 and page.total > 3 and page.unplaced is not None
        assert rank(many, requirement, options=options).height == 3
