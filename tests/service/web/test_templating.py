"""The filters that word the pages' figures."""

from __future__ import annotations

from gpuscout.service.web.templating import break_even, hours, money


def test_break_even_applies_to_commitments_only() -> None:
    month = {"term": "commit_1mo", "commitment_hours": 730, "break_even_hours": 562.5}
    assert break_even(month) == "23.4 d"
    assert break_even({"term": "on_demand", "commitment_hours": None}) == "–"
    # interruptible: cheaper from the first hour, nothing to break even (was "no on-demand
    # price" beside the on-demand row)
    assert break_even({"term": "interruptible", "commitment_hours": None}) == "–"
    no_od = {"term": "commit_1y", "commitment_hours": 8760, "break_even_hours": None}
    assert break_even(no_od) == "no on-demand price"


def test_numbers_keep_their_units() -> None:
    assert money(0.0042) == "$0.0042" and money(1234.5) == "$1,234.50" and money(None) == "–"
    assert hours(0.5) == "30 min" and hours(3.5) == "3.5 h" and hours(300) == "12.5 d"
