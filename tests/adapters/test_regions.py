"""The region classes an offer's country falls in, and their data file."""

from __future__ import annotations

import pytest

from gpuscout.adapters.regions import (
    RegionClass,
    geolocation_country,
    region_class_of,
    region_classes,
    region_country,
)
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


@pytest.mark.parametrize(
    ("geolocation", "country"),
    [
        ("Texas, US", "US"),  # the search API's "<place>, <CC>"
        ("France, FR, EU", "FR"),  # searched with georegion: a continent follows
        ("Quebec, CA, NA", "CA"),  # NA is North America here, not Namibia
        ("Yutakacho, Shinagawa District, Tokyo, JP", "JP"),  # a host's own long place
        ("Riyadh, SA", "SA"),  # a lone last code is the country, continent letters or not
        ("us", "US"),
        ("Texas", None),
        ("", None),
        (None, None),
    ],
)
def test_geolocation_country(geolocation: str | None, country: str | None) -> None:
    assert geolocation_country(geolocation) == country


@pytest.mark.parametrize(
    ("provider", "region", "country"),
    [
        ("azure", "eastus", "US"),
        ("azure", "centralus", "US"),
        ("aws", "ap-southeast-3", "ID"),
        ("gcp", "us-east1", "US"),
        ("runpod", "CA", "CA"),  # SkyPilot's RunPod region is a country code
        ("oci", "eu-amsterdam-1", "NL"),
        ("jarvislabs", "india-noida-01", "IN"),
        ("jarvislabs", "europe-01", None),  # no source names its country
        ("fluidstack", "FINLAND", "FI"),  # case aside
        ("digitalocean", "tor1", "CA"),  # the site number aside
        ("hyperstack", "CANADA-1", "CA"),
        ("vastai", "Germany, DE, EU", "DE"),
        ("nebius", "eu-north1", "FI"),
        ("nebius", "us-central1", None),  # no recorded source names it
        ("azure", "nowhere", None),
        ("nobody", "eastus", None),  # a region is never read across providers
        ("azure", None, None),
        ("azure", "  ", None),
    ],
)
def test_region_country(provider: str, region: str | None, country: str | None) -> None:
    assert region_country(provider, region) == country


def test_every_region_country_row_is_a_listed_country() -> None:
    """A country a region maps to has a region class: a typo would be ``unknown``."""
    rows = data_rows("region_countries.csv")
    assert [r for r in rows if region_class_of(r["country"]) is RegionClass.UNKNOWN] == []
