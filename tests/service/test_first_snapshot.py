"""`gpuscout offers` with nothing stored: a snapshot of the published catalogs first (served
by a local replay at their real paths), the offline sample when they cannot be reached, and
no second attempt within the hour when the first stored nothing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import respx
from typer.testing import CliRunner

from gpuscout.service.cli import app
from gpuscout.service.first_snapshot import RETRY_AFTER, nothing_stored
from gpuscout.service.fx import ECB_DAILY_URL
from gpuscout.service.settings import Settings, get_settings
from tests.service.commands.test_snapshot_no_network import closed_port
from tests.service.test_catalog_snapshot import ECB, GPUHUNT_PATH, SKYPILOT_PATH

runner = CliRunner()
FIRST = "nothing stored yet: fetching the published catalogs"


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No setting but a fresh data dir (and its SQLite file, not yet created)."""
    for name in list(os.environ):
        if name.startswith("GPUSCOUT_"):
            monkeypatch.delenv(name)
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(data))
    get_settings.cache_clear()
    yield data
    get_settings.cache_clear()


def offers(base: str, **env: str) -> tuple[str, str]:
    """``gpuscout offers --gpu H100 --hours 100`` with the catalogs at ``base``: (stdout,
    stderr)."""
    settings = {
        "COLUMNS": "200",
        "GPUSCOUT_SKYPILOT_CATALOG_BASE_URL": f"{base}/{SKYPILOT_PATH}",
        "GPUSCOUT_GPUHUNT_CATALOG_BASE_URL": f"{base}/{GPUHUNT_PATH}",
        **env,
    }
    with respx.mock(assert_all_called=False) as mock:
        mock.get(ECB_DAILY_URL).mock(return_value=httpx.Response(200, text=ECB.read_text()))
        mock.route(host="127.0.0.1").pass_through()
        result = runner.invoke(app, ["offers", "--gpu", "H100", "--hours", "100"], env=settings)
    get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def test_the_first_answer_fetches_the_catalogs_then_reads_them_stored(
    fresh: Path, catalog_server: str
) -> None:
    out, err = offers(catalog_server)
    assert FIRST in err
    assert "stored " in err and "offers of" in err
    assert "from published catalogs:" in err
    assert "offline sample" not in err + out
    assert (fresh / "gpuscout.db").is_file()
    # stored now: the next answer reads the database without fetching
    again, err = offers(catalog_server)
    assert FIRST not in err and "from published catalogs:" in err
    assert again == out


def test_no_network_answers_from_the_sample_and_waits_an_hour_to_try_again(
    fresh: Path,
) -> None:
    refused = f"http://127.0.0.1:{closed_port()}"
    out, err = offers(refused)
    assert FIRST in err
    assert "could not be fetched: answering from the offline sample" in err
    assert "offline sample" in err and "H100" in out
    _, err = offers(refused)  # the attempt is recorded: not tried again within the hour
    assert FIRST not in err
    later = datetime.now(UTC) + RETRY_AFTER
    assert nothing_stored(Settings(data_dir=fresh), later)


def test_fetch_when_empty_false_answers_from_the_sample_at_once(fresh: Path) -> None:
    refused = f"http://127.0.0.1:{closed_port()}"
    out, err = offers(refused, GPUSCOUT_FETCH_WHEN_EMPTY="false")
    assert FIRST not in err and "offline sample" in err and "H100" in out
    assert not (fresh / "gpuscout.db").exists()
