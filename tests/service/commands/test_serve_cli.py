from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from service.cli import COMMAND_MODULES, app
from service.settings import get_settings


@pytest.fixture
def embedded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("GPUSCOUT_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_registered() -> None:
    assert "serve" in COMMAND_MODULES


@pytest.mark.usefixtures("embedded")
def test_get_runs_one_request_on_the_sample(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "--get", "/v1/offers?gpus=H100&limit=2"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout[result.stdout.index("{") :])
    assert body["source"] == "sample" and body["sample"] is True
    assert body["count"] <= 2
    assert (tmp_path / "gpuscout.db").exists()  # migrations applied on start


@pytest.mark.usefixtures("embedded")
def test_get_error_exits_1() -> None:
    result = CliRunner().invoke(app, ["serve", "--get", "/v1/offers?nope=1"])
    assert result.exit_code == 1
    assert "nope" in result.stdout
