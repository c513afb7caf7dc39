"""Which source a provider's offers come from: own adapter > keyless feed > catalog."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from gpuscout.adapters.precedence import apply_precedence
from gpuscout.adapters.run import Origin, ProviderRun, RunStatus
from gpuscout.adapters.schema import Offer, PriceBasis, PriceUnit, RentalTerm

NOW = datetime(2026, 12, 7, tzinfo=UTC)
EARLIER = datetime(2026, 12, 6, tzinfo=UTC)


def offer(provider: str, offer_id: str, price: str, catalog: str | None = None) -> Offer:
    extra: dict[str, Any] = {}
    if catalog is not None:
        extra = {"via_catalog": catalog, "catalog_version": "v", "catalog_licence": "MPL-2.0"}
    return Offer(
        provider=provider,
        offer_id=offer_id,
        region="r1",
        fetched_at=NOW,
        gpu_count=1,
        price_amount=Decimal(price),
        price_currency="USD",
        price_unit=PriceUnit.HOUR,
        price_basis=PriceBasis.INSTANCE,
        term=RentalTerm.ON_DEMAND,
        **extra,
    )


def run(provider: str, *offers: Offer, status: RunStatus = RunStatus.OK) -> ProviderRun:
    return ProviderRun(provider, status, EARLIER, 1.0, offers=list(offers))


def by_provider(runs: list[ProviderRun]) -> dict[str, ProviderRun]:
    return {r.provider: r for r in runs}


def test_a_catalog_covers_a_provider_whose_own_run_was_skipped() -> None:
    runs = apply_precedence(
        [
            run("aws", status=RunStatus.SKIPPED),
            run("skypilot_catalog", offer("aws", "p5", "98", "skypilot-catalog v8")),
        ]
    )
    got = by_provider(runs)
    assert [r.provider for r in runs] == ["aws", "skypilot_catalog"]
    assert got["aws"].status is RunStatus.OK
    assert got["aws"].origin is Origin.CATALOG
    assert got["aws"].source == "skypilot_catalog"
    assert got["aws"].started_at == EARLIER  # the catalog's fetch: the prices' age
    assert [o.offer_id for o in got["aws"].offers] == ["p5"]
    assert got["skypilot_catalog"].offers == []  # counted once, under their provider


def test_the_own_adapter_wins_whole_over_a_catalog() -> None:
    own = offer("aws", "p5", "98")
    runs = by_provider(
        apply_precedence(
            [
                run("aws", own),
                run(
                    "skypilot_catalog",
                    offer("aws", "p5", "90", "skypilot-catalog v8"),
                    offer("aws", "p4d", "30", "skypilot-catalog v8"),
                ),
            ]
        )
    )
    assert runs["aws"].offers == [own]  # the catalog's other type does not fill in
    assert runs["aws"].origin is Origin.LIVE and runs["aws"].source is None


def test_a_keyless_feed_beats_a_catalog_and_loses_to_the_own_adapter() -> None:
    feed = offer("aws", "p5", "97")
    catalog = offer("aws", "p5", "90", "gpuhunt v3")
    runs = by_provider(
        apply_precedence(
            [run("aws", status=RunStatus.ERROR), run("aws_feed", feed), run("g", catalog)]
        )
    )
    assert runs["aws"].offers == [feed] and runs["aws"].source == "aws_feed"
    assert runs["aws"].origin is Origin.LIVE  # a feed is the provider's own live data
    own = offer("aws", "p5", "98")
    runs = by_provider(apply_precedence([run("aws", own), run("aws_feed", feed)]))
    assert runs["aws"].offers == [own]


def test_the_same_offer_in_two_catalogs_is_one_offer_the_preferred_catalogs() -> None:
    gpuhunt = offer("lambda", "gpu_1x_a6000", "0.80", "gpuhunt v3")
    skypilot = offer("lambda", "gpu_1x_a6000", "1.09", "skypilot-catalog v8")
    other = offer("lambda", "gpu_8x_v100", "6.32", "skypilot-catalog v8")
    for runs in (
        [run("gpuhunt_catalog", gpuhunt), run("skypilot_catalog", skypilot, other)],
        [run("skypilot_catalog", skypilot, other), run("gpuhunt_catalog", gpuhunt)],
    ):
        got = by_provider(apply_precedence(runs))["lambda"].offers
        assert got == [gpuhunt, other]  # whichever catalog ran first


def test_an_own_run_that_found_nothing_is_covered_by_a_catalog() -> None:
    runs = by_provider(
        apply_precedence([run("oci"), run("s", offer("oci", "BM.GPU.H100.8", "80", "c"))])
    )
    assert [o.offer_id for o in runs["oci"].offers] == ["BM.GPU.H100.8"]


def test_a_failed_run_nobody_covers_stays_as_it_was() -> None:
    failed = ProviderRun("vultr", RunStatus.ERROR, NOW, 2.0, error="network error")
    assert apply_precedence([failed]) == [failed]


def test_sample_catalog_runs_stay_sample() -> None:
    sample = run("skypilot_catalog", offer("oci", "BM.GPU.H100.8", "80", "c"))
    sample.origin = Origin.SAMPLE
    runs = by_provider(apply_precedence([sample]))
    assert runs["oci"].origin is Origin.SAMPLE
