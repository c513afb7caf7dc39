"""The boot disk AWS, GCP and Azure machines cannot start without: a sourced default size and
price per provider, turned into a price per instance-hour, filled by the contract and billed
in the all-in cost over the billed hours, apart from the IPv4."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpuscout.adapters.base import ParseResult
from gpuscout.adapters.boot_disk import boot_disk, boot_disk_usd_per_hour
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm
from gpuscout.adapters.tables import data_rows
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.pricing.job import Job
from gpuscout.pricing.rank import rank
from tests.pricing.factories import AT_NOW, NOW

#: By hand from each provider's price sheet: GiB x USD per GiB-month / hours of a month.
BY_HAND = {
    "aws": 8 * 0.08 / 730,  # 8 GiB gp3 at $0.08 (us-east-1): $0.000877/h
    "gcp": 10 * 0.10 / 730,  # 10 GB pd-balanced at $0.10 (us-central1): $0.001370/h
    "azure": 5.28 / 730,  # a P4 Premium SSD (32 GiB tier) at $5.28 a month (eastus): $0.007233/h
}


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


def test_every_row_names_its_source_day_and_month() -> None:
    rows = data_rows("boot_disks.csv")
    assert {r["provider"] for r in rows} == set(BY_HAND)
    for row in rows:
        assert row["read_on"] and "price" in row["source"] and "month" in row["source"], row
        assert row["disk_type"] and int(row["hours_per_month"]) == 730


@pytest.mark.parametrize("provider", sorted(BY_HAND))
def test_the_price_per_instance_hour_is_size_times_price_over_the_month(provider: str) -> None:
    per_hour = boot_disk_usd_per_hour(provider)
    assert per_hour is not None and float(per_hour) == pytest.approx(BY_HAND[provider], abs=1e-10)
    disk = boot_disk(provider)
    assert disk is not None and disk.usd_per_hour == per_hour


@pytest.mark.parametrize("provider", sorted(BY_HAND))
@pytest.mark.parametrize("term", [RentalTerm.ON_DEMAND, RentalTerm.INTERRUPTIBLE])
def test_each_hyperscaler_offer_pays_its_boot_disk_all_in_apart_from_the_ipv4(
    provider: str, term: RentalTerm
) -> None:
    offer = _added(provider, term)
    assert offer is not None and offer.boot_disk_price_per_hour is not None
    row = rank(offers_to_frame([offer]), job=Job.for_hours(100), options=AT_NOW).row(0, named=True)
    assert row["boot_disk_usd_per_hour"] == pytest.approx(BY_HAND[provider], abs=1e-9)
    ipv4 = row["ipv4_usd_per_hour"]
    assert ipv4 is not None and ipv4 > 0  # shown apart: the two extras are two columns
    extras = (BY_HAND[provider] + ipv4) * row["billed_hours"] * row["nodes"]
    assert row["required_extras_usd"] == pytest.approx(extras, rel=1e-6)
    assert row["all_in_cost_usd"] == pytest.approx(row["job_cost_usd"] + extras, rel=1e-9)
    assert row["usd_per_hour"] == 16.0  # never in the compute price


def test_a_commitments_machine_needs_its_disk_too() -> None:
    offer = _added("aws", RentalTerm.COMMIT_1MO)
    assert offer is not None
    assert offer.boot_disk_price_per_hour == boot_disk_usd_per_hour("aws")


def test_what_an_adapter_states_wins_and_others_pay_none() -> None:
    stated = _added("gcp", RentalTerm.ON_DEMAND, boot_disk_price_per_hour=Decimal("0.01"))
    assert stated is not None and stated.boot_disk_price_per_hour == Decimal("0.01")
    lambda_offer = _added("lambda", RentalTerm.ON_DEMAND)
    assert lambda_offer is not None and lambda_offer.boot_disk_price_per_hour is None
    assert boot_disk_usd_per_hour("vultr") is None
    in_eur = _added("azure", RentalTerm.ON_DEMAND, currency="EUR")
    assert in_eur is not None and in_eur.boot_disk_price_per_hour is None  # the table is in USD


@pytest.mark.parametrize(
    ("cell", "said"),
    [("eight", "boot_disk_gib is not a number"), ("-1", "boot_disk_gib out of range")],
)
def test_a_bad_cell_is_one_line_naming_the_file_line_and_column(cell: str, said: str) -> None:
    from gpuscout.adapters.boot_disk import _decimal

    with pytest.raises(ValueError, match=f"boot_disks.csv line 3: {said}") as caught:
        _decimal({"boot_disk_gib": cell}, "boot_disk_gib", 3)
    assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="hours_per_month out of range"):
        _decimal({"hours_per_month": "0"}, "hours_per_month", 2)
