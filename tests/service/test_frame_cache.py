"""The frame of the stored current offers kept beside the data dir (``service.frame_cache``):
read back while the stored offers are the same, built again when they, the FX table or the
package change, and never trusted when the file is broken."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from sqlalchemy.engine import Engine

import gpuscout.db.current
import gpuscout.service.current
import gpuscout.service.frame_cache
from gpuscout.adapters.schema import Fabric, GpuFormFactor, GpuInterconnect, RentalTerm, default_fx
from gpuscout.db.snapshots import store_snapshot
from gpuscout.pricing.frame import ENUM_COLUMNS, OFFER_SCHEMA, offers_to_frame
from gpuscout.service import sample_cache
from gpuscout.service.current import load_current
from gpuscout.service.settings import Settings
from tests.db.factories import T0, at, failed, offer, ok
from tests.pricing.factories import make_offer


def _files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "cache").glob("current-*.arrow"))


def _settings(db_url: str, data_dir: Path) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir, database_url=db_url)  # type: ignore[call-arg]


def test_the_kept_frame_is_the_built_one_until_a_new_snapshot(
    engine: Engine, db_url: str, tmp_path: Path, framings: list[int]
) -> None:
    settings = _settings(db_url, tmp_path)
    runs = [ok("alpha", [offer("alpha"), offer("alpha", "o2")]), ok("beta", [offer("beta")])]
    store_snapshot(engine, runs, started_at=T0, finished_at=T0)
    built = load_current(settings=settings)
    again = load_current(settings=settings)
    assert framings == [1]  # built once, then read back
    assert_frame_equal(again.frame, built.frame)
    assert again.providers == built.providers and again.snapshot_at == built.snapshot_at
    assert len(_files(tmp_path)) == 1

    # a new snapshot (alpha fails: its offers are kept, its outcome is stale)
    store_snapshot(engine, [failed("alpha", at(2))], started_at=at(2), finished_at=at(2))
    stale = load_current(settings=settings)
    assert framings == [1, 1] and stale.stale_providers == ["alpha"]
    # the same offers, framed again and equal; the old file replaced by the new one
    assert_frame_equal(stale.frame, built.frame)
    assert len(_files(tmp_path)) == 1
    # new prices: a new frame
    store_snapshot(engine, [ok("beta", [offer("beta", price="1.50")], at(3))], started_at=at(3),
                   finished_at=at(3))  # fmt: skip
    repriced = load_current(settings=settings)
    assert framings == [1, 1, 1]
    assert repriced.frame.filter(pl.col("provider") == "beta")["usd_per_hour"].to_list() == [1.5]
    load_current(settings=settings)
    assert framings == [1, 1, 1]


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_bytes(b"not arrow at all"),
        lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
        lambda path: pl.read_ipc(path.read_bytes()).drop("usd_per_hour").write_ipc(path),
        # a file of a version whose frame had no offer facts: framed again, not ranked
        lambda path: pl.read_ipc(path.read_bytes()).drop("break_even").write_ipc(path),
        lambda path: pl.read_ipc(path.read_bytes()).head(1).write_ipc(path),
        lambda path: (
            pl.read_ipc(path.read_bytes())
            .with_columns(pl.col("gpu_count").cast(pl.Float64))
            .write_ipc(path)
        ),
    ],
    ids=["garbage", "truncated", "missing-column", "missing-fact", "missing-rows", "other-type"],
)
def test_a_broken_file_is_ignored_and_built_again(
    engine: Engine, db_url: str, tmp_path: Path, framings: list[int], damage: object
) -> None:
    settings = _settings(db_url, tmp_path)
    store_snapshot(engine, [ok("alpha", [offer("alpha"), offer("alpha", "o2")])],
                   started_at=T0, finished_at=T0)  # fmt: skip
    built = load_current(settings=settings)
    (path,) = _files(tmp_path)
    damage(path)  # type: ignore[operator]
    again = load_current(settings=settings)
    assert framings == [1, 1]
    assert_frame_equal(again.frame, built.frame)
    load_current(settings=settings)  # the file written anew is whole
    assert framings == [1, 1]


def test_another_package_version_or_fx_table_is_another_file(
    engine: Engine, db_url: str, tmp_path: Path, framings: list[int],
    monkeypatch: pytest.MonkeyPatch, recompute_code_digest: Callable[[], None],
) -> None:  # fmt: skip
    settings = _settings(db_url, tmp_path)
    store_snapshot(engine, [ok("alpha", [offer("alpha")])], started_at=T0, finished_at=T0)
    load_current(settings=settings)
    monkeypatch.setattr(sample_cache, "_version", lambda: "99.0")
    recompute_code_digest()  # the new version is another process
    load_current(settings=settings)
    assert framings == [1, 1]
    other = default_fx().model_copy(update={"as_of": "1999-01-01"})
    monkeypatch.setattr(gpuscout.service.current, "fx_table", lambda settings: other)
    assert load_current(settings=settings).fx.as_of == "1999-01-01"
    assert framings == [1, 1, 1]
    assert len(_files(tmp_path)) == 1


def test_an_unwritable_data_dir_only_costs_the_time(
    engine: Engine, db_url: str, tmp_path: Path, framings: list[int]
) -> None:
    (tmp_path / "cache").write_text("a file where the directory would be")
    settings = _settings(db_url, tmp_path)
    store_snapshot(engine, [ok("alpha", [offer("alpha")])], started_at=T0, finished_at=T0)
    assert load_current(settings=settings).frame.height == 1
    assert load_current(settings=settings).frame.height == 1
    assert framings == [1, 1]


def test_a_warm_load_of_an_sqlite_file_reads_no_sqlalchemy(engine: Engine, db_url: str,
                                                          tmp_path: Path) -> None:  # fmt: skip
    """What makes a warm ``gpuscout offers`` on a stored snapshot fast (#15): the kept
    state is found with the standard library's sqlite3; SQLAlchemy is not even imported."""
    if not db_url.startswith("sqlite"):
        pytest.skip("the SQLite file's own fast path")
    store_snapshot(engine, [ok("alpha", [offer("alpha")])], started_at=T0, finished_at=T0)
    load_current(settings=_settings(db_url, tmp_path))  # keeps the frame and the state
    code = (
        "import sys; from pathlib import Path; from gpuscout.service.current import load_current;"
        "from gpuscout.service.settings import Settings;"
        f"s = Settings(_env_file=None, data_dir=Path({str(tmp_path)!r}), database_url={db_url!r});"
        "c = load_current(settings=s);"
        "print(c.source, c.frame.height, c.snapshot_at.isoformat(), 'sqlalchemy' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert done.stdout.split() == ["database", "1", T0.isoformat(), "False"], done.stderr


def test_loads_started_together_frame_the_records_once(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API's workers start together: one frames the stored records, the others wait
    for its lock and read the frame (and state) it kept, instead of framing them too."""
    settings = _settings(db_url, tmp_path)
    store_snapshot(engine, [ok("alpha", [offer("alpha"), offer("alpha", "o2")])],
                   started_at=T0, finished_at=T0)  # fmt: skip
    # a framing load waits until the other load frames too, or waits for the lock
    both_there = threading.Event()
    framed: list[str] = []
    real_read, real_time = gpuscout.db.current._read_frame, gpuscout.service.frame_cache.time

    def read_frame(*args: object, **kwargs: object) -> pl.DataFrame:
        framed.append(threading.current_thread().name)
        if len(framed) == 2:
            both_there.set()
        both_there.wait(timeout=10)
        return real_read(*args, **kwargs)  # type: ignore[arg-type]

    def sleep(seconds: float) -> None:  # only a load waiting for the lock sleeps
        both_there.set()
        real_time.sleep(seconds)

    monkeypatch.setattr(gpuscout.db.current, "_read_frame", read_frame)
    clock = types.SimpleNamespace(monotonic=real_time.monotonic, sleep=sleep)
    monkeypatch.setattr(gpuscout.service.frame_cache, "time", clock)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        states = list(pool.map(lambda _: load_current(settings=settings), range(2)))
    assert len(framed) == 1 and both_there.is_set()
    assert [s.frame.height for s in states] == [2, 2]
    assert_frame_equal(states[0].frame, states[1].frame)


def test_a_framing_lock_held_elsewhere_is_waited_for_then_done_without(tmp_path: Path) -> None:
    store = gpuscout.service.frame_cache.FileFrameStore(tmp_path)
    with store.framing() as held:
        assert held
        with store.framing(wait_s=0.05) as second:  # another open file: as another process
            assert not second
    with store.framing() as again:  # given back on leaving
        assert again


def test_a_kept_frame_keeps_its_enum_columns(tmp_path: Path) -> None:
    """The Enum columns (the term, :data:`pricing.frame.ENUM_COLUMNS`) come back from the
    file as the same Enums, values and nulls included: a ranking of the kept frame compares
    codes as it does on the built one."""
    offers = [
        make_offer(offer_id="a", fabric=Fabric.ROCE, gpu_interconnect=GpuInterconnect.NVLINK),
        make_offer(offer_id="b", gpu_form_factor=GpuFormFactor.OAM, term=RentalTerm.COMMIT_1Y),
    ]
    frame = offers_to_frame(offers)
    store = gpuscout.service.frame_cache.FileFrameStore(tmp_path)
    store.put("key", frame)
    kept = store.get("key", frame.height)
    assert kept is not None
    assert_frame_equal(kept, frame, check_exact=True)
    for name in (*ENUM_COLUMNS, "term"):
        assert isinstance(kept.schema[name], pl.Enum) and kept.schema[name] == OFFER_SCHEMA[name]


def test_the_kept_file_is_compressed_and_an_uncompressed_one_still_reads(tmp_path: Path) -> None:
    """The file is zstd-compressed Arrow IPC (a snapshot's frame is mostly empty or
    repeated columns: 100k offers ~4 MB against ~75); one an earlier version wrote
    uncompressed, under the same key, is read all the same."""
    frame = offers_to_frame([make_offer(offer_id=str(i)) for i in range(500)])
    store = gpuscout.service.frame_cache.FileFrameStore(tmp_path)
    store.put("key", frame)
    plain = tmp_path / "plain.arrow"
    frame.write_ipc(plain, compression="uncompressed")
    assert store.path("key").stat().st_size * 5 < plain.stat().st_size
    frame.write_ipc(store.path("key"), compression="uncompressed")
    kept = store.get("key", frame.height)
    assert kept is not None
    assert_frame_equal(kept, frame, check_exact=True)


def test_a_kept_frame_with_text_where_an_enum_belongs_is_framed_again(tmp_path: Path) -> None:
    """A file of a version that held the fabric as text is another schema: not read."""
    frame = offers_to_frame([make_offer(fabric=Fabric.ROCE)])
    store = gpuscout.service.frame_cache.FileFrameStore(tmp_path)
    store.put("key", frame.with_columns(pl.col("fabric").cast(pl.String)))
    assert store.get("key", frame.height) is None
    assert not store.path("key").exists()


def test_a_read_only_data_dir_waits_for_the_framing_lock_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API's data dir is the scheduler's, mounted read-only: its load cannot create or
    append to the lock file, but it takes the lock through a read handle, so it waits for
    the snapshot that frames into the dir and reads what that kept."""
    writer = gpuscout.service.frame_cache.FileFrameStore(tmp_path)
    with writer.framing():
        pass  # the lock file exists, made by the writer
    real_open = Path.open

    def read_only(self: Path, mode: str = "r", *args: object, **kwargs: object) -> object:
        if self.name == "framing.lock" and mode != "rb":
            raise PermissionError(30, "Read-only file system", str(self))
        return real_open(self, mode, *args, **kwargs)  # type: ignore[call-overload]

    reader = gpuscout.service.frame_cache.FileFrameStore(tmp_path)
    with writer.framing() as written:
        monkeypatch.setattr(Path, "open", read_only)
        with reader.framing(wait_s=0.05) as waited:  # the writer holds it: waited, not taken
            assert written and not waited
    with reader.framing() as held:  # given back: taken through the read handle
        assert held
