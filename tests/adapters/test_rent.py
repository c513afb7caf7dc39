"""Every provider's offers carry a link to rent them (adapters/rent.py).

The links are made from each adapter's declared launch page or pricing page, over the
offers its recorded responses give: the offline sample, the published price lists and the
recorded payloads under ``tests/fixtures/<module>/`` (each file alone and all together, and
as the provider's own tests combine them where its answer is several calls).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuscout.adapters import registry
from gpuscout.adapters.base import AdapterError
from gpuscout.adapters.declarations import declaration_of, declared
from gpuscout.adapters.price_list import PublishedPriceList
from gpuscout.adapters.rent import rent_link, template_fields
from gpuscout.adapters.sample import replay_sample
from gpuscout.adapters.schema import Offer
from tests.adapters import (
    test_alibaba,
    test_gpuhunt_catalog,
    test_hyperstack,
    test_mithril,
    test_runpod,
    test_skypilot_catalog,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def _link(o: Offer) -> str | None:
    return rent_link(
        o.provider,
        instance_name=o.instance_name,
        region=o.region,
        offer_id=o.offer_id,
        seller=o.seller,
    )


@pytest.fixture(scope="module")
def recorded_offers() -> dict[str, list[Offer]]:
    """Each provider's offers from every recorded response that parses."""
    found: dict[str, list[Offer]] = {name: [] for name in registry()}
    for run in replay_sample():
        found[run.provider] += run.offers
    for name, cls in registry().items():
        adapter = cls()
        if isinstance(adapter, PublishedPriceList):
            payloads = asyncio.run(adapter.fetch(None))  # type: ignore[arg-type]
            found[name] += adapter.parse(payloads, fetched_at=NOW).offers
        folder = FIXTURES / declaration_of(cls).module
        files = sorted(folder.glob("*.*")) if folder.is_dir() else []
        decoded = []
        for path in files:
            if path.suffix == ".md":
                continue
            with contextlib.suppress(AdapterError, ValueError):
                decoded.append(adapter.decode(path.read_bytes(), path.name))
        for payloads in [[p] for p in decoded] + [decoded]:
            with contextlib.suppress(AdapterError, ValueError, TypeError, KeyError):
                found[name] += adapter.parse(payloads, fetched_at=NOW).offers
    found["alibaba"] += test_alibaba.parse(*test_alibaba.base_payloads()).offers
    found["mithril"] += test_mithril.full().offers
    hyperstack = test_hyperstack.parse(test_hyperstack.flavors(), test_hyperstack.flavor_prices())
    found["hyperstack"] += hyperstack.offers
    found["runpod"] += test_runpod.parse(test_runpod.pricing()).offers
    # a published catalog's offers name their own providers, whose links they carry
    found["skypilot_catalog"] += (
        test_skypilot_catalog.adapter()
        .parse(test_skypilot_catalog.recorded(), fetched_at=NOW)
        .offers
    )
    lambdalabs = {
        "provider": "lambdalabs",
        "version": "20261207-4711",
        "csv": test_gpuhunt_catalog.csv_text(),
    }
    found["gpuhunt_catalog"] += test_gpuhunt_catalog.parse(lambdalabs).offers
    return found


def test_every_adapter_declares_a_pricing_page() -> None:
    for d in declared():
        if d.name == "sheet":
            assert not d.pricing_url and not d.rent_url
            continue
        assert d.pricing_url.startswith("https://"), d.name
        assert d.rent_url == "" or d.rent_url.startswith("https://"), d.name
        template_fields(d.rent_url)  # names only the offer's parts


def test_every_adapter_yields_an_https_rent_link(recorded_offers: dict[str, list[Offer]]) -> None:
    for name, offers in recorded_offers.items():
        assert offers, f"{name}: no recorded offers to link"
        for o in offers:
            link = _link(o)
            if name == "sheet" and o.seller == "example-host":
                assert link is None  # a seller gpuscout does not know
                continue
            assert link is not None and link.startswith("https://"), (name, o.offer_id, link)


def test_launch_pages_carry_the_offers_parts(recorded_offers: dict[str, list[Offer]]) -> None:
    aws = recorded_offers["aws"][0]
    assert _link(aws) == (
        f"https://console.aws.amazon.com/ec2/home?region={aws.region}"
        f"#LaunchInstances:instanceType={aws.offer_id}"
    )
    lium = recorded_offers["lium"][0]
    assert _link(lium) == f"https://lium.io/browse-pods/{lium.offer_id.split('/')[0]}"


def test_a_missing_part_falls_back_to_the_pricing_page() -> None:
    assert (
        rent_link("aws", offer_id="p5.48xlarge") == "https://aws.amazon.com/ec2/pricing/on-demand/"
    )
    assert rent_link("aws", offer_id="a b", region="us-east-1").endswith("instanceType=a%20b")


def test_sheet_sellers_link_to_their_providers_pricing_page() -> None:
    assert rent_link("sheet", seller="tencent-cloud") == "https://www.tencentcloud.com/pricing/cvm"
    assert rent_link("sheet", seller="腾讯云") == "https://www.tencentcloud.com/pricing/cvm"
    assert rent_link("sheet", seller="CoreWeave") == "https://www.coreweave.com/pricing"
    # a seller with no adapter: its pricing page from data/seller_pages.csv
    assert rent_link("sheet", seller="jd-cloud") == "https://www.jdcloud.com/calculator/calHost"
    assert rent_link("sheet", seller="京东云") == "https://www.jdcloud.com/calculator/calHost"
    assert rent_link("sheet", seller="someone-else") is None
    assert rent_link("nobody") is None


def test_a_template_naming_another_part_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown parts"):
        template_fields("https://example.com/{zone}")
