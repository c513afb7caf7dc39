"""``gpuscout snapshot`` storing, ``db upgrade``, ``history`` and ``offers`` on a fresh
data directory, on both databases."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscout.adapters.sample import replay_sample
from gpuscout.db.engine import make_engine
from gpuscout.db.locks import job_lock
from gpuscout.db.migrate import upgrade
from gpuscout.service.cli import app
from gpuscout.service.commands import providers as providers_command
from gpuscout.service.settings import get_settings
from gpuscout.service.snapshots import SNAPSHOT_LOCK
from tests.db.factories import current

runner = CliRunner()


@pytest.fixture
def fresh_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh data dir; on PostgreSQL the database URL points at a fresh schema."""
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path / "data"))
    if db_url.startswith("sqlite"):
        monkeypatch.delenv("GPUSCOUT_DATABASE_URL", raising=False)
        url = f"sqlite:///{tmp_path / 'data' / 'gpuscout.db'}"
    else:
        monkeypatch.setenv("GPUSCOUT_DATABASE_URL", db_url)
        url = db_url
    get_settings.cache_clear()
    yield url
    get_settings.cache_clear()


def test_snapshot_sample_is_stored_then_served(fresh_env: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["snapshot", "--sample"])
    assert "stored snapshot 1" in result.stdout, result.output
    assert "offers of the offline sample" in " ".join(result.stdout.split())
    engine = make_engine(fresh_env)
    try:
        state = current(engine)
    finally:
        engine.dispose()
    assert state.frame.height and state.snapshot_id == 1
    # stored from the sample, and still said to be: every provider's offers are sample ones
    assert state.source == "database" and state.sample and state.origin == "sample"
    assert state.sample_providers == sorted(state.providers)

    again = runner.invoke(app, ["snapshot", "--sample"])
    assert "stored snapshot 2" in again.stdout, again.output
    assert "price history +0 / closed 0" in again.stdout  # same sample: nothing changed

    offers = runner.invoke(app, ["offers", "--limit", "5"])
    assert offers.exit_code == 0, offers.output
    # served from the database, and still said to be the sample, with its dates
    assert "note: offline sample: recorded prices, not live" in offers.stderr
    assert "offers (sample)" in offers.stdout
    assert "verda capture date unknown (on record by 2023-11-24)" in " ".join(offers.stderr.split())

    history = runner.invoke(app, ["history", "--gpu", "H100", "--days", "30"])
    assert history.exit_code == 0, history.output
    assert "USD per GPU-hour" in history.stdout
    chart = tmp_path / "h100.png"
    plotted = runner.invoke(app, ["history", "--gpu", "H100", "--days", "30", "--plot", str(chart)])
    assert plotted.exit_code == 0, plotted.output
    assert chart.read_bytes().startswith(b"\x89PNG")


def test_snapshot_while_another_runner_holds_the_lock_exits_1(fresh_env: str) -> None:
    upgrade(fresh_env)
    engine = make_engine(fresh_env)
    try:
        with job_lock(engine, SNAPSHOT_LOCK) as held:
            assert held
            result = runner.invoke(app, ["snapshot", "--sample"])
        assert result.exit_code == 1, result.output
        message = "error: another runner is taking a snapshot now (it holds the snapshot lock)"
        assert result.stderr.splitlines()[-1] == message
        assert current(engine).snapshot_id is None  # nothing stored
    finally:
        engine.dispose()


def test_snapshot_of_an_unknown_provider_is_a_usage_error(fresh_env: str) -> None:
    result = runner.invoke(app, ["snapshot", "--provider", "nope"])
    assert result.exit_code == 2, result.output
    assert "unknown provider 'nope'" in result.stderr and "--provider" in result.stderr


def test_history_on_an_empty_database_says_so(fresh_env: str) -> None:
    result = runner.invoke(app, ["history", "--gpu", "H100", "--days", "3"])
    assert result.exit_code == 0, result.output
    assert "no stored prices for 'H100' (on_demand) from " in result.stderr
    assert result.stdout == ""  # no table of three empty days


def _priced_days(table: str) -> list[str]:
    """The days of a ``history`` table with offers (the offers column is the sixth; the
    share in stock, the eighth, follows)."""
    days = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 8 and cells[0][:2] == "20" and cells[5] != "0":
            days.append(cells[0])
    return days


def test_history_of_the_sample_starts_when_stored_and_says_sample(
    fresh_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample's prices were captured in 2023-2026; stored minutes ago, they are this
    database's history of today only, and the table's note and the chart say "sample"."""
    from datetime import UTC, datetime

    from gpuscout.db.history import SAMPLE_DAYS_NOTE
    from gpuscout.service.commands import db as db_commands

    assert runner.invoke(app, ["snapshot", "--sample"]).exit_code == 0
    titles: list[str] = []
    draw = db_commands._plot
    monkeypatch.setattr(
        db_commands,
        "_plot",
        lambda frame, path, title: titles.append(title) or draw(frame, path, title),
    )
    chart = tmp_path / "h100.png"
    result = runner.invoke(app, ["history", "--gpus", "H100", "--days", "30", "--plot", str(chart)])
    assert result.exit_code == 0, result.output
    today = datetime.now(UTC).date().isoformat()
    assert _priced_days(result.stdout) == [today]
    # no column of 29 empty days before it: the table starts at the first priced day
    days = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("│ 20")]
    assert days == [today]
    assert f"no stored prices before {today}: the table starts there" in result.stderr
    note = " ".join(result.stderr.split())
    assert "note: offline sample: recorded prices, not live (aws 2025-09-15" in note
    assert SAMPLE_DAYS_NOTE in note
    assert titles and titles[0].endswith("(offline sample, not live)")
    assert f"USD per GPU-hour, {today} (" in titles[0]  # the day drawn, not the 30 asked for
    assert chart.read_bytes().startswith(b"\x89PNG")


def test_history_by_region_class_and_hour(fresh_env: str) -> None:
    from datetime import UTC, datetime

    assert runner.invoke(app, ["snapshot", "--sample"]).exit_code == 0
    today = datetime.now(UTC).date().isoformat()
    region = runner.invoke(app, ["history", "--gpus", "H100", "--region-class", "north-america"])
    assert region.exit_code == 0, region.output
    assert _priced_days(region.stdout) == [today]
    assert "north-america" in region.stdout
    hourly = runner.invoke(app, ["history", "--gpus", "H100", "--hourly"])
    assert hourly.exit_code == 0, hourly.output
    now = datetime.now(UTC)
    assert now.strftime("%Y-%m-%d %H:00") in hourly.stdout and "stock" in hourly.stdout
    # a row names its hour without the year (the title has it): it fits 80 columns
    assert any(line.startswith(f"│ {now:%m-%d %H}:00 ") for line in hourly.stdout.splitlines())
    beyond = runner.invoke(app, ["history", "--gpus", "H100", "--hourly", "--days", "8"])
    assert beyond.exit_code == 2
    assert "the hourly index holds the last 7 days" in beyond.stderr


def test_history_refuses_an_unknown_gpu_as_offers_does(fresh_env: str) -> None:
    history = runner.invoke(app, ["history", "--gpus", "H10"])
    offers = runner.invoke(app, ["offers", "--sample", "--gpus", "H10"])
    assert history.exit_code == offers.exit_code == 2, history.output
    message = (
        "error: --gpus: unknown GPU model, family or vendor: 'H10'"
        " (did you mean 'H100', 'H20' or 'A10'?)"
    )
    assert history.stderr.splitlines()[-1] == offers.stderr.splitlines()[-1] == message
    assert "day" not in history.stdout  # no table of empty days


def test_history_takes_every_gpu_spelling_offers_takes(fresh_env: str) -> None:
    """A provider's spelling means what ``offers`` reads in it: ``H100 SXM`` is the
    H100-SXM5-80GB, ``4090`` the RTX-4090; each table is that model's."""
    assert runner.invoke(app, ["snapshot", "--sample"]).exit_code == 0

    def table(gpu: str) -> str:
        result = runner.invoke(app, ["history", "--gpus", gpu, "--days", "2"])
        offers = runner.invoke(app, ["offers", "--gpus", gpu, "--limit", "1"])
        assert result.exit_code == offers.exit_code == 0, result.output
        assert _priced_days(result.stdout), result.output
        return "\n".join(line for line in result.stdout.splitlines() if line.startswith("│ 20"))

    assert table("H100 SXM") == table("H100-SXM5-80GB") != table("H100")
    assert table("4090") == table("RTX-4090")


def test_db_upgrade_runs_from_any_directory(fresh_env: str, tmp_path: Path) -> None:
    env = {**os.environ, "GPUSCOUT_DATA_DIR": str(tmp_path / "elsewhere")}
    env.pop("GPUSCOUT_DATABASE_URL", None)
    command = ["db", "upgrade", "--url", fresh_env]
    done = subprocess.run(
        [sys.executable, "-c", "from gpuscout.service.cli import main; main()", *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "database at revision" in done.stderr


def test_snapshot_says_when_the_guard_kept_a_providers_last_good_offers(
    fresh_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = runner.invoke(app, ["snapshot", "--sample"])
    assert first.exit_code == 0, first.output
    sampled = replay_sample()
    emptied = [dataclasses.replace(r, offers=[]) if r.provider == "lambda" else r for r in sampled]
    monkeypatch.setattr(providers_command, "replay_sample", lambda names=None: emptied)
    # wide enough that the summary table never folds the text asserted below
    second = runner.invoke(app, ["snapshot", "--sample"], env={"COLUMNS": "200"})
    assert second.exit_code == 1, second.output  # a suspect run counts as failed
    assert "suspect (36 earlier offers kept)" in second.stdout
    assert "lambda: suspect answer, last good offers kept: 0 offers (36 stored)" in second.stderr
    assert f"1 of {len(sampled)} provider(s) failed" in second.stderr

    listed = runner.invoke(app, ["providers"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert "suspect answer" in listed.stdout  # the provider's stored error
    assert "last snapshot run 2" in listed.stderr and ": ok, stored snapshot 2" in listed.stderr


def test_providers_without_a_database_lists_the_registry_only(fresh_env: str) -> None:
    result = runner.invoke(app, ["providers"])
    assert result.exit_code == 0, result.output
    assert "lambda" in result.stdout and "last run" not in result.stdout


def test_providers_says_account_lifecycle_and_check_within_80_columns(fresh_env: str) -> None:
    result = runner.invoke(app, ["providers"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    [cudo] = [line for line in lines if line.startswith("cudo ")]
    assert cudo.split()[1:3] == ["no", "retired"]
    [runpod] = [line for line in lines if line.startswith("runpod ")]
    assert runpod.split()[2] == "deprec"
    text = " ".join(result.stdout.split())
    assert "retired 2026-03-31: CUDO Compute closed its public on-demand platform" in text
    # every setting is named whole, wrapped rather than cut
    assert "GPUSCOUT_ALIBABA_ACCESS_KEY_SECRET" in result.stdout.split() or (
        "GPUSCOUT_ALIBABA_ACCESS_KEY_SECRET," in result.stdout.split()
    )
    assert "azure: API, no account" in text and "no account needed" in text


def test_a_retired_provider_is_not_fetched_even_when_named(fresh_env: str) -> None:
    result = runner.invoke(app, ["snapshot", "--provider", "cudo"], env={"COLUMNS": "300"})
    assert result.exit_code != 0
    assert "is not fetched: retired 2026-03-31" in " ".join(result.output.split())


def test_the_charts_axis_spans_the_days_drawn() -> None:
    """One priced day is drawn on a three-day axis, not on years either side of it."""
    from datetime import date

    from gpuscout.service.commands.db import x_limits

    day = date(2026, 12, 1)
    assert x_limits([day]) == (date(2026, 11, 30), date(2026, 12, 2))
    assert x_limits([day, date(2026, 12, 5)]) == (day, date(2026, 12, 5))
