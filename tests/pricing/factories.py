"""Offers for pricing tests: realistic defaults, every field overridable."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from gpuscout.adapters.schema import Offer, PriceBasis, PriceUnit, RentalTerm
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.pricing.rank import RankOptions

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


#: GAUDI2: no figure at FP64 or FP32, so not ranked at those.
_MODELS = ("H100-SXM5-80GB", "H100-PCIE-80GB", "A100-SXM4-80GB", "L4", "GAUDI2", None)


def mixed_frame(rng: random.Random) -> pl.DataFrame:
    """Offers of several models (and unidentified GPUs) interleaved, several terms each."""
    offers: dict[str, Offer] = {}
    for i in range(rng.randint(1, 60)):
        model = rng.choice(_MODELS)
        offer = make_offer(
            provider=rng.choice(("a", "b")),
            offer_id=f"o{rng.randint(0, 12)}-{model}",
            gpu_model=model,
            gpu_raw_name=None if model else f"mystery {i % 3}",
            gpu_count=rng.choice((1, 8)),
            term=rng.choice((RentalTerm.ON_DEMAND, RentalTerm.INTERRUPTIBLE, RentalTerm.COMMIT_1Y)),
            term_variant=rng.choice((None, "v1")),
            price_amount=Decimal(rng.choice(("2", "3", "16", "24"))),
            available_now=rng.choice((None, True, False)),
        )
        offers.setdefault(offer.key, offer)
    return offers_to_frame(list(offers.values()))
