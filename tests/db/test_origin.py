"""A snapshot records where its offers came from (live or the offline sample), and the
current state read back says so per provider and as a whole (issue 13)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from gpuscout.adapters.collect import Origin, ProviderRun
from gpuscout.adapters.sample import SAMPLE_NOTE
from gpuscout.db.engine import make_engine
from gpuscout.db.migrate import upgrade
from gpuscout.db.models import Snapshot, SnapshotProvider
from gpuscout.db.snapshots import store_snapshot

from .factories import T0, at, current, failed, offer, ok, old_table


def sample(run: ProviderRun, *, known: bool = True) -> ProviderRun:
    return dataclasses.replace(run, origin=Origin.SAMPLE, capture_date_known=known)


def store(engine: Engine, *runs: ProviderRun, when: datetime = T0):
    return store_snapshot(engine, runs, started_at=when, finished_at=when)


def rows(engine: Engine, table: sa.FromClause, *columns: str) -> list[tuple]:
    with engine.connect() as c:
        return [tuple(r) for r in c.execute(sa.select(*(table.c[n] for n in columns)))]


def test_a_sample_snapshot_is_stored_as_one_and_read_back_as_one(engine: Engine) -> None:
    captured = datetime(2023, 11, 24, tzinfo=UTC)
    summary = store(
        engine,
        sample(ok("alpha", [offer("alpha")], started_at=captured), known=False),
        sample(ok("beta", [offer("beta")])),
    )
    assert summary.origin == "sample"
    assert rows(engine, Snapshot.__table__, "origin") == [("sample",)]
    assert sorted(
        rows(engine, SnapshotProvider.__table__, "provider", "origin", "capture_date_known")
    ) == [
        ("alpha", "sample", False),
        ("beta", "sample", True),
    ]
    state = current(engine, now=at(1))
    assert state.source == "database" and state.sample and state.origin == "sample"
    assert state.sample_providers == ["alpha", "beta"]
    alpha = state.providers["alpha"]
    assert alpha.origin is Origin.SAMPLE and not alpha.capture_date_known
    assert not alpha.fresh(at(1))  # sample prices are never fresh
    assert state.note is not None and state.note.startswith(SAMPLE_NOTE)
    assert "alpha capture date unknown (on record by 2023-11-24)" in state.note
    assert f"beta {T0.date().isoformat()}" in state.note


def test_live_runs_after_a_sample_one_make_the_state_mixed_then_live(engine: Engine) -> None:
    store(engine, sample(ok("alpha", [offer("alpha")])), sample(ok("beta", [offer("beta")])))
    summary = store(engine, ok("alpha", [offer("alpha")], started_at=at(2)), when=at(2))
    assert summary.origin == "live"
    state = current(engine, now=at(3))
    assert state.origin == "mixed" and state.sample and state.sample_providers == ["beta"]
    assert state.providers["alpha"].origin is Origin.LIVE
    assert state.providers["alpha"].fresh(at(3))
    assert state.note is not None and "alpha" not in state.note and "beta" in state.note
    store(engine, ok("beta", [offer("beta")], started_at=at(4)), when=at(4))
    state = current(engine, now=at(5))
    assert state.origin == "live" and not state.sample and state.note is None


def test_a_failed_live_run_keeps_the_sample_offers_said_to_be_sample(engine: Engine) -> None:
    store(engine, sample(ok("alpha", [offer("alpha")])))
    store(engine, failed("alpha", started_at=at(1)), when=at(1))
    state = current(engine, now=at(2))
    alpha = state.providers["alpha"]
    assert alpha.stale and alpha.origin is Origin.SAMPLE and state.sample
    assert state.note is not None and state.note.startswith(SAMPLE_NOTE)
    assert "last good offers kept" in state.note


def test_fresh_follows_price_age_against_the_threshold(engine: Engine) -> None:
    store(engine, ok("alpha", [offer("alpha")]))
    alpha = current(engine, now=at(1)).providers["alpha"]
    assert alpha.fresh(at(23.9)) and not alpha.fresh(at(24.1))
    assert alpha.fresh(at(30), within_hours=36)


def test_fx_note_names_the_table_of_converted_prices(engine: Engine) -> None:
    store(engine, ok("alpha", [offer("alpha", price_currency="CNY", price="20")]))
    state = current(engine)
    assert state.converted_currencies == ["CNY"]
    assert state.fx_note is not None and state.fx.as_of in state.fx_note
    store(engine, ok("alpha", [offer("alpha")]), when=at(1))
    assert current(engine).fx_note is None  # every price in USD: nothing was converted


def test_migration_0005_marks_earlier_sample_snapshots(db_url: str) -> None:
    """Rows stored by ``snapshot --sample`` before 0005 started at midnight of the sample's
    manifest date of then: marked sample, a placeholder date replaced by the latest the
    capture can be (verda's 2025-10-01 by 2023-11-24); live rows stay live."""
    verda_then = datetime(2025, 10, 1, tzinfo=UTC)  # the placeholder of revision 0004
    aws_then = datetime(2025, 9, 15, tzinfo=UTC)  # a real date: kept
    live_at = datetime(2025, 10, 1, 12, 30, 5, 123456, tzinfo=UTC)
    snapshot = old_table(
        "snapshot",
        "id",
        "started_at",
        "finished_at",
        "offer_count",
        "history_added",
        "history_closed",
    )
    runs = old_table(
        "snapshot_provider",
        "snapshot_id",
        "provider",
        "status",
        "started_at",
        "duration_s",
        "offer_count",
        "skipped_count",
        "history_added",
        "history_closed",
    )
    status = old_table(
        "provider_status",
        "provider",
        "last_status",
        "last_attempt_at",
        "last_snapshot_id",
        "offers_fetched_at",
        "offer_count",
    )
    counts = {"offer_count": 1, "history_added": 0, "history_closed": 0}
    run = {"status": "ok", "duration_s": 0.1, "skipped_count": 0, **counts}
    upgrade(db_url, "0004")
    engine = make_engine(db_url)
    try:
        with engine.begin() as c:
            c.execute(
                sa.insert(snapshot),
                [
                    {"id": 1, "started_at": verda_then, "finished_at": verda_then, **counts},
                    {"id": 2, "started_at": live_at, "finished_at": live_at, **counts},
                ],
            )
            c.execute(
                sa.insert(runs),
                [
                    {**run, "snapshot_id": 1, "provider": "verda", "started_at": verda_then},
                    {**run, "snapshot_id": 1, "provider": "aws", "started_at": aws_then},
                    {**run, "snapshot_id": 2, "provider": "lambda", "started_at": live_at},
                ],
            )
            base = {"last_status": "ok", "offer_count": 1}
            c.execute(
                sa.insert(status),
                [
                    {
                        **base,
                        "provider": "verda",
                        "last_attempt_at": verda_then,
                        "last_snapshot_id": 1,
                        "offers_fetched_at": verda_then,
                    },
                    {
                        **base,
                        "provider": "aws",
                        "last_attempt_at": aws_then,
                        "last_snapshot_id": 1,
                        "offers_fetched_at": aws_then,
                    },
                    {
                        **base,
                        "provider": "lambda",
                        "last_attempt_at": live_at,
                        "last_snapshot_id": 2,
                        "offers_fetched_at": live_at,
                    },
                ],
            )
    finally:
        engine.dispose()
    upgrade(db_url)
    engine = make_engine(db_url)
    try:
        assert sorted(rows(engine, Snapshot.__table__, "id", "origin")) == [
            (1, "sample"),
            (2, "live"),
        ]
        provider_runs = rows(
            engine, SnapshotProvider.__table__, "provider", "origin", "capture_date_known"
        )
        assert sorted(provider_runs) == [
            ("aws", "sample", True),
            ("lambda", "live", True),
            ("verda", "sample", False),
        ]
        state = current(engine, now=live_at)
    finally:
        engine.dispose()
    assert state.sample_providers == ["aws", "verda"] and state.origin == "mixed"
    verda = state.providers["verda"]
    assert not verda.capture_date_known
    assert verda.fetched_at == datetime(2023, 11, 24, tzinfo=UTC)
    assert state.providers["aws"].fetched_at == aws_then
    assert state.providers["lambda"].origin is Origin.LIVE
