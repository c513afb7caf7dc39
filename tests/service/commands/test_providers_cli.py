"""``gpuscout parse`` prints prices as people read them (the JSONL keeps them exact)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from service.cli import app

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
