"""The API state's per-snapshot checklist: counted once when warmed, by page otherwise."""

from __future__ import annotations

import polars as pl

from gpuscout.adapters.schema import default_fx
from gpuscout.db.current import state_from_offers
from gpuscout.service.api.state import COUNT_COLUMNS, ApiState, build_state

from .conftest import sample_offers


def _state() -> ApiState:
    current = state_from_offers(sample_offers(), fx=default_fx(), source="database")
    return build_state(current, cache_entries=1)


def test_a_state_for_one_answer_counts_only_the_rows_asked() -> None:
    rows = pl.Series([3, 0, 2], dtype=pl.UInt32)
    cold = _state()
    counted = cold.checklist_of(rows)
    assert "checklist" not in cold.__dict__  # the whole frame was not counted
    warm = _state().warm()
    assert counted.columns == list(COUNT_COLUMNS)
    assert counted.equals(warm.checklist_of(rows))
    assert counted.equals(warm.checklist[rows])
