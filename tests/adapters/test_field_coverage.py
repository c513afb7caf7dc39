"""``adapters.field_coverage``: which fields the offers carry, per provider and group."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from gpuscout.adapters.field_coverage import (
    ALL_PROVIDERS,
    GROUP_LABELS,
    count_offers,
    count_records,
    coverage_json,
    coverage_markdown,
    percent_text,
    total_coverage,
)
from gpuscout.adapters.sample import replay_sample
from gpuscout.adapters.schema import FIELD_GROUPS, Offer
from gpuscout.db.records import record_json

T0 = datetime(2025, 3, 3, tzinfo=UTC)


def offer(provider: str = "p", offer_id: str = "o", **extra: Any) -> Offer:
    return Offer(
        provider=provider,
        offer_id=offer_id,
        fetched_at=T0,
        gpu_count=8,
        price_amount=Decimal("10"),
        price_currency="USD",
        price_unit="hour",
        price_basis="instance",
        term="on_demand",
        **extra,
    )


def test_counts_fields_carried_per_provider() -> None:
    offers = [
        offer(psu_watts=3000.0, psu_redundancy="2+2"),
        offer(offer_id="o2", psu_watts=2400.0, os_images=()),
        offer("q", cuda_version="12.4"),
    ]
    cov = count_offers(offers)
    assert list(cov) == ["p", "q"]
    p = cov["p"]
    assert p.offers == 2
    assert p.field_share("psu_watts") == 1.0 and p.field_share("psu_redundancy") == 0.5
    assert p.field_share("cooling") == 0.0
    # an empty tuple is carried: the provider said "none"
    assert p.filled["os_images"] == 1
    # Power and cooling: 3 filled cells of 2 offers x 3 fields
    assert p.group_share("Power and cooling") == pytest.approx(3 / 6)
    assert p.group_share("Price and term") > 0  # the required price fields
    assert cov["q"].field_share("cuda_version") == 1.0


def test_stored_records_count_as_the_offers() -> None:
    """A stored record leaves out None fields and fetched_at: the same counts."""
    offers = [o for run in replay_sample() for o in run.offers]
    records = [json.loads(record_json(o)) for o in offers]
    assert all("fetched_at" not in r for r in records)
    assert count_records(records) == count_offers(offers)


def test_total_adds_every_provider() -> None:
    cov = count_offers([offer(cuda_version="12"), offer("q"), offer("q", "o2")])
    total = total_coverage(cov)
    assert total.provider == ALL_PROVIDERS and total.offers == 3
    assert total.field_share("cuda_version") == pytest.approx(1 / 3)


def test_no_offers_share_is_unknown_and_unknown_field_refused() -> None:
    empty = total_coverage({})
    assert empty.offers == 0 and empty.field_share("psu_watts") is None
    assert empty.group_share("Chassis") is None
    with pytest.raises(KeyError, match="psu_wats"):
        empty.field_share("psu_wats")


def test_percent_text_never_rounds_a_carried_field_to_zero() -> None:
    assert [percent_text(s) for s in (0.0, 0.001, 0.5, 1.0, None)] == [
        "0%", "<1%", "50%", "100%", "-",
    ]  # fmt: skip


def test_json_lists_every_group_and_field() -> None:
    data = coverage_json(count_offers([offer(cuda_version="12.4")])["p"])
    assert [g["group"] for g in data["groups"]] == list(FIELD_GROUPS)
    software = next(g for g in data["groups"] if g["group"] == "Software")
    assert software["share"] == 0.2
    assert software["fields"][1] == {"field": "cuda_version", "offers": 1, "share": 1.0}


def test_markdown_has_a_row_per_provider_and_all() -> None:
    text = coverage_markdown(count_offers([offer(), offer("q")]))
    lines = text.splitlines()
    assert lines[0].split(" | ")[2:] == [*list(GROUP_LABELS.values())[:-1], "support |"]
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| `p`", "| `q`", "| all"]


def test_doctests() -> None:
    import doctest

    from gpuscout.adapters import field_coverage

    assert doctest.testmod(field_coverage).failed == 0
