"""ByModel: a frame in runs of one GPU model, and rankings over it equal to the frame's."""

from __future__ import annotations

import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from gpuscout.adapters.gpus import Precision
from gpuscout.adapters.schema import RentalTerm
from gpuscout.pricing import Job, RankOptions, Requirement, rank
from gpuscout.pricing.frame import OFFER_ROW, most_rows_per_configuration, offers_to_frame
from gpuscout.pricing.model_rows import LAYOUT, ByModel, in_model_runs
from gpuscout.pricing.rank import rank_page, rank_plan

from .factories import NOW, make_offer, mixed_frame


def test_runs_hold_each_model_by_configuration_and_term_and_unidentified_last() -> None:
    frame = mixed_frame(random.Random(1)).with_row_index("before")
    by_model = ByModel.of(frame)
    ordered = by_model.frame
    assert by_model.runs is not None
    assert ordered.height == frame.height
    assert sorted(ordered["before"]) == list(range(frame.height))
    seen = 0
    for model, (start, length) in sorted(by_model.runs.items(), key=lambda kv: kv[1]):
        assert start == seen  # contiguous, in order, no gaps
        run = ordered.slice(start, length)
        assert run["gpu_model"].to_list() == [model] * length
        keys = list(zip(run["config_id"], run["term"].to_physical(), run["before"], strict=True))
        assert keys == sorted(keys)  # by configuration, then term; stable: then as before
        seen += length
    assert ordered.slice(seen)["gpu_model"].null_count() == ordered.height - seen
    assert set(by_model.runs) == set(frame["gpu_model"].drop_nulls())
    assert by_model.most_rows == most_rows_per_configuration(frame)


def test_a_frame_in_that_order_is_taken_as_it_is_and_any_other_sorted() -> None:
    by_model = ByModel.of(mixed_frame(random.Random(7)))
    assert by_model.together
    assert in_model_runs(by_model.frame) is by_model.frame
    # one pair of rows out of order, by model, by configuration or by term: sorted again
    frame = by_model.frame
    for column in ("gpu_model", "config_id", "term"):
        at = next(
            i
            for i in range(1, frame.height)
            if frame[column][i] != frame[column][i - 1]
            and all(frame[c][i] == frame[c][i - 1] for c in LAYOUT[: LAYOUT.index(column)])
        )
        swapped = pl.concat([frame.slice(0, at - 1), frame[at], frame[at - 1], frame.slice(at + 1)])
        assert swapped.height == frame.height
        assert_frame_equal(in_model_runs(swapped), frame)


@pytest.mark.parametrize(
    "models",
    [
        None,
        [],
        ["L4"],
        ["H100-SXM5-80GB", "H100-PCIE-80GB"],  # adjacent runs
        ["A100-SXM4-80GB", "L4", "H100-SXM5-80GB"],
        ["B200"],  # none held
    ],
)
def test_rows_are_the_models_rows_numbered_by_their_place(models: list[str] | None) -> None:
    by_model = ByModel.of(mixed_frame(random.Random(2)))
    rows = by_model.rows(models).collect()
    every = by_model.frame.with_row_index(OFFER_ROW)
    expected = every if models is None else every.filter(pl.col("gpu_model").is_in(models))
    assert_frame_equal(rows, expected)


@pytest.mark.parametrize("sort", ["usd_per_effective_tflop_hour", "usd_per_hour"])
def test_a_ranking_over_the_runs_equals_one_over_the_frame(sort: str) -> None:
    """Every requirement, naming models or not, at every precision (a model without a
    peak at one is not ranked) and with an MFU of the query's own (the catalog joined in
    the plan, not held beside the runs): the same rows, totals and frame rows."""
    rng = random.Random(3)
    requirements = [
        Requirement(),
        Requirement(gpus=("H100",)),
        Requirement(gpus=("L4", "A100-SXM4-80GB"), min_gpus=8),
        Requirement(gpus=("B200",)),
        Requirement(gpus=("H100",), terms=(RentalTerm.INTERRUPTIBLE,)),
    ]
    ranked = dict.fromkeys(range(len(requirements)), 0)
    for _ in range(8):
        by_model = ByModel.of(mixed_frame(rng))
        for n, requirement in enumerate(requirements):
            job = Job.for_hours(rng.choice((1, 100)), gpus=rng.choice((None, 16)))
            options = RankOptions(
                limit=rng.choice((None, 1, 3)), now=NOW, sort=sort,  # type: ignore[arg-type]
                precision=rng.choice((Precision.BF16, *Precision)),
                mfu=rng.choice((None, None, 0.3)),
            )  # fmt: skip
            whole = rank_page(by_model.frame, requirement, job, options, unplaced=True)
            runs = rank_page(by_model, requirement, job, options, unplaced=True)
            assert_frame_equal(runs.rows, whole.rows, check_exact=True)
            assert runs.offer_rows.to_list() == whole.offer_rows.to_list()
            assert runs.total == whole.total
            assert whole.unplaced is not None and runs.unplaced is not None
            assert_frame_equal(runs.unplaced, whole.unplaced, check_row_order=False)
            assert_frame_equal(
                rank(by_model, requirement, job, options), whole.rows, check_exact=True
            )
            ranked[n] += whole.rows.height
    assert all(ranked[n] for n in (0, 1, 2, 4)) and not ranked[3]  # B200: none held


def test_a_configuration_spanning_models_has_the_frame_read_whole() -> None:
    """One offer's terms stored with two different models (inconsistent data): its
    on-demand row must still reach the break-even of its commitment, so nothing is cut."""
    offers = [
        make_offer(offer_id="box", term=RentalTerm.ON_DEMAND, gpu_model="H100-PCIE-80GB"),
        make_offer(offer_id="box", term=RentalTerm.COMMIT_1Y, gpu_model="H100-SXM5-80GB"),
        make_offer(offer_id="other", gpu_model="L4", gpu_count=1),
    ]
    by_model = ByModel.of(offers_to_frame(offers))
    assert by_model.runs is None and not by_model.together
    assert by_model.most_rows == 2
    assert by_model.rows(["H100-SXM5-80GB"]).collect().height == 3
    requirement = Requirement(gpus=("H100-SXM5-80GB",), terms=(RentalTerm.COMMIT_1Y,))
    options = RankOptions(now=NOW)
    ranked = rank(by_model, requirement, Job.for_hours(10_000), options)
    assert ranked["on_demand_usd_per_hour"].to_list() == [16.0]
    assert_frame_equal(ranked, rank(by_model.frame, requirement, Job.for_hours(10_000), options))


def test_a_ranking_over_the_named_runs_plans_no_condition_on_the_model() -> None:
    """The runs hold the named models' rows and no other: their ``is_in`` is not planned
    (it was ~2% of a new API answer); a frame read whole keeps it."""
    by_model = ByModel.of(mixed_frame(random.Random(4)))
    requirement = Requirement(gpus=("H100",), min_gpus=8)
    on_model = 'col("gpu_model").is_in'
    assert on_model not in rank_plan(by_model, requirement).explain(optimized=False)
    assert on_model in rank_plan(by_model.frame, requirement).explain(optimized=False)


def test_the_catalog_is_held_beside_the_runs_not_joined_in_every_plan() -> None:
    """At the default efficiency and MFU, a ranking over the runs reads the catalog's
    columns from the rows (joined once per frame and precision: the join on the model's
    name was ~19% of the API's new queries, callgrind); an MFU of its own joins it."""
    by_model = ByModel.of(mixed_frame(random.Random(5)))
    on_model = 'ON: [col("gpu_model")]'
    plain = rank_plan(by_model, Requirement(gpus=("H100",))).explain(optimized=False)
    assert on_model not in plain
    own = rank_plan(by_model, Requirement(), options=RankOptions(mfu=0.3))
    assert on_model in own.explain(optimized=False)
    assert on_model in rank_plan(by_model.frame, Requirement()).explain(optimized=False)
    rank(by_model, Requirement(), options=RankOptions(precision=Precision.FP8, now=NOW))
    kept = {key[1] for key in by_model._joined}
    assert kept == {Precision.BF16, Precision.FP8}  # one a precision, kept


def test_joined_adds_a_tables_columns_by_model_once() -> None:
    by_model = ByModel.of(mixed_frame(random.Random(6)))
    table = pl.DataFrame({"gpu_model": ["L4", "H100-SXM5-80GB"], "peak": [121.0, 989.0]})
    joined = by_model.joined("peaks", table)
    assert joined.runs == by_model.runs and joined.most_rows == by_model.most_rows
    assert joined.frame.drop("peak").equals(by_model.frame)  # the same rows, in order
    peaks = dict(zip(joined.frame["gpu_model"], joined.frame["peak"], strict=True))
    assert peaks.get("L4", 121.0) == 121.0 and peaks.get("A100-SXM4-80GB") is None
    assert by_model.joined("peaks", table) is joined
    with pytest.raises(ValueError, match="more than once"):
        by_model.joined("twice", pl.concat([table, table]))
    with pytest.raises(ValueError, match=r"already: \['gpus'\]"):
        by_model.joined("clash", table.with_columns(gpus=pl.lit(1)))
