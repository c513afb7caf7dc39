"""``gpuscout digest send``: a corrupt stored subscription is one line of the report, not the
end of the run; ``gpuscout subscribe`` reads its provider names as ``offers`` does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscout.db.engine import make_engine, sqlite_url
from gpuscout.db.migrate import upgrade
from gpuscout.service.cli import app
from gpuscout.service.settings import get_settings
from tests.service.commands.saved_searches import stored_requirements
from tests.service.digest.conftest import RecordingHandler, smtp_server  # noqa: F401
from tests.service.digest.helpers import insert_active


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("GPUSCOUT_DATABASE_URL", raising=False)
    # due all week from Monday 00:00, whenever the test runs
    monkeypatch.setenv("GPUSCOUT_DIGEST_WEEKDAY", "1")
    monkeypatch.setenv("GPUSCOUT_DIGEST_HOUR", "0")
    get_settings.cache_clear()
    url = sqlite_url(tmp_path / "gpuscout.db")
    upgrade(url)
    yield url
    get_settings.cache_clear()


def _active(url: str, email: str, requirement_json: str) -> int:
    engine = make_engine(url)
    try:
        return insert_active(engine, email, requirement_json, '{"hours": 10.0}')
    finally:
        engine.dispose()


def test_send_dry_run_reports_a_corrupt_subscription_and_goes_on(database: str) -> None:
    good = _active(database, "ada@example.com", '{"gpus": ["H100"]}')
    bad = _active(database, "eve@example.com", '{"gpus": ["H100"], "max_usd_per_hour": null}')
    result = CliRunner().invoke(app, ["digest", "send", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert f"subscription {good} " in result.stdout and "would_send" in result.stdout
    line = next(x for x in result.stdout.splitlines() if x.startswith(f"subscription {bad} "))
    assert "invalid (requirement.max_usd_per_hour: stored as null" in line
    assert result.stdout.rstrip().endswith("1 would send, 0 skipped, 1 invalid")


@pytest.mark.parametrize("option", ["--providers", "--exclude-providers"])
def test_subscribe_refuses_an_unknown_provider_as_offers_does(database: str, option: str) -> None:
    """A digest of a provider no offer has would never list anything, and nobody be told."""
    args = ["subscribe", "--email", "ada@example.com", "--name", "w", option, "lamda"]
    result = CliRunner().invoke(app, args)
    offers = CliRunner().invoke(app, ["offers", option, "lamda"])
    assert result.exit_code == offers.exit_code == 2, result.output
    said = " ".join(result.stderr.split())
    refused = " ".join(offers.stderr.split()).split("error: ", 1)[1]  # after its notes
    assert refused.startswith(f"{option}: unknown provider 'lamda' (did you mean 'lambda'?)")
    assert said == f"invalid subscription: {refused}"
    assert stored_requirements(database) == []


def test_subscribe_stores_a_provider_as_the_offers_spell_it(
    database: str,
    monkeypatch: pytest.MonkeyPatch,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    """``Lambda`` is the adapter ``lambda``, ``CoreWeave`` a seller of the offers (here the
    sample's: the database holds none)."""
    monkeypatch.setenv("GPUSCOUT_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("GPUSCOUT_SMTP_PORT", str(smtp_server[1]))
    monkeypatch.setenv("GPUSCOUT_SMTP_SECURITY", "none")
    monkeypatch.setenv("GPUSCOUT_MAIL_FROM", "gpuscout <digest@gpuscout.test>")
    get_settings.cache_clear()
    args = ["subscribe", "--email", "ada@example.com", "--name", "w", "--providers", "Lambda"]
    result = CliRunner().invoke(app, [*args, "--exclude-providers", "CoreWeave"])
    assert result.exit_code == 0, result.output
    (stored,) = stored_requirements(database)
    assert stored["providers"] == ["lambda"] and stored["exclude_providers"] == ["coreweave"]
