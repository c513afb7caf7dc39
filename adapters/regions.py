"""Region classes: the coarse places a renter filters GPU offers by (data latency, law,
which clouds sell there), derived from an offer's ``country`` (ISO 3166-1 alpha-2).

The classes follow the UN M49 geoscheme (``data/region_classes.csv``, a source per row),
with mainland China, Hong Kong and Macao as a class of their own (their own clouds,
network and rules) and the Middle East with Africa. An offer without a country, or with a
code the table does not list, is ``unknown``: a class is never guessed from a region name.
"""

from __future__ import annotations

import enum
import functools

from .tables import data_rows

__all__ = ["RegionClass", "region_class_of", "region_classes"]


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
