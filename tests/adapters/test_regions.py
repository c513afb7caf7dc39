"""The region classes an offer's country falls in, and their data file."""

from __future__ import annotations

import pytest

from gpuscout.adapters.regions import RegionClass, region_class_of, region_classes
from gpuscout.adapters.tables import data_rows


@pytest.mark.parametrize(
    ("country", "region"),
    [
        ("US", RegionClass.NORTH_AMERICA),
        ("MX", RegionClass.NORTH_AMERICA),
        ("BR", RegionClass.SOUTH_AMERICA),
        ("de", RegionClass.EUROPE),
        ("GB", RegionClass.EUROPE),
        ("CN", RegionClass.CHINA),
        ("HK", RegionClass.CHINA),
        ("TW", RegionClass.ASIA_PACIFIC),
        ("SG", RegionClass.ASIA_PACIFIC),
        ("AU", RegionClass.ASIA_PACIFIC),
        ("IL", RegionClass.MIDDLE_EAST_AFRICA),
        ("ZA", RegionClass.MIDDLE_EAST_AFRICA),
        ("ZZ", RegionClass.UNKNOWN),
        (None, RegionClass.UNKNOWN),
    ],
)
def test_a_country_falls_in_its_region_class(country: str | None, region: RegionClass) -> None:
    assert region_class_of(country) is region


def test_each_country_is_listed_once_and_each_class_but_unknown_has_some() -> None:
    listed = [c for row in data_rows("region_classes.csv") for c in row["countries"].split()]
    assert len(listed) == len(set(listed)) == len(region_classes())
    assert all(len(c) == 2 and c.isupper() for c in listed)
    assert set(region_classes().values()) == set(RegionClass) - {RegionClass.UNKNOWN}
