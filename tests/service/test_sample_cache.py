"""The offline sample parsed once and kept beside the data dir (``service.sample_cache``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

import gpuscout.db.current as db_current
from gpuscout.adapters.sample import manifest_bytes
from gpuscout.adapters.schema import FxTable, default_fx
from gpuscout.db.current import CurrentState
from gpuscout.db.head import no_sqlite_file
from gpuscout.service import current as current_module
from gpuscout.service import sample_cache
from gpuscout.service.current import load_sample
from gpuscout.service.settings import Settings


def cached(data_dir: Path, fx: FxTable, calls: list[int]) -> CurrentState:
    def parse() -> CurrentState:
        calls.append(1)
        return load_sample(fx)

    return sample_cache.cached_sample(data_dir, fx, manifest=manifest_bytes(), parse=parse)


def test_the_cached_state_is_the_parsed_one(tmp_path: Path) -> None:
    calls: list[int] = []
    fresh = cached(tmp_path, default_fx(), calls)
    again = cached(tmp_path, default_fx(), calls)
    assert calls == [1]  # parsed once, then read back
    assert_frame_equal(again.frame, fresh.frame)
    assert dict(again.providers) == dict(fresh.providers)
    assert (again.source, again.note, again.fx) == (fresh.source, fresh.note, fresh.fx)
    assert again.stale_providers == fresh.stale_providers
    assert len(list((tmp_path / "cache").glob("sample-*.arrow"))) == 1


def test_other_fx_rates_or_inputs_are_another_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recompute_code_digest: Callable[[], None]
) -> None:
    fx = default_fx()
    other = fx.model_copy(update={"as_of": "1999-01-01"})
    manifest = manifest_bytes()
    assert sample_cache.cache_key(fx, manifest) != sample_cache.cache_key(other, manifest)
    assert sample_cache.cache_key(fx, manifest) != sample_cache.cache_key(fx, manifest + b"#")
    key = sample_cache.cache_key(fx, manifest)
    monkeypatch.setattr(db_current, "_version", lambda: "99.0")
    assert sample_cache.cache_key(fx, manifest) == key  # the digest is the process's
    recompute_code_digest()  # as another process would
    assert sample_cache.cache_key(fx, manifest) != key
    calls: list[int] = []
    cached(tmp_path, fx, calls)
    cached(tmp_path, other, calls)
    assert calls == [1, 1]
    assert len(list((tmp_path / "cache").glob("sample-*.arrow"))) == 1  # the old one removed


def test_a_changed_source_file_is_another_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recompute_code_digest: Callable[[], None]
) -> None:
    fake_root = tmp_path / "root"
    (fake_root / "adapters").mkdir(parents=True)
    (fake_root / "pricing").mkdir()
    (fake_root / "db").mkdir()
    (fake_root / "db" / "current.py").write_text("x = 1\n")
    source = fake_root / "adapters" / "gpus_data.csv"
    source.write_text("a\n")
    monkeypatch.setattr(db_current, "_ROOT", fake_root)
    recompute_code_digest()
    before = sample_cache.cache_key(default_fx(), b"")
    source.write_text("a,b\n")
    recompute_code_digest()
    assert sample_cache.cache_key(default_fx(), b"") != before


def test_an_unreadable_cache_is_parsed_again(tmp_path: Path) -> None:
    calls: list[int] = []
    cached(tmp_path, default_fx(), calls)
    (frame_file,) = (tmp_path / "cache").glob("sample-*.arrow")
    frame_file.write_bytes(b"not arrow")
    state = cached(tmp_path, default_fx(), calls)
    assert calls == [1, 1] and state.frame.height > 0
    assert cached(tmp_path, default_fx(), calls).frame.height == state.frame.height
    assert calls == [1, 1]  # written again


def test_an_unwritable_data_dir_still_answers(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    calls: list[int] = []
    state = cached(blocker, default_fx(), calls)  # cache dir would be under a file
    assert calls == [1] and state.frame.height > 0


def test_no_sqlite_file_is_no_offers_and_is_not_created(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    state = current_module.load_current(settings=settings)
    assert state.source == "sample"
    assert not (tmp_path / "data" / "gpuscout.db").exists()
    assert list((tmp_path / "data" / "cache").glob("sample-*.arrow"))
    assert no_sqlite_file(f"sqlite:///{tmp_path}/x.db")
    assert not no_sqlite_file(f"sqlite:///{blocked(tmp_path)}/x.db")
    assert not no_sqlite_file("sqlite:///:memory:")
    assert not no_sqlite_file("postgresql+psycopg://h/db")


def blocked(tmp_path: Path) -> Path:
    """A path under a regular file: SQLite cannot create a database there."""
    file = tmp_path / "a-file"
    file.write_text("x")
    return file
