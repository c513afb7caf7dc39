"""The offer schema: validation names the field, conversions are exact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pydantic
import pytest

from gpuscout.adapters import schema
from gpuscout.adapters.schema import (
    FxTable,
    Offer,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    hours_per_price_unit,
    load_fx,
    usd_per_hour,
)

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def offer(**overrides: Any) -> Offer:
    fields: dict[str, Any] = {
        "provider": "example",
        "offer_id": "8xa100",
        "fetched_at": NOW,
        "gpu_model": "A100-SXM4-80GB",
        "gpu_count": 8,
        "price_amount": Decimal("14.32"),
        "price_currency": "USD",
        "price_unit": PriceUnit.HOUR,
        "price_basis": PriceBasis.INSTANCE,
        "term": RentalTerm.ON_DEMAND,
    }
    fields.update(overrides)
    return Offer(**fields)


def error_fields(exc: pydantic.ValidationError) -> set[str]:
    return {".".join(str(p) for p in e["loc"]) for e in exc.errors()}


@pytest.mark.parametrize(
    ("overrides", "field_or_text"),
    [
        ({"price_amount": Decimal("0")}, "price_amount"),
        ({"price_amount": Decimal("-1")}, "price_amount"),
        ({"price_currency": "XYZ"}, "price_currency"),
        ({"price_currency": "usd"}, "price_currency"),
        ({"gpu_count": -1}, "gpu_count"),
        ({"gpu_memory_gb": 0}, "gpu_memory_gb"),
        ({"country": "USA"}, "country"),
        ({"reliability": 1.5}, "reliability"),
        ({"fetched_at": datetime(2026, 1, 1)}, "fetched_at"),
        ({"unknown_field": 1}, "unknown_field"),
        ({"term": "forever"}, "term"),
        ({"storage_type": "tape"}, "storage_type"),
    ],
)
def test_invalid_fields_are_named(overrides: dict[str, Any], field_or_text: str) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        offer(**overrides)
    assert field_or_text in error_fields(info.value)


@pytest.mark.parametrize(
    ("overrides", "text"),
    [
        ({"gpu_count": 0}, "gpu_count: 0 GPUs but a gpu_model is set"),
        ({"gpu_fraction": 0.5, "gpu_count": 2}, "gpu_fraction"),
        ({"price_unit": PriceUnit.TERM}, "price_unit"),
        ({"gpu_model": None, "gpu_count": 0, "price_basis": PriceBasis.GPU}, "price_basis"),
    ],
)
def test_incoherent_records_are_rejected_naming_the_field(
    overrides: dict[str, Any], text: str
) -> None:
    with pytest.raises(pydantic.ValidationError, match=text):
        offer(**overrides)


def test_offer_is_frozen() -> None:
    o = offer()
    with pytest.raises(pydantic.ValidationError):
        o.price_amount = Decimal(1)  # type: ignore[misc]


def test_fetched_at_is_normalised_to_utc() -> None:
    cst = timezone(timedelta(hours=8))
    o = offer(fetched_at=datetime(2026, 11, 1, 20, 0, tzinfo=cst))
    assert o.fetched_at == NOW
    assert o.fetched_at.tzinfo is UTC


def test_usd_per_hour_whole_instance_from_per_gpu_price() -> None:
    o = offer(price_amount=Decimal("2.49"), price_basis=PriceBasis.GPU)
    assert o.usd_per_hour == Decimal("19.92")
    assert o.usd_per_gpu_hour == Decimal("2.49")


def test_usd_per_hour_from_whole_term_price() -> None:
    # A 3-year reservation priced for the whole term: 26,280 hours.
    o = offer(price_amount=Decimal("262800"), price_unit="term", term="commit_3y")
    assert o.usd_per_hour == Decimal("10")


def test_usd_per_hour_from_cny_month() -> None:
    fx = default = schema.default_fx()
    o = offer(
        price_amount=Decimal("73000"), price_currency="CNY", price_unit="month", term="commit_1mo"
    )
    expected = (Decimal(73000) / fx.units_per_usd["CNY"] / 730).quantize(schema.USD_QUANTUM)
    assert o.usd_per_hour == expected
    assert default.units_per_usd["USD"] == 1
    # ECB 2025-02-28: 7.5782 CNY and 1.0411 USD per EUR.
    assert fx.units_per_usd["CNY"] == Decimal("7.5782") / Decimal("1.0411")


def test_fractional_gpu_counts_as_its_share() -> None:
    o = offer(gpu_count=1, gpu_fraction=0.25, price_amount=Decimal("0.5"))
    assert o.gpus == 0.25
    assert o.usd_per_gpu_hour == Decimal("2")


@pytest.mark.parametrize(
    ("unit", "term", "hours"),
    [
        (PriceUnit.HOUR, RentalTerm.ON_DEMAND, Decimal(1)),
        (PriceUnit.DAY, RentalTerm.COMMIT_1D, Decimal(24)),
        (PriceUnit.WEEK, RentalTerm.COMMIT_1W, Decimal(168)),
        (PriceUnit.MONTH, RentalTerm.COMMIT_1Y, Decimal(730)),
        (PriceUnit.TERM, RentalTerm.COMMIT_1Y, Decimal(8760)),
        (PriceUnit.TERM, RentalTerm.COMMIT_3MO, Decimal(2190)),
    ],
)
def test_hours_per_price_unit(unit: PriceUnit, term: RentalTerm, hours: Decimal) -> None:
    assert hours_per_price_unit(unit, term) == hours


def test_term_price_without_commitment_is_an_error() -> None:
    with pytest.raises(ValueError, match="commitment"):
        hours_per_price_unit(PriceUnit.TERM, RentalTerm.INTERRUPTIBLE)


def test_usd_per_hour_uses_the_given_fx_table() -> None:
    fx = FxTable(as_of="x", source="test", units_per_usd={"USD": Decimal(1), "EUR": Decimal("0.5")})
    value = usd_per_hour(
        price_amount=Decimal(3),
        price_currency="EUR",
        price_unit=PriceUnit.HOUR,
        price_basis=PriceBasis.GPU,
        term=RentalTerm.ON_DEMAND,
        gpu_count=2,
        fx=fx,
    )
    assert value == Decimal(12)


def test_unknown_currency_in_fx_lookup_is_named() -> None:
    with pytest.raises(KeyError, match="XYZ"):
        schema.default_fx().rate("XYZ")


def test_bad_fx_file_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="USD"):
        load_fx('as_of = "x"\nsource = "y"\n[per_base]\nEUR = 1\n')
    with pytest.raises(ValueError, match="<= 0"):
        load_fx('as_of = "x"\nsource = "y"\n[per_base]\nUSD = 0\n')


def test_record_round_trip_keeps_every_field() -> None:
    o = offer(
        os_images=("ubuntu-22.04",),
        psu_watts=8000,
        psu_redundancy="2+2",
        cooling="liquid",
        chassis_form_factor="4U",
        fabric="infiniband",
        fabric_gbps=400,
    )
    record = o.to_record()
    assert record["usd_per_hour"] == "14.320000"
    assert record["price_amount"] == "14.32"
    rebuilt = Offer.model_validate({k: v for k, v in record.items() if k != "usd_per_hour"})
    assert rebuilt == o
    assert set(Offer.model_fields) <= set(record)


def test_key_identifies_offer_across_prices() -> None:
    assert offer().key == offer(price_amount=Decimal(1)).key
    assert offer().key != offer(term="interruptible").key


def test_every_seed_group_has_fields() -> None:
    names = set(Offer.model_fields)
    groups = {
        "gpu": {"gpu_model", "gpu_count", "gpu_memory_gb", "gpu_form_factor", "gpu_interconnect"},
        "cpu": {"cpu_model", "cpu_vendor", "cpu_arch", "cpu_sockets", "cpu_cores", "vcpus"},
        "memory/storage": {"ram_gb", "ram_ecc", "storage_gb", "storage_type"},
        "network": {"public_bandwidth_up_mbps", "fabric", "fabric_gbps", "multi_node"},
        "power/cooling": {"psu_watts", "psu_redundancy", "cooling"},
        "chassis": {"chassis_form_factor", "expandability_notes"},
        "software": {"os_images", "cuda_version", "driver_version", "frameworks"},
        "price/term": {"price_amount", "price_currency", "price_unit", "price_basis", "term"},
        "support": {"support_tier", "sla_uptime_pct", "reliability", "verified"},
        "availability": {"available_now", "available_count"},
    }
    for group, fields in groups.items():
        assert fields <= names, group
