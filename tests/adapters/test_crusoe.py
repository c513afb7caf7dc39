"""Crusoe: its published price list, parsed field by field."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from gpuscout.adapters.crusoe import CrusoeAdapter
from gpuscout.adapters.gpus import get_gpu
from gpuscout.adapters.schema import GpuFormFactor, PriceBasis, PriceUnit, RentalTerm, Vendor

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def offers() -> dict[str, Any]:
    adapter = CrusoeAdapter()
    result = adapter.parse(asyncio.run(adapter.fetch(None)), fetched_at=NOW)  # type: ignore[arg-type]
    assert result.skipped == []
    return {o.offer_id: o for o in result.offers}


def test_the_list_says_where_and_when_it_was_read() -> None:
    assert CrusoeAdapter.source_text() == (
        "price list published at https://www.crusoe.ai/cloud/pricing, read 2026-09-20"
    )
    assert CrusoeAdapter.read_on == date(2026, 9, 20)


def test_every_gpu_resolves_in_the_catalog() -> None:
    found = offers()
    assert len(found) == 6
    assert all(get_gpu(o.gpu_model or "") is not None for o in found.values())


def test_the_page_names_the_form_factor_of_each_a100() -> None:
    found = offers()
    assert found["a100-80gb-sxm"].gpu_model == "A100-SXM4-80GB"
    assert found["a100-80gb-pcie"].gpu_model == "A100-PCIE-80GB"
    assert found["h100-80gb-sxm"].gpu_model == "H100-SXM5-80GB"  # an HGX board is SXM
    assert found["h100-80gb-sxm"].gpu_form_factor is GpuFormFactor.SXM


def test_an_offer_field_by_field() -> None:
    o = offers()["mi300x-192gb"]
    assert (o.gpu_raw_name, o.gpu_model, o.gpu_vendor) == ("AMD MI300X 192GB", "MI300X", Vendor.AMD)
    assert (o.gpu_count, o.gpu_memory_gb, o.vcpus) == (1, 192, None)  # no shape on the page
    assert o.term is RentalTerm.ON_DEMAND
    assert (o.price_amount, o.price_unit, o.price_basis) == (
        Decimal("3.45"),
        PriceUnit.HOUR,
        PriceBasis.GPU,
    )
    assert o.fetched_at == datetime(2026, 9, 20, tzinfo=UTC)
