"""Rank offers by USD per effective TFLOP-hour for a job: one lazy polars chain.

:func:`rank_plan` builds it, :func:`rank` collects it (:func:`rank_page` with what a page
of an answer needs besides: each row's place in the frame and the total):

1. **qualify**: the offers joined to the GPU catalog (GPUs without a peak at the precision
   drop out) and filtered by the requirement (offer-only conditions run below the join);
   a :class:`~pricing.model_rows.ByModel` (the API's) holds the catalog's columns beside
   its rows, joined once per precision (:func:`_with_catalog`), and only filters;
2. **cost**: nodes, effective TFLOPs (peak x MFU x scaling), hours, the compute cost, the
   required extras (boot disk, IPv4), the job's disk and egress, the all-in cost and the key,
   USD of the all-in cost per effective TFLOP-hour, of every (offer, term) row
   (:mod:`pricing.expressions`);
3. **stage one**, the cheapest term of each configuration (``config_id``): under the
   default sort, the first ``limit x most_rows`` rows of the costed order (``most_rows``:
   the most rows one configuration has, counted once per frame), which hold the top
   configurations' cheapest rows exactly (:func:`_top_configurations` gives the proof;
   ties: the earlier term, then the earlier frame row); under another sort key
   (:attr:`RankOptions.sort`) a group-by gives each configuration's cheapest row, whose
   value it is ranked by;
4. **stage two**, the top ``limit`` configurations in the order of
   :meth:`RankOptions.order`: each configuration's first row of that cut, or a partial
   sort of one row per configuration;
5. each chosen configuration keeps its cheapest row, with every offer column (joined back
   by :data:`OFFER_ROW`), its break-even against on-demand among them (an offer fact of
   the frame, :mod:`pricing.offer_facts`); a frame reads them from its cached costed rows,
   one of :data:`COSTED_AGAIN_MIN_ROWS` rows or more costs the chosen configurations' rows
   again;
6. the total order (:meth:`RankOptions.order`, nulls last) and the rank.

The answer equals the full ranking (every configuration's cheapest term, in that order)
cut to ``limit`` rows, for every ``limit``: stage two picks configurations, never rows, so
term variants of one configuration cannot crowd others out. ``limit=None`` skips stages one
and two.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Literal, get_args

import polars as pl

from gpuscout.adapters.gpus import Precision
from gpuscout.adapters.schema import Offer

from . import expressions as ex
from .display import display_expressions
from .efficiency import Efficiency, default_efficiency
from .frame import (
    OFFER_ROW,
    OFFER_SCHEMA,
    catalog_frame,
    most_rows_per_configuration,
    offers_to_frame,
    with_config_id,
)
from .job import Job
from .model_rows import ByModel
from .offer_facts import AFTER, has_offer_facts, with_offer_facts
from .requirement import Requirement
from .unplaced import UNPLACED_SCHEMA, unplaced_configurations

if TYPE_CHECKING:
    from polars._typing import EngineType

__all__ = [
    "COSTED_AGAIN_MIN_ROWS",
    "KEY",
    "OFFER_ROW",
    "RESULT_COLUMNS",
    "SORT_KEYS",
    "STREAMING_MIN_ROWS",
    "SUBEXPRESSIONS_MIN_ROWS",
    "RankOptions",
    "RankedPage",
    "SortKey",
    "costed_plan",
    "engine_for",
    "hold_catalog",
    "optimizations_for",
    "placement_plan",
    "rank",
    "rank_page",
    "rank_plan",
    "rows_read",
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
#: then region and basis; sorting by one integer instead of four strings keeps the top-k
#: cheap. ``term`` never decides (one row per configuration) but keeps the order total
#: for any frame sorted by these keys.
SORT_KEYS: tuple[str, ...] = (KEY, "config_id", "term")


#: Columns of :func:`rank`'s result, in order.
RESULT_COLUMNS: tuple[str, ...] = (
    "rank",
    # identity
    "provider",
    "seller",
    "offer_id",
    "instance_name",
    "region",
    "country",
    # hardware
    "gpu_model",
    "gpu_family",
    "gpu_count",
    "gpus",
    "nodes",
    "total_gpus",
    "job_gpus",
    "placement",
    "gpu_memory_gb",
    "total_gpu_memory_gb",
    "gpu_form_factor",
    "form_factor_stated",
    "gpu_interconnect",
    "fabric",
    "fabric_gbps",
    "fabric_gbps_per_gpu",
    "multi_node",
    "cpu_cores",
    "vcpus",
    "ram_gb",
    "storage_gb",
    "storage_type",
    "storage_included_gb",
    "boot_disk_min_gb",
    # price and the chosen term
    "term",
    "term_variant",
    "price_amount",
    "price_currency",
    "price_unit",
    "price_basis",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "min_rental_hours",
    "billing_increment_s",
    "billing_cap_hours_per_month",
    "storage_usd_per_gb_hour",
    "ipv4_usd_per_hour",
    "egress_usd_per_gb",
    # effective TFLOPs
    "precision",
    "peak_tflops",
    "peak_basis",
    "peak_precision",
    "peak_note",
    "mfu",
    "scaling_intra_node",
    "scaling_inter_node",
    "scaling",
    "effective_tflops",
    # the job
    "compute_hours",
    "wall_clock_hours",
    "interruptions_expected",
    "interruptible_risk",
    "billed_hours",
    "job_usd_per_hour",
    "job_cost_usd",
    "job_storage_gb",
    "required_extras_usd",
    "storage_cost_usd",
    "egress_cost_usd",
    "all_in_cost_usd",
    "usd_per_effective_tflop_hour",
    "caveats",
    "memory_needed_gb",
    "memory_per_gpu_gb",
    "on_demand_usd_per_hour",
    "break_even_hours",
    "break_even",
    # service and provenance
    "reliability",
    "verified",
    "available_now",
    "available_count",
    "availability",
    "fetched_at",
    "price_age_hours",
    "config_id",
    "ranked_after",
)

#: Catalog columns the answer shows but no step reads: the GPU's family and how its peak was
#: had (see :func:`pricing.frame.catalog_frame`), so every output can say "derived" or
#: "ranked at FP16". Joined to the chosen rows only, not carried through the costing.
_FIGURE_COLUMNS = ("gpu_family", "peak_basis", "peak_precision", "peak_note")

#: Catalog columns the qualifying and costing steps read.
_CATALOG_COLUMNS = (
    "gpu_model",
    "catalog_form_factor",
    "catalog_memory_gb",
    "form_factor_varies",
    "pcie_no_p2p",
    "tflops_bf16",
    "peak_tflops",
    "mfu",
)


#: How many configurations qualify in all (:func:`rank_page`): a column of one value.
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


#: From this many offer rows :func:`rank_plan` costs the chosen configurations' rows again
#: (:func:`_chosen_costed_again`) instead of caching every costed row
#: (:func:`_chosen_from_cache`). Measured with ``benchmarks/rank.py`` (polars 2.1, 2 shared
#: CPUs, both in memory): the cache is faster up to 1M rows (1M: 0.70x the time for every
#: offer qualifying, for 8x H100: 0.36x), because the costing of every row then runs once,
#: not twice; at 3M costing again is (the cache takes 1.3x its time for every offer, 1.4x
#: for 8x H100). Between the two measured sizes.
COSTED_AGAIN_MIN_ROWS = 2_000_000

#: From this many offer rows a ranking that names no GPU model (most rows qualify) collects
#: with polars' streaming engine, any other in memory (:func:`engine_for`). Measured with
#: ``benchmarks/rank.py --engines`` (polars 2.1, 2 shared CPUs, 2026-12-01), the streaming
#: engine's time against the in-memory one with every offer qualifying: 1.03x at 100k,
#: 0.85x at 300k, 0.66x at 600k, 0.60x at 1M, 0.37x at 3M; for US, 24 GB, no commitment
#: (no GPU model named, a fifth of the rows): 1.19x at 100k, 1.16x at 300k, 1.05x at 600k,
#: 0.97x at 1M, 0.53x at 3M; for 8x H100 (a few percent of the rows) 1.5x or more at every
#: size from 100k to 1M and 1.27x at 3M.
STREAMING_MIN_ROWS = 500_000


#: From this many offer rows a ranking that names no GPU model is planned with polars'
#: common-subexpression elimination, any other without (:func:`optimizations_for`). The
#: chain repeats subexpressions (the per-GPU price, the form factor, the interruptible
#: share), which the elimination computes once; finding them costs planning time on every
#: call. Measured (polars 2.1, 2 shared CPUs, 2026-12-04): ``benchmarks/rank.py``, the
#: ranking without it against with it, two runs each: 10k offers, every offer qualifying
#: 10.6-11.6 ms against 12.4-14.3, 8x H100 8.7-9.7 against 9.6-11.3; 100k, every offer
#: qualifying 25.1-25.7 against 23.6; the API's 40 benchmark queries over 100k offers (CPU
#: of one thread): 12.73 ms against 13.36 for the 35 that name a model, 22.45 against 22.31
#: for the 5 others; over 20k offers 9.58 against 10.20 and 12.34 against 12.83.
SUBEXPRESSIONS_MIN_ROWS = 50_000

#: Where a ranking reads few rows (below :data:`SUBEXPRESSIONS_MIN_ROWS`: a small frame,
#: or the API's runs of the GPU models a requirement names), polars' planning of its some
#: hundred expressions is most of its time, and it is planned with neither common-
#: subexpression elimination, nor expression simplification (it rewrites every
#: expression and finds little to fold), nor common-subplan elimination (the chain caches
#: what it shares itself). Callgrind, instructions a call (polars 2.1), the planning
#: thread, the API's H100 query over 100k offers: 28.0 M with all three, 24.6 M without
#: subplan elimination, 22.6 M without either; every thread, every offer of 10k: 48.7 M,
#: 45.1 M, 43.3 M. Where it reads many rows, subplan elimination pays: a plain frame of 1M
#: offers naming H100 (every row read, the chain's branches each reading them) ranked in
#: 112-131 ms without it against 74-79 with.
_FEW_ROWS = pl.QueryOptFlags(
    comm_subexpr_elim=False, simplify_expression=False, comm_subplan_elim=False
)
#: :data:`_FEW_ROWS` with expression simplification, for a plan that picks each
#: configuration's cheapest row in a group-by (:func:`_cheapest_terms`: another sort, or no
#: limit): simplification makes its ``sort_by().first()`` a minimum, which without it sorts
#: every group (the API's A100 query sorted by job cost, 14k rows read: 22.5 ms against
#: 12.2 with it).
_FEW_ROWS_GROUPED = pl.QueryOptFlags(comm_subexpr_elim=False, comm_subplan_elim=False)
_WITHOUT_SUBEXPRESSIONS = pl.QueryOptFlags(comm_subexpr_elim=False)


def _names_a_model(requirement: Requirement | None) -> bool:
    return requirement is not None and bool(requirement.gpus)


def engine_for(offers: pl.DataFrame, requirement: Requirement | None = None) -> EngineType:
    """The polars engine :func:`rank` collects ``offers`` with under ``requirement``:
    streaming for a frame of :data:`STREAMING_MIN_ROWS` rows or more when the requirement
    names no GPU model, else in memory (see there for the figures)."""
    if offers.height >= STREAMING_MIN_ROWS and not _names_a_model(requirement):
        return "streaming"
    return "in-memory"


def rows_read(offers: pl.DataFrame | ByModel, requirement: Requirement | None = None) -> int:
    """How many rows of ``offers`` a ranking under ``requirement`` reads: a
    :class:`~pricing.model_rows.ByModel`'s runs of the GPU models it names, else every row."""
    if not isinstance(offers, ByModel):
        return offers.height
    if requirement is not None and requirement.gpus:
        return offers.height_of(requirement.gpu_models())
    return offers.frame.height


def optimizations_for(
    offers: pl.DataFrame | ByModel,
    requirement: Requirement | None = None,
    options: RankOptions | None = None,
) -> pl.QueryOptFlags:
    """polars' optimisations :func:`rank` plans ``offers`` with under ``requirement`` and
    ``options``: below :data:`SUBEXPRESSIONS_MIN_ROWS` rows read (:func:`rows_read`),
    neither common-subexpression nor common-subplan elimination, nor expression
    simplification unless the plan groups each configuration's rows (:data:`_FEW_ROWS`,
    :data:`_FEW_ROWS_GROUPED`); from there, all of them when the requirement names no GPU
    model (most rows qualify), all but common-subexpression elimination when it names one
    (see :data:`SUBEXPRESSIONS_MIN_ROWS` and :data:`_FEW_ROWS` for the figures)."""
    if rows_read(offers, requirement) < SUBEXPRESSIONS_MIN_ROWS:
        options = options or RankOptions()
        grouped = options.sort != KEY or options.limit is None
        return _FEW_ROWS_GROUPED if grouped else _FEW_ROWS
    if _names_a_model(requirement):
        return _WITHOUT_SUBEXPRESSIONS
    return pl.QueryOptFlags()


#: What :func:`rank` ranks: offers, their frame, or their frame in runs of one GPU model.
Offers = Iterable[Offer] | pl.DataFrame | ByModel


def _as_frame(offers: Offers) -> pl.DataFrame:
    """``offers`` as a frame of :func:`pricing.frame.offers_to_frame` (with ``config_id``
    and the offer facts, :mod:`pricing.offer_facts`)."""
    if isinstance(offers, ByModel):
        return offers.frame
    if isinstance(offers, pl.DataFrame):
        frame = offers if "config_id" in offers.columns else with_config_id(offers)
        return frame if has_offer_facts(frame) else with_offer_facts(frame)
    return offers_to_frame(offers)


def _framed(offers: Offers) -> pl.DataFrame | ByModel:
    """``offers`` as :func:`_as_frame` gives them, a :class:`ByModel` as it is."""
    return offers if isinstance(offers, ByModel) else _as_frame(offers)


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


#: ``placement_reason`` of a job no row refuses (:attr:`_Chain.refuses_none`).
_NONE_REFUSED = pl.lit(None, dtype=ex.REASON)
#: A row the job can be placed on.
_PLACEABLE = pl.col("placement_reason").is_null()


#: A row holding its catalog's columns (:func:`_with_catalog`) whose GPU has a peak at
#: the precision: one the catalog join keeps.
_HAS_PEAK = pl.col("peak_tflops").is_not_null()


def _with_catalog(offers: ByModel, options: RankOptions) -> ByModel | None:
    """``offers`` with the catalog's columns at ``options.precision`` (the default
    efficiency, the modelled MFU), joined once per snapshot and precision
    (:meth:`~pricing.model_rows.ByModel.joined`); ``None`` for another efficiency or an
    ``mfu`` of the query's own, which join the catalog in the query's plan.

    The join on the GPU model's name, and its gather of every column the plan reads, was
    a fifth of the work of the API's new queries, the same for every query of a snapshot
    (callgrind, the 40 queries of ``benchmarks/api.py`` over 100k offers, one polars
    thread: 62.6 M instructions a query with the join, 50.6 M without; ~6 MB of columns
    a precision held).
    """
    if options.mfu is not None or options.efficiency not in (None, default_efficiency()):
        return None
    table = _default_catalog_table(options.precision, None)
    return offers.joined(("catalog", options.precision), table)


def hold_catalog(offers: ByModel, precision: Precision = Precision.BF16) -> None:
    """Join the catalog's columns at ``precision`` to ``offers`` now (~4 ms and ~5 MB for
    100k offers), not in the first ranking at it (:func:`_with_catalog`)."""
    _with_catalog(offers, RankOptions(precision=precision))


@dataclasses.dataclass(frozen=True)
class _Chain:
    """The steps of the chain and what they read, resolved once per call."""

    catalog: pl.LazyFrame
    #: Per GPU model: :data:`_FIGURE_COLUMNS`.
    figures: pl.LazyFrame
    qualifies: pl.Expr
    requirement: Requirement
    job: Job
    efficiency: Efficiency
    memory_needed_gb: float | None
    per_gpu_extra_gb: float | None
    scaling: float | None
    now: datetime
    #: Disk GB per instance the job asks: the job's, else the requirement's minimum.
    storage_gb: float | None
    #: The rows read hold the catalog's columns already (:func:`_with_catalog`): qualifying
    #: is a filter, with no join on the model name.
    catalog_in_rows: bool = False
    #: The plan is collected in memory, not streaming (:func:`engine_for`): each
    #: configuration's cheapest row is picked in a window (:func:`_cheapest_terms`).
    in_memory: bool = True

    @classmethod
    def of(
        cls,
        requirement: Requirement | None,
        job: Job | None,
        options: RankOptions,
        *,
        require_fit: bool = True,
        models_read: bool = False,
        catalog_in_rows: bool = False,
        in_memory: bool = True,
    ) -> _Chain:
        """The chain of ``requirement``, ``job`` and ``options``; ``models_read``: the rows
        it qualifies are the runs of the models ``requirement`` names
        (:func:`_reads_named_runs`), which need no condition on the model;
        ``catalog_in_rows``: they hold the catalog's columns (:func:`_with_catalog`)."""
        job = job or Job.for_hours(1)
        requirement = requirement or Requirement()
        eff = options.efficiency or default_efficiency()
        now = options.now or datetime.now(UTC)
        table = _catalog_table(options.precision, eff, options.mfu)
        return cls(
            # lazy selects: an eager one is a query of its own, some 0.2 ms each time
            catalog=table.lazy().select(_CATALOG_COLUMNS),
            figures=table.lazy().select("gpu_model", *_FIGURE_COLUMNS),
            qualifies=ex.qualifies(requirement, now, models_read=models_read),
            requirement=requirement,
            job=job,
            efficiency=eff,
            memory_needed_gb=job.memory_needed_gb(options.precision, eff) if require_fit else None,
            per_gpu_extra_gb=job.per_gpu_extra_gb(eff) if require_fit else None,
            scaling=options.scaling,
            now=now,
            storage_gb=job.storage_gb
            if job.storage_gb is not None
            else (requirement.min_storage_gb if requirement is not None else None),
            catalog_in_rows=catalog_in_rows,
            in_memory=in_memory,
        )

    def qualified(self, offers: pl.LazyFrame) -> pl.LazyFrame:
        """Offer rows that meet the requirement, with their GPU's catalog columns (a row
        whose GPU the catalog has no peak for at the precision is not one)."""
        if self.catalog_in_rows:
            known = _HAS_PEAK if self.qualifies is ex.ALWAYS else self.qualifies & _HAS_PEAK
            return offers.filter(known)
        return ex.where(offers.join(self.catalog, on="gpu_model", how="inner"), self.qualifies)

    @property
    def refuses_none(self) -> bool:
        """Whether the job can be placed on every qualified row
        (:func:`pricing.expressions.refuses_none`: one node, as a job without a GPU count
        runs). Then the reason is planned as the null it is, the costing filters nothing
        and a page groups no configuration as unplaced: a job of hours over every offer
        grouped 100k rows for none (~9% of that query, callgrind)."""
        return ex.refuses_none(
            self.job.gpus is None,
            self.memory_needed_gb is not None,
            self.efficiency.interruptible,
            modelled=self.job.interruptible_overhead is None,
        )

    def placed(self, qualified: pl.LazyFrame) -> pl.LazyFrame:
        """Qualified rows with their nodes, job GPUs, per-GPU memory need and
        ``placement_reason`` (null: the job can run there), unfiltered."""
        eff = self.efficiency
        reason = (
            _NONE_REFUSED
            if self.refuses_none
            else ex.placement_reason(
                self.requirement,
                self.memory_needed_gb is not None,
                eff.interruptible,
                modelled=self.job.interruptible_overhead is None,
            )
        )
        return (
            qualified.with_columns(
                nodes=ex.node_count(self.job.gpus), job_gpus=ex.job_gpus(self.job.gpus)
            )
            .with_columns(
                memory_per_gpu_gb=ex.memory_per_gpu_gb(self.memory_needed_gb, self.per_gpu_extra_gb)
            )
            .with_columns(placement_reason=reason)
        )

    def costed(self, qualified: pl.LazyFrame) -> pl.LazyFrame:
        """Effective TFLOPs, hours and cost of qualified rows the job can be placed on
        (see :func:`costed_plan`)."""
        return self.cost(self.placed(qualified))

    def cost(self, placed: pl.LazyFrame) -> pl.LazyFrame:
        """:meth:`costed` of rows :meth:`placed` already gives."""
        eff = self.efficiency
        scaling = ex.scaling() if self.scaling is None else pl.lit(self.scaling)
        floor, metered, billed = ex.billed_hours_stages()
        # a job without a GPU count runs on every GPU of one node (ex.node_count(None) is
        # 1), where the fabric factor is 1.0: no curve of the fabric's Gbps to evaluate on
        # every row, and the GPUs per node it uses are the node's
        one_node = self.job.gpus is None
        inter_node = pl.lit(1.0) if one_node else ex.inter_node_scaling(eff.scaling)
        placeable = placed if self.refuses_none else placed.filter(_PLACEABLE)
        return (
            placeable.with_columns(
                total_gpus=ex.total_gpus(),
                scaling_intra_node=ex.intra_node_scaling(eff.scaling, one_node),
                scaling_inter_node=inter_node,
            )
            .with_columns(scaling=scaling)
            .with_columns(effective_tflops=ex.effective_tflops())
            .filter(pl.col("effective_tflops") > 0)
            .with_columns(compute_hours=ex.compute_hours(self.job))
            .with_columns(
                wall_clock_hours=ex.wall_clock_hours(
                    eff.interruptible, self.job.interruptible_overhead
                )
            )
            .with_columns(
                **floor, interruptions_expected=ex.interruptions_expected(eff.interruptible)
            )
            .with_columns(**metered)
            .with_columns(**billed)
            .drop(ex.BILLING_STAGE_COLUMNS)
            .with_columns(
                job_cost_usd=ex.job_cost_usd(), job_storage_gb=ex.job_storage_gb(self.storage_gb)
            )
            .with_columns(
                required_extras_usd=ex.required_extras_usd(),
                storage_cost_usd=ex.storage_cost_usd(),
                egress_cost_usd=ex.egress_cost_usd(self.job.egress_gb),
            )
            .with_columns(all_in_cost_usd=ex.all_in_cost_usd())
            .with_columns(**{KEY: ex.usd_per_effective_tflop_hour()})
        )


def costed_plan(
    offers: Iterable[Offer] | pl.DataFrame,
    requirement: Requirement | None = None,
    job: Job | None = None,
    options: RankOptions | None = None,
    *,
    require_fit: bool = True,
) -> pl.LazyFrame:
    """Every qualifying (offer, term) row with its effective TFLOPs, hours and cost.

    Offers whose GPU is not in the catalog, or has no figure to rank by (datasheet, derived
    or fallback, see :meth:`adapters.gpus.GpuSpec.figure`), are dropped: their effective
    TFLOPs are unknown; :mod:`pricing.coverage` names them. Rows the job cannot be placed
    on are dropped (:func:`pricing.expressions.placement_reason`: several nodes without a
    declared multi-node capability and fabric, more nodes than available, a model that does
    not fit one GPU unless ``require_fit`` is false); :func:`placement_plan` keeps them with
    their reason. ``options.limit`` and ``options.sort`` do not apply.
    """
    chain = _Chain.of(requirement, job, options or RankOptions(), require_fit=require_fit)
    costed = chain.costed(chain.qualified(_as_frame(offers).lazy()))
    return costed.join(chain.figures, on="gpu_model", how="left")


def placement_plan(
    offers: Iterable[Offer] | pl.DataFrame,
    requirement: Requirement | None = None,
    job: Job | None = None,
    options: RankOptions | None = None,
) -> pl.LazyFrame:
    """Every qualifying (offer, term) row with ``nodes`` and ``placement_reason`` (null:
    the job can be placed there): what :mod:`pricing.coverage` counts as left out for
    placement."""
    chain = _Chain.of(requirement, job, options or RankOptions())
    return chain.placed(chain.qualified(_as_frame(offers).lazy().with_row_index(OFFER_ROW)))


def _top_configurations(
    costed: pl.LazyFrame, options: RankOptions, limit: int, most_rows: int, *, window: bool
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Stages one and two: the top ``limit`` configurations, each with its cheapest row
    (``config_id`` and :data:`OFFER_ROW`, the choice :func:`_cheapest_terms` makes; cached,
    read by the answer), and the number of configurations that qualify (one row, column
    :data:`_TOTAL`, computed only when read).

    Under the default sort a configuration's place is its cheapest row's: the first of
    its rows in the total order (:data:`AFTER`, :data:`KEY`, ``config_id``, term, frame
    row), where ties break by ``config_id`` exactly as in :data:`SORT_KEYS`. Every row
    before the cheapest row of the configuration in place ``r`` belongs to one of the
    ``r - 1`` configurations placed before it (a configuration placed after it has every
    row after its own first one), so that row is among the first ``(r - 1) * most_rows +
    1``, with ``most_rows`` the most rows one configuration has: the first ``limit *
    most_rows`` rows of the order hold the top ``limit`` configurations' cheapest rows,
    each at its configuration's first appearance. One ``bottom_k`` of a few hundred rows
    is then the exact top, with no group-by over every costed row (callgrind, 10k offers
    most of which qualify: ~10% of a ranking's instructions, the count of configurations
    it gave besides now a count of distinct ids when a page reads it).

    Another sort key is read off each configuration's cheapest row, so stage one keeps
    that row per configuration (a group-by, or with ``window`` a window:
    :func:`_cheapest_terms`) before stage two orders by it.
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
        per_config = _cheapest_terms(costed.select(*columns), window=window).cache()
        top = per_config.bottom_k(limit, by=[AFTER, options.sort, KEY, "config_id"])
        # a row per configuration: counted, not the distinct ids of every costed row again
        # (that count sorts them: ~8% of a sort by the hourly price over 100k offers)
        total = per_config.select(pl.len().alias(_TOTAL))
    return top.select("config_id", OFFER_ROW).cache(), total


#: The total order of costed rows the default sort's top-k cuts (:func:`_top_configurations`).
_CUT_ORDER = (AFTER, KEY, "config_id", "term", OFFER_ROW)


def _cheapest_terms(costed: pl.LazyFrame, *, window: bool = False) -> pl.LazyFrame:
    """One row per configuration: available before not available now, then its least key,
    then the earlier term, then frame row.

    Each configuration's row is picked in a group-by (polars reads ``sort_by().first()``
    there as a minimum, without sorting) and kept by a semi join: sorting every costed
    row, then keeping the first per configuration, took 2-5x longer on 100k offers under
    a sort other than the key's, which reads every configuration's cheapest row. With
    ``window`` (a plan collected in memory) the same pick is a window over the
    configuration and the rows equal to it are kept, with no join: a sort by the hourly
    price over 100k offers 12.3-12.6 ms against 13.7-13.9 (one thread); the streaming
    engine ran the window slower (the same sort over 1M offers: 147-164 ms against
    125-128)."""
    if window:
        return costed.filter(pl.col(OFFER_ROW) == _CHEAPEST_ROW.over("config_id"))
    chosen = costed.group_by("config_id").agg(_CHEAPEST_ROW).select(OFFER_ROW)
    return costed.join(chosen, on=OFFER_ROW, how="semi")


#: A configuration's cheapest row (:func:`_cheapest_terms`), in a group-by.
_CHEAPEST_ROW = pl.col(OFFER_ROW).sort_by(AFTER, KEY, "term", OFFER_ROW, nulls_last=True).first()


#: The costing's columns the answer keeps when the costed rows are cached: with the offer
#: columns (fetched back by :data:`OFFER_ROW`, the offer facts among them), the whole
#: answer.
_COSTED_COLUMNS = (
    OFFER_ROW, "config_id", "term", "catalog_memory_gb", "form_factor_varies",
    "peak_tflops", "mfu", "nodes", "job_gpus", "memory_per_gpu_gb",
    "total_gpus", "scaling_intra_node", "scaling_inter_node", "scaling", "effective_tflops",
    "compute_hours", "wall_clock_hours", "interruptions_expected", "billed_hours",
    "job_cost_usd", "job_storage_gb", "required_extras_usd", "storage_cost_usd",
    "egress_cost_usd", "all_in_cost_usd", KEY,
)  # fmt: skip


#: The catalog's columns among :data:`_COSTED_COLUMNS`: a row holding the catalog's
#: columns (:func:`_with_catalog`) has them from its costing.
_CARRIED_CATALOG_COLUMNS = tuple(c for c in _CATALOG_COLUMNS if c in _COSTED_COLUMNS)


@dataclasses.dataclass(frozen=True)
class _Chosen:
    """What the chain's last steps read: the chosen configurations' cheapest rows, how
    many configurations qualify (``None`` with no limit: then every one is in the answer),
    and every qualifying row placed (:meth:`_Chain.placed`: what
    :func:`~pricing.unplaced.unplaced_configurations` reads)."""

    best: pl.LazyFrame
    total: pl.LazyFrame | None
    placed: pl.LazyFrame


def _chosen_from_cache(
    chain: _Chain, rows: pl.LazyFrame, options: RankOptions, most_rows: int
) -> _Chosen:
    """The chosen configurations' cheapest rows, read from the costed rows.

    The qualified, placed and costed rows are cached (narrow: what the costing reads and
    adds) and shared by both stages, the answer and the unplaced configurations; the wide
    offer columns join back by row (a gather of those rows off the collected frame and a
    second collect for the rest took ~4% more instructions at 30 rows: that collect's
    fixed cost).
    """
    placed = chain.placed(chain.qualified(rows).cache()).cache()
    costed = chain.cost(placed).cache()
    total = None
    if options.limit is None:
        best = _cheapest_terms(costed, window=chain.in_memory)
    else:
        top, total = _top_configurations(
            costed, options, options.limit, most_rows, window=chain.in_memory
        )
        best = costed.join(top.select(OFFER_ROW), on=OFFER_ROW, how="semi")
    # the catalog's columns the costing carries come with it; the rest with the offer's
    carried = _CARRIED_CATALOG_COLUMNS if chain.catalog_in_rows else ()
    wide = best.select(_COSTED_COLUMNS).join(rows.drop("config_id", "term", *carried), on=OFFER_ROW)
    return _Chosen(wide, total, placed)


def _chosen_costed_again(
    chain: _Chain, rows: pl.LazyFrame, options: RankOptions, most_rows: int
) -> _Chosen:
    """The chosen configurations' cheapest rows, from their rows costed again.

    Caching every costed row of a large frame costs more than costing the rows of
    ``limit`` configurations twice: stage one reads the costing of every row, the answer
    qualifies and costs the chosen configurations' rows again, with every offer column.
    """
    total = None
    every = rows
    if options.limit is not None:
        costed = chain.costed(chain.qualified(rows))
        top, total = _top_configurations(
            costed, options, options.limit, most_rows, window=chain.in_memory
        )
        # cached: the requirement filter then runs on these rows, not pushed below the join
        # (an inner join on the unique ids: the streaming engine runs it faster than a semi)
        rows = rows.join(top.select("config_id"), on="config_id", how="inner").cache()
    qualified = chain.qualified(rows).cache()
    best = _cheapest_terms(chain.costed(qualified), window=chain.in_memory)
    return _Chosen(best, total, chain.placed(chain.qualified(every)))


def _reads_named_runs(offers: pl.DataFrame | ByModel, requirement: Requirement | None) -> bool:
    """Whether :func:`_offer_rows` gives the runs of the models ``requirement`` names, and
    no other row (a :class:`~pricing.model_rows.ByModel` in runs)."""
    return isinstance(offers, ByModel) and offers.runs is not None and _names_a_model(requirement)


def _offer_rows(offers: pl.DataFrame | ByModel, requirement: Requirement | None) -> pl.LazyFrame:
    """The rows a ranking under ``requirement`` reads, with :data:`OFFER_ROW`: the named
    GPU models' runs of a :class:`~pricing.model_rows.ByModel` (no other row qualifies),
    else every row."""
    if not isinstance(offers, ByModel):
        return offers.lazy().with_row_index(OFFER_ROW)
    models = requirement.gpu_models() if requirement is not None and requirement.gpus else None
    return offers.rows(models)


def rank_plan(
    offers: Offers,
    requirement: Requirement | None = None,
    job: Job | None = None,
    options: RankOptions | None = None,
    *,
    paged: bool = False,
) -> pl.LazyFrame:
    """The lazy chain behind :func:`rank` (for ``explain()`` and benchmarks).

    Frames of :data:`COSTED_AGAIN_MIN_ROWS` rows or more cost the chosen configurations'
    rows again (:func:`_chosen_costed_again`), smaller ones cache the costed rows
    (:func:`_chosen_from_cache`); the answer is the same. ``paged`` adds the columns
    :func:`rank_page` splits off: :data:`OFFER_ROW` and the number of qualifying
    configurations (the distinct ``config_id`` of the costed rows stage one reads).
    """
    ranked, _, columns = _plans(_framed(offers), requirement, job, options, paged=paged)
    return ranked.select(columns)


def _plans(
    offers: pl.DataFrame | ByModel,
    requirement: Requirement | None,
    job: Job | None,
    options: RankOptions | None,
    *,
    paged: bool,
    displayed: bool = False,
) -> tuple[pl.LazyFrame, pl.LazyFrame | None, list[str]]:
    """:func:`rank_plan`'s chain, every qualifying row placed (the rows the unplaced
    configurations are read off, sharing the chain's cache where it keeps one; ``None``
    when no row refuses the job, :attr:`_Chain.refuses_none`), and the
    answer's columns in order (:data:`RESULT_COLUMNS`, then the page's own).

    The chain ends with every column it computed: the callers take the answer's columns
    off the collected frame by name, where a final ``select`` of ~90 columns cost ~0.6 ms
    of planning on every call (callgrind, 30 rows). With ``displayed`` the chain ends with
    the result's columns as :func:`pricing.display.for_display` shows them (:func:`_shown`).
    """
    options = options or RankOptions()
    with_catalog = _with_catalog(offers, options) if isinstance(offers, ByModel) else None
    offers = offers if with_catalog is None else with_catalog
    frame = _as_frame(offers)
    chain = _Chain.of(
        requirement, job, options, models_read=_reads_named_runs(offers, requirement),
        catalog_in_rows=with_catalog is not None,
        in_memory=engine_for(frame, requirement) == "in-memory",
    )  # fmt: skip
    rows = _offer_rows(offers, requirement)
    large = frame.height >= COSTED_AGAIN_MIN_ROWS
    most_rows = (
        offers.most_rows if isinstance(offers, ByModel) else most_rows_per_configuration(frame)
    )
    choose = _chosen_costed_again if large else _chosen_from_cache
    chosen = choose(chain, rows, options, most_rows)
    best = chosen.best
    extra: list[str] = []
    if paged:
        extra.append(OFFER_ROW)
        if chosen.total is not None:  # a few rows, one count: the join costs nothing
            best = best.join(chosen.total, how="cross")
            extra.append(_TOTAL)
    if not chain.catalog_in_rows:  # else the rows hold the figures already
        best = best.join(chain.figures, on="gpu_model", how="left")
    ranked = (
        best.with_columns(
            job_usd_per_hour=ex.job_usd_per_hour(),
            gpu_memory_gb=ex.gpu_memory_gb(),
            total_gpu_memory_gb=ex.total_gpu_memory_gb(),
            memory_needed_gb=pl.lit(chain.memory_needed_gb, dtype=pl.Float64),
            precision=pl.lit(options.precision.value),
            price_age_hours=ex.price_age_hours(chain.now),
            form_factor_stated=ex.form_factor_stated(),
            caveats=ex.caveats(chain.job.egress_gb),
            placement=ex.placement_text(),
            interruptible_risk=ex.interruptible_risk(),
        )
        .sort(options.order(), nulls_last=True)
        .with_row_index("rank", offset=1)
    )
    columns = [*RESULT_COLUMNS, *extra]
    if displayed:
        ranked = ranked.select(*_shown(), *extra)
    return ranked, None if chain.refuses_none else chosen.placed, columns


@functools.cache
def _shown() -> tuple[str | pl.Expr, ...]:
    """:data:`RESULT_COLUMNS` as :func:`pricing.display.for_display` shows them: each
    column it rounds or writes as text its expression, the others by name (the result's
    dtypes read once, off the plan of an empty frame)."""
    empty = with_config_id(pl.DataFrame(schema=OFFER_SCHEMA))
    shown = {
        e.meta.output_name(): e for e in display_expressions(rank_plan(empty).collect_schema())
    }
    return tuple(shown.get(name, name) for name in RESULT_COLUMNS)


def rank(
    offers: Offers,
    requirement: Requirement | None = None,
    job: Job | None = None,
    options: RankOptions | None = None,
) -> pl.DataFrame:
    """The best ``options.limit`` configurations for ``job`` under ``requirement``.

    ``offers`` may be Offer objects, a frame from :func:`pricing.frame.offers_to_frame`
    (or :func:`~pricing.frame.records_to_frame`; a frame built otherwise, without the
    offer facts, gets them on every call: :func:`pricing.offer_facts.with_offer_facts`
    once is cheaper), or one in runs of one GPU model (:class:`~pricing.model_rows.ByModel`,
    kept in memory by the API: a requirement naming models then reads their rows alone). One row per
    configuration (provider, offer_id, region, price basis) with its cheapest term; columns
    :data:`RESULT_COLUMNS`, in the order of :meth:`RankOptions.order`. The job defaults to
    one hour, the options to :class:`RankOptions`'s defaults.
    """
    framed = _framed(offers)
    frame = _as_frame(framed)
    plan, _, columns = _plans(framed, requirement, job, options, paged=False)
    ranked = plan.collect(
        engine=engine_for(frame, requirement),
        optimizations=optimizations_for(framed, requirement, options),
    )
    return ranked[columns]


@dataclasses.dataclass(frozen=True)
class RankedPage:
    """:func:`rank`'s answer with what a page of it needs besides: each row's place in the
    ranked frame (:data:`OFFER_ROW`: to fetch what a caller keeps per offer, such as the
    checklist), how many configurations qualify, on every page together, and, when asked
    for, the configurations the job cannot be placed on
    (:data:`~pricing.unplaced.UNPLACED_COLUMNS`)."""

    rows: pl.DataFrame
    offer_rows: pl.Series
    total: int
    unplaced: pl.DataFrame | None = None
    #: What :func:`rank_page`'s ``also`` planned, collected with the ranking.
    also: pl.DataFrame | None = None


def rank_page(
    offers: pl.DataFrame | ByModel,
    requirement: Requirement | None = None,
    job: Job | None = None,
    options: RankOptions | None = None,
    *,
    unplaced: bool = False,
    also: Callable[[pl.LazyFrame | pl.DataFrame | None], pl.LazyFrame] | None = None,
    displayed: bool = False,
) -> RankedPage:
    """:func:`rank` and the number of qualifying configurations, in one pass.

    The total counts the distinct configurations among the costed rows stage one reads
    (cached there), so a page costs one ranking, not a ranking and a costing. With
    ``options.limit`` ``None`` every configuration is in the answer and the total is its
    length. With ``unplaced`` (and a ``job``), the configurations ``job`` cannot be placed
    on, for the coverage note (:func:`pricing.coverage.left_out`): grouped from the rows
    the ranking placed, in the same collect; placing them again apart took ~40% of a page
    where most rows are refused (a 7B training job on 8 GPUs over 100k offers: 94 ms for
    the ranking and the note apart, 71 together). ``also`` plans what a caller wants
    beside the ranking from the unplaced configurations' plan (``None`` without them),
    collected in the same ``collect_all`` (:attr:`RankedPage.also`): the API's coverage
    note, whose own collect was ~3.4 ms of fixed cost on every page. With ``displayed``
    the rows are as :func:`pricing.display.for_display` shows them (its collect, ~1 ms of
    a page, saved), with :data:`RESULT_COLUMNS` all the same.
    """
    offers = _framed(offers)  # a frame without the offer facts gets them once, here
    frame = _as_frame(offers)
    plan, placed, _ = _plans(offers, requirement, job, options, paged=True, displayed=displayed)
    engine = engine_for(frame, requirement)
    optimizations = optimizations_for(offers, requirement, options)
    plans = [plan]
    grouped = None
    left = None
    if unplaced and job is not None:
        if placed is None:  # no row refuses the job: none to group
            left = pl.DataFrame(schema=UNPLACED_SCHEMA)
        else:
            together = isinstance(offers, ByModel) and offers.together
            # cached: read by ``also`` too
            grouped = unplaced_configurations(placed, together=together).cache()
            plans.append(grouped)
    if also is not None:
        plans.append(also(grouped if left is None else left))
    if len(plans) > 1:
        results = pl.collect_all(plans, engine=engine, optimizations=optimizations)
    else:
        results = [plan.collect(engine=engine, optimizations=optimizations)]
    ranked = results[0]
    if grouped is not None:
        left = results[1]
    beside = results[-1] if also is not None else None
    if _TOTAL in ranked.columns:
        total = int(ranked.get_column(_TOTAL)[0]) if ranked.height else 0
    else:
        total = ranked.height
    return RankedPage(
        rows=ranked[list(RESULT_COLUMNS)],  # by name: a column selection, no query
        offer_rows=ranked.get_column(OFFER_ROW),
        total=total,
        unplaced=left,
        also=beside,
    )
