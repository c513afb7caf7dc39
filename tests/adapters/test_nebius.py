"""Nebius: its published price list, parsed field by field."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from gpuscout.adapters.format_checks import format_checks
from gpuscout.adapters.gpus import get_gpu
from gpuscout.adapters.nebius import NebiusAdapter
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def offers() -> dict[str, Any]:
    adapter = NebiusAdapter()
    result = adapter.parse(asyncio.run(adapter.fetch(None)), fetched_at=NOW)  # type: ignore[arg-type]
    assert result.skipped == []
    return {o.offer_id: o for o in result.offers}


def test_the_list_says_where_and_when_it_was_read() -> None:
    assert NebiusAdapter.source_url == "https://nebius.com/prices"
    assert NebiusAdapter.read_on == date(2026, 10, 7)
    assert format_checks()["nebius"].day == date(2026, 10, 7)


def test_every_gpu_resolves_in_the_catalog() -> None:
    found = offers()
    assert sorted(found) == [
        "gpu-b200-sxm",
        "gpu-b300-sxm",
        "gpu-h100-sxm",
        "gpu-h200-sxm",
        "gpu-rtx-pro-6000",
    ]
    assert all(get_gpu(o.gpu_model or "") is not None for o in found.values())


def test_h100_is_priced_per_gpu_at_the_price_in_force_when_read() -> None:
    o = offers()["gpu-h100-sxm"]
    assert (o.gpu_model, o.gpu_count, o.vcpus, o.ram_gb) == ("H100-SXM5-80GB", 1, 16, 200)
    assert o.term is RentalTerm.ON_DEMAND
    assert (o.price_amount, o.price_currency) == (Decimal("4.50"), "USD")  # from 1 Oct 2026
    assert (o.price_unit, o.price_basis) == (PriceUnit.HOUR, PriceBasis.GPU)
    assert o.fetched_at == datetime(2026, 10, 7, tzinfo=UTC)
