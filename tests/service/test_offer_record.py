"""Where an offer page's fields come from when there is no database: the replayed sample."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from gpuscout.adapters.schema import RentalTerm
from gpuscout.pricing import Job, RankOptions, Requirement, rank
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.service.current import load_current
from gpuscout.service.offer_record import frame_key, published_record, terms_of
from gpuscout.service.settings import Settings
from tests.pricing.factories import NOW, make_offer


def test_sample_offer_shows_every_published_field(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    state = load_current(sample=True, settings=settings)
    key = state.frame.select(frame_key()).to_series()[0]
    row, terms = terms_of(state.frame, key)
    assert row is not None and any(t["key"] == key for t in terms)
    record, origin = published_record(key, row, source="sample", engine=None)
    assert origin == "sample"
    assert record["provider"] == row["provider"] and record["offer_id"] == row["offer_id"]
    # the record agrees with the ranking's columns on every field both hold
    # held there as datetime, Decimal, Enum and float; in the record as text
    skip = {"fetched_at", "price_amount", "term", "usd_per_hour"}
    for name in set(record) & set(row) - skip:
        assert record[name] == row[name], name
    assert record["term"] == str(row["term"]) and "fetched_at" in record


def test_each_term_carries_the_rankings_effective_tflops_and_its_rate_per_tflop() -> None:
    """An offer page's terms show what the ranking credits the instance (BF16, one node)
    and each term's hourly rate per effective TFLOP: the ranking's own figures for a job
    of one hour on demand; a GPU without a figure to rank by shows none."""
    offers = [
        make_offer(term=RentalTerm.ON_DEMAND, price_amount=Decimal("16")),
        make_offer(term=RentalTerm.COMMIT_1Y, price_amount=Decimal("10")),
        make_offer(offer_id="mystery", gpu_model=None, gpu_raw_name="Mystery X9"),
    ]
    frame = offers_to_frame(offers)
    key = offers[0].key
    _row, terms = terms_of(frame, key)
    ranked = rank(frame, Requirement(terms=(RentalTerm.ON_DEMAND,)), Job.for_hours(1),
                  RankOptions(now=NOW)).row(0, named=True)  # fmt: skip
    by_term = {t["term"]: t for t in terms}
    assert set(by_term) == {"on_demand", "commit_1y"}
    on_demand = by_term["on_demand"]
    assert on_demand["effective_tflops"] == round(ranked["effective_tflops"], 3)
    assert on_demand["usd_per_effective_tflop_hour"] == round(
        ranked["usd_per_effective_tflop_hour"], 9
    )
    assert by_term["commit_1y"]["effective_tflops"] == on_demand["effective_tflops"]
    assert by_term["commit_1y"]["usd_per_effective_tflop_hour"] == round(
        10.0 / ranked["effective_tflops"], 9
    )
    _row, unknown = terms_of(frame, offers[2].key)
    assert unknown[0]["effective_tflops"] is None
    assert unknown[0]["usd_per_effective_tflop_hour"] is None
