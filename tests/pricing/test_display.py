"""for_display: derived floats rounded to what they claim, exact prices as short text."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import polars as pl
import pytest

from gpuscout.pricing import Job, rank
from gpuscout.pricing.display import (
    DECIMALS,
    INTERNAL_COLUMNS,
    age_text,
    decimal_text,
    figure_text,
    for_display,
)
from gpuscout.pricing.frame import offers_to_frame

from .factories import AT_NOW, make_offer


def test_rounds_derived_figures_and_keeps_prices_exact() -> None:
    frame = pl.DataFrame(
        {
            "job_cost_usd": [15235.199999999997],
            "wall_clock_hours": [827.9999999999999],
            "usd_per_effective_tflop_hour": [0.006721315578726235],
            "price_amount": [Decimal("18.400000000000")],
            "config_id": [7],
            "gpu_count": [8],
        },
        schema_overrides={"price_amount": pl.Decimal(38, 12)},
    )
    shown = for_display(frame).row(0, named=True)
    assert shown == {
        "job_cost_usd": 15235.2,
        "wall_clock_hours": 828.0,
        "usd_per_effective_tflop_hour": 0.006721316,
        "price_amount": "18.4",
        "gpu_count": 8,
    }


def test_whole_and_tiny_prices_keep_every_significant_digit() -> None:
    frame = pl.DataFrame(
        {"price_amount": [Decimal("100"), Decimal("0.000123"), Decimal("46000.5")]},
        schema={"price_amount": pl.Decimal(38, 12)},
    )
    assert for_display(frame)["price_amount"].to_list() == ["100", "0.000123", "46000.5"]


def test_a_real_ranking_keeps_its_order_and_columns_but_config_id() -> None:
    offers = [make_offer(offer_id=f"box-{i}", price_amount=Decimal(20) + i) for i in range(3)]
    ranked = rank(offers_to_frame(offers), job=Job(hours=333), options=AT_NOW)
    shown = for_display(ranked)
    assert shown.columns == [c for c in ranked.columns if c not in INTERNAL_COLUMNS]
    assert shown["offer_id"].to_list() == ranked["offer_id"].to_list()
    for column, places in DECIMALS.items():
        if column not in shown.columns:  # the price index's columns
            continue
        for value in shown[column].drop_nulls().to_list():
            assert value == round(value, places), column


def test_price_index_columns_are_rounded_too() -> None:
    index = pl.DataFrame(
        {
            "median_usd_per_gpu_hour": [3.1399999999999997],
            "p90_usd_per_gpu_hour": [6.001000000000003],
        }
    )
    assert for_display(index).row(0) == (3.14, 6.001)


@pytest.mark.parametrize(
    ("value", "kwargs", "text"),
    [
        (18.4, {}, "18.40"),
        (2392.0000001, {}, "2,392"),
        (195.5, {}, "196"),
        (0.004819, {"decimals": None}, "0.00482"),
        (0.0072, {"decimals": None}, "0.00720"),
        (405.69, {"decimals": 1}, "406"),
        (8.4e22, {"decimals": None}, "8.4e+22"),
        (0.0, {}, "0"),
    ],
)
def test_figure_text_rounds_for_reading(value: float, kwargs: dict[str, Any], text: str) -> None:
    assert figure_text(value, **kwargs) == text


@pytest.mark.parametrize(
    ("hours", "text"), [(0.66, "40 min"), (5.2, "5 h"), (300, "12 d"), (24_000, "2.7 y")]
)
def test_age_text(hours: float, text: str) -> None:
    assert age_text(hours) == text


def test_decimal_text_cuts_binary_noise() -> None:
    assert decimal_text(Decimal("0.24666666666666665")) == "0.246667"
    assert decimal_text(Decimal("18.400")) == "18.4"
    assert decimal_text(Decimal("3")) == "3"


def test_published_price_in_the_provider_s_own_currency_and_period() -> None:
    import polars as pl

    from gpuscout.pricing.display import published_price_expr, published_price_text

    assert published_price_text(Decimal("2.720000"), "CNY", "hour", "gpu") == "2.72 CNY/GPU-h"
    assert published_price_text(Decimal("1068"), "CNY", "month", "instance") == "1068 CNY/mo"
    frame = pl.DataFrame(
        {
            "price_amount": [Decimal("2.72"), Decimal("1068.0"), Decimal("3.5")],
            "price_currency": ["CNY", "CNY", "USD"],
            "price_unit": ["hour", "month", "hour"],
            "price_basis": ["gpu", "instance", "instance"],
        },
        schema_overrides={"price_amount": pl.Decimal(38, 12)},
    )
    shown = frame.select(published_price_expr().alias("p"))["p"].to_list()
    assert shown == ["2.72 CNY/GPU-h", "1068 CNY/mo", None]
