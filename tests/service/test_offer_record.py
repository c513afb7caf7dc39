"""Where an offer page's fields come from when there is no database: the replayed sample."""

from __future__ import annotations

from pathlib import Path

from service.current import load_current
from service.offer_record import frame_key, published_record, terms_of
from service.settings import Settings


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
