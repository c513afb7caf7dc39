"""Each provider's billing increment and minimum, as its own documentation states them.

A job's cost depends on how the provider rounds the hours it runs: Lambda and JarvisLabs
bill per minute, DigitalOcean per second with a 60-second minimum (since 2026-01-01), Vultr
by the whole hour. ``data/billing_rules.csv`` holds one row per provider:

* ``billing_increment_s``: the increment the running time is rounded up to, in seconds;
* ``min_billed_s``: the least time billed, in seconds (empty: no minimum beyond one
  increment);
* ``stated``: ``yes`` where the provider's documentation states the increment; ``no`` where
  nothing was found, and the row then holds whole hours, the conservative default, marked
  ``[assumption]`` in its ``source`` (the answer says so: :func:`assumed_providers`);
* ``read_on`` and ``source``: the day the page was read and where, with its phrase.

The contract applies a row to every on-demand and interruptible offer of its provider
(:meth:`adapters.base.ParseResult.add`); what an adapter states itself from its API or a
more precise page (AWS, GCP, Vultr, Scaleway's RENDER-S, OVHcloud, Alibaba's spot) wins.
Commitments bill whole periods and are left alone.
"""

from __future__ import annotations

import dataclasses
import functools

from .schema import OfferFields, RentalTerm
from .tables import data_rows

__all__ = ["BillingRule", "assumed_providers", "billing_fields", "billing_rule", "billing_rules"]

_DATA_FILE = "billing_rules.csv"
_SECONDS_PER_HOUR = 3600
_STATED = {"yes": True, "no": False}


@dataclasses.dataclass(frozen=True, slots=True)
class BillingRule:
    """One provider's row of ``data/billing_rules.csv``."""

    provider: str
    billing_increment_s: int
    min_billed_s: int | None
    stated: bool
    read_on: str
    source: str

    @property
    def min_rental_hours(self) -> float | None:
        """The minimum billed, in hours (``None``: none beyond one increment)."""
        return None if self.min_billed_s is None else self.min_billed_s / _SECONDS_PER_HOUR

    def billed_hours(self, hours: float) -> float:
        """``hours`` of running time as this rule bills them: at least the minimum, rounded
        up to the increment (what :func:`pricing.expressions.billed_hours` computes on a
        frame; a pure reference for tests and documentation)."""
        seconds = max(hours * _SECONDS_PER_HOUR, float(self.min_billed_s or 0))
        steps = -(-round(seconds * 1e6) // (self.billing_increment_s * 10**6))
        return steps * self.billing_increment_s / _SECONDS_PER_HOUR


def _parse(row: dict[str, str], line: int) -> BillingRule:
    where = f"adapters/data/{_DATA_FILE} line {line}"
    try:
        increment = int(row["billing_increment_s"])
        minimum = int(row["min_billed_s"]) if row["min_billed_s"].strip() else None
        stated = _STATED[row["stated"].strip()]
    except (KeyError, ValueError) as exc:
        raise ValueError(f"{where}: bad billing rule {row!r}: {exc}") from exc
    if increment <= 0 or (minimum is not None and minimum < 0):
        raise ValueError(f"{where}: increment must be > 0 and minimum >= 0: {row!r}")
    if not stated and "[assumption]" not in row["source"]:
        raise ValueError(f"{where}: an unstated rule must say [assumption] in its source")
    return BillingRule(row["provider"], increment, minimum, stated, row["read_on"], row["source"])


@functools.cache
def billing_rules() -> dict[str, BillingRule]:
    """Every provider's rule, by provider name."""
    rows = data_rows(_DATA_FILE)
    return {r["provider"]: _parse(r, n) for n, r in enumerate(rows, start=2)}


def billing_rule(provider: str) -> BillingRule | None:
    """``provider``'s rule, or ``None`` for a provider the table does not name."""
    return billing_rules().get(provider)


@functools.cache
def assumed_providers() -> frozenset[str]:
    """Providers whose documentation states no increment: whole hours are assumed."""
    return frozenset(p for p, rule in billing_rules().items() if not rule.stated)


def billing_fields(provider: str, term: RentalTerm | str | None) -> OfferFields:
    """The billing fields ``provider``'s rule gives an offer of ``term``: the increment and
    the minimum rental on on-demand and interruptible terms, nothing on a commitment (or
    for a provider without a row)."""
    rule = billing_rule(provider)
    if rule is None or term is None:
        return {}
    try:
        if RentalTerm(term).is_commitment:
            return {}
    except ValueError:
        return {}
    return {
        "billing_increment_s": rule.billing_increment_s,
        "min_rental_hours": rule.min_rental_hours,
    }
