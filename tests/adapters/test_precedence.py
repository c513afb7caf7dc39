"""Which source a provider's offers come from: own adapter > keyless feed > catalog."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from gpuscout.adapters.precedence import Precedence, apply_precedence
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


# The streaming form: runs arrive in any order, each provider's run comes out once final.

AWS_OWN = offer("aws", "p5", "98")
SKY = "skypilot-catalog v8"
HUNT = "gpuhunt v3"


def market() -> list[ProviderRun]:
    """One collection: an own run with offers (aws), a failed one (lambda), an empty ok one
    (vast), a feed (aws_feed, for oci), two catalogs overlapping each other and the feed,
    and a provider only the catalogs name (onlycat)."""
    return [
        run("aws", AWS_OWN),
        run("lambda", status=RunStatus.ERROR),
        run("vast"),
        run("aws_feed", offer("oci", "bm", "70")),
        run(
            "skypilot_catalog",
            offer("aws", "p5", "90", SKY),
            offer("lambda", "gpu_1x", "1.10", SKY),
            offer("lambda", "gpu_8x", "8.00", SKY),
            offer("vast", "v1", "0.50", SKY),
            offer("oci", "bm", "60", SKY),
            offer("onlycat", "c1", "3", SKY),
        ),
        run(
            "gpuhunt_catalog",
            offer("lambda", "gpu_1x", "0.80", HUNT),
            offer("onlycat", "c1", "2", HUNT),
        ),
    ]


def streamed(runs: list[ProviderRun]) -> tuple[list[ProviderRun], list[ProviderRun]]:
    """What :class:`Precedence` gives for ``runs`` in this order: the runs final as they
    were added, and those :meth:`~Precedence.finish` gave."""
    precedence = Precedence()
    at_once = [out for r in runs for out in precedence.add(r)]
    return at_once, precedence.finish()


def summary(r: ProviderRun) -> tuple[Any, ...]:
    """What precedence decides of a run, whichever order the runs came in (the source of
    offers merged from two catalogs is the catalog first in, so it is left out)."""
    return (
        r.status,
        r.origin,
        [(o.offer_id, o.price_amount, o.via_catalog) for o in r.offers],
    )


EXPECTED = {
    "aws": (RunStatus.OK, Origin.LIVE, [("p5", Decimal("98"), None)]),
    "lambda": (
        RunStatus.OK,
        Origin.CATALOG,
        [("gpu_1x", Decimal("0.80"), HUNT), ("gpu_8x", Decimal("8.00"), SKY)],
    ),
    "vast": (RunStatus.OK, Origin.CATALOG, [("v1", Decimal("0.50"), SKY)]),
    "aws_feed": (RunStatus.OK, Origin.LIVE, []),
    "oci": (RunStatus.OK, Origin.LIVE, [("bm", Decimal("70"), None)]),  # the feed's
    "skypilot_catalog": (RunStatus.OK, Origin.LIVE, []),
    "gpuhunt_catalog": (RunStatus.OK, Origin.LIVE, []),
    "onlycat": (RunStatus.OK, Origin.CATALOG, [("c1", Decimal("2"), HUNT)]),
}


def test_streaming_gives_the_runs_of_apply_precedence_in_every_arrival_order() -> None:
    runs = market()
    for order in itertools.permutations(runs):
        arrived = list(order)
        at_once, rest = streamed(arrived)
        batch = apply_precedence(arrived)
        assert sorted(at_once + rest, key=lambda r: r.provider) == sorted(
            batch, key=lambda r: r.provider
        )
        assert {r.provider: summary(r) for r in batch} == EXPECTED, arrived
        # runs keep their order; the providers only a source names come last, first named first
        own = [r.provider for r in arrived]
        named = [o.provider for r in arrived for o in r.offers if o.provider not in own]
        assert [r.provider for r in batch] == [*own, *dict.fromkeys(named)]
        # the own run is final the moment it arrives, the catalogs' before or after it
        assert [r.provider for r in at_once] == ["aws"]
        covered = {r.provider: r.source for r in rest}
        assert covered["oci"] == "aws_feed" and covered["vast"] == "skypilot_catalog"
        assert covered["lambda"] in {"skypilot_catalog", "gpuhunt_catalog"}


def test_an_own_run_is_final_at_once_and_a_source_naming_it_later_changes_nothing() -> None:
    precedence = Precedence()
    catalog = run("skypilot_catalog", offer("aws", "p5", "90", SKY), offer("aws", "p4", "30", SKY))
    assert precedence.add(catalog) == []  # a catalog's own run waits, without its offers
    (aws,) = precedence.add(run("aws", AWS_OWN, AWS_OWN))
    assert aws.offers == [AWS_OWN]  # deduplicated, the catalog's p4 does not fill in
    assert precedence.add(run("aws_feed", offer("aws", "p5", "97"))) == []
    rest = precedence.finish()
    assert [(r.provider, r.offers) for r in rest] == [("skypilot_catalog", []), ("aws_feed", [])]


def test_a_failed_or_empty_own_run_waits_then_is_covered_or_stays() -> None:
    precedence = Precedence()
    failed = run("lambda", status=RunStatus.ERROR)
    empty = run("vast")
    assert precedence.add(failed) == [] and precedence.add(empty) == []
    assert precedence.add(run("g", offer("vast", "v1", "0.5", HUNT))) == []
    lam, vast, g = precedence.finish()
    assert lam is failed  # nobody covers it: as it was
    assert (vast.provider, vast.source, vast.origin) == ("vast", "g", Origin.CATALOG)
    assert (g.provider, g.offers) == ("g", [])
