"""The ``offers`` table for a terminal: folded, columns chosen by width, figures for reading.

Three steps, each a pure function:

1. :func:`fold` groups rows that differ only in what the reader does not need one row
   for (``--group-by``, as ``dstack offer --group-by``): by default identical
   configurations (same provider, offer, GPUs, term and price) in several regions are one
   row with their regions listed; ``--group-by gpu`` (or ``provider``, ``region``, several
   at once) gives one row per distinct value, its best-ranked offer standing for the group
   with the number of offers and the price range folded in.
2. :func:`choose_columns` keeps the columns that fit the console, in the priority order of
   :data:`COLUMNS` (``--wide``: all; ``--columns``: the ones named).
3. :func:`offers_table` renders them; no cell wraps, so a figure is never split across
   lines, and an over-long text (an offer id, a region list) ends in an ellipsis.

Figures are rounded for reading (``18.4``, ``0.00482``, ``2,392``); ``--format json`` keeps
the exact values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any

import polars as pl
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from pricing.display import age_text, figure_text, provider_label_expr

__all__ = [
    "COLUMNS",
    "REGIONS_WIDTH",
    "Column",
    "GroupBy",
    "choose_columns",
    "fold",
    "label_rows",
    "offers_table",
    "price_range",
    "print_wide",
    "region_list",
]


class GroupBy(StrEnum):
    """What one row of the table stands for."""

    CONFIG = "config"
    """one configuration (provider, offer, GPUs, term, price): its regions folded"""
    GPU = "gpu"
    PROVIDER = "provider"
    REGION = "region"
    NONE = "none"
    """every ranked configuration its own row"""


#: The columns of each grouping's key (besides the ones every group shares).
_GROUP_KEYS: dict[GroupBy, tuple[str, ...]] = {
    GroupBy.CONFIG: ("provider_label", "offer_id", "gpus_label", "term", "usd_per_hour"),
    GroupBy.GPU: ("gpu_model",),
    GroupBy.PROVIDER: ("provider_label",),
    GroupBy.REGION: ("region",),
    GroupBy.NONE: ("rank",),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    """One column of the table: the row field, its header, how a value reads."""

    name: str
    header: str
    text: Callable[[Any], str] = str
    numeric: bool = False
    max_width: int | None = None
    """text longer than this ends in an ellipsis (ids, region lists); figures never do"""


#: Most characters of a folded region list (``us-south-2, us-south-3 +1``).
REGIONS_WIDTH = 30


def region_list(text: str, width: int = REGIONS_WIDTH) -> str:
    """A folded group's regions (``a, b, c``) cut to ``width`` as ``a, b +1``.

    >>> region_list("us-south-2, us-south-3, us-west-3", 26)
    'us-south-2, us-south-3 +1'
    """
    names = text.split(", ")
    for keep in range(len(names), 0, -1):
        shown = ", ".join(names[:keep]) + (f" +{len(names) - keep}" if keep < len(names) else "")
        if len(shown) <= width:
            return shown
    return f"{names[0][: width - 4]}… +{len(names) - 1}" if len(names) > 1 else names[0]


def _money(value: Any) -> str:
    return figure_text(value, significant=3, decimals=2)


def _fine(value: Any) -> str:
    return figure_text(value, significant=3, decimals=None)


def _whole(value: Any) -> str:
    return figure_text(value, significant=3, decimals=1)


#: Every column the table can show, in priority order: at 80 columns the first ones fit.
COLUMNS: tuple[Column, ...] = (
    Column("rank", "#", numeric=True),
    Column("provider_label", "provider", max_width=22),
    Column("gpus_label", "GPUs", max_width=24),
    Column("usd_per_effective_tflop_hour", "$/eff.TFLOP-h", _fine, numeric=True),
    Column("term", "term"),
    Column("all_in_cost_usd", "job $", _money, numeric=True),
    Column("usd_per_hour", "$/h", _money, numeric=True),
    Column("price_age_hours", "age", age_text, numeric=True),
    Column("regions", "regions", region_list, max_width=REGIONS_WIDTH),
    Column("usd_per_gpu_hour", "$/GPU-h", _money, numeric=True),
    Column("offers", "n", numeric=True),
    Column("wall_clock_hours", "wall h", _whole, numeric=True),
    Column("effective_tflops", "eff.TFLOPs", _whole, numeric=True),
    Column("offer_id", "offer", max_width=28),
    Column("gpu_memory_gb", "GB/GPU", _whole, numeric=True),
    Column("fabric", "fabric"),
    Column("billed_hours", "billed h", _whole, numeric=True),
    Column("job_cost_usd", "compute $", _money, numeric=True),
    Column("checklist", "checklist"),
    Column("id", "id"),
)

#: The order columns are shown in, whichever are chosen.
_SHOWN_ORDER: tuple[str, ...] = (
    "rank", "provider_label", "offer_id", "regions", "offers", "gpus_label", "gpu_memory_gb",
    "fabric", "term", "usd_per_hour", "usd_per_gpu_hour", "effective_tflops",
    "usd_per_effective_tflop_hour", "wall_clock_hours", "billed_hours", "job_cost_usd",
    "all_in_cost_usd", "price_age_hours", "checklist", "id",
)  # fmt: skip


def _count_label(count: pl.Expr) -> pl.Expr:
    """``8`` for whole GPU counts, ``0.25`` for a slice."""
    whole = count == count.round(0)
    return (
        pl.when(whole)
        .then(count.cast(pl.Int64).cast(pl.String))
        .otherwise(count.round(2).cast(pl.String))
    )


def label_rows(frame: pl.DataFrame, caveat: pl.Expr) -> pl.DataFrame:
    """The ranking with the table's own columns: ``provider_label`` (seller behind a
    provider), ``gpus_label`` (``8× H100-SXM5-80GB``, ``*`` when a caveat applies)."""
    label = pl.format("{}× {}", _count_label(pl.col("total_gpus")), pl.col("gpu_model"))
    provider = provider_label_expr() if "seller" in frame.columns else pl.col("provider")
    return frame.with_columns(
        provider_label=provider,
        gpus_label=pl.when(caveat.is_not_null())
        .then(pl.concat_str([label, pl.lit(" *")]))
        .otherwise(label),
    )


def _key_columns(group_by: Sequence[GroupBy]) -> list[str]:
    keys: dict[str, None] = {}
    for g in group_by or (GroupBy.CONFIG,):
        keys.update(dict.fromkeys(_GROUP_KEYS[g]))
    return list(keys)


def fold(frame: pl.DataFrame, group_by: Sequence[GroupBy], limit: int) -> pl.DataFrame:
    """One row per group of ``frame`` (ranked, labelled), best rank first, at most ``limit``.

    A group's row is its best-ranked one, with ``regions`` (its distinct regions, best
    first: ``us-south-2, us-south-3``), ``offers`` (rows folded into it) and, where the
    prices differ, ``usd_per_hour`` as text ``2.49-3.29``.
    """
    keys = _key_columns(group_by)
    region = pl.col("region").fill_null("-")
    agg = frame.group_by(keys, maintain_order=True).agg(
        pl.col("rank").min().alias("_best"),
        region.unique(maintain_order=True).str.join(", ").alias("regions"),
        pl.len().alias("offers"),
        pl.col("usd_per_hour").min().alias("_low"),
        pl.col("usd_per_hour").max().alias("_high"),
    )
    best = frame.join(agg, left_on="rank", right_on="_best", how="inner", suffix="_g")
    best = best.drop([f"{k}_g" for k in keys if f"{k}_g" in best.columns])
    return best.sort("rank").head(limit)


def price_range(low: float | None, high: float | None) -> str:
    """``2.49`` or ``2.49-3.29`` (a group's hourly prices)."""
    if low is None or high is None or _money(low) == _money(high):
        return _money(low)
    return f"{_money(low)}-{_money(high)}"


def _cells(row: dict[str, Any], columns: Sequence[Column]) -> list[str]:
    out = []
    for col in columns:
        if col.name == "usd_per_hour" and "_low" in row:
            out.append(price_range(row["_low"], row["_high"]))
        else:
            value = row.get(col.name)
            out.append("" if value is None else col.text(value))
    return out


def _table(rows: list[dict[str, Any]], columns: Sequence[Column], title: str | None) -> Table:
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        header_style="bold",
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )
    shown = sorted(columns, key=lambda c: _SHOWN_ORDER.index(c.name))
    for col in shown:
        table.add_column(
            col.header,
            justify="right" if col.numeric else "left",
            no_wrap=True,
            overflow="ellipsis",
            max_width=col.max_width,
        )
    for row in rows:
        table.add_row(*_cells(row, shown))
    return table


def choose_columns(
    rows: list[dict[str, Any]],
    width: int,
    available: Sequence[str],
    *,
    wide: bool = False,
    names: Sequence[str] | None = None,
) -> list[Column]:
    """The columns to show: ``names`` if given, all with ``wide``, else as many as fit
    ``width`` in the order of :data:`COLUMNS` (a column that does not fit is left out and
    the next, narrower one tried)."""
    candidates = [c for c in COLUMNS if c.name in available]
    if names is not None:
        by_name = {c.name: c for c in candidates} | {c.header: c for c in candidates}
        return [by_name[n] for n in names if n in by_name]
    if wide:
        return candidates
    widths = {c.name: _width(c, rows) for c in candidates}
    chosen: list[Column] = []
    for col in candidates:
        if sum(widths[c.name] for c in chosen) + widths[col.name] + _GAP * len(chosen) <= width:
            chosen.append(col)
    console = Console(width=10_000)
    while (
        chosen
        and Measurement.get(console, console.options, _table(rows, chosen, None)).maximum > width
    ):
        chosen.pop()  # the estimate was short (it never is for these styles): be safe
    return chosen


#: Characters between two columns of :func:`_table` (one of padding each side, collapsed).
_GAP = 2


def _width(col: Column, rows: list[dict[str, Any]]) -> int:
    """The cells a column needs: its widest cell or header, at most its ``max_width``."""
    widest = max([cell_len(col.header), *(cell_len(_cells(r, [col])[0]) for r in rows)])
    return min(widest, col.max_width) if col.max_width else widest


def offers_table(
    frame: pl.DataFrame,
    width: int,
    *,
    title: str | None = None,
    wide: bool = False,
    names: Sequence[str] | None = None,
) -> Table:
    """The folded, labelled ranking as a table no wider than ``width`` (unless ``wide``:
    print that one with :func:`print_wide`)."""
    rows = frame.to_dicts()
    available = list(frame.columns)
    if "offers" in frame.columns and all(r["offers"] == 1 for r in rows):
        available.remove("offers")  # nothing folded: no count
    columns = choose_columns(rows, width, available, wide=wide, names=names)
    return _table(rows, columns, title)


def print_wide(console: Console, table: Table) -> None:
    """Print ``table`` at its natural width even where that is wider than ``console``
    (``--wide``: every column, lines as long as they need)."""
    need = Measurement.get(Console(width=10_000), Console(width=10_000).options, table).maximum
    if need <= console.width:
        console.print(table)
    else:
        Console(width=need, file=console.file, no_color=console.no_color).print(table)
