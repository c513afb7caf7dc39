"""``gpuscout offer ID``: one offer's fields by group and the renter's checklist; and the
checklist and id columns of ``gpuscout offers``."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from gpuscout.adapters.schema import Cooling, PriceBasis, default_fx
from gpuscout.db.current import CurrentState, state_from_offers
from gpuscout.pricing.checklist import CHECKLIST
from gpuscout.service.api.offer_ids import offer_id
from gpuscout.service.cli import app
from gpuscout.service.commands import offer as offer_cli
from gpuscout.service.commands import pricing as pricing_cli
from tests.pricing.factories import make_offer

runner = CliRunner()

RACK = make_offer(
    offer_id="rack",
    psu_watts=8000.0,
    psu_redundancy="2+2",
    cooling=Cooling.AIR,
    chassis_form_factor="4U",
    cuda_version="12.4",
)
OFFERS = [RACK, make_offer(offer_id="vm", gpu_count=1)]


@pytest.fixture(autouse=True)
def fake_current(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(sample: bool = False) -> CurrentState:
        return state_from_offers(OFFERS, fx=default_fx(), source="sample", note="sample")

    monkeypatch.setattr(offer_cli, "load_current", load)
    monkeypatch.setattr(pricing_cli, "load_current", load)


def test_offer_by_id_as_json_is_the_api_detail() -> None:
    result = runner.invoke(app, ["offer", offer_id(RACK.key), "--format", "json"])
    assert result.exit_code == 0, result.output
    detail = json.loads(result.stdout)
    assert detail["key"] == RACK.key and detail["id"] == offer_id(RACK.key)
    power = next(g for g in detail["fields"] if g["group"] == "Power and cooling")
    assert power["fields"] == {"psu_watts": 8000.0, "psu_redundancy": "2+2", "cooling": "air"}
    checks = {c["key"]: c["status"] for c in detail["checklist"]["checks"]}
    assert len(checks) == len(CHECKLIST)
    assert checks["psu_watts"] == checks["psu_redundancy"] == checks["chassis"] == "met"
    assert checks["cuda"] == checks["cooling"] == "met" and checks["backup"] == "unknown"


def test_offer_by_key_as_a_table() -> None:
    result = runner.invoke(app, ["offer", RACK.key], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Power and cooling" in result.stdout and "psu_redundancy" in result.stdout
    assert "The renter's checklist: " in result.stdout
    assert "Redundant power supplies" in result.stdout


def test_unknown_offer_is_one_error_line() -> None:
    result = runner.invoke(app, ["offer", "nothing"])
    assert result.exit_code == 2 and "neither an offer id nor an offer key" in result.stderr
    result = runner.invoke(app, ["offer", "acme|gone|us-east-1|on_demand|instance"])
    assert result.exit_code == 2 and "no current offer with key" in result.stderr


def test_offers_table_shows_checklist_and_id_columns() -> None:
    result = runner.invoke(
        app, ["offers", "--columns", "rank,offer_id,checklist,id"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if "rack" in line]
    (line,) = lines
    assert offer_id(RACK.key) in line and f"of {len(CHECKLIST)} met" in line


def test_a_cny_offer_shows_its_yuan_and_its_dollars(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Chinese platform's price: the yuan as published, and the dollars it ranks at (the
    FX table's date said), in the offer's page and in the offers table beside $/h."""
    yuan = make_offer(
        provider="autodl",
        offer_id="m1",
        gpu_count=2,
        price_amount=Decimal("2.72"),
        price_currency="CNY",
        price_basis=PriceBasis.GPU,
    )

    def load(sample: bool = False) -> CurrentState:
        return state_from_offers([yuan, RACK], fx=default_fx(), source="sample", note="sample")

    monkeypatch.setattr(offer_cli, "load_current", load)
    monkeypatch.setattr(pricing_cli, "load_current", load)
    shown = runner.invoke(app, ["offer", yuan.key], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    usd = float(yuan.usd_per_hour)
    assert "price_currency │ CNY" in shown.stdout.replace("  ", "").replace(" │ ", " │ ")
    line = next(x for x in shown.stdout.splitlines() if "in USD" in x)
    assert f"{usd:.3f} an hour" in line and f"{usd / 2:.3f} per GPU-hour" in line
    assert f"FX table of {default_fx().as_of}" in line
    table = runner.invoke(app, ["offers", "--wide"], env={"COLUMNS": "250"})
    assert table.exit_code == 0, table.output
    assert "published" in table.stdout and "2.72 CNY/GPU-h" in table.stdout
    # a dollar price has no published cell: the $ columns say it
    rack_line = next(x for x in table.stdout.splitlines() if " rack" in x or "rack " in x)
    assert "USD" not in rack_line


def test_the_published_column_is_left_out_when_every_price_is_in_dollars() -> None:
    table = runner.invoke(app, ["offers", "--wide"], env={"COLUMNS": "250"})
    assert table.exit_code == 0, table.output
    assert "published" not in table.stdout


def test_the_offer_and_the_rent_column_say_where_to_rent(monkeypatch: pytest.MonkeyPatch) -> None:
    """``gpuscout offer ID`` prints its link to rent; ``offers --columns ...,rent`` shows it."""
    from gpuscout.service.current import load_current

    def the_sample(sample: bool = False, **_: object) -> CurrentState:
        return load_current(sample=True)

    monkeypatch.setattr(offer_cli, "load_current", the_sample)
    monkeypatch.setattr(pricing_cli, "load_current", the_sample)
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()
    table = runner.invoke(
        app, ["offers", "--sample", "--providers", "aws", "--limit", "1", "--columns", "id,rent"]
    )
    assert table.exit_code == 0, table.output
    row = table.stdout.strip().splitlines()[3].split()
    assert len(row) == 2, table.stdout
    ident, rent = row
    assert rent.startswith("https://console.aws.amazon.com/ec2/home?region=")
    shown = runner.invoke(app, ["offer", ident, "--sample"])
    assert shown.exit_code == 0, shown.output
    assert f"Rent: {rent}" in shown.stdout
