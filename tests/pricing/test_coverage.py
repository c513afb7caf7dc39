"""unidentified(): the offers a ranking leaves out because their GPU is unknown."""

from __future__ import annotations

from decimal import Decimal

import polars as pl

from pricing import Requirement, offers_to_frame
from pricing.coverage import unidentified, unidentified_note

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


def test_lists_unidentified_offers_a_requirement_would_want() -> None:
    left = unidentified(_frame(), Requirement(gpus=("H100",)), NOW)
    assert left.rows() == [("do", "nvidia_h100", 2)]
    everything = unidentified(_frame(), None, NOW)
    assert everything.rows() == [("do", "nvidia_h100", 2), ("jl", "A100-80GB", 1)]


def test_other_constraints_apply_as_in_the_ranking() -> None:
    eight = Requirement(gpus=("H100",), min_gpus=8)
    assert unidentified(_frame(), eight, NOW).rows() == [("do", "nvidia_h100", 1)]
    assert unidentified(_frame(), Requirement(exclude_providers=("do",)), NOW).rows() == [
        ("jl", "A100-80GB", 1)
    ]
    assert unidentified(_frame(), Requirement(gpus=("MI300X",)), NOW).is_empty()


def test_note_for_people() -> None:
    note = unidentified_note(_frame(), Requirement(gpus=("h-100",)), NOW)
    assert note is not None
    assert note.startswith("2 offer(s) not ranked, GPU not identified")
    assert "'nvidia_h100' (do, 2)" in note
    assert unidentified_note(_frame(), Requirement(gpus=("B200",)), NOW) is None
