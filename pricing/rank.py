"""Rank offers by USD per effective TFLOP-hour for a job: one lazy polars chain.

:func:`rank` answers, :func:`rank_page` adds what a page of an answer needs (each row's
place in the frame, the number of qualifying configurations, the configurations the job
cannot be placed on). Both read a frame as :func:`pricing.frame.offers_to_frame` and
:func:`pricing.frame.records_to_frame` make it: the offers, their ``config_id`` and the
offer facts of :mod:`pricing.offer_facts`. The chain has six steps:

1. **qualify**: the offers joined to the GPU catalog (GPUs without a peak at the precision
   drop out) and filtered by the requirement (:meth:`_Chain.qualified`);
2. **cost**: nodes, effective TFLOPs (peak x MFU x scaling), hours, the all-in cost and
   the key, USD per effective TFLOP-hour, of every (offer, term) row the job can be placed
   on (:meth:`_Chain.placed`, :meth:`_Chain.cost`, :mod:`pricing.expressions`);
3. **stage one**, the cheapest term of each configuration (``config_id``): under the
   default sort, the first ``limit x most_rows`` rows of the costed order (``most_rows``:
   the most rows one configuration has, an offer fact), which hold the top
   configurations' cheapest rows exactly (:func:`_top_configurations` gives the proof);
   under another sort key (:attr:`RankOptions.sort`) each configuration's cheapest row,
   whose value it is ranked by (:func:`_cheapest_terms`);
4. **stage two**, the top ``limit`` configurations in the order of
   :meth:`RankOptions.order`;
5. each chosen configuration's cheapest row: its costing joined back to its offer columns
   by :data:`~pricing.frame.OFFER_ROW`, so the wide columns are read for these rows alone;
6. the total order (:meth:`RankOptions.order`, nulls last) and the rank.

The answer equals the full ranking (every configuration's cheapest term, in that order)
cut to ``limit`` rows, for every ``limit``: stage two picks configurations, never rows, so
term variants of one configuration cannot crowd others out. ``limit=None`` skips stages
one and two. Ties break by the earlier term, then the earlier frame row.

It is collected with polars' default optimisations, on the engine the user sets
(``POLARS_ENGINE_AFFINITY``), else in memory (:mod:`pricing.engine`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final, Literal, get_args

import polars as pl

from gpuscout.adapters.gpus import Precision

from . import expressions as ex
from .efficiency import Efficiency, default_efficiency
from .engine import engine
from .frame import OFFER_ROW, catalog_frame
from .job import Job
from .offer_facts import AFTER, CONFIGURATION_ROWS, FACT_COLUMNS
from .requirement import Requirement
from .unplaced import UNPLACED_SCHEMA, unplaced_configurations

__all__ = [
    "KEY",
    "OFFER_ROW",
    "RESULT_COLUMNS",
    "SORT_KEYS",
    "RankOptions",
    "RankedPage",
    "SortKey",
    "costed_plan",
    "placement_plan",
    "rank",
    "rank_page",
    "rank_plan",
]

#: The ranking key: what one TFLOP-hour of useful work costs on a configuration's best term.
KEY: Final = "usd_per_effective_tflop_hour"

#: Result columns an answer may be ordered by (:attr:`RankOptions.sort`).
SortKey = Literal[
    "usd_per_effective_tflop_hour",
    "all_in_cost_usd",
    "job_cost_usd",
    "usd_per_hour",
    "usd_per_gpu_hour",
]

#: The total order of the result under the default sort. ``config_id`` (from
#: :func:`pricing.frame.with_config_id`) follows the lexicographic order of (provider,
#: offer_id, region, price_basis), so ties on the key break by provider, then offer_id,
#: then region and basis, compared as one integer instead of four strings. ``term`` never
#: decides (one row per configuration) but keeps the order total for any frame sorted by
#: these keys.
SORT_KEYS: tuple[str, ...] = (KEY, "config_id", "term")


#: Columns of :func:`rank`'s result, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "rank",
    # identity
    "provider", "seller", "offer_id", "instance_name", "region", "country",
    # hardware
    "gpu_model", "gpu_family", "gpu_count", "gpus", "nodes", "total_gpus", "job_gpus",
    "placement", "gpu_memory_gb", "total_gpu_memory_gb", "gpu_form_factor",
    "form_factor_stated", "gpu_interconnect", "fabric", "fabric_gbps", "fabric_gbps_per_gpu",
    "multi_node", "cpu_cores", "vcpus", "ram_gb", "storage_gb", "storage_type",
    "storage_included_gb", "boot_disk_min_gb",
    # price and the chosen term
    "term", "term_variant", "price_amount", "price_currency", "price_unit", "price_basis",
    "usd_per_hour", "usd_per_gpu_hour", "min_rental_hours", "billing_increment_s",
    "billing_cap_hours_per_month", "storage_usd_per_gb_hour", "ipv4_usd_per_hour",
    "boot_disk_usd_per_hour", "egress_usd_per_gb",
    # effective TFLOPs
    "precision", "peak_tflops", "peak_basis", "peak_precision", "peak_note", "mfu",
    "scaling_intra_node", "scaling_inter_node", "scaling", "effective_tflops",
    # the job
    "compute_hours", "wall_clock_hours", "interruptions_expected", "interruptible_risk",
    "billed_hours", "billing_rounding_hours", "job_usd_per_hour", "job_cost_usd",
    "job_storage_gb", "required_extras_usd", "storage_cost_usd", "egress_cost_usd",
    "all_in_cost_usd", "usd_per_effective_tflop_hour", "caveats", "memory_needed_gb",
    "memory_per_gpu_gb", "on_demand_usd_per_hour", "break_even_hours", "break_even",
    # service and provenance
    "reliability", "verified", "available_now", "available_count", "availability",
    "fetched_at", "price_age_hours", "config_id", "ranked_after",
)  # fmt: skip

#: Catalog columns the answer shows but no step reads (the GPU's family, how its peak was
#: had: :func:`pricing.frame.catalog_frame`): joined to the chosen rows only.
_FIGURE_COLUMNS = ("gpu_family", "peak_basis", "peak_precision", "peak_note")

#: Catalog columns the qualifying and costing steps read.
_CATALOG_COLUMNS = (
    "gpu_model", "catalog_form_factor", "catalog_memory_gb", "form_factor_varies",
    "pcie_no_p2p", "tflops_bf16", "peak_tflops", "mfu",
)  # fmt: skip

#: How many configurations qualify (:func:`rank_page`): a column of one value.
_TOTAL = "_configurations"


@dataclasses.dataclass(frozen=True, kw_only=True)
class RankOptions:
    """How to rank, apart from what is asked (requirement) and the job: one value object.

    ``precision``: the arithmetic precision of the job (the peak it is credited with).
    ``limit``: configurations in the answer (``None``: all). ``sort``: the column the
    answer is ordered by, then :data:`SORT_KEYS`; each configuration is still represented
    by its cheapest term by :data:`KEY`. ``now``: the instant prices age against (default:
    the clock when ranking starts). ``mfu`` and ``scaling`` replace the modelled factors
    for every offer; ``efficiency`` replaces the whole default table
    (``pricing/efficiency.toml``).
    """

    precision: Precision = Precision.BF16
    limit: int | None = 50
    sort: SortKey = KEY
    now: datetime | None = None
    mfu: float | None = None
    scaling: float | None = None
    efficiency: Efficiency | None = None

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be >= 1, not {self.limit}")
        if self.sort not in get_args(SortKey):
            raise ValueError(
                f"sort must be one of {', '.join(get_args(SortKey))}, not {self.sort!r}"
            )

    def order(self) -> list[str]:
        """The columns the answer is sorted by (ascending, nulls last): a total order."""
        head = [AFTER] if self.sort == KEY else [AFTER, self.sort]
        return [*head, *SORT_KEYS]


def _checked(offers: pl.DataFrame) -> pl.DataFrame:
    """``offers`` if it is a ranking frame (``config_id`` and the offer facts), else an
    error naming what it lacks."""
    if not isinstance(offers, pl.DataFrame):
        raise TypeError(
            f"offers must be a polars DataFrame, not {type(offers).__name__}: frame Offer"
            " objects with pricing.frame.offers_to_frame"
        )
    missing = [c for c in ("config_id", *FACT_COLUMNS) if c not in offers.columns]
    if missing:
        raise ValueError(
            f"the offers frame lacks {', '.join(missing)}: build it with"
            " pricing.frame.offers_to_frame or records_to_frame"
        )
    return offers


def _catalog_table(precision: Precision, efficiency: Efficiency, mfu: float | None) -> pl.DataFrame:
    """Per GPU model with a peak at ``precision``: that peak, the MFU and catalog facts."""
    if efficiency is default_efficiency():
        return _default_catalog_table(precision, mfu)
    return _build_catalog_table(precision, efficiency, mfu)


@functools.lru_cache(maxsize=32)
def _default_catalog_table(precision: Precision, mfu: float | None) -> pl.DataFrame:
    return _build_catalog_table(precision, default_efficiency(), mfu)


def _build_catalog_table(
    precision: Precision, efficiency: Efficiency, mfu: float | None
) -> pl.DataFrame:
    mfu_expr = ex.mfu(precision, efficiency.low_precision_speedup) if mfu is None else pl.lit(mfu)
    return (
        catalog_frame(efficiency=efficiency)
        .lazy()
        .with_columns(
            peak_tflops=ex.peak_tflops(precision),
            peak_basis=ex.peak_basis(precision),
            peak_precision=ex.peak_precision(precision),
            peak_note=ex.peak_note(precision),
            mfu=mfu_expr,
        )
        .filter(pl.col("peak_tflops") > 0)
        .select(*_CATALOG_COLUMNS, *_FIGURE_COLUMNS)
        .collect()
    )


# --- steps 1 and 2: qualify, place and cost ----------------------------------------------

_NONE_REFUSED = pl.lit(None, dtype=ex.REASON)  # a job no row refuses (refuses_none)
_PLACEABLE = pl.col("placement_reason").is_null()


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Chain:
    """The steps of the chain and the columns each adds, resolved once per call: every
    expression of :mod:`pricing.expressions` a ranking applies is built in :meth:`of`."""

    catalog: pl.LazyFrame
    #: Per GPU model: :data:`_FIGURE_COLUMNS`.
    figures: pl.LazyFrame
    qualifies: pl.Expr
    #: Whether the job can be placed on every qualified row
    #: (:func:`pricing.expressions.refuses_none`): then no reason is planned, the costing
    #: filters nothing and a page groups no configuration as unplaced.
    refuses_none: bool
    #: :meth:`placed`'s columns, stage by stage; :meth:`cost`'s up to effective TFLOPs,
    #: then after them; step 6's columns of the chosen rows.
    placing: tuple[dict[str, pl.Expr], ...]
    tflops: tuple[dict[str, pl.Expr], ...]
    costing: tuple[dict[str, pl.Expr], ...]
    answer: dict[str, pl.Expr]

    @classmethod
    def of(
        cls,
        requirement: Requirement | None,
        job: Job | None,
        options: RankOptions,
        *,
        require_fit: bool = True,
    ) -> _Chain:
        """The chain of ``requirement``, ``job`` and ``options``; without ``require_fit``
        a model that does not fit one GPU does not refuse a row."""
        job = job or Job.for_hours(1)
        requirement = requirement or Requirement()
        eff = options.efficiency or default_efficiency()
        i = eff.interruptible
        now = options.now or datetime.now(UTC)
        table = _catalog_table(options.precision, eff, options.mfu)
        memory = job.memory_needed_gb(options.precision, eff) if require_fit else None
        extra = job.per_gpu_extra_gb(eff) if require_fit else None
        storage_gb = job.storage_gb if job.storage_gb is not None else requirement.min_storage_gb
        modelled = job.interruptible_overhead is None
        # a job without a GPU count runs on every GPU of one node: no fabric between nodes
        one_node = job.gpus is None
        refuses_none = ex.refuses_none(one_node, memory is not None, i, modelled=modelled)
        reason = (
            _NONE_REFUSED
            if refuses_none
            else ex.placement_reason(requirement, memory is not None, i, modelled=modelled)
        )
        floor, metered, billed = ex.billed_hours_stages()
        inter_node = pl.lit(1.0) if one_node else ex.inter_node_scaling(eff.scaling)
        return cls(
            catalog=table.lazy().select(_CATALOG_COLUMNS),
            figures=table.lazy().select("gpu_model", *_FIGURE_COLUMNS),
            qualifies=ex.qualifies(requirement, now),
            refuses_none=refuses_none,
            placing=(
                {"nodes": ex.node_count(job.gpus), "job_gpus": ex.job_gpus(job.gpus)},
                {"memory_per_gpu_gb": ex.memory_per_gpu_gb(memory, extra)},
                {"placement_reason": reason},
            ),
            tflops=(
                {
                    "total_gpus": ex.total_gpus(),
                    "scaling_intra_node": ex.intra_node_scaling(eff.scaling, one_node),
                    "scaling_inter_node": inter_node,
                },
                {"scaling": ex.scaling() if options.scaling is None else pl.lit(options.scaling)},
                {"effective_tflops": ex.effective_tflops()},
            ),
            costing=(
                {"compute_hours": ex.compute_hours(job)},
                {"wall_clock_hours": ex.wall_clock_hours(i, job.interruptible_overhead)},
                {**floor, "interruptions_expected": ex.interruptions_expected(i)},
                metered,
                billed,
                {
                    "job_cost_usd": ex.job_cost_usd(),
                    "job_storage_gb": ex.job_storage_gb(storage_gb),
                },
                {
                    "required_extras_usd": ex.required_extras_usd(),
                    "storage_cost_usd": ex.storage_cost_usd(),
                    "egress_cost_usd": ex.egress_cost_usd(job.egress_gb),
                },
                {"all_in_cost_usd": ex.all_in_cost_usd()},
                {KEY: ex.usd_per_effective_tflop_hour()},
            ),
            answer={
                "job_usd_per_hour": ex.job_usd_per_hour(),
                "gpu_memory_gb": ex.gpu_memory_gb(),
                "total_gpu_memory_gb": ex.total_gpu_memory_gb(),
                "memory_needed_gb": pl.lit(memory, dtype=pl.Float64),
                "precision": pl.lit(options.precision.value),
                "price_age_hours": ex.price_age_hours(now),
                "form_factor_stated": ex.form_factor_stated(),
                "caveats": ex.caveats(job.egress_gb),
                "placement": ex.placement_text(),
                "interruptible_risk": ex.interruptible_risk(),
                "billing_rounding_hours": ex.billing_rounding_hours(),
            },
        )

    def qualified(self, offers: pl.LazyFrame) -> pl.LazyFrame:
        """Offer rows that meet the requirement, with their GPU's catalog columns (a row
        whose GPU the catalog has no peak for at the precision is not one)."""
        joined = offers.join(self.catalog, on="gpu_model", how="inner")
        return joined if self.qualifies is ex.ALWAYS else joined.filter(self.qualifies)

    def placed(self, qualified: pl.LazyFrame) -> pl.LazyFrame:
        """Qualified rows with their nodes, job GPUs, per-GPU memory need and
        ``placement_reason`` (null: the job can run there), unfiltered."""
        return _with_stages(qualified, self.placing)

    def cost(self, placed: pl.LazyFrame) -> pl.LazyFrame:
        """Effective TFLOPs, hours and cost of the :meth:`placed` rows the job can run on."""
        placeable = placed if self.refuses_none else placed.filter(_PLACEABLE)
        rated = _with_stages(placeable, self.tflops).filter(pl.col("effective_tflops") > 0)
        return _with_stages(rated, self.costing).drop(ex.BILLING_STAGE_COLUMNS)


def _with_stages(frame: pl.LazyFrame, stages: tuple[dict[str, pl.Expr], ...]) -> pl.LazyFrame:
    """``frame`` with each stage's columns added in turn (a stage reads the ones before)."""
    for columns in stages:
        frame = frame.with_columns(**columns)
    return frame


def costed_plan(
    offers: pl.DataFrame,
    requirement: Requirement | None = None,
    job: Job | None = None,
    options: RankOptions | None = None,
    *,
    require_fit: bool = True,
) -> pl.LazyFrame:
    """Every qualifying (offer, term) row with its effective TFLOPs, hours and cost.

    Offers whose GPU has no figure to rank by (:meth:`adapters.gpus.GpuSpec.figure`) are
    dropped, as are rows the job cannot be placed on
    (:func:`pricing.expressions.placement_reason`; a model that does not fit one GPU only
    with ``require_fit``): :mod:`pricing.coverage` names them. ``options.limit`` and
    ``options.sort`` do not apply.
    """
    chain = _Chain.of(requirement, job, options or RankOptions(), require_fit=require_fit)
    costed = chain.cost(chain.placed(chain.qualified(_checked(offers).lazy())))
    return costed.join(chain.figures, on="gpu_model", how="left")


def placement_plan(
    offers: pl.DataFrame,
    requirement: Requirement | None = None,
    job: Job | None = None,
    options: RankOptions | None = None,
) -> pl.LazyFrame:
    """Every qualifying (offer, term) row with ``nodes`` and ``placement_reason`` (null:
    the job can be placed there) and :data:`~pricing.frame.OFFER_ROW`: what
    :mod:`pricing.coverage` counts as left out for placement."""
    chain = _Chain.of(requirement, job, options or RankOptions())
    return chain.placed(chain.qualified(_checked(offers).lazy().with_row_index(OFFER_ROW)))


# --- steps 3 and 4: the top configurations -----------------------------------------------

#: The total order of costed rows the default sort's top-k cuts (:func:`_top_configurations`).
_CUT_ORDER = (AFTER, KEY, "config_id", "term", OFFER_ROW)

#: A configuration's cheapest row (:func:`_cheapest_terms`).
_CHEAPEST_ROW = pl.col(OFFER_ROW).sort_by(AFTER, KEY, "term", OFFER_ROW, nulls_last=True).first()


def _cheapest_terms(costed: pl.LazyFrame) -> pl.LazyFrame:
    """One row per configuration: available before not available now, then its least key,
    then the earlier term, then the earlier frame row."""
    return costed.filter(pl.col(OFFER_ROW) == _CHEAPEST_ROW.over("config_id"))


def _top_configurations(
    costed: pl.LazyFrame, options: RankOptions, limit: int, most_rows: int
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Stages one and two: the top ``limit`` configurations, each with its cheapest row
    (``config_id`` and :data:`OFFER_ROW`, the choice :func:`_cheapest_terms` makes), and
    the number of configurations that qualify (one row, column :data:`_TOTAL`).

    Under the default sort a configuration's place is its cheapest row's: the first of
    its rows in the total order :data:`_CUT_ORDER`, where ties break by ``config_id``
    exactly as in :data:`SORT_KEYS`. Every row before the cheapest row of the
    configuration in place ``r`` belongs to one of the ``r - 1`` configurations placed
    before it (a configuration placed after it has every row after its own first one), so
    that row is among the first ``(r - 1) * most_rows + 1``, with ``most_rows`` the most
    rows one configuration has: the first ``limit * most_rows`` rows of the order hold the
    top ``limit`` configurations' cheapest rows, each at its configuration's first
    appearance. One ``bottom_k`` of a few hundred rows is then the exact top, with no
    group-by over every costed row.

    Another sort key is read off each configuration's cheapest row, so stage one keeps
    that row per configuration before stage two orders by it.
    """
    if options.sort == KEY:
        total = costed.select(pl.col("config_id").n_unique().alias(_TOTAL))
        top = (
            costed.select(*_CUT_ORDER)
            .bottom_k(limit * max(most_rows, 1), by=_CUT_ORDER)
            .sort(_CUT_ORDER, nulls_last=True)
            .unique("config_id", keep="first", maintain_order=True)
            .head(limit)
        )
    else:
        columns = dict.fromkeys(("config_id", "term", OFFER_ROW, AFTER, KEY, options.sort))
        per_config = _cheapest_terms(costed.select(*columns)).cache()
        top = per_config.bottom_k(limit, by=[AFTER, options.sort, KEY, "config_id"])
        total = per_config.select(pl.len().alias(_TOTAL))
    return top.select("config_id", OFFER_ROW), total


# --- steps 5 and 6: the chosen rows, ordered ---------------------------------------------

#: What the answer keeps of the costing; the offer columns (the offer facts among them)
#: are joined back by :data:`OFFER_ROW`.
_COSTED_COLUMNS = (
    OFFER_ROW, "config_id", "term", "catalog_memory_gb", "form_factor_varies",
    "peak_tflops", "mfu", "nodes", "job_gpus", "memory_per_gpu_gb",
    "total_gpus", "scaling_intra_node", "scaling_inter_node", "scaling", "effective_tflops",
    "compute_hours", "wall_clock_hours", "interruptions_expected", "billed_hours",
    "job_cost_usd", "job_storage_gb", "required_extras_usd", "storage_cost_usd",
    "egress_cost_usd", "all_in_cost_usd", KEY,
)  # fmt: skip


def _plans(
    offers: pl.DataFrame,
    requirement: Requirement | None,
    job: Job | None,
    options: RankOptions | None,
) -> tuple[pl.LazyFrame, pl.LazyFrame | None]:
    """The six steps of the module's docstring: the ranked rows (:data:`RESULT_COLUMNS`,
    :data:`OFFER_ROW`, with a limit :data:`_TOTAL`), and every qualifying row placed
    (``None`` when no row refuses the job), which the unplaced configurations read."""
    options = options or RankOptions()
    offers = _checked(offers)
    chain = _Chain.of(requirement, job, options)
    rows = offers.lazy().with_row_index(OFFER_ROW)
    # 1 and 2; cached: read by both stages, the answer and the unplaced configurations
    placed = chain.placed(chain.qualified(rows)).cache()
    costed = chain.cost(placed).cache()
    # 3 and 4
    if options.limit is None:
        best = _cheapest_terms(costed)
    else:
        most_rows = int(offers.get_column(CONFIGURATION_ROWS).max() or 0)  # type: ignore[arg-type]
        top, total = _top_configurations(costed, options, options.limit, most_rows)
        best = costed.join(top.select(OFFER_ROW), on=OFFER_ROW, how="semi")
        best = best.join(total, how="cross")  # one row, one count
    # 5: the costing of the chosen rows beside their offer columns and the GPU's figures
    costing = [*_COSTED_COLUMNS, *([_TOTAL] if options.limit is not None else [])]
    chosen = (
        best.select(costing)
        .join(rows.drop("config_id", "term"), on=OFFER_ROW)
        .join(chain.figures, on="gpu_model", how="left")
    )
    # 6
    ranked = (
        # why the term won, in words: for the chosen rows only (text a row is costly)
        chosen.with_columns(**chain.answer, break_even=ex.break_even_text())
        .sort(options.order(), nulls_last=True)
        .with_row_index("rank", offset=1)
    )
    return ranked, None if chain.refuses_none else placed


def rank_plan(
    offers: pl.DataFrame,
    requirement: Requirement | None = None,
    job: Job | None = None,
    options: RankOptions | None = None,
) -> pl.LazyFrame:
    """The lazy chain behind :func:`rank`, ending in :data:`RESULT_COLUMNS` (for
    ``explain()`` and benchmarks)."""
    return _plans(offers, requirement, job, options)[0].select(RESULT_COLUMNS)


def rank(
    offers: pl.DataFrame,
    requirement: Requirement | None = None,
    job: Job | None = None,
    options: RankOptions | None = None,
) -> pl.DataFrame:
    """The best ``options.limit`` configurations for ``job`` under ``requirement``.

    ``offers`` is a frame of :func:`pricing.frame.offers_to_frame` or
    :func:`~pricing.frame.records_to_frame` (another is refused, naming what it lacks).
    One row per configuration (provider, offer_id, region, price basis) with its cheapest
    term; columns :data:`RESULT_COLUMNS`, in the order of :meth:`RankOptions.order`. The
    job defaults to one hour.
    """
    return rank_plan(offers, requirement, job, options).collect(engine=engine())


@dataclasses.dataclass(frozen=True)
class RankedPage:
    """:func:`rank`'s rows, each row's place in the frame (:data:`OFFER_ROW`: to fetch
    what a caller keeps per offer, such as the checklist), how many configurations qualify
    on every page together, and, when asked for, the configurations the job cannot be
    placed on (:data:`~pricing.unplaced.UNPLACED_COLUMNS`)."""

    rows: pl.DataFrame
    offer_rows: pl.Series
    total: int
    unplaced: pl.DataFrame | None = None
    #: What :func:`rank_page`'s ``also`` planned, collected with the ranking.
    also: pl.DataFrame | None = None


def rank_page(
    offers: pl.DataFrame,
    requirement: Requirement | None = None,
    job: Job | None = None,
    options: RankOptions | None = None,
    *,
    unplaced: bool = False,
    also: Callable[[pl.LazyFrame | pl.DataFrame | None], pl.LazyFrame] | None = None,
) -> RankedPage:
    """:func:`rank` and the number of qualifying configurations, in one collect.

    The total counts the distinct configurations among the costed rows stage one reads,
    so a page costs one ranking, not a ranking and a costing; with ``options.limit``
    ``None`` every configuration is in the answer and the total is its length. With
    ``unplaced`` (and a ``job``), the configurations ``job`` cannot be placed on, for the
    coverage note (:func:`pricing.coverage.left_out`), grouped from the rows the ranking
    placed, so the placement runs once. ``also`` plans what a caller wants beside the
    ranking from the unplaced configurations' plan (``None`` without them), collected in
    the same ``collect_all`` (:attr:`RankedPage.also`): the API's coverage note.
    """
    ranked_plan, placed = _plans(offers, requirement, job, options)
    collected = [ranked_plan]
    grouped = None
    left = None
    if unplaced and job is not None:
        if placed is None:  # no row refuses the job: none to group
            left = pl.DataFrame(schema=UNPLACED_SCHEMA)
        else:
            grouped = unplaced_configurations(placed).cache()  # read by ``also`` too
            collected.append(grouped)
    if also is not None:
        collected.append(also(grouped if left is None else left))
    results = pl.collect_all(collected, engine=engine())
    ranked = results[0]
    if grouped is not None:
        left = results[1]
    if _TOTAL in ranked.columns:
        total = int(ranked.get_column(_TOTAL)[0]) if ranked.height else 0
    else:
        total = ranked.height
    return RankedPage(
        rows=ranked.select(RESULT_COLUMNS),
        offer_rows=ranked.get_column(OFFER_ROW),
        total=total,
        unplaced=left,
        also=results[-1] if also is not None else None,
    )
