"""The offer facts: columns of the frame, the same whatever the query, shown as ranked."""

from __future__ import annotations

from decimal import Decimal

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from gpuscout.adapters.schema import RentalTerm
from gpuscout.pricing import Job, RankOptions, Requirement, offers_to_frame, rank
from gpuscout.pricing.expressions import TERM_WORDS, break_even_text
from gpuscout.pricing.offer_facts import (
    FACT_COLUMNS,
    has_offer_facts,
    with_offer_facts,
)
from gpuscout.pricing.rank import RESULT_COLUMNS, rank_page

from .factories import NOW, make_offer

#: One 8x H100 configuration on demand at 16 USD/h and on a year's commitment at 10 USD/h,
#: and another, sold out, on demand only.
OFFERS = [
    make_offer(),
    make_offer(term=RentalTerm.COMMIT_1Y, price_amount=Decimal("10")),
    make_offer(offer_id="sold", available_now=False, fabric_gbps=3200),
]


def _facts(frame: pl.DataFrame) -> list[dict[str, object]]:
    """Each row's facts, and its break-even in words as a ranking gives it (the text is
    made for the rows ranked, not held by the frame)."""
    return frame.select("offer_id", "term", *FACT_COLUMNS, break_even=break_even_text()).to_dicts()


def test_a_frame_carries_each_rows_facts_and_its_configurations_break_even() -> None:
    frame = offers_to_frame(OFFERS)
    assert has_offer_facts(frame)
    on_demand, committed, sold = _facts(frame)
    # a year (8,760 h) at 10 USD/h costs what 5,475 h on demand at 16 USD/h do
    assert on_demand == {
        "offer_id": "8x-h100", "term": "on_demand", "ranked_after": 0,
        "usd_per_gpu_hour": 2.0, "fabric_gbps_per_gpu": None, "availability": "not stated",
        "on_demand_usd_per_hour": 16.0, "break_even_hours": 5475.0,
        "best_commitment_term": "commit_1y", "best_commitment_hours": 5475.0,
        "configuration_rows": 2,
        "break_even": "on-demand; a 1-year commitment would beat it after 5475 h",
    }  # fmt: skip
    assert committed["break_even"] == "a 1-year commitment beats on-demand after 5475 h"
    assert committed["on_demand_usd_per_hour"] == 16.0 and committed["usd_per_gpu_hour"] == 1.25
    assert (sold["ranked_after"], sold["availability"]) == (1, "not available now")
    assert (sold["fabric_gbps_per_gpu"], sold["break_even_hours"]) == (400.0, None)
    assert sold["break_even"] == "on-demand; no commitment offered"
    assert (committed["configuration_rows"], sold["configuration_rows"]) == (2, 1)


def test_a_ranking_shows_the_frames_facts_whatever_terms_it_admits() -> None:
    """A query for commitments only still hears the on-demand price of the configuration:
    the facts are the frame's, not the query's."""
    frame = offers_to_frame(OFFERS)
    committed_only = Requirement(terms=(RentalTerm.COMMIT_1Y,))
    (row,) = rank(frame, committed_only, Job.for_hours(100), RankOptions(now=NOW)).to_dicts()
    assert row["term"] == "commit_1y" and row["on_demand_usd_per_hour"] == 16.0
    assert (row["break_even_hours"], row["break_even"]) == (
        5475.0,
        "a 1-year commitment beats on-demand after 5475 h",
    )
    ranked = rank(frame, job=Job.for_hours(100), options=RankOptions(now=NOW, limit=None))
    facts = (c for c in FACT_COLUMNS if c in RESULT_COLUMNS)  # the others: read by steps
    shown = ranked.select("offer_id", "term", *facts).sort("offer_id")
    kept = frame.join(ranked.select("offer_id", "term"), on=["offer_id", "term"], how="semi")
    assert_frame_equal(shown, kept.select(shown.columns).sort("offer_id"))


def test_facts_are_computed_again_for_a_frame_whose_configurations_change() -> None:
    """Each row its own configuration (as the digest's week of changes): the commitment
    has no on-demand price beside it any more."""
    frame = offers_to_frame(OFFERS).with_columns(config_id=pl.int_range(3, dtype=pl.UInt32))
    alone = with_offer_facts(frame)
    assert alone.columns == frame.columns
    committed = _facts(alone)[1]
    assert committed["on_demand_usd_per_hour"] is None
    assert committed["break_even"] == "a 1-year commitment; no on-demand price to compare"


def test_a_frame_without_facts_or_offer_objects_are_refused_by_name() -> None:
    """The ranking reads a frame as offers_to_frame makes it: another is refused with what
    it lacks, and Offer objects with how to frame them."""
    frame = offers_to_frame(OFFERS)
    with pytest.raises(ValueError, match="lacks ranked_after, .*, configuration_rows: build"):
        rank(frame.drop(FACT_COLUMNS))
    with pytest.raises(ValueError, match="lacks config_id: build it with"):
        rank_page(frame.drop("config_id"))
    with pytest.raises(TypeError, match="not list: frame Offer objects with .*offers_to_frame"):
        rank(OFFERS)  # type: ignore[arg-type]


def test_every_rental_term_has_its_words() -> None:
    """A term the break-even text could not word would fail its whole column (strict)."""
    assert set(TERM_WORDS) == {t.value for t in RentalTerm}
    assert all("_" not in words for words in TERM_WORDS.values())
