"""The provider docs follow the adapters: ``adapters/README.md``'s tables are the generated
ones (``uv run python -m gpuscout.service.provider_docs`` writes them)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from gpuscout.adapters import registry
from gpuscout.service.provider_docs import readme_text, settings_markdown
from gpuscout.service.provider_facts import provider_facts

ROOT = Path(__file__).resolve().parents[2]


def test_adapters_readme_is_the_generated_one() -> None:
    text = (ROOT / "adapters" / "README.md").read_text("utf-8")
    assert text == readme_text(text), "run: uv run python -m gpuscout.service.provider_docs"


def test_every_provider_has_a_row() -> None:
    text = (ROOT / "adapters" / "README.md").read_text("utf-8")
    assert [n for n in registry() if f"| `{n}` |" not in text] == []


def test_settings_table_names_each_variable_once() -> None:
    rows = [line for line in settings_markdown().splitlines() if line.startswith("| `GPUSCOUT_")]
    names = [row.split("`")[1] for row in rows]
    assert len(names) == len(set(names))
    assert "`GPUSCOUT_VASTAI_API_KEY` | `vastai` | no |" in settings_markdown()
    assert "`GPUSCOUT_LAMBDA_API_KEY` | `lambda` | yes |" in settings_markdown()


def test_facts_count_what_the_offers_cover() -> None:
    frame = pl.DataFrame(
        {
            "provider": ["vastai", "vastai", "vastai", "lambda"],
            "region": ["us", "us", None, "us-east-1"],
            "gpu_model": ["RTX-4090", None, "H100-SXM5-80GB", "A10"],
            "term": ["interruptible", "on_demand", "on_demand", "on_demand"],
        }
    )
    facts = {f.name: f for f in provider_facts(frame)}
    vast = facts["vastai"]
    assert (vast.offers, vast.regions) == (3, 1)
    assert vast.gpu_models == ("H100-SXM5-80GB", "RTX-4090")
    assert vast.terms == ("on_demand", "interruptible")  # the enum's order
    assert vast.account_needed is False and facts["lambda"].account_needed is True
    assert "GPUSCOUT_LAMBDA_API_KEY" in facts["lambda"].settings
    assert facts["lambda"].settings[-1] == "GPUSCOUT_LAMBDA_BASE_URL"
    assert (facts["azure"].offers, facts["azure"].gpu_models) == (0, ())
