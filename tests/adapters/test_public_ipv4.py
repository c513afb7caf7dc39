"""The public IPv4 address AWS, GCP and Azure machines need: filled by the contract at each
provider's published price, and billed in the all-in cost over the billed hours."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpuscout.adapters.base import ParseResult
from gpuscout.adapters.public_ipv4 import ipv4_usd_per_hour
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.pricing.job import Job
from gpuscout.pricing.rank import rank
from tests.pricing.factories import AT_NOW, NOW


def _added(provider: str, term: RentalTerm, currency: str = "USD", **extra: object):
    return ParseResult(provider=provider).add(
        "ref",
        offer_id="8x-h100",
        region="r1",
        fetched_at=NOW,
        gpu_model="H100-SXM5-80GB",
        gpu_count=8,
        price_amount=Decimal("16"),
        price_currency=currency,
        price_unit=PriceUnit.HOUR,
        price_basis=PriceBasis.INSTANCE,
        term=term,
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("provider", "term", "price"),
    [
        ("aws", RentalTerm.ON_DEMAND, "0.005"),
        ("aws", RentalTerm.INTERRUPTIBLE, "0.005"),
        ("gcp", RentalTerm.ON_DEMAND, "0.005"),
        ("gcp", RentalTerm.INTERRUPTIBLE, "0.0025"),
        ("azure", RentalTerm.ON_DEMAND, "0.005"),
    ],
)
def test_each_hyperscaler_offer_carries_its_ipv4_and_pays_it_all_in(
    provider: str, term: RentalTerm, price: str
) -> None:
    offer = _added(provider, term)
    assert offer is not None and offer.ipv4_price_per_hour == Decimal(price)
    row = rank(offers_to_frame([offer]), job=Job.for_hours(100), options=AT_NOW).row(0, named=True)
    disk = row["boot_disk_usd_per_hour"]  # the boot disk is the other required extra
    assert disk is not None and disk > 0
    extras = (float(price) + disk) * row["billed_hours"]
    assert row["required_extras_usd"] == pytest.approx(extras)
    assert row["all_in_cost_usd"] == pytest.approx(row["job_cost_usd"] + row["required_extras_usd"])


def test_what_an_adapter_states_wins_and_others_pay_none() -> None:
    stated = _added("aws", RentalTerm.ON_DEMAND, ipv4_price_per_hour=Decimal("0.01"))
    assert stated is not None and stated.ipv4_price_per_hour == Decimal("0.01")
    lambda_offer = _added("lambda", RentalTerm.ON_DEMAND)
    assert lambda_offer is not None and lambda_offer.ipv4_price_per_hour is None
    assert ipv4_usd_per_hour("vultr", RentalTerm.ON_DEMAND) is None
    in_eur = _added("azure", RentalTerm.ON_DEMAND, currency="EUR")
    assert in_eur is not None and in_eur.ipv4_price_per_hour is None  # the table is in USD
