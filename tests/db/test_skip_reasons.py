"""A snapshot stores what each provider's run skipped, by reason, and the current state read
back names it: on SQLite and PostgreSQL, and on a database migrated from before it was."""

from __future__ import annotations

import dataclasses
import json

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from gpuscout.adapters.base import SkippedRecord
from gpuscout.adapters.collect import ProviderRun
from gpuscout.adapters.skip_summary import SkipSummary, summarise_skips
from gpuscout.db.engine import make_engine
from gpuscout.db.migrate import upgrade
from gpuscout.db.models import SnapshotProvider
from gpuscout.db.snapshots import store_snapshot

from .factories import T0, at, current, failed, offer, ok, old_table

NOT_PROVISIONED = "region JarvisLabs does not provision (unknown-region)"
SKIPPED = [
    SkippedRecord(NOT_PROVISIONED, "jarvislabs:unknown-region/H100"),
    SkippedRecord(NOT_PROVISIONED, "jarvislabs:unknown-region/A100"),
    SkippedRecord("no GPU (CPU-only instance type)", "cpu-1"),
]


def with_skips(run: ProviderRun) -> ProviderRun:
    return dataclasses.replace(run, skipped=list(SKIPPED))


def stored_reasons(engine: Engine) -> dict[str, str | None]:
    runs = SnapshotProvider.__table__.c
    with engine.connect() as c:
        return {p: r for p, r in c.execute(sa.select(runs.provider, runs.skip_reasons))}


def test_skip_reasons_are_stored_and_read_back(engine: Engine) -> None:
    runs = [with_skips(ok("jarvislabs", [offer("jarvislabs")])), ok("acme", [offer("acme")])]
    store_snapshot(engine, runs, started_at=T0, finished_at=T0)
    stored = stored_reasons(engine)
    assert stored["acme"] is None  # nothing skipped
    assert json.loads(stored["jarvislabs"] or "") == {
        "reasons": {NOT_PROVISIONED: 2, "no GPU (CPU-only instance type)": 1},
        "other": 0,
    }
    state = current(engine)
    assert state.providers["jarvislabs"].skipped == summarise_skips(SKIPPED)
    assert state.providers["acme"].skipped == SkipSummary()
    # stored whole; the answer names the offers lost, not the CPU-only instance type
    assert state.skipped_lines == [f"jarvislabs skipped 2 rows: {NOT_PROVISIONED}"]
    assert state.skipped_note is not None and NOT_PROVISIONED in state.skipped_note


def test_a_failed_run_after_leaves_the_held_offers_reasons_unknown(engine: Engine) -> None:
    """The skips named are those of the run whose offers are held: once a later run fails,
    the held offers are older than the latest attempt, whose skips are not theirs."""
    store_snapshot(
        engine,
        [with_skips(ok("jarvislabs", [offer("jarvislabs")]))],
        started_at=T0,
        finished_at=T0,
    )
    store_snapshot(engine, [failed("jarvislabs", at(1))], started_at=at(1), finished_at=at(1))
    state = current(engine, now=at(2))
    assert state.stale_providers == ["jarvislabs"]
    assert state.providers["jarvislabs"].skipped is None
    assert state.skipped_note is None


def test_migration_0011_leaves_earlier_runs_without_reasons(db_url: str) -> None:
    """A run stored before 0011 keeps its count and no reasons (NULL): the state read after
    the upgrade names its count alone, and the next snapshot stores reasons."""
    snapshot = old_table(
        "snapshot", "id", "started_at", "finished_at", "offer_count", "history_added",
        "history_closed", "origin",
    )  # fmt: skip
    runs = old_table(
        "snapshot_provider", "snapshot_id", "provider", "status", "started_at", "duration_s",
        "offer_count", "skipped_count", "history_added", "history_closed",
    )  # fmt: skip
    status = old_table(
        "provider_status", "provider", "last_status", "last_attempt_at", "last_success_at",
        "last_snapshot_id", "offers_fetched_at", "offer_count",
    )  # fmt: skip
    counts = {"offer_count": 0, "history_added": 0, "history_closed": 0}
    upgrade(db_url, "0010")
    engine = make_engine(db_url)
    try:
        with engine.begin() as c:
            # no id given: PostgreSQL's sequence gives it, as the next snapshot's
            snapshot_id = c.execute(
                sa.insert(snapshot)
                .values(started_at=T0, finished_at=T0, origin="live", **counts)
                .returning(sa.column("id"))
            ).scalar_one()
            c.execute(
                sa.insert(runs),
                [
                    {
                        "snapshot_id": snapshot_id,
                        "provider": "jarvislabs",
                        "status": "ok",
                        "started_at": T0,
                        "duration_s": 0.1,
                        "skipped_count": 3,
                        **counts,
                    }
                ],
            )
            c.execute(
                sa.insert(status),
                [
                    {
                        "provider": "jarvislabs",
                        "last_status": "ok",
                        "last_attempt_at": T0,
                        "last_success_at": T0,
                        "last_snapshot_id": snapshot_id,
                        "offers_fetched_at": T0,
                        "offer_count": 0,
                    }
                ],
            )
    finally:
        engine.dispose()
    upgrade(db_url)
    engine = make_engine(db_url)
    try:
        assert stored_reasons(engine) == {"jarvislabs": None}
        state = current(engine)
        assert state.providers["jarvislabs"].skipped == SkipSummary(other=3)
        assert state.skipped_lines == ["jarvislabs skipped 3 rows"]
        run = with_skips(ok("jarvislabs", [offer("jarvislabs")], at(1)))
        store_snapshot(engine, [run], started_at=at(1), finished_at=at(1))
        state = current(engine, now=at(2))
        assert state.providers["jarvislabs"].skipped == summarise_skips(SKIPPED)
    finally:
        engine.dispose()
