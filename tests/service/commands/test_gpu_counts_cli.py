"""``--gpus NAME:COUNT`` in the offers command and ``gpus --resolve`` of a counted name."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from gpuscout.adapters.schema import default_fx
from gpuscout.db.current import CurrentState, state_from_offers
from gpuscout.service.cli import app
from gpuscout.service.commands import pricing as pricing_cli
from tests.pricing.factories import make_offer

runner = CliRunner()

OFFERS = [
    make_offer(offer_id="h100x8", gpu_count=8, price_amount=Decimal("16")),
    make_offer(offer_id="h100x1", gpu_count=1, price_amount=Decimal("2.5")),
    make_offer(offer_id="pcie-x8", gpu_model="H100-PCIE-80GB", gpu_count=8),
    make_offer(offer_id="a100x2", gpu_model="A100-SXM4-80GB", gpu_count=2),
    make_offer(offer_id="a100x4", gpu_model="A100-SXM4-80GB", gpu_count=4),
    make_offer(offer_id="a100x8", gpu_model="A100-SXM4-80GB", gpu_count=8),
    make_offer(offer_id="4090", gpu_model="RTX-4090", gpu_count=1, price_amount=Decimal("0.4")),
]


@pytest.fixture(autouse=True)
def fake_current(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(sample: bool = False) -> CurrentState:
        return state_from_offers(OFFERS, fx=default_fx(), source="sample")

    monkeypatch.setattr(pricing_cli, "load_current", load)


def _offers(*args: str) -> set[str]:
    result = runner.invoke(app, ["offers", *args, "--format", "csv", "--group-by", "none"])
    assert result.exit_code == 0, result.output
    return {r["offer_id"] for r in csv.DictReader(io.StringIO(result.stdout))}


@pytest.mark.parametrize(
    ("gpus", "offers"),
    [
        (["H100:8"], {"h100x8", "pcie-x8"}),  # any H100 variant, 8 per offer
        (["H100:1"], {"h100x1"}),
        (["A100:2..4"], {"a100x2", "a100x4"}),
        (["A100:4.."], {"a100x4", "a100x8"}),
        (["A100:..2"], {"a100x2"}),
        (["H100 SXM:8"], {"h100x8"}),
        (["A100:80GB:8"], {"a100x8"}),  # dstack's name:memory:count
        (["H100:8,A100:2"], {"h100x8", "pcie-x8", "a100x2"}),  # each count rides on its name
        (["H100:8", "4090"], {"h100x8", "pcie-x8", "4090"}),  # a name without one takes any
    ],
)
def test_gpus_with_a_count_select_the_offers_of_that_many(
    gpus: list[str], offers: set[str]
) -> None:
    args = [a for g in gpus for a in ("--gpus", g)]
    assert _offers(*args) == offers


def test_a_count_and_min_gpus_both_hold() -> None:
    assert _offers("--gpus", "A100:2..8", "--min-gpus", "4") == {"a100x4", "a100x8"}


@pytest.mark.parametrize(
    ("gpus", "said"),
    [
        ("H100:x", "bad GPU count 'x' in 'H100:x': give a count (8) or a range (2..8, 2.., ..8)"),
        ("H100:", "no GPU count after ':' in 'H100:'"),
        (":8", "no GPU name before ':' in ':8'"),
        ("H100:0", "GPU count '0' in 'H100:0': an offer has at least 1 GPU"),
        ("H100:8..2", "the range is empty (8 > 2)"),
        ("H100:8:4", "two GPU counts in 'H100:8:4'"),
        ("H1000:8", "unknown GPU model, family or vendor: 'H1000' (did you mean 'H100'"),
    ],
)
def test_a_bad_spelling_is_refused_by_name(gpus: str, said: str) -> None:
    result = runner.invoke(app, ["offers", "--gpus", gpus])
    assert result.exit_code == 2
    assert said in " ".join(result.stderr.split())


def test_resolve_of_a_counted_name_is_every_variant_and_the_count() -> None:
    result = runner.invoke(app, ["gpus", "--resolve", "H100:8"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    title = "'H100:8' -> any of H100-SXM5-80GB, H100-PCIE-80GB, H100-NVL-94GB; 8 GPUs per offer"
    assert title in result.stdout
    assert "assumed" not in result.stderr  # no variant is picked for a requirement


@pytest.mark.parametrize(
    ("text", "minimum", "maximum"),
    [("A100:2..8", 2, 8), ("L4:..4", None, 4), ("H100 SXM:8", 8, 8)],
)
def test_resolve_of_a_counted_name_as_json(
    text: str, minimum: int | None, maximum: int | None
) -> None:
    result = runner.invoke(app, ["gpus", "--resolve", text, "--format", "json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert (answer["min_gpus"], answer["max_gpus"]) == (minimum, maximum)
    assert answer["models"] and answer["query"] == text


def test_resolve_of_a_bad_count_is_a_usage_error() -> None:
    result = runner.invoke(app, ["gpus", "--resolve", "H100:x"])
    assert result.exit_code == 2
    assert "bad GPU count 'x'" in " ".join(result.output.split())


def test_a_providers_own_colon_is_still_a_raw_name() -> None:
    raw = "Commitment v1: Nvidia Tesla A100 GPU running in Americas"  # a GCP SKU description
    result = runner.invoke(app, ["gpus", "--resolve", raw], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "-> A100-SXM4-40GB" in result.stdout
