"""The public IPv4 address a hyperscaler's GPU machine needs, at its provider's price.

An instance on AWS, GCP or Azure is reached over a public IPv4 address, billed apart from
the instance since AWS began charging for every one on 2024-02-01 (GCP and Azure bill
theirs too). None of their price APIs the adapters read puts it in the instance's price,
so ``data/public_ipv4.csv`` holds each provider's published price per address-hour, by
term (``any``, or ``on_demand`` / ``interruptible`` where they differ: GCP halves it on
Spot VMs), with the day read and the source. The contract fills it into an offer in USD
whose adapter states none (:meth:`adapters.base.ParseResult.add`); the ranking adds it to
the all-in cost (:func:`pricing.expressions.required_extras_usd`), never to the compute
price.
"""

from __future__ import annotations

import functools
from decimal import Decimal

from .schema import OfferFields, RentalTerm
from .tables import data_rows

__all__ = ["ipv4_fields", "ipv4_usd_per_hour"]

_DATA_FILE = "public_ipv4.csv"


@functools.cache
def _prices() -> dict[tuple[str, str], Decimal]:
    prices: dict[tuple[str, str], Decimal] = {}
    for line, row in enumerate(data_rows(_DATA_FILE), start=2):
        try:
            price = Decimal(row["ipv4_usd_per_hour"])
        except ArithmeticError as exc:
            raise ValueError(f"adapters/data/{_DATA_FILE} line {line}: {row!r}") from exc
        if price < 0:
            raise ValueError(f"adapters/data/{_DATA_FILE} line {line}: negative price")
        prices[(row["provider"], row["term"])] = price
    return prices


def ipv4_usd_per_hour(provider: str, term: RentalTerm | str) -> Decimal | None:
    """``provider``'s price of a public IPv4 address on ``term``, USD per hour; ``None`` for
    a provider the table does not name."""
    prices = _prices()
    value = term.value if isinstance(term, RentalTerm) else str(term)
    return prices.get((provider, value), prices.get((provider, "any")))


def ipv4_fields(provider: str, term: RentalTerm | str | None, currency: object) -> OfferFields:
    """``ipv4_price_per_hour`` for an offer of ``provider`` on ``term`` priced in USD (the
    table's currency); nothing otherwise."""
    if term is None or str(currency) != "USD":
        return {}
    price = ipv4_usd_per_hour(provider, term)
    return {} if price is None else {"ipv4_price_per_hour": price}
