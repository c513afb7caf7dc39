"""CoreWeave: its published price list, parsed field by field."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from gpuscout.adapters.coreweave import CoreWeaveAdapter
from gpuscout.adapters.gpus import get_gpu
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def offers() -> list[Any]:
    adapter = CoreWeaveAdapter()
    payloads = asyncio.run(adapter.fetch(None))  # type: ignore[arg-type]
    result = adapter.parse(payloads, fetched_at=NOW)
    assert result.skipped == []
    return result.offers


def test_the_list_says_where_and_when_it_was_read() -> None:
    assert CoreWeaveAdapter.source_url == "https://www.coreweave.com/pricing"
    assert CoreWeaveAdapter.read_on == date(2026, 9, 20)
    assert CoreWeaveAdapter.source_text() == (
        "price list published at https://www.coreweave.com/pricing, read 2026-09-20"
    )
    assert CoreWeaveAdapter.credential_names == () and CoreWeaveAdapter.base_url == ""


def test_every_offer_resolves_in_the_catalog_and_is_dated_by_the_reading() -> None:
    found = offers()
    assert len(found) == 13
    assert all(get_gpu(o.gpu_model or "") is not None for o in found)
    assert {o.fetched_at for o in found} == {datetime(2026, 9, 20, tzinfo=UTC)}


def test_hgx_h100_on_demand_and_spot() -> None:
    h100 = {o.term: o for o in offers() if o.offer_id == "hgx-h100"}
    on_demand, spot = h100[RentalTerm.ON_DEMAND], h100[RentalTerm.INTERRUPTIBLE]
    assert (on_demand.gpu_model, on_demand.gpu_count, on_demand.gpu_memory_gb) == (
        "H100-SXM5-80GB",
        8,
        80,
    )
    assert (on_demand.price_amount, on_demand.price_currency) == (Decimal("49.24"), "USD")
    assert (on_demand.price_unit, on_demand.price_basis) == (PriceUnit.HOUR, PriceBasis.INSTANCE)
    assert on_demand.usd_per_gpu_hour == Decimal("6.155")
    assert on_demand.billing_increment_s == 60  # per-minute billing
    assert spot.price_amount == Decimal("19.71")
    assert on_demand.raw_ref == "coreweave:offers[4]"


def test_gb200_carries_its_published_shape() -> None:
    (o,) = [o for o in offers() if o.offer_id == "gb200-nvl72"]
    assert (o.gpu_model, o.gpu_count, o.vcpus, o.ram_gb) == ("GB200", 4, 144, 960)
    assert o.storage_gb == 30720  # "30.72 TB local storage"
