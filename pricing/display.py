"""How a ranking is shown to people and to other programs (CLI json/csv, REST API).

The ranking computes in binary floating point (a job of ``15235.199999999997`` USD); what
leaves gpuscout gives each derived figure the precision it can honestly claim: a job's cost
in cents, hours and TFLOPs to a thousandth, prices per hour to a millionth of a dollar (the
stored quantum), a price per TFLOP-hour to nine places. The provider's own price stays
exact, as decimal text without padding (``"18.4"``, not ``18.400000000000``). Ranking and
sorting use the unrounded values; only the output is rounded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal

import polars as pl

from .engine import engine

__all__ = [
    "DECIMALS",
    "INTERNAL_COLUMNS",
    "age_text",
    "decimal_text",
    "display_expressions",
    "figure_text",
    "for_display",
    "provider_label",
    "provider_label_expr",
    "published_price_expr",
    "published_price_text",
]

#: Decimal places of each derived float column.
DECIMALS: dict[str, int] = {
    "job_cost_usd": 2, "required_extras_usd": 2, "storage_cost_usd": 2, "egress_cost_usd": 2,
    "all_in_cost_usd": 2, "job_storage_gb": 3,
    "storage_usd_per_gb_hour": 9, "ipv4_usd_per_hour": 6, "egress_usd_per_gb": 6,
    "boot_disk_usd_per_hour": 9,
    "compute_hours": 3, "wall_clock_hours": 3, "billed_hours": 3, "break_even_hours": 3,
    "price_age_hours": 3, "effective_tflops": 3, "peak_tflops": 3, "memory_needed_gb": 3,
    "total_gpu_memory_gb": 3, "gpus": 3, "total_gpus": 3, "job_gpus": 3,
    "memory_per_gpu_gb": 3, "fabric_gbps_per_gpu": 3, "interruptions_expected": 3,
    "usd_per_hour": 6, "usd_per_gpu_hour": 6, "on_demand_usd_per_hour": 6,
    "mfu": 6, "scaling_intra_node": 6, "scaling_inter_node": 6, "scaling": 6,
    "usd_per_effective_tflop_hour": 9,
    # the daily price index (gpuscout.db.history.daily_index)
    "median_usd_per_gpu_hour": 6, "p10_usd_per_gpu_hour": 6, "p90_usd_per_gpu_hour": 6,
    "min_usd_per_gpu_hour": 6, "availability_share": 4,
}  # fmt: skip

#: Columns of the ranking that only order it (``config_id``, ``ranked_after``): not shown.
INTERNAL_COLUMNS: tuple[str, ...] = ("config_id", "ranked_after")

#: Exact decimal columns shown as text.
_EXACT = ("price_amount",)


def _decimal_text(name: str) -> pl.Expr:
    """A Decimal column as its shortest exact text: ``18.400000000000`` -> ``18.4``."""
    return (
        pl.col(name)
        .cast(pl.String)
        .str.replace(r"(\.\d*?)0+$", "$1")
        .str.replace(r"\.$", "")
        .alias(name)
    )


def display_expressions(schema: Mapping[str, pl.DataType]) -> list[pl.Expr]:
    """What :func:`for_display` does to the columns of a frame of ``schema``: rounding and
    exact text, one expression per column it changes (a plan ending in them, as
    :func:`pricing.rank.rank_page`'s may, collects what ``for_display`` would give)."""
    exprs = [
        pl.col(name).round(places)
        for name, places in DECIMALS.items()
        if name in schema and schema[name].is_float()
    ]
    exprs += [
        _decimal_text(name)
        for name in _EXACT
        if name in schema and isinstance(schema[name], pl.Decimal)
    ]
    return exprs


def for_display(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (any subset of the ranking's columns) rounded and trimmed for output.

    Each expression in turn: the frames shown are small (a page, a price history), where a
    thread per expression costs more than the work."""
    exprs = display_expressions(frame.schema)
    plan = frame.lazy().with_columns_seq(exprs).drop(INTERNAL_COLUMNS, strict=False)
    return plan.collect(engine=engine())


def provider_label(provider: str, seller: str | None) -> str:
    """Who to rent from, as people read it: ``coreweave (sheet)``, ``lambda``."""
    return f"{seller} ({provider})" if seller else provider


#: How a published price's period reads after its amount (``2.72 CNY/GPU-h``).
_PERIOD_TEXT = {"hour": "h", "day": "day", "week": "wk", "month": "mo", "term": "term"}


def published_price_text(
    amount: Decimal | float | str, currency: str, unit: str, basis: str
) -> str:
    """A price as the provider publishes it, in its own currency and period, for the
    reader who knows the provider's page (a Chinese platform's yuan beside the dollars the
    ranking converts them to).

    >>> published_price_text(Decimal("2.720000"), "CNY", "hour", "gpu")
    '2.72 CNY/GPU-h'
    >>> published_price_text(Decimal("1068"), "CNY", "month", "instance")
    '1068 CNY/mo'
    """
    period = _PERIOD_TEXT.get(unit, unit)
    per = f"GPU-{period}" if basis == "gpu" else period
    return f"{decimal_text(Decimal(str(amount)))} {currency}/{per}"


def published_price_expr() -> pl.Expr:
    """:func:`published_price_text` over a frame's ``price_amount``, ``price_currency``,
    ``price_unit`` and ``price_basis``; null where the price is in USD already (the dollar
    columns say it) or has no amount."""
    amount = pl.col("price_amount").cast(pl.String)
    amount = (
        pl.when(amount.str.contains(r"\."))
        .then(amount.str.strip_chars_end("0").str.strip_chars_end("."))
        .otherwise(amount)
    )
    unit = pl.col("price_unit").cast(pl.String)
    period = unit.replace_strict(_PERIOD_TEXT, default=unit)
    per = (
        pl.when(pl.col("price_basis").cast(pl.String) == "gpu")
        .then(pl.concat_str([pl.lit("GPU-"), period]))
        .otherwise(period)
    )
    text = pl.format("{} {}/{}", amount, pl.col("price_currency"), per)
    return pl.when(pl.col("price_currency") != "USD").then(text).otherwise(None)


def provider_label_expr() -> pl.Expr:
    """:func:`provider_label` over a frame's ``provider`` and ``seller`` columns."""
    return (
        pl.when(pl.col("seller").is_not_null())
        .then(pl.format("{} ({})", "seller", "provider"))
        .otherwise(pl.col("provider"))
    )


def figure_text(value: float | int, *, significant: int = 3, decimals: int | None = 2) -> str:
    """A figure as people read it in a table: thousands grouped, no more digits than tell.

    Up to ``decimals`` places from 1 to 100 (``None``: as many as ``significant`` digits
    need), ``significant`` digits below 1, whole numbers from 100 up.

    >>> figure_text(18.4), figure_text(2392.0), figure_text(0.004819, decimals=None)
    ('18.40', '2,392', '0.00482')
    >>> figure_text(405.69, decimals=1), figure_text(8.4e22, decimals=None)
    ('406', '8.4e+22')
    """
    x = float(value)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    magnitude = abs(x)
    if magnitude >= 1e15:
        return f"{x:.{significant}g}"
    if magnitude >= 1000:
        return f"{x:,.0f}"
    places = max(0, significant - 1 - math.floor(math.log10(magnitude)))
    if decimals is not None and magnitude >= 1:
        places = decimals if magnitude < 100 else 0
    return f"{x:,.{places}f}"


def age_text(hours: float | None) -> str:
    """How old a price is, in the largest unit that reads well: ``40 min``, ``5 h``,
    ``12 d``, ``2.7 y``.

    >>> age_text(0.66), age_text(5.2), age_text(300), age_text(24 * 1000)
    ('40 min', '5 h', '12 d', '2.7 y')
    """
    if hours is None:
        return ""
    if hours < 1:
        return f"{round(hours * 60)} min"
    if hours < 48:
        return f"{round(hours)} h"
    days = hours / 24
    if days < 365:
        return f"{round(days)} d"
    return f"{days / 365.25:.1f} y"


def decimal_text(value: Decimal | float, places: int = 6) -> str:
    """An exact amount to at most ``places`` decimals, without padding zeros.

    >>> decimal_text(Decimal("0.24666666666666665")), decimal_text(Decimal("18.400"))
    ('0.246667', '18.4')
    """
    quantum = Decimal(1).scaleb(-places)
    text = f"{Decimal(str(value)).quantize(quantum):f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
