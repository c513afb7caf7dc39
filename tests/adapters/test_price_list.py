"""Published price lists (adapters/price_list.py): the shared reading every such provider
uses, and the refusals of a file or an entry that is not one."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest

from gpuscout.adapters.base import ResponseFormatError
from gpuscout.adapters.coreweave import CoreWeaveAdapter
from gpuscout.adapters.price_list import PublishedPriceList, _problem, read_price_list

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def price_list(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "page": "https://example.com/pricing",
        "read_on": date(2026, 9, 1),
        "defaults": {"price_currency": "USD", "price_unit": "hour", "price_basis": "instance"},
        "offers": [
            {"id": "h100", "gpu_name": "NVIDIA HGX H100", "gpu_count": 8, "gpu_memory_gb": 80,
             "term": "on_demand", "price_amount": "40"},
        ],
    }  # fmt: skip
    document.update(changes)
    return document


def parse(document: Any) -> Any:
    return CoreWeaveAdapter().parse([document], fetched_at=NOW)


def test_an_entry_is_the_providers_own_offer_dated_by_the_reading() -> None:
    (o,) = parse(price_list()).offers
    assert (o.provider, o.offer_id, o.seller) == ("coreweave", "h100", None)
    assert o.fetched_at == datetime(2026, 9, 1, tzinfo=UTC)  # as old as the page's reading
    assert o.raw_ref == "coreweave:offers[1]"
    assert o.gpu_model == "H100-SXM5-80GB"


def test_an_entry_may_name_its_own_date_but_not_a_seller() -> None:
    entry = {**price_list()["offers"][0], "price_date": date(2026, 8, 1)}
    (o,) = parse(price_list(offers=[entry])).offers
    assert o.fetched_at.date() == date(2026, 8, 1)
    result = parse(price_list(offers=[{**entry, "seller": "someone"}]))
    assert result.offers == []
    assert result.skipped[0].reason == "offers[1]: unknown field 'seller'"


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"page": "coreweave.com"}, "'page' must be the http(s) URL"),
        ({"read_on": "last week"}, "'read_on' must be the date"),
        ({"offers": {}}, "'offers' must be a list"),
        ({"defaults": []}, "'defaults' must be a mapping"),
        ({"price": 1}, "unknown top-level keys ['price']"),
    ],
)
def test_a_document_that_is_not_a_price_list_is_a_format_error(
    changes: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ResponseFormatError, match="not a price list"):
        parse(price_list(**changes))
    assert problem in (_problem(price_list(**changes)) or "")


def test_a_shipped_list_is_read_and_a_missing_one_is_an_error() -> None:
    assert read_price_list("coreweave_prices.yaml")["read_on"] == date(2026, 9, 20)
    with pytest.raises(FileNotFoundError):
        read_price_list("no_such_prices.yaml")


def test_the_base_class_is_no_provider_of_its_own() -> None:
    from gpuscout.adapters import registry

    assert PublishedPriceList not in registry().values()
    assert all(
        cls.base_url == "" for cls in registry().values() if issubclass(cls, PublishedPriceList)
    )
