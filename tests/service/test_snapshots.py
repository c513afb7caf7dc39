"""``take_snapshot``: the one way to take a snapshot (job lock, migrations, store, prune), and
building adapters from the settings. Run on both databases."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.db.engine import make_engine
from gpuscout.db.locks import job_lock
from gpuscout.db.runs import recent_runs
from gpuscout.db.snapshots import store_snapshot
from gpuscout.service.settings import Settings
from gpuscout.service.snapshots import (
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


def test_build_adapters_points_each_adapter_at_its_base_url_setting(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        lambda_base_url="http://127.0.0.1:9/lambda",
        http_timeout_s=7,
        http_retries=2,
    )
    by = {a.name: a for a in build_adapters(settings, ["lambda", "vastai", "aws"])}
    assert by["lambda"].url("/instance-types") == "http://127.0.0.1:9/lambda/instance-types"
    assert by["vastai"].url("/bundles/") == "https://console.vast.ai/api/v0/bundles/"
    assert by["aws"].url("/", service="ec2", region="eu-west-1") == (
        "https://ec2.eu-west-1.amazonaws.com/"
    )
    assert (by["lambda"].policy.timeout_s, by["lambda"].policy.attempts) == (7, 2)


def test_each_attempt_is_recorded_and_a_failed_one_names_its_error(
    db_url: str, tmp_path: Path
) -> None:
    settings = settings_for(db_url, tmp_path)

    def broken() -> list[ProviderRun]:
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        take_snapshot(settings, fetch=broken)
    result = take_snapshot(settings, fetch=Recorder([ok("alpha", [offer()])]))
    assert result.aborted == ()  # the failed one finished as failed: not left running
    engine = make_engine(db_url)
    try:
        recorded = recent_runs(engine, now=at(days=9999), stale_after_s=60)
    finally:
        engine.dispose()
    assert [(r.status, r.error, r.snapshot_id) for r in recorded] == [
        ("ok", None, result.summary.snapshot_id),
        ("failed", "RuntimeError: disk on fire", None),
    ]


def test_the_guard_thresholds_come_from_the_settings(db_url: str, tmp_path: Path) -> None:
    many = [offer(offer_id=f"o{i}") for i in range(30)]
    take_snapshot(settings_for(db_url, tmp_path), fetch=Recorder([ok("alpha", many)]))
    strict = settings_for(
        db_url, tmp_path, snapshot_guard_min_count=0, snapshot_guard_drop_share=0.1
    )
    result = take_snapshot(strict, fetch=Recorder([ok("alpha", many[:25], at(1))]))
    (change,) = result.summary.providers
    assert change.guarded and "25 offers, fell from a baseline of 30" in (change.error or "")
    (run,) = result.runs  # as stored: what the API and the scheduler's metrics report
    assert (run.status, run.error, run.offers) == (RunStatus.ERROR, change.error, [])
    lenient = settings_for(db_url, tmp_path)  # 5 fewer is neither > 50% nor > 20 offers
    (change,) = take_snapshot(
        lenient, fetch=Recorder([ok("alpha", many[:25], at(2))])
    ).summary.providers
    assert not change.guarded and change.offer_count == 25


def test_a_disabled_provider_is_recorded_as_skipped_and_its_held_offers_go_stale(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Disabling a provider stopped its fetches, but its stored offers went on ranking as
    current, and nothing said it was disabled."""
    from gpuscout.service import snapshots
    from gpuscout.service.current import load_current

    before = at(days=1)
    take_snapshot(
        settings_for(db_url, tmp_path),
        fetch=Recorder([ok("vastai", [offer(provider="vastai")], before)]),
        now=lambda: before,
    )
    settings = settings_for(db_url, tmp_path, providers_disabled=["vastai"])
    monkeypatch.setattr(snapshots, "stream_adapters", _no_fetch)  # every enabled adapter
    result = take_snapshot(settings)  # the default fetch: enabled ones, then the disabled
    (disabled,) = [r for r in result.runs if r.provider == "vastai"]
    assert disabled.status is RunStatus.SKIPPED and disabled.error == snapshots.DISABLED
    state = load_current(settings=settings)
    vastai = state.providers["vastai"]
    assert vastai.stale and vastai.error == snapshots.DISABLED
    assert vastai.offer_count == 1  # its earlier offers are held, said to be stale
    assert "vastai" in state.stale_providers


async def _no_fetch(
    adapters: object, settings: object, **_: object
) -> AsyncGenerator[ProviderRun, None]:
    """No provider answers (the default fetch streams: an async generator of none)."""
    for run in ():
        yield run


def _drop_kept(db_url: str) -> None:
    import sqlalchemy as sa

    engine = make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(sa.text("DELETE FROM kept_frame"))
    finally:
        engine.dispose()


def test_the_snapshot_keeps_the_frame_every_reader_then_loads(
    db_url: str, tmp_path: Path, framings: list[int]
) -> None:
    """Framing the stored offers is done once, by the snapshot that stored them: a load
    afterwards (an API replica's start on any host, the digest, a CLI call) reads the
    frame kept in the database, the same frame a load that frames the records builds."""
    from polars.testing import assert_frame_equal

    from gpuscout.service.current import load_current

    settings = settings_for(db_url, tmp_path)
    runs = [ok("alpha", [offer(), offer(offer_id="o2", price="3")]), ok("beta", [offer("beta")])]
    take_snapshot(settings, fetch=Recorder(runs))
    framings.clear()  # the snapshot's own framing: what follows is the readers'
    loaded = load_current(settings=settings_for(db_url, tmp_path / "replica"))
    assert framings == [] and loaded.source == "database" and loaded.frame.height == 3
    _drop_kept(db_url)
    fresh = load_current(settings=settings)
    assert framings == [1]
    assert_frame_equal(loaded.frame, fresh.frame)
    assert loaded.providers == fresh.providers


def test_a_frame_not_kept_costs_the_next_load_the_time_not_the_snapshot(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import gpuscout.db.current
    from gpuscout.service.current import load_current

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("database busy")

    monkeypatch.setattr(gpuscout.db.current, "keep_current_frame", broken)
    settings = settings_for(db_url, tmp_path)
    result = take_snapshot(settings, fetch=Recorder([ok("alpha", [offer()])]))
    assert result.summary.offer_count == 1
    assert "snapshot stored; its frame not kept" in caplog.text and "database busy" in caplog.text
    monkeypatch.undo()
    assert _kept_rows(db_url) == []
    assert load_current(settings=settings).frame.height == 1


def _kept_rows(db_url: str) -> list[tuple[str, int, int]]:
    import sqlalchemy as sa

    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            statement = "SELECT key, snapshot_id, row_count FROM kept_frame"
            return [tuple(row) for row in connection.execute(sa.text(statement))]
    finally:
        engine.dispose()


def test_a_new_snapshot_replaces_the_kept_frame(db_url: str, tmp_path: Path) -> None:
    settings = settings_for(db_url, tmp_path)
    runs = [ok("alpha", [offer(), offer(offer_id="o2", price="3")]), ok("beta", [offer("beta")])]
    take_snapshot(settings, fetch=Recorder(runs))
    (kept,) = _kept_rows(db_url)
    assert kept[2] == 3
    # one row, of alpha's one offer and beta's
    take_snapshot(settings, fetch=Recorder([ok("alpha", [offer()])]))
    (again,) = _kept_rows(db_url)
    assert again[1] > kept[1] and again[2] == 2


def test_a_kept_frame_of_other_code_or_broken_bytes_is_framed_again_and_never_written_by_readers(
    db_url: str,
    tmp_path: Path,
    framings: list[int],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sqlalchemy as sa

    import gpuscout.db.current
    from gpuscout.service.current import load_current

    settings = settings_for(db_url, tmp_path)
    take_snapshot(settings, fetch=Recorder([ok("alpha", [offer()])]))
    engine = make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(sa.text("UPDATE kept_frame SET frame = :b"), {"b": b"not arrow"})
    finally:
        engine.dispose()
    framings.clear()
    loaded = load_current(settings=settings)
    assert framings == [1] and loaded.frame.height == 1
    assert "kept frame ignored (unreadable" in caplog.text
    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            data = connection.execute(sa.text("SELECT frame FROM kept_frame")).scalar_one()
    finally:
        engine.dispose()
    assert bytes(data) == b"not arrow"  # the reader framed, and wrote nothing
    # another version of the code digests another key: its frame is not this code's
    take_snapshot(settings, fetch=Recorder([ok("alpha", [offer(), offer(offer_id="o2")])]))
    framings.clear()
    assert load_current(settings=settings).frame.height == 2
    assert framings == []  # this code reads the new snapshot's frame
    real = gpuscout.db.current.code_digest
    monkeypatch.setattr(gpuscout.db.current, "code_digest", lambda: real() + "-other")
    load_current(settings=settings)
    assert framings == [1]
