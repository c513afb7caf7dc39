"""``gpuscout offers --gpus H100 --hours 1`` on the sample, its whole first page recomputed
by hand from each row's published price and its provider's billing rules."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from typer.testing import CliRunner

from gpuscout.adapters.billing_rules import billing_rule
from gpuscout.adapters.schema import RentalTerm
from gpuscout.pricing.efficiency import default_efficiency
from gpuscout.service.cli import app
from gpuscout.service.commands.pricing import flat_offer

runner = CliRunner()


def _up(hours: float, step_hours: float) -> float:
    return math.ceil(round(hours / step_hours, 9)) * step_hours


def _billed_by_hand(row: dict[str, Any], compute: float, wall: float) -> float:
    """The provider's rules, written out: a commitment bills whole periods; otherwise the
    run's own hours, at least the minimum rental, round up to the increment once, and the
    expected restart hours are added as expected."""
    period = RentalTerm(row["term"]).commitment_hours
    if period is not None:
        return max(_up(wall, float(period)), float(period), row["min_rental_hours"] or 0.0)
    floor = max(compute, row["min_rental_hours"] or 0.0)
    increment = row["billing_increment_s"]
    metered = floor if increment is None else _up(floor, increment / 3600)
    return metered + (wall - compute)


def _key_by_hand(row: dict[str, Any]) -> float:
    """USD per effective TFLOP-hour for a 1-hour job: the whole bill (compute, a boot disk
    beyond the included disk or a hyperscaler's boot disk per instance-hour, a public IPv4)
    over the effective TFLOPs of the hour."""
    i = default_efficiency().interruptible
    nodes = row["nodes"]
    interruptible = row["term"] == RentalTerm.INTERRUPTIBLE.value
    share = nodes * i.preemptions_per_node_hour * i.hours_lost_per_preemption
    wall = 1.0 / (1 - share) if interruptible else 1.0
    billed = _billed_by_hand(row, 1.0, wall)
    assert row["billed_hours"] == pytest.approx(billed, abs=1e-3)
    priced = row["storage_usd_per_gb_hour"] is not None
    included = row["storage_included_gb"]
    if included is None:
        included = 0.0 if priced else (row["storage_gb"] or 0.0)
    boot_gb = max((row["boot_disk_min_gb"] or 0.0) - included, 0.0)
    extras_per_hour = (
        boot_gb * (row["storage_usd_per_gb_hour"] or 0.0)
        + (row["boot_disk_usd_per_hour"] or 0.0)
        + (row["ipv4_usd_per_hour"] or 0.0)
    )
    compute_cost = billed * row["usd_per_hour"] * nodes
    assert row["job_cost_usd"] == pytest.approx(compute_cost, rel=1e-4, abs=0.006)
    all_in = compute_cost + extras_per_hour * billed * nodes
    assert row["all_in_cost_usd"] == pytest.approx(all_in, rel=1e-4, abs=0.01)
    return all_in / row["effective_tflops"]


def test_h100_for_one_hour_ranks_by_the_providers_own_billing_rules() -> None:
    result = runner.invoke(
        app, ["offers", "--sample", "--gpus", "H100", "--hours", "1", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = [flat_offer(o) for o in json.loads(result.stdout)["offers"]]
    assert len(rows) > 5
    keys = []
    for row in rows:
        rule = billing_rule(row["provider"])
        assert rule is not None, row["provider"]
        if not RentalTerm(row["term"]).is_commitment and row["provider"] != "vultr":
            assert row["billing_increment_s"] is not None  # every term has an increment
        key = _key_by_hand(row)
        assert row["usd_per_effective_tflop_hour"] == pytest.approx(key, rel=2e-3)
        keys.append((row["availability"] == "not available now", key))
    # the page is in the order of the hand-computed key (unavailable offers last)
    assert keys == sorted(keys, key=lambda k: (k[0], round(k[1], 9)))
    first = rows[0]
    # the cheapest by the rules: Vast's interruptible 4x H100, billed its expected 1.0003 h
    assert (first["provider"], first["term"]) == ("vastai", "interruptible")
    assert first["billed_hours"] == pytest.approx(1.0003, abs=1e-3)  # shown to 3 decimals
    assert first["billing_rounding_hours"] == pytest.approx(0.0, abs=1e-6)


def test_a_hyperscalers_offer_lists_its_boot_disk_and_ipv4_apart() -> None:
    """On the sample, an AWS offer's detail gives the boot disk and the IPv4 each its line."""
    listed = runner.invoke(
        app, ["offers", "--sample", "--providers", "aws", "--gpus", "H100", "--format", "json"]
    )
    assert listed.exit_code == 0, listed.output
    first = json.loads(listed.stdout)["offers"][0]
    assert first["price"]["boot_disk_usd_per_hour"] == pytest.approx(8 * 0.08 / 730, abs=1e-9)
    result = runner.invoke(app, ["offer", "--sample", first["id"]])
    assert result.exit_code == 0, result.output
    lines = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert "0.0008767123" in lines["boot_disk_price_per_hour"]
    assert "0.005" in lines["ipv4_price_per_hour"]
