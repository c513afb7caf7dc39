"""The boot disk a hyperscaler's GPU machine cannot start without, at its provider's price.

An instance on AWS, GCP or Azure boots from a network disk (an EBS volume, a persistent
disk, a managed OS disk) billed apart from the instance; none of the price APIs the adapters
read puts it in the instance's price. ``data/boot_disks.csv`` holds, per provider, the disk
a machine gets when none is asked for: its type, size in GiB, published price per GiB-month,
and the hours of the month that price is spread over, with the day read and the sources.
:func:`boot_disk_usd_per_hour` turns a row into what one instance pays an hour:
``boot_disk_gib x usd_per_gib_month / hours_per_month``. The contract fills it into an offer
in USD whose adapter states none (:meth:`adapters.base.ParseResult.add`), on every term (a
commitment's machine needs its disk too); the ranking adds it to the all-in cost
(:func:`pricing.expressions.required_extras_usd`), never to the compute price.
"""

from __future__ import annotations

import dataclasses
import functools
from decimal import Decimal

from .schema import OfferFields, RentalTerm
from .tables import data_rows

__all__ = ["BootDisk", "boot_disk", "boot_disk_fields", "boot_disk_usd_per_hour"]

_DATA_FILE = "boot_disks.csv"


@dataclasses.dataclass(frozen=True, slots=True)
class BootDisk:
    """One provider's default boot disk and its published price."""

    provider: str
    disk_type: str
    boot_disk_gib: Decimal
    usd_per_gib_month: Decimal
    hours_per_month: Decimal

    @property
    def usd_per_hour(self) -> Decimal:
        """What one instance pays an hour for this disk: size x price per GiB-month, over the
        provider's hours of a month, to 1e-10 USD."""
        per_hour = self.boot_disk_gib * self.usd_per_gib_month / self.hours_per_month
        return per_hour.quantize(Decimal("1e-10"))


def _decimal(row: dict[str, str], column: str, line: int) -> Decimal:
    try:
        value = Decimal(row[column])
    except ArithmeticError as exc:
        where = f"adapters/data/{_DATA_FILE} line {line}"
        raise ValueError(f"{where}: {column} is not a number") from exc
    if not value.is_finite() or value < 0 or (column == "hours_per_month" and value == 0):
        raise ValueError(f"adapters/data/{_DATA_FILE} line {line}: {column} out of range")
    return value


@functools.cache
def _disks() -> dict[str, BootDisk]:
    disks: dict[str, BootDisk] = {}
    for line, row in enumerate(data_rows(_DATA_FILE), start=2):
        disks[row["provider"]] = BootDisk(
            provider=row["provider"],
            disk_type=row["disk_type"],
            boot_disk_gib=_decimal(row, "boot_disk_gib", line),
            usd_per_gib_month=_decimal(row, "usd_per_gib_month", line),
            hours_per_month=_decimal(row, "hours_per_month", line),
        )
    return disks


def boot_disk(provider: str) -> BootDisk | None:
    """``provider``'s default boot disk; ``None`` for a provider the table does not name."""
    return _disks().get(provider)


def boot_disk_usd_per_hour(provider: str) -> Decimal | None:
    """What ``provider``'s default boot disk costs one instance an hour, USD; ``None`` for a
    provider the table does not name."""
    disk = boot_disk(provider)
    return None if disk is None else disk.usd_per_hour


def boot_disk_fields(provider: str, term: RentalTerm | str | None, currency: object) -> OfferFields:
    """``boot_disk_price_per_hour`` for an offer of ``provider`` priced in USD (the table's
    currency); nothing otherwise."""
    if term is None or str(currency) != "USD":
        return {}
    price = boot_disk_usd_per_hour(provider)
    return {} if price is None else {"boot_disk_price_per_hour": price}
