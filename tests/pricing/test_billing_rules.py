"""Every provider's billing increment and minimum, applied by the ranking, against the
rule computed by hand: 1.51 hours and 100 hours of an on-demand job on each."""

from __future__ import annotations

import math
from typing import Any, cast

import pytest

from gpuscout.adapters import registry
from gpuscout.adapters.base import ParseResult
from gpuscout.adapters.billing_rules import assumed_providers, billing_rule, billing_rules
from gpuscout.adapters.declarations import declared
from gpuscout.adapters.schema import OfferFields, RentalTerm
from gpuscout.pricing import expressions as ex
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.pricing.job import Job
from gpuscout.pricing.rank import rank

from .factories import AT_NOW, make_offer

#: Providers that sell: a retired one's offers are never ranked (adapters.declarations).
PROVIDERS = sorted(name for name in billing_rules() if not registry()[name].lifecycle.retired)
#: Sources whose offers name other providers (each billed by its provider's rule).
CATALOG_SOURCES = {"gpuhunt_catalog", "skypilot_catalog"}


def _fields(**overrides: Any) -> OfferFields:
    """The fields of :func:`make_offer`'s offer, as an adapter gives them (no provider, no
    billing fields: the contract fills those)."""
    offer = make_offer(**overrides)
    names = ("offer_id", "region", "country", "fetched_at", "gpu_model", "gpu_count",
             "gpu_memory_gb", "price_amount", "price_currency", "price_unit", "price_basis",
             "term")  # fmt: skip
    return cast(OfferFields, {n: getattr(offer, n) for n in names})


def _by_hand(hours: float, increment_s: int, min_s: int | None) -> float:
    """Seconds run, at least the minimum, up to whole increments, back to hours."""
    seconds = max(hours * 3600, min_s or 0)
    return math.ceil(round(seconds, 6) / increment_s) * increment_s / 3600


def test_every_provider_has_a_rule_with_its_source() -> None:
    assert set(billing_rules()) == {d.name for d in declared()} - CATALOG_SOURCES
    for rule in billing_rules().values():
        assert rule.source and rule.read_on
        assert rule.stated or "[assumption]" in rule.source


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("hours", [1.51, 100.0])
def test_a_job_is_billed_at_the_providers_increment_and_minimum(
    provider: str, hours: float
) -> None:
    """An offer added through the contract carries its provider's rule; ranked for
    ``hours``, it bills the hours the rule gives by hand and costs them at its price."""
    rule = billing_rule(provider)
    assert rule is not None
    added = ParseResult(provider=provider).add("ref", **_fields())
    assert added is not None
    assert added.billing_increment_s == rule.billing_increment_s
    expected = _by_hand(hours, rule.billing_increment_s, rule.min_billed_s)
    assert rule.billed_hours(hours) == pytest.approx(expected, abs=1e-9)
    row = rank(offers_to_frame([added]), job=Job.for_hours(hours), options=AT_NOW).row(
        0, named=True
    )
    assert row["billed_hours"] == pytest.approx(expected, abs=1e-9)
    assert row["job_cost_usd"] == pytest.approx(expected * 16.0, abs=1e-6)
    assert row["billing_rounding_hours"] == pytest.approx(expected - hours, abs=1e-9)
    caveats = row["caveats"] or ""
    assert (ex.ASSUMED_HOURLY in caveats) == (provider in assumed_providers())


def test_the_issues_increments() -> None:
    """Lambda and JarvisLabs per minute; DigitalOcean per second with 60 s minimum."""
    assert _by_hand(1.51, 60, None) == pytest.approx(91 / 60)
    rules = billing_rules()
    assert (rules["lambda"].billing_increment_s, rules["jarvislabs"].billing_increment_s) == (
        60,
        60,
    )
    do = rules["digitalocean"]
    assert (do.billing_increment_s, do.min_billed_s) == (1, 60)
    assert do.billed_hours(10 / 3600) == pytest.approx(60 / 3600)


def test_a_commitment_keeps_whole_periods() -> None:
    added = ParseResult(provider="lambda").add("ref", **_fields(term=RentalTerm.COMMIT_1MO))
    assert added is not None and added.billing_increment_s is None
