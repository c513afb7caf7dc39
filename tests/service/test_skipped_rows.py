"""Rows a provider's data holds but gpuscout skips are named wherever an offers answer says
what it covers: JarvisLabs' recorded server_meta lists an H100 in ``unknown-region``, a
region JarvisLabs does not provision; a snapshot of it stores the reason, and the API's
``/v1/offers``, the web explorer and ``gpuscout offers`` name the region. The offline
sample (no database) says the same from its runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from gpuscout.adapters.collect import ProviderRun, parse_payloads
from gpuscout.adapters.jarvislabs import NOT_PROVISIONED, JarvisLabsAdapter
from gpuscout.db.engine import sqlite_url
from gpuscout.service.api import create_app
from gpuscout.service.cli import app as cli
from gpuscout.service.settings import Settings, get_settings
from gpuscout.service.snapshots import take_snapshot

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "jarvislabs"
    / "server_meta.gpuhunt_fixture.verbatim.json"
)
NAMED = f"jarvislabs skipped 1 row: {NOT_PROVISIONED} (unknown-region)"


def jarvislabs() -> list[ProviderRun]:
    """JarvisLabs' recorded answer, parsed as a snapshot parses a live one."""
    payload = json.loads(FIXTURE.read_text())
    return [parse_payloads(JarvisLabsAdapter(), [payload], fetched_at=datetime.now(UTC))]


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """Settings on a database holding one snapshot of the recorded JarvisLabs answer; the
    CLI's environment names the same database."""
    url = sqlite_url(tmp_path / "gpuscout.db")
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("GPUSCOUT_DATABASE_URL", url)
    get_settings.cache_clear()
    settings = Settings(_env_file=None, data_dir=tmp_path, database_url=url)  # type: ignore[call-arg]
    take_snapshot(settings, fetch=jarvislabs)
    yield settings
    get_settings.cache_clear()


def test_the_api_answer_names_the_region_not_provisioned(settings: Settings) -> None:
    client = TestClient(create_app(settings))
    body = client.get("/v1/offers", params={"providers": "jarvislabs"}).json()
    assert body["source"] == "database" and body["count"] > 0
    assert not [o for o in body["offers"] if o["region"] == "unknown-region"]
    [note] = [w for w in body["warnings"] if "unknown-region" in w]
    assert note == f"rows skipped, not ranked: {NAMED}"
    page = client.get("/", params={"providers": "jarvislabs"}).text
    assert "What this ranking leaves out" in page and NAMED in page


def test_the_cli_footer_names_the_region_in_one_short_line(settings: Settings) -> None:
    result = CliRunner().invoke(cli, ["offers", "--provider", "jarvislabs"])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.stderr.splitlines() if "unknown-region" in line]
    assert line == NAMED and len(line) <= 80
    # the JSON answer says it once on stderr (the footer's line), and in its warnings
    result = CliRunner().invoke(cli, ["offers", "--provider", "jarvislabs", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert [line for line in result.stderr.splitlines() if "unknown-region" in line] == [NAMED]
    assert any(NAMED in w for w in json.loads(result.stdout)["warnings"])


def test_the_sample_names_it_from_its_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("GPUSCOUT_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(cli, ["offers", "--sample", "--provider", "jarvislabs"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert NAMED in result.stderr.splitlines()
