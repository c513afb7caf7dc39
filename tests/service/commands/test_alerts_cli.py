"""``gpuscout alerts``: create (double opt-in mail), confirm with the digest's command,
run against stored offers, list and firings."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscout.db.engine import make_engine, sqlite_url
from gpuscout.db.migrate import upgrade
from gpuscout.db.snapshots import store_snapshot
from gpuscout.service.cli import app
from gpuscout.service.settings import get_settings
from tests.db.factories import offer, ok
from tests.service.commands.saved_searches import stored_requirements
from tests.service.digest.conftest import RecordingHandler, smtp_server  # noqa: F401


@pytest.fixture
def database(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> Iterator[str]:
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("GPUSCOUT_DATABASE_URL", raising=False)
    monkeypatch.setenv("GPUSCOUT_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("GPUSCOUT_SMTP_PORT", str(smtp_server[1]))
    monkeypatch.setenv("GPUSCOUT_SMTP_SECURITY", "none")
    monkeypatch.setenv("GPUSCOUT_SMTP_ATTEMPTS", "1")
    monkeypatch.setenv("GPUSCOUT_MAIL_FROM", "gpuscout <alerts@gpuscout.test>")
    get_settings.cache_clear()
    url = sqlite_url(tmp_path / "gpuscout.db")
    upgrade(url)
    yield url
    get_settings.cache_clear()


def test_create_confirm_run_list_and_firings(
    database: str,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    handler, _ = smtp_server
    runner = CliRunner()
    args = ["alerts", "create", "--email", "ada@example.com", "--name", "cheap H100"]
    args += ["--requirement", '{"gpus": ["H100"]}', "--below", "2.20"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert re.match(r"alert 1 pending", result.stdout)
    body = handler.messages[-1].get_body(("plain",))
    assert body is not None
    link = re.search(r"http\S+/v1/subscriptions/confirm\S+", body.get_content())
    assert link
    result = runner.invoke(app, ["digest", "confirm", link.group(0)])
    assert result.exit_code == 0 and "is active" in result.stdout, result.output

    engine = make_engine(database)
    now = datetime.now(UTC)
    run = ok("alpha", [offer("alpha", "o1", "2.10", fetched_at=now)], started_at=now)
    store_snapshot(engine, [run], started_at=now, finished_at=now)
    engine.dispose()
    result = runner.invoke(app, ["alerts", "run"])
    assert result.exit_code == 0, result.output
    assert "1 alert(s) over 1 search(es)" in result.stdout and "1 fired" in result.stdout
    subject = str(handler.messages[-1]["Subject"])
    assert "gpuscout price alert #" in subject and "cheap H100" not in subject

    result = runner.invoke(app, ["alerts", "list", "--email", "ada@example.com"])
    assert result.stdout.split("\t")[:4] == ["1", "active", "fired", "1"]
    result = runner.invoke(app, ["alerts", "firings", "1"])
    assert result.stdout.startswith("#1\t") and "alpha/o1\tdelivered" in result.stdout


def test_a_condition_is_required_once(database: str) -> None:
    args = ["alerts", "create", "--email", "ada@example.com", "--name", "x"]
    result = CliRunner().invoke(app, [*args, "--below", "2", "--in-stock"])
    assert result.exit_code == 2 and "exactly one of" in result.output
    result = CliRunner().invoke(app, [*args, "--below", "two"])
    assert result.exit_code == 2 and "not a number" in result.output


def test_create_refuses_an_unknown_provider_as_offers_does(
    database: str,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> None:
    """An alert on a provider no offer has would never fire, and nobody be told."""
    args = ["alerts", "create", "--email", "ada@example.com", "--name", "x", "--in-stock"]
    result = CliRunner().invoke(app, [*args, "--providers", "lamda"])
    offers = CliRunner().invoke(app, ["offers", "--providers", "lamda"])
    assert result.exit_code == offers.exit_code == 2, result.output
    refused = " ".join(offers.stderr.split()).split("error: ", 1)[1]  # after its notes
    assert refused.startswith("--providers: unknown provider 'lamda' (did you mean 'lambda'?)")
    assert " ".join(result.stderr.split()) == f"invalid alert: {refused}"
    assert stored_requirements(database) == [] and smtp_server[0].messages == []


def test_create_stores_a_provider_as_the_offers_spell_it(database: str) -> None:
    args = ["alerts", "create", "--email", "ada@example.com", "--name", "x", "--in-stock"]
    result = CliRunner().invoke(app, [*args, "--exclude-providers", "LAMBDA"])
    assert result.exit_code == 0, result.output
    (stored,) = stored_requirements(database)
    assert stored["exclude_providers"] == ["lambda"]
