"""Synthetic but realistic current offers, for the API benchmark and load tests.

Prices follow each GPU model's market (USD per GPU-hour, with a spread per provider and
region), commitments are discounted, and hardware scales with the GPU count the way real
servers do. Deterministic for a given seed.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpuscout.adapters.schema import (
    Fabric,
    GpuFormFactor,
    GpuInterconnect,
    Offer,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    StorageType,
)

__all__ = ["MODELS", "PROVIDERS", "synthetic_offers"]

#: (catalog name, form factor, memory GB, typical on-demand USD per GPU-hour)
MODELS: tuple[tuple[str, GpuFormFactor, float, float], ...] = (
    ("H100-SXM5-80GB", GpuFormFactor.SXM, 80, 2.49),
    ("H100-PCIE-80GB", GpuFormFactor.PCIE, 80, 2.05),
    ("H200-SXM-141GB", GpuFormFactor.SXM, 141, 3.39),
    ("B200", GpuFormFactor.SXM, 180, 5.29),
    ("A100-SXM4-80GB", GpuFormFactor.SXM, 80, 1.39),
    ("A100-PCIE-40GB", GpuFormFactor.PCIE, 40, 0.99),
    ("L40S", GpuFormFactor.PCIE, 48, 0.89),
    ("L4", GpuFormFactor.PCIE, 24, 0.44),
    ("A10", GpuFormFactor.PCIE, 24, 0.55),
    ("RTX-4090", GpuFormFactor.PCIE, 24, 0.34),
    ("RTX-3090", GpuFormFactor.PCIE, 24, 0.22),
    ("RTX-A6000", GpuFormFactor.PCIE, 48, 0.49),
    ("MI300X", GpuFormFactor.OAM, 192, 2.19),
    ("GAUDI2", GpuFormFactor.OAM, 96, 1.29),
)
PROVIDERS: tuple[str, ...] = (
    "vastai", "runpod", "lambda", "tensordock", "verda", "azure", "aws", "gcp", "hyperstack",
    "vultr", "nebius", "digitalocean", "jarvislabs",
)  # fmt: skip
REGIONS: tuple[tuple[str, str], ...] = (
    ("us-east-1", "US"), ("us-west-2", "US"), ("us-central-1", "US"), ("eu-west-1", "IE"),
    ("eu-central-1", "DE"), ("eu-north-1", "SE"), ("ap-northeast-1", "JP"),
    ("ap-southeast-1", "SG"), ("ca-central-1", "CA"), ("no-oslo-1", "NO"),
)  # fmt: skip
_COMMIT_DISCOUNT = {
    RentalTerm.INTERRUPTIBLE: 0.45,
    RentalTerm.COMMIT_1W: 0.9,
    RentalTerm.COMMIT_1MO: 0.8,
    RentalTerm.COMMIT_6MO: 0.7,
    RentalTerm.COMMIT_1Y: 0.62,
    RentalTerm.COMMIT_3Y: 0.5,
}


def synthetic_offers(n: int, *, seed: int = 7, now: datetime | None = None) -> list[Offer]:
    """``n`` offers (configurations x terms) spread over providers, regions and models."""
    rng = random.Random(seed)
    now = now or datetime.now(UTC)
    offers: list[Offer] = []
    i = 0
    while len(offers) < n:
        i += 1
        model, form, memory_gb, base = rng.choice(MODELS)
        provider = rng.choice(PROVIDERS)
        region, country = rng.choice(REGIONS)
        count = rng.choice((1, 1, 1, 2, 4, 8, 8))
        sxm = form in (GpuFormFactor.SXM, GpuFormFactor.OAM)
        big = count == 8 and sxm
        per_gpu = base * rng.uniform(0.75, 1.35)
        fetched_at = now - timedelta(minutes=rng.randint(1, 600))
        terms = [RentalTerm.ON_DEMAND]
        terms += rng.sample(list(_COMMIT_DISCOUNT), k=rng.randint(0, 3))
        common = dict(
            provider=provider,
            offer_id=f"{provider}-{i}",
            instance_name=f"{count}x-{model.lower()}",
            region=region,
            country=country,
            fetched_at=fetched_at,
            gpu_model=model,
            gpu_raw_name=model.replace("-", " "),
            gpu_count=count,
            gpu_memory_gb=memory_gb,
            gpu_form_factor=form,
            gpu_interconnect=(
                GpuInterconnect.NVLINK
                if sxm and form is GpuFormFactor.SXM
                else GpuInterconnect.INFINITY_FABRIC
                if sxm
                else GpuInterconnect.PCIE
            ),
            vcpus=float(count * rng.choice((8, 12, 16, 26))),
            ram_gb=float(count * rng.choice((32, 64, 128, 240))),
            storage_gb=float(count * rng.choice((100, 250, 500, 1000, 3840))),
            storage_type=rng.choice(list(StorageType)),
            fabric=(Fabric.INFINIBAND if big and rng.random() < 0.6 else Fabric.ETHERNET),
            fabric_gbps=(3200.0 if big else rng.choice((10.0, 25.0, 100.0))),
            multi_node=big,
            reliability=round(rng.uniform(0.9, 1.0), 4),
            verified=rng.random() < 0.7,
            datacenter=rng.random() < 0.8,
            available_now=rng.random() < 0.8,
            price_currency="USD",
            price_unit=PriceUnit.HOUR,
            price_basis=PriceBasis.GPU,
            billing_increment_s=rng.choice((1, 60, 3600)),
        )
        for term in terms:
            factor = _COMMIT_DISCOUNT.get(term, 1.0)
            price = Decimal(str(round(per_gpu * factor, 4)))
            offers.append(Offer(**common, term=term, price_amount=price))  # type: ignore[arg-type]
            if len(offers) >= n:
                break
    return offers
