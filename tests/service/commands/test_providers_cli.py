"""``gpuscout parse`` prints prices as people read them (the JSONL keeps them exact);
``gpuscout providers`` lists every provider and its settings, whole, at 80 columns."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import Result
from typer.testing import CliRunner

from gpuscout.service.cli import app

FIXTURE = (
    Path(__file__).resolve().parents[2] / "fixtures/vastai/bundles_response.reconstructed.json"
)


def test_parse_table_rounds_the_published_price() -> None:
    result = CliRunner().invoke(app, ["parse", "vastai", str(FIXTURE)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "0.246667 USD/hour/instance" in result.stdout
    assert "0.24666666666666665" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 120


def test_parse_jsonl_keeps_the_exact_price() -> None:
    result = CliRunner().invoke(app, ["parse", "vastai", str(FIXTURE), "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert any(str(r["price_amount"]).startswith("0.2466666666") for r in records)


def test_providers_coverage_fits_80_columns(tmp_path: Path) -> None:
    env = {"COLUMNS": "80", "GPUSCOUT_DATA_DIR": str(tmp_path)}
    result = CliRunner().invoke(app, ["providers", "--coverage", "--sample"], env=env)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "provider", "offers", "compute", "memory", "network", "power", "chassis",
        "software", "price", "support",
    ]  # fmt: skip
    assert max(len(line) for line in lines) <= 80
    vastai = next(line.split() for line in lines if line.startswith("vastai"))
    # the catalog capture's 23 Vast types, each on demand and interruptible
    assert vastai[1] == "46" and all(cell.endswith("%") for cell in vastai[2:])
    assert lines[-1].split()[0] == "all"


def test_providers_coverage_field_by_field_and_json(tmp_path: Path) -> None:
    env = {"COLUMNS": "80", "GPUSCOUT_DATA_DIR": str(tmp_path)}
    args = ["providers", "--coverage", "--sample"]
    result = CliRunner().invoke(app, [*args, "--provider", "vastai"], env=env)
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[3:]}
    # Vast's sample offers come through SkyPilot's catalog, which states no CUDA version
    assert rows["via_catalog"] == ["46", "100%"] and rows["cuda_version"] == ["0", "0%"]
    result = CliRunner().invoke(app, [*args, "--format", "json"], env=env)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["source"] == "sample" and answer["all"]["provider"] == "all"
    assert {p["provider"] for p in answer["providers"]} >= {"aws", "vastai", "sheet"}


def test_providers_coverage_refuses_a_provider_without_offers(tmp_path: Path) -> None:
    env = {"COLUMNS": "200", "GPUSCOUT_DATA_DIR": str(tmp_path)}
    args = ["providers", "--coverage", "--sample", "--provider", "crusoe"]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 2
    assert "no current offers from 'crusoe'" in result.output
    result = CliRunner().invoke(app, ["providers", "--format", "json"], env=env)
    assert result.exit_code == 2 and "go with --coverage" in result.output


def _providers(tmp_path: Path, columns: int = 80, **env: str) -> Result:
    environment = {"COLUMNS": str(columns), "GPUSCOUT_DATA_DIR": str(tmp_path), **env}
    result = CliRunner().invoke(app, ["providers"], env=environment)
    assert result.exit_code == 0, result.output
    return result


def test_providers_lists_every_provider_and_whole_setting_names_at_80_columns(
    tmp_path: Path,
) -> None:
    from gpuscout.adapters import provider_names
    from gpuscout.adapters.declarations import declared

    lines = _providers(tmp_path).stdout.splitlines()
    table = lines[: lines.index("") if "" in lines else len(lines)]
    assert max(len(line) for line in table) <= 80
    rows = {line.split()[0] for line in table[3:]}
    assert set(provider_names()) <= rows
    words = {word for line in lines for word in line.split()}
    settings = [s.env_name for d in declared() for s in d.settings]
    assert [name for name in settings if name not in words] == []  # none cut
    settings_rows = [line for line in lines if line.startswith("GPUSCOUT_")]
    assert max(len(line) for line in settings_rows) <= 80


def test_providers_say_where_prices_come_from_and_which_need_an_account(
    tmp_path: Path,
) -> None:
    out = _providers(tmp_path, columns=200).stdout
    assert "coreweave: price list published at https://www.coreweave.com/pricing, read" in out
    assert "lium: API, no account: https://lium.io/api/public/v1/nodes" in out
    row = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert row["lium"][1] == "no" and row["seeweb"][1] == "yes"
    assert row["autodl"][-2:] == ["not", "found"] and row["tencent"][-1] == "2026-12-07"
    assert row["cudo"][2] == "retired" and row["azure"][2] == "ok"  # the lifecycle


def test_a_set_credential_says_set_and_never_shows_its_value(tmp_path: Path) -> None:
    out = _providers(tmp_path, columns=200, GPUSCOUT_LIUM_BASE_URL="http://127.0.0.1:9/x",
                     GPUSCOUT_SEEWEB_API_TOKEN="s3cret-token").stdout  # fmt: skip
    (line,) = [line for line in out.splitlines() if line.startswith("GPUSCOUT_SEEWEB_API_TOKEN")]
    assert line.split()[-1] == "set"
    assert "s3cret-token" not in out
