"""``take_snapshot``: the one way to take a snapshot (job lock, migrations, store, prune), and
building adapters from the settings. Run on both databases."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from adapters.collect import ProviderRun
from db.engine import make_engine
from db.locks import job_lock
from db.snapshots import store_snapshot
from service.settings import Settings
from service.snapshots import (
    SNAPSHOT_LOCK,
    SnapshotLocked,
    SnapshotRecent,
    UnknownProvider,
    build_adapters,
    take_snapshot,
)
from tests.db.factories import at, counts, current, offer, ok


def settings_for(db_url: str, tmp_path: Path, **extra: object) -> Settings:
    return Settings(data_dir=tmp_path, database_url=db_url, **extra)  # type: ignore[arg-type]


class Recorder:
    """A fetch that returns ``runs`` and notes, in ``events``, that it ran."""

    def __init__(self, runs: list[ProviderRun], events: list[str] | None = None) -> None:
        self.runs = runs
        self.events = events if events is not None else []

    def __call__(self) -> list[ProviderRun]:
        self.events.append("fetch")
        return self.runs


def test_migrates_an_empty_database_then_stores(db_url: str, tmp_path: Path) -> None:
    when = at(days=1)
    fetch = Recorder([ok("alpha", [offer()], when)])
    result = take_snapshot(settings_for(db_url, tmp_path), fetch=fetch, now=lambda: when)
    assert result.summary.snapshot_id == 1 and result.summary.offer_count == 1
    assert [r.provider for r in result.runs] == ["alpha"]
    assert (result.summary.started_at, result.summary.finished_at) == (when, when)
    engine = make_engine(db_url)
    try:
        assert current(engine).snapshot_id == 1
    finally:
        engine.dispose()


def test_prunes_by_the_retention_settings_after_storing(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    for day, price in ((0, "1"), (10, "2"), (20, "3")):
        when = at(days=day)
        store_snapshot(
            engine, [ok("alpha", [offer(price=price)], when)], started_at=when, finished_at=when
        )
    settings = settings_for(db_url, tmp_path, retention_snapshots_days=1, retention_history_days=1)
    when = at(days=40)
    result = take_snapshot(
        settings,
        fetch=Recorder([ok("alpha", [offer(price="4")], when)]),
        engine=engine,
        now=lambda: when,
    )
    assert result.pruned.snapshots_deleted == 3 and result.pruned.history_deleted == 2
    assert counts(engine) == (1, 1, 2)


def test_another_runner_holding_the_lock_means_nothing_is_fetched_or_stored(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    fetch = Recorder([ok("alpha", [offer()])])
    settings = settings_for(db_url, tmp_path)
    with job_lock(engine, SNAPSHOT_LOCK) as held:
        assert held
        with pytest.raises(SnapshotLocked, match="another runner is taking a snapshot now"):
            take_snapshot(
                settings, fetch=fetch, engine=engine, on_start=lambda: fetch.events.append("start")
            )
    assert fetch.events == [] and counts(engine) == (0, 0, 0)
    with job_lock(engine, SNAPSHOT_LOCK) as free:  # released by the runner that skipped, too
        assert free


def test_on_start_runs_under_the_lock_before_the_fetch(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    events: list[str] = []

    def on_start() -> None:
        with job_lock(engine, SNAPSHOT_LOCK) as got:
            events.append(f"start (lock free: {got})")

    fetch = Recorder([ok("alpha", [offer()])], events)
    take_snapshot(settings_for(db_url, tmp_path), fetch=fetch, engine=engine, on_start=on_start)
    assert events == ["start (lock free: False)", "fetch"]


def test_skip_within_skips_after_a_recent_snapshot(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    store_snapshot(engine, [ok("alpha", [offer()])], started_at=at(), finished_at=at())
    fetch = Recorder([ok("alpha", [offer()])])
    settings = settings_for(db_url, tmp_path)
    with pytest.raises(SnapshotRecent, match="one finished at 2025-03-03T12:00:00"):
        take_snapshot(
            settings,
            fetch=fetch,
            engine=engine,
            skip_within=timedelta(minutes=30),
            now=lambda: at(hours=0.25),
        )
    assert fetch.events == []
    later = take_snapshot(
        settings, fetch=fetch, engine=engine, skip_within=timedelta(minutes=30), now=lambda: at(1)
    )
    assert later.summary.snapshot_id == 2 and fetch.events == ["fetch"]


def test_build_adapters_from_settings(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, providers_disabled=["vastai"])
    names = [a.name for a in build_adapters(settings)]
    assert "vastai" not in names and "lambda" in names
    assert [a.name for a in build_adapters(settings, ["vastai"])] == ["vastai"]  # asked for
    with pytest.raises(UnknownProvider, match=r"unknown provider 'nope'; known: .*lambda"):
        build_adapters(settings, ["lambda", "nope"])
    assert issubclass(UnknownProvider, ValueError)
