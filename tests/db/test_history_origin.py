"""Price history of the offline sample: dated when it was stored, never from its capture
date, and labelled sample (rows, the daily index, its note); migration 0007 fixes rows an
earlier ``snapshot --sample`` stored at the capture date."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from gpuscout.adapters.collect import Origin, ProviderRun
from gpuscout.adapters.sample import SAMPLE_NOTE
from gpuscout.db.engine import make_engine
from gpuscout.db.history import (
    SAMPLE_DAYS_NOTE,
    daily_index,
    index_label,
    offer_price_history,
    points_label,
)
from gpuscout.db.migrate import upgrade
from gpuscout.db.models import PriceHistory
from gpuscout.db.snapshots import store_snapshot

from .factories import T0, at, offer, ok, old_table

#: The aws sample's capture date in the shipped manifest.
CAPTURED = datetime(2025, 9, 15, tzinfo=UTC)


def sample(run: ProviderRun) -> ProviderRun:
    """``run`` as a replay of the sample: it "starts" at the capture date, as replay_sample's."""
    return dataclasses.replace(run, origin=Origin.SAMPLE)


def store(engine: Engine, *runs: ProviderRun, when: datetime) -> None:
    store_snapshot(engine, runs, started_at=when, finished_at=when)


def index(engine: Engine, start: date, end: date):  # type: ignore[no-untyped-def]
    frame = daily_index(engine, gpu="H100", start=start, end=end)
    return frame, index_label(engine, frame, gpu="H100", start=start, end=end)


def test_sample_history_starts_when_the_sample_was_stored(engine: Engine) -> None:
    store(engine, sample(ok("aws", [offer("aws", "a1", "3")], CAPTURED)), when=T0)
    frame, label = index(engine, T0.date() - timedelta(days=29), T0.date())
    priced = frame.filter(frame["offers"] > 0)
    assert priced["day"].to_list() == [T0.date()]  # not every day since 2025-09-15
    assert priced["sample_offers"].to_list() == [1]
    assert label.sample and label.origin == "sample" and label.sample_providers == ("aws",)
    assert label.note is not None and label.note.startswith(SAMPLE_NOTE)
    assert "aws 2025-09-15" in label.note and label.note.endswith(SAMPLE_DAYS_NOTE)
    (point,) = offer_price_history(engine, offer("aws", "a1").key)
    assert point.valid_from == T0 and point.origin is Origin.SAMPLE
    assert points_label(offer("aws", "a1").key, [point]).origin == "sample"


def test_live_prices_after_the_sample_make_the_index_mixed_then_live(engine: Engine) -> None:
    store(engine, sample(ok("aws", [offer("aws", "a1", "3")], CAPTURED)), when=T0)
    live = at(days=2)
    store(engine, ok("aws", [offer("aws", "a1", "2")], live), when=live)
    _, both = index(engine, T0.date(), live.date())
    assert both.origin == "mixed" and both.sample and both.sample_providers == ("aws",)
    frame, later = index(engine, live.date() + timedelta(days=1), live.date() + timedelta(days=1))
    assert frame["offers"].to_list() == [1] and frame["sample_offers"].to_list() == [0]
    assert not later.sample and later.origin == "live" and later.note is None
    points = offer_price_history(engine, offer("aws", "a1").key)
    assert [(p.valid_from, p.valid_to, p.origin) for p in points] == [
        (T0, live, Origin.SAMPLE),
        (live, None, Origin.LIVE),
    ]


def test_a_sample_replayed_over_live_prices_closes_them_when_stored(engine: Engine) -> None:
    """The live price held until the replay, not until the sample's capture date."""
    store(engine, ok("aws", [offer("aws", "a1", "2")], T0), when=T0)
    replayed = at(days=3)
    store(engine, sample(ok("aws", [offer("aws", "a1", "3")], CAPTURED)), when=replayed)
    points = offer_price_history(engine, offer("aws", "a1").key)
    assert [(p.valid_from, p.valid_to, p.origin) for p in points] == [
        (T0, replayed, Origin.LIVE),
        (replayed, None, Origin.SAMPLE),
    ]
    frame, _ = index(engine, T0.date(), replayed.date())
    assert frame["offers"].to_list() == [1, 1, 1, 1]
    assert frame["sample_offers"].to_list() == [0, 0, 0, 1]


def test_migration_0007_labels_and_redates_earlier_sample_rows(db_url: str) -> None:
    stored_at = datetime(2026, 11, 30, 17, 9, 8, tzinfo=UTC)
    live_at = datetime(2026, 11, 29, 9, 30, 1, 5, tzinfo=UTC)
    snapshot = old_table(
        "snapshot", "id", "started_at", "finished_at", "offer_count", "history_added",
        "history_closed", "origin",
    )  # fmt: skip
    runs = old_table(
        "snapshot_provider", "snapshot_id", "provider", "status", "started_at", "duration_s",
        "offer_count", "skipped_count", "history_added", "history_closed", "origin",
    )  # fmt: skip
    history = old_table(
        "price_history", "offer_key", "provider", "gpu_model", "gpus", "term", "price_amount",
        "price_currency", "price_unit", "price_basis", "usd_per_hour", "usd_per_gpu_hour",
        "price_hash", "valid_from", "valid_to", "opened_snapshot_id", "closed_snapshot_id",
    )  # fmt: skip
    counts = {"offer_count": 1, "history_added": 1, "history_closed": 0}
    run = {"status": "ok", "duration_s": 0.1, "skipped_count": 0, **counts}
    price = {
        "gpu_model": "H100-SXM5-80GB", "gpus": 1.0, "term": "on_demand", "price_amount": "2",
        "price_currency": "USD", "price_unit": "hour", "price_basis": "instance",
        "usd_per_hour": "2", "usd_per_gpu_hour": 2.0, "price_hash": 1,
    }  # fmt: skip
    upgrade(db_url, "0006")
    engine = make_engine(db_url)
    try:
        with engine.begin() as c:
            c.execute(
                sa.insert(snapshot),
                [
                    {"id": 1, "started_at": live_at, "finished_at": live_at, "origin": "live",
                     **counts},
                    {"id": 2, "started_at": stored_at, "finished_at": stored_at,
                     "origin": "sample", **counts},
                ],
            )  # fmt: skip
            c.execute(
                sa.insert(runs),
                [
                    {**run, "snapshot_id": 1, "provider": "lambda", "started_at": live_at,
                     "origin": "live"},
                    {**run, "snapshot_id": 2, "provider": "lambda",
                     "started_at": datetime(2025, 11, 22, tzinfo=UTC), "origin": "sample"},
                    {**run, "snapshot_id": 2, "provider": "gcp",
                     "started_at": datetime(2023, 3, 24, tzinfo=UTC), "origin": "sample"},
                ],
            )  # fmt: skip
            c.execute(
                sa.insert(history),
                [
                    # live, closed by the sample replay at the sample's date
                    {**price, "offer_key": "lambda|l1", "provider": "lambda",
                     "valid_from": live_at, "valid_to": datetime(2025, 11, 22, tzinfo=UTC),
                     "opened_snapshot_id": 1, "closed_snapshot_id": 2},
                    # opened by the replay at the capture date
                    {**price, "offer_key": "gcp|g1", "provider": "gcp",
                     "valid_from": datetime(2023, 3, 24, tzinfo=UTC), "valid_to": None,
                     "opened_snapshot_id": 2, "closed_snapshot_id": None},
                    # a replay whose snapshot was pruned: recognised by the sample's date
                    {**price, "offer_key": "aws|a1", "provider": "aws",
                     "valid_from": CAPTURED, "valid_to": None,
                     "opened_snapshot_id": 99, "closed_snapshot_id": None},
                ],
            )  # fmt: skip
    finally:
        engine.dispose()
    upgrade(db_url)
    engine = make_engine(db_url)
    try:
        table = PriceHistory.__table__
        with engine.connect() as c:
            got = {
                r.offer_key: (r.origin, r.valid_from, r.valid_to)
                for r in c.execute(
                    sa.select(table.c.offer_key, table.c.origin, table.c.valid_from,
                              table.c.valid_to)
                )
            }  # fmt: skip
        assert got == {
            "lambda|l1": ("live", live_at, stored_at),
            "gcp|g1": ("sample", stored_at, None),
            "aws|a1": ("sample", CAPTURED, None),
        }
    finally:
        engine.dispose()
