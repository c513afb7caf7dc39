"""left_out(): every offer a query wants that the ranking cannot rank, with its reason."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import polars as pl

from gpuscout.adapters.collect import RunStatus
from gpuscout.adapters.gpus import Precision
from gpuscout.adapters.sample import replay_sample
from gpuscout.pricing import RankOptions, Requirement, offers_to_frame, rank
from gpuscout.pricing.coverage import (
    NO_FIGURE,
    NOT_IN_CATALOG,
    UNIDENTIFIED,
    Unrankable,
    left_out,
    left_out_note,
    left_out_plan,
)
from gpuscout.pricing.expressions import peak_tflops
from gpuscout.pricing.frame import catalog_frame

from .factories import NOW, make_offer


def _frame() -> pl.DataFrame:
    return offers_to_frame(
        [
            make_offer(offer_id="known"),  # H100 SXM: ranked, never listed here
            make_offer(provider="do", offer_id="h8", gpu_model=None, gpu_raw_name="nvidia_h100"),
            make_offer(
                provider="do", offer_id="h1", gpu_model=None, gpu_raw_name="nvidia_h100",
                gpu_count=1, price_amount=Decimal("3"),
            ),
            make_offer(provider="jl", offer_id="a", gpu_model=None, gpu_raw_name="A100-80GB"),
            make_offer(provider="x", offer_id="n", gpu_model=None, gpu_raw_name=None),
        ]
    )  # fmt: skip


def _reasons(frame: pl.DataFrame, req: Requirement | None = None) -> list[tuple[object, ...]]:
    return left_out(frame, req, NOW).select("provider", "gpu_raw_name", "reason", "offers").rows()


def test_lists_unidentified_offers_a_requirement_would_want() -> None:
    assert _reasons(_frame(), Requirement(gpus=("H100",))) == [
        ("do", "nvidia_h100", UNIDENTIFIED, 2)
    ]
    assert _reasons(_frame()) == [
        ("do", "nvidia_h100", UNIDENTIFIED, 2),
        ("jl", "A100-80GB", UNIDENTIFIED, 1),
    ]


def test_other_constraints_apply_as_in_the_ranking() -> None:
    eight = Requirement(gpus=("H100",), min_gpus=8)
    assert _reasons(_frame(), eight) == [("do", "nvidia_h100", UNIDENTIFIED, 1)]
    assert _reasons(_frame(), Requirement(exclude_providers=("do",))) == [
        ("jl", "A100-80GB", UNIDENTIFIED, 1)
    ]
    assert left_out(_frame(), Requirement(gpus=("MI300X",)), NOW).is_empty()


def test_a_catalog_model_without_any_figure_is_named_with_its_reason() -> None:
    frame = offers_to_frame(
        [
            make_offer(offer_id="a100x", gpu_model="A100X", gpu_raw_name="A100X"),
            make_offer(offer_id="old", gpu_model="K80", gpu_raw_name="Tesla K80"),
        ]
    )
    assert _reasons(frame) == [
        ("acme", "A100X", NO_FIGURE, 1),
        ("acme", "Tesla K80", NOT_IN_CATALOG, 1),
    ]
    assert rank(frame, options=RankOptions(now=NOW)).is_empty()  # the ranking leaves both out


def test_unrankable_picks_the_rows_a_join_of_every_row_would_and_shares_equal_parts() -> None:
    """The rows are picked off the frame before the catalog joins them: the same rows, in
    the same order, as joining every offer first (the sample and offers of each kind: a
    model short of every figure, one outside the catalog, a raw name alone, neither); a
    precision leaving out the same rows as another holds the same frame, not a copy."""
    runs = replay_sample()
    extra = [
        make_offer(offer_id="a100x", gpu_model="A100X", gpu_raw_name="A100X"),
        make_offer(offer_id="k80", gpu_model="K80", gpu_raw_name="Tesla K80"),
        make_offer(offer_id="raw", gpu_model=None, gpu_raw_name="nvidia_h100"),
        make_offer(offer_id="none", gpu_model=None, gpu_raw_name=None),
    ]
    offers = [o for r in runs if r.status is RunStatus.OK for o in r.offers] + extra
    frame = offers_to_frame(offers)
    catalog = catalog_frame().select(
        "gpu_model", "form_factor_varies", **{p.value: peak_tflops(p) for p in Precision}
    )
    joined = frame.join(catalog, on="gpu_model", how="left", maintain_order="left")
    in_catalog = pl.col("form_factor_varies").is_not_null()
    named = pl.col("gpu_raw_name").is_not_null() | pl.col("gpu_model").is_not_null()
    unrankable = Unrankable(frame)
    ids = pl.col("offer_id")
    expected = joined.filter(~in_catalog & named).get_column("offer_id").to_list()
    assert unrankable.not_known.get_column("offer_id").to_list() == expected
    assert {"k80", "raw"} <= set(expected) and "none" not in expected
    for precision in Precision:
        wanted = joined.filter(in_catalog & pl.col(precision.value).is_null())
        got = unrankable.no_figure[precision]
        assert got.select(ids).to_series().to_list() == wanted.get_column("offer_id").to_list()
        assert "a100x" in got.get_column("offer_id").to_list()
        for other in Precision:
            if got.equals(unrankable.no_figure[other]):
                assert got is unrankable.no_figure[other]


def test_note_names_every_offer_and_its_reason() -> None:
    note = left_out_note(_frame(), Requirement(gpus=("h-100",)), NOW)
    assert note == f"2 offer(s) not ranked: 'nvidia_h100' (do, 2: {UNIDENTIFIED})"
    assert left_out_note(_frame(), Requirement(gpus=("B200",)), NOW) is None
    everything = left_out_note(_frame(), None, NOW)
    assert everything is not None
    assert "'nvidia_h100' (do, 2: " in everything and "'A100-80GB' (jl, 1: " in everything


def test_on_the_sample_every_unranked_offer_is_named_and_at_most_5_percent_stay_unranked() -> None:
    """#13's bar: an unfiltered query on the offline sample ranks all but <= 5% of the offers
    with an identified GPU, and its note names every offer it leaves out."""
    runs = replay_sample()
    frame = offers_to_frame(o for r in runs if r.status is RunStatus.OK for o in r.offers)
    now = datetime.now(UTC)
    for precision in (Precision.BF16, Precision.FP8):
        options = RankOptions(limit=None, now=now, precision=precision)
        ranked = set(rank(frame, options=options)["config_id"])
        unranked = frame.filter(~pl.col("config_id").is_in(sorted(ranked)))
        identified = frame.filter(pl.col("gpu_model").is_not_null())
        stay = unranked.filter(pl.col("gpu_model").is_not_null())
        assert stay.height <= 0.05 * identified.height, stay
        listed = left_out(frame, None, now, precision=precision)
        assert int(listed["offers"].sum()) == unranked.height
        assert set(listed["gpu_raw_name"]) == set(unranked["gpu_raw_name"])


def test_unrankable_rows_are_split_by_reason_once_and_an_empty_part_is_not_planned() -> None:
    """Unrankable keeps its rows by reason (not in the catalog; no figure at each
    precision): a frame whose every offer is rankable leaves nothing out, with the note's
    columns, and plans none of the filters."""
    rankable = offers_to_frame([make_offer()])
    nothing = Unrankable(rankable)
    assert nothing.not_known.is_empty()
    assert all(rows.is_empty() for rows in nothing.no_figure.values())
    plan = left_out_plan(rankable, Requirement(gpus=("H100",)), NOW, unrankable=nothing)
    assert "FILTER" not in plan.explain()
    empty = plan.collect()
    assert empty.is_empty()
    assert empty.columns == ["provider", "gpu_raw_name", "gpu_model", "reason", "offers"]
    mixed = offers_to_frame(
        [make_offer(), make_offer(offer_id="u", gpu_model=None, gpu_raw_name="H100 Tensor")]
    )
    some = Unrankable(mixed)
    assert some.not_known["offer_id"].to_list() == ["u"]
    (row,) = left_out(mixed, Requirement(gpus=("H100",)), NOW, unrankable=some).to_dicts()
    assert (row["gpu_raw_name"], row["reason"], row["offers"]) == ("H100 Tensor", UNIDENTIFIED, 1)
