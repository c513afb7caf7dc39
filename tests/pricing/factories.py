"""Offers for pricing tests: realistic defaults, every field overridable."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from adapters.schema import Offer, PriceBasis, PriceUnit, RentalTerm
from pricing.rank import RankOptions

#: The instant every test ranks at.
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
#: The default ranking options at :data:`NOW`.
AT_NOW = RankOptions(now=NOW)


def make_offer(**overrides: Any) -> Offer:
    """An 8x H100 SXM on-demand offer at 16 USD/hour unless overridden."""
    data: dict[str, Any] = {
        "provider": "acme",
        "offer_id": "8x-h100",
        "region": "us-east-1",
        "country": "US",
        "fetched_at": datetime(2026, 1, 1, 11, tzinfo=UTC),
        "gpu_model": "H100-SXM5-80GB",
        "gpu_count": 8,
        "gpu_memory_gb": 80.0,
        "price_amount": Decimal("16"),
        "price_currency": "USD",
        "price_unit": PriceUnit.HOUR,
        "price_basis": PriceBasis.INSTANCE,
        "term": RentalTerm.ON_DEMAND,
    }
    data.update(overrides)
    return Offer(**data)
