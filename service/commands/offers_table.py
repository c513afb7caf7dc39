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
4. :func:`footnotes` says beneath it what a shown row's marks and figures are: the rows the
   limit cut, the ``*`` of a caveat, the ranks a folded row skips (``n``), the nodes of a
   multi-node job (``64 × 8× H100-SXM5-80GB``, its ``$/h`` the job's: every node's).

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

from gpuscout.pricing.display import (
    age_text,
    figure_text,
    provider_label_expr,
    published_price_expr,
)

__all__ = [
    "ASSUMED_MARK",
    "COLUMNS",
    "COLUMN_ALIASES",
    "MAX_LIMIT",
    "REGIONS_WIDTH",
    "Column",
    "GroupBy",
    "choose_columns",
    "fold",
    "footnotes",
    "group_count",
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
    GroupBy.CONFIG: ("provider_label", "_offer", "gpus_label", "term", "usd_per_hour"),
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


#: Most rows ``offers --limit`` shows.
MAX_LIMIT = 10_000

#: Most characters of a folded region list (``us-south-2, us-south-3 +1``).
REGIONS_WIDTH = 30
#: Most characters of a GPUs cell: room for the nodes of a multi-node job, the longest
#: catalog name and the caveat mark (``128 × 1× RTX-PRO-5000-48GB *``).
GPUS_WIDTH = 30
#: After a GPU model in the GPUs cell when the provider names only its family: the model is
#: the family's slower variant, ranked so, not stated (``8× H100-PCIE-80GB?``); it stands
#: for the caveat mark too, the row's caveats being named on its #N line.
ASSUMED_MARK = "?"


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
    Column("gpus_label", "GPUs", max_width=GPUS_WIDTH),
    Column("usd_per_effective_tflop_hour", "$/eff.TFLOP-h", _fine, numeric=True),
    Column("term", "term"),
    Column("all_in_cost_usd", "job $", _money, numeric=True),
    Column("job_usd_per_hour", "$/h", _money, numeric=True),
    Column("published_price", "published", numeric=True),
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
    Column("rent", "rent"),
)

#: Names ``--columns`` also takes: the table's ``$/h`` was the instance's ``usd_per_hour``
#: before a multi-node job's hourly cost (one instance's price x its nodes) replaced it;
#: for a one-node job they are the same figure.
COLUMN_ALIASES: dict[str, str] = {"usd_per_hour": "job_usd_per_hour"}

#: The order columns are shown in, whichever are chosen.
_SHOWN_ORDER: tuple[str, ...] = (
    "rank", "provider_label", "offer_id", "regions", "offers", "gpus_label", "gpu_memory_gb",
    "fabric", "term", "job_usd_per_hour", "published_price", "usd_per_gpu_hour", "effective_tflops",
    "usd_per_effective_tflop_hour", "wall_clock_hours", "billed_hours", "job_cost_usd",
    "all_in_cost_usd", "price_age_hours", "checklist", "id", "rent",
)  # fmt: skip


def _count_label(count: pl.Expr) -> pl.Expr:
    """``8`` for whole GPU counts, ``0.25`` for a slice."""
    whole = count == count.round(0)
    return (
        pl.when(whole)
        .then(count.cast(pl.Int64).cast(pl.String))
        .otherwise(count.round(2).cast(pl.String))
    )


def _count_text(count: float) -> str:
    """:func:`_count_label` of one figure: ``8``, ``0.25``."""
    return str(int(count)) if float(count).is_integer() else str(round(count, 2))


def label_rows(frame: pl.DataFrame, caveat: pl.Expr) -> pl.DataFrame:
    """The ranking with the table's own columns: ``provider_label`` (seller behind a
    provider), ``gpus_label`` (``8× H100-SXM5-80GB``; ``64 × 8× H100-SXM5-80GB`` for 64
    nodes of the offer; :data:`ASSUMED_MARK` after a model whose form factor the provider
    does not state, else ``*`` when a caveat applies); the table's ``$/h`` is the ranking's
    ``job_usd_per_hour``."""
    nodes = pl.col("nodes")
    per_node = pl.format("{}× {}", _count_label(pl.col("gpus")), pl.col("gpu_model"))
    label = (
        pl.when(nodes > 1)
        .then(pl.format("{} × {}", nodes.cast(pl.String), per_node))
        .otherwise(per_node)
    )
    assumed = (
        ~pl.col("form_factor_stated") if "form_factor_stated" in frame.columns else pl.lit(False)
    )
    return frame.with_columns(
        provider_label=provider_label_expr(),
        published_price=published_price_expr(),
        gpus_label=pl.when(assumed)  # the variant ranked, not stated: said in the cell
        .then(pl.concat_str([label, pl.lit(ASSUMED_MARK)]))
        .when(caveat.is_not_null())
        .then(pl.concat_str([label, pl.lit(" *")]))
        .otherwise(label),
    )


def _key_columns(group_by: Sequence[GroupBy]) -> list[str]:
    keys: dict[str, None] = {}
    for g in group_by or (GroupBy.CONFIG,):
        keys.update(dict.fromkeys(_GROUP_KEYS[g]))
    return list(keys)


#: The offer as one configuration in every region: its id without the region where the
#: id names it first (JarvisLabs' ``europe-01:H100:1x``), so that the same machine in two
#: regions folds into one row, as another provider's instance type does.
_OFFER = pl.coalesce(
    pl.col("offer_id").str.strip_prefix(pl.concat_str([pl.col("region"), pl.lit(":")])),
    pl.col("offer_id"),
).alias("_offer")


def fold(frame: pl.DataFrame, group_by: Sequence[GroupBy], limit: int) -> pl.DataFrame:
    """One row per group of ``frame`` (ranked, labelled), best rank first, at most ``limit``.

    A group's row is its best-ranked one, with ``regions`` (its distinct regions, best
    first: ``us-south-2, us-south-3``), ``offers`` (rows folded into it) and, where the
    prices differ, ``job_usd_per_hour`` as text ``2.49-3.29``.
    """
    keys = _key_columns(group_by)
    region = pl.col("region").fill_null("-")
    frame = frame.with_columns(_OFFER)
    agg = frame.group_by(keys, maintain_order=True).agg(
        pl.col("rank").min().alias("_best"),
        region.unique(maintain_order=True).str.join(", ").alias("regions"),
        pl.len().alias("offers"),
        pl.col("job_usd_per_hour").min().alias("_low"),
        pl.col("job_usd_per_hour").max().alias("_high"),
    )
    best = frame.join(agg, left_on="rank", right_on="_best", how="inner", suffix="_g")
    best = best.drop([f"{k}_g" for k in keys if f"{k}_g" in best.columns], "_offer")
    return best.sort("rank").head(limit)


def group_count(frame: pl.DataFrame, group_by: Sequence[GroupBy]) -> int:
    """The rows :func:`fold` gives without a limit: the groups of ``frame``."""
    keys = _key_columns(group_by)
    return frame.with_columns(_OFFER).select(keys).n_unique() if frame.height else 0


def price_range(low: float | None, high: float | None) -> str:
    """``2.49`` or ``2.49-3.29`` (a group's hourly prices)."""
    if low is None or high is None or _money(low) == _money(high):
        return _money(low)
    return f"{_money(low)}-{_money(high)}"


def _cells(row: dict[str, Any], columns: Sequence[Column]) -> list[str]:
    out = []
    for col in columns:
        if col.name == "job_usd_per_hour" and "_low" in row:
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
        names = [COLUMN_ALIASES.get(n, n) for n in names]
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
    if "published_price" in frame.columns and all(r["published_price"] is None for r in rows):
        available.remove("published_price")  # every price is in dollars: the $ columns say it
    columns = choose_columns(rows, width, available, wide=wide, names=names)
    return _table(rows, columns, title)


#: What one row of each grouping is, in the words beneath the table.
_ROW_IS: dict[GroupBy, str] = {
    GroupBy.CONFIG: "configuration",
    GroupBy.NONE: "configuration",
    GroupBy.GPU: "GPU model",
    GroupBy.PROVIDER: "provider",
    GroupBy.REGION: "region",
}


def _kinds(group_by: Sequence[GroupBy]) -> list[GroupBy]:
    return list(dict.fromkeys(group_by or (GroupBy.CONFIG,)))


def _rows_noun(group_by: Sequence[GroupBy]) -> str:
    """``rows`` (regions folded), ``configurations``, ``GPU models``, ``groups``."""
    match _kinds(group_by):
        case [GroupBy.CONFIG]:
            return "rows"
        case [kind]:
            return _ROW_IS[kind] + "s"
        case _:
            return "groups"


def _folded_by(group_by: Sequence[GroupBy]) -> str:
    """What the offers folded into one row share."""
    kinds = [g for g in _kinds(group_by) if g is not GroupBy.NONE]
    if kinds == [GroupBy.CONFIG]:
        return "the same configuration in several regions"
    return "one row per " + " and ".join(_ROW_IS[g] for g in kinds if g is not GroupBy.CONFIG)


def footnotes(
    folded: pl.DataFrame,
    headers: Sequence[str],
    *,
    total: int,
    configurations: int,
    group_by: Sequence[GroupBy],
) -> list[str]:
    """The lines beneath the table that say what its marks and figures are, each only
    when a shown row needs it: how many rows the limit left out (of ``total`` rows, which
    fold ``configurations``), the ``*`` of a caveat, why ranks skip (rows folded), and
    what a multi-node row's GPUs and ``$/h`` are. ``headers``: the shown columns'."""
    lines = []
    rows = folded.to_dicts()
    if total > len(rows):
        kinds = _kinds(group_by)
        folds = ", regions folded" if kinds == [GroupBy.CONFIG] else ""
        of = f" ({configurations} configurations{folds})" if configurations > total else ""
        more = f"--limit {total} to see all" if total <= MAX_LIMIT else "--limit to see more"
        lines.append(f"{len(rows)} of {total} {_rows_noun(group_by)} shown{of}; {more}")
    if "GPUs" in headers and any(str(r.get("gpus_label", "")).endswith(" *") for r in rows):
        lines.append("*: the row's figures carry a caveat, named on its #N line below")
    if "GPUs" in headers and any(ASSUMED_MARK in str(r.get("gpus_label", "")) for r in rows):
        lines.append(
            f"{ASSUMED_MARK}: the provider does not state the GPU's form factor: ranked as the"
            " slower variant named; the row's caveats on its #N line below"
        )
    if any((r.get("offers") or 1) > 1 for r in rows):
        folded_by = _folded_by(group_by)
        if "n" in headers:
            lines.append(
                f"n: offers folded into the row ({folded_by}); # is the best rank among"
                " them, so the others' ranks are skipped (--group-by none gives each its own row)"
            )
        else:
            lines.append(
                f"# skips the ranks of offers folded into a row above ({folded_by}):"
                " --wide counts them (n), --group-by none gives each its own row"
            )
    multi = [r for r in rows if (r.get("nodes") or 1) > 1]
    if multi and {"GPUs", "$/h"} & set(headers):
        r = multi[0]
        label = str(r["gpus_label"]).removesuffix(" *").removesuffix(ASSUMED_MARK)
        text = f"{label}: {r['nodes']} nodes of {_count_text(r['gpus'])} GPUs rented together"
        used, rented = r.get("job_gpus"), r.get("total_gpus")
        if used is not None and rented is not None and used < rented:
            text += f" (the job uses {_count_text(used)} of the {_count_text(rented)})"
        paid = [h for h in ("$/h", "job $") if h in headers]
        if paid:
            verb = "are" if len(paid) > 1 else "is"
            text += f"; {' and '.join(paid)} {verb} for all {r['nodes']} nodes"
            if "$/h" in paid:
                text += f" ({_money(r['usd_per_hour'])} an hour a node)"
        lines.append(text)
    return lines


def print_wide(console: Console, table: Table) -> None:
    """Print ``table`` at its natural width even where that is wider than ``console``
    (``--wide``: every column, lines as long as they need)."""
    need = Measurement.get(Console(width=10_000), Console(width=10_000).options, table).maximum
    if need <= console.width:
        console.print(table)
    else:
        Console(width=need, file=console.file, no_color=console.no_color).print(table)
