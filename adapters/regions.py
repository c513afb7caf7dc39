"""Region classes: the coarse places a renter filters GPU offers by (data latency, law,
which clouds sell there), derived from an offer's ``country`` (ISO 3166-1 alpha-2).

The classes follow the UN M49 geoscheme (``data/region_classes.csv``, a source per row),
with mainland China, Hong Kong and Macao as a class of their own (their own clouds,
network and rules) and the Middle East with Africa. An offer without a country, or with a
code the table does not list, is ``unknown``: a class is never guessed from a region name.

Where an offer's country comes from when its source names only a region
(:func:`region_country`): the provider's sourced rows of ``data/region_countries.csv``, or
for Vast.ai the country code its geolocation ends with (:func:`geolocation_country`).
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping

from .tables import data_rows, region_countries

__all__ = [
    "RegionClass",
    "geolocation_country",
    "region_class_of",
    "region_classes",
    "region_country",
]

#: The continent codes Vast.ai appends to a geolocation (``"France, FR, EU"``).
_CONTINENTS = frozenset({"AF", "AN", "AS", "EU", "NA", "OC", "SA"})


class RegionClass(enum.StrEnum):
    """A coarse region an offer is rented in (:func:`region_class_of`)."""

    NORTH_AMERICA = "north-america"
    SOUTH_AMERICA = "south-america"
    EUROPE = "europe"
    ASIA_PACIFIC = "asia-pacific"
    CHINA = "china"
    MIDDLE_EAST_AFRICA = "middle-east-africa"
    UNKNOWN = "unknown"


@functools.cache
def region_classes() -> dict[str, RegionClass]:
    """Every listed country code -> its region class, read once from the data file."""
    return {
        country: RegionClass(row["region_class"])
        for row in data_rows("region_classes.csv")
        for country in row["countries"].split()
    }


def region_class_of(country: str | None) -> RegionClass:
    """The region class of an ISO 3166-1 alpha-2 ``country`` (``unknown`` without one)."""
    if not country:
        return RegionClass.UNKNOWN
    return region_classes().get(country.upper(), RegionClass.UNKNOWN)


def geolocation_country(geolocation: str | None) -> str | None:
    """The ISO 3166-1 code of a Vast.ai geolocation, or ``None``.

    The search API writes ``"<place>, <CC>"`` (``"Texas, US"``; a host may name its place
    in several parts, the country code last); searched with ``georegion``, as SkyPilot's
    catalog is, a continent code follows (``"Texas, US, NA"``, ``"France, FR, EU"``), so a
    continent code after a two-letter part is passed over. A bare ``"US"`` is its code.

    >>> geolocation_country("France, FR, EU"), geolocation_country("Guangxi, CN")
    ('FR', 'CN')
    """
    if not geolocation:
        return None
    parts = [part.strip().upper() for part in geolocation.split(",")]
    if len(parts) >= 3 and parts[-1] in _CONTINENTS and _is_code(parts[-2]):
        return parts[-2]
    return parts[-1] if _is_code(parts[-1]) else None


def region_country(provider: str, region: str | None) -> str | None:
    """The ISO 3166-1 country of ``provider``'s ``region``, ``None`` where no source says.

    Vast.ai's regions are geolocations (:func:`geolocation_country`); every other
    provider's region is looked up, case aside, in its sourced rows of
    ``data/region_countries.csv``, then without a trailing site number (``tor1`` is
    DigitalOcean's ``tor``).

    >>> region_country("azure", "eastus"), region_country("digitalocean", "tor1")
    ('US', 'CA')
    """
    if not region or not region.strip():
        return None
    if provider == "vastai":
        return geolocation_country(region)
    table = _folded_countries(provider)
    name = region.strip().casefold()
    return table.get(name) or table.get(name.rstrip("0123456789"))


@functools.cache
def _folded_countries(provider: str) -> Mapping[str, str]:
    return {name.casefold(): country for name, country in region_countries(provider).items()}


def _is_code(part: str) -> bool:
    return len(part) == 2 and part.isascii() and part.isalpha()
