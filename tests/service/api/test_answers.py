"""Shaping a ranked page into the answer's offers: column by column, as a row by row reading
of the same page would give them."""

from __future__ import annotations

import math
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson
import polars as pl

from gpuscout.adapters.schema import RentalTerm
from gpuscout.pricing.display import for_display
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.pricing.rank import RankOptions, rank_page
from gpuscout.service.api.answer_schema import GROUPS, TOP_LEVEL
from gpuscout.service.api.answers import _shaped
from gpuscout.service.api.offer_ids import offer_id, offer_key, offer_links
from gpuscout.service.api.vocabulary import rfc3339
from tests.pricing.factories import NOW, make_offer


def _by_row(row: dict[str, Any], checklist: dict[str, Any]) -> dict[str, Any]:
    """One row read as a dict, every value as JSON holds it: the reference."""

    def value(v: Any) -> Any:
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        return rfc3339(v) if isinstance(v, datetime) else v

    key = offer_key(row)
    out: dict[str, Any] = {"id": offer_id(key), **{k: value(row[k]) for k in TOP_LEVEL}}
    out.update({g: {c: value(row[c]) for c in columns} for g, columns in GROUPS.items()})
    return {**out, "checklist": checklist, "links": offer_links(key, row)}


def test_each_offer_is_its_row_with_non_finite_figures_as_null() -> None:
    offers = [
        make_offer(offer_id=f"box-{i}", price_amount=Decimal(20 + i), term=term, region=region)
        for i, region in enumerate(("us-east-1", None, "eu-west-1"))
        for term in (RentalTerm.ON_DEMAND, RentalTerm.INTERRUPTIBLE)
    ]
    page = rank_page(offers_to_frame(offers), options=RankOptions(now=NOW))
    rows = for_display(page.rows).with_columns(
        usd_per_hour=pl.Series([math.nan, math.inf, 1.5]),
        fabric_gbps=pl.Series([-math.inf, None, 2.0]),
    )
    checklists = [
        {"met": i, "not_met": 1, "unknown": 2, "items": i + 3, "summary": "-"}
        for i in range(rows.height)
    ]
    shaped = _shaped(rows, checklists)
    expected = [_by_row(r, c) for r, c in zip(rows.iter_rows(named=True), checklists, strict=True)]
    assert shaped == expected
    assert [o["price"]["usd_per_hour"] for o in shaped] == [None, None, 1.5]
    assert [o["hardware"]["fabric_gbps"] for o in shaped] == [None, None, 2.0]
    # for orjson (a new query's answer), which writes a float that is not finite as null
    bytes_ = orjson.dumps(_shaped(rows, checklists, finite=False))
    assert orjson.loads(bytes_) == expected
    assert shaped[0]["fetched_at"] == rfc3339(rows["fetched_at"][0])
    assert _shaped(rows.clear(), []) == []
