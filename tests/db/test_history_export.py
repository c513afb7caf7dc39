"""``gpuscout history export``: daily Parquet files that polars reads, and their manifest."""

from __future__ import annotations

import hashlib
import json
from datetime import date, timedelta
from pathlib import Path

import polars as pl
import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from gpuscout.adapters.gpus import gpus_named
from gpuscout.db.engine import make_engine
from gpuscout.db.history import daily_index
from gpuscout.db.history_export import export_history
from gpuscout.db.migrate import upgrade
from gpuscout.service.cli import app
from gpuscout.service.settings import get_settings

from .test_rollups import grow_history

LAST = date(2025, 3, 12)


def _read(directory: Path) -> pl.DataFrame:
    return pl.scan_parquet(
        directory / "prices" / "**" / "*.parquet", hive_partitioning=True
    ).collect()


def test_each_day_holds_the_prices_the_index_counts(engine: Engine, tmp_path: Path) -> None:
    grow_history(engine, 5)
    result = export_history(engine, tmp_path, until=LAST)
    assert result.days_written == 12 and result.days_kept == 0
    prices = _read(tmp_path)
    assert prices.height == result.rows_written
    assert prices["dt"].dtype == pl.Date and prices["dt"].n_unique() == 12
    # one row per offer and day, at the price the daily index counts
    assert prices.select("dt", "offer_key").is_unique().all()
    for day in (date(2025, 3, 1), date(2025, 3, 5), LAST):
        for term in ("on_demand", "interruptible"):
            index = daily_index(engine, gpu="H100", start=day, end=day, term=term)
            held = prices.filter(
                pl.col("dt") == day,
                pl.col("term") == term,
                pl.col("gpu_model").is_in([spec.name for spec in gpus_named("H100")]),
            )
            assert held.height == index["offers"][0]
            if held.height:
                assert held["usd_per_gpu_hour"].median() == index["median_usd_per_gpu_hour"][0]
    # money stays exact: decimal text
    assert prices["usd_per_hour"].dtype == pl.String
    assert prices.filter(pl.col("origin") == "sample").height > 0


def test_the_manifest_names_every_file_and_a_rerun_keeps_them(
    engine: Engine, tmp_path: Path
) -> None:
    grow_history(engine, 6)
    export_history(engine, tmp_path, until=LAST - timedelta(days=2))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [f["day"] for f in manifest["files"]][-1] == "2025-03-10"
    for entry in manifest["files"]:
        data = (tmp_path / entry["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    again = export_history(engine, tmp_path, until=LAST)
    assert (again.days_written, again.days_kept) == (2, 10)
    broken = tmp_path / manifest["files"][0]["path"]
    broken.write_bytes(b"not parquet")
    repaired = export_history(engine, tmp_path, until=LAST)
    assert (repaired.days_written, repaired.days_kept) == (1, 11)
    assert _read(tmp_path)["dt"].n_unique() == 12


def test_a_foreign_manifest_is_refused(engine: Engine, tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="not a gpuscout price history export"):
        export_history(engine, tmp_path, until=LAST)


def test_the_command_writes_the_finished_days(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'gpuscout.db'}"
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("GPUSCOUT_DATABASE_URL", url)
    get_settings.cache_clear()
    upgrade(url)
    engine = make_engine(url)
    try:
        grow_history(engine, 7)
    finally:
        engine.dispose()
    result = CliRunner().invoke(app, ["history", "export", str(tmp_path / "out")])
    get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert "days written" in result.stderr
    assert _read(tmp_path / "out")["dt"].max() < date.today()
