"""Rank offers by USD per effective TFLOP-hour for a job: one lazy polars chain.

qualify (requirement filter, pushed below the catalog join) -> effective TFLOPs (peak x MFU
x scaling) -> hours and cost per term -> the cheapest term per configuration -> break-even
against on-demand -> a total order (key, then provider, offer_id, region, basis, term).

Only the top ``limit x len(RentalTerm)`` rows are kept after costing: a configuration has at
most one row per term (the offer key is unique per snapshot), so those rows hold the best
term of every configuration that can make the top ``limit``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import polars as pl

from adapters.gpus import Precision
from adapters.schema import Offer, RentalTerm

from . import expressions as ex
from .efficiency import Efficiency, default_efficiency
from .frame import catalog_frame, offers_to_frame, with_config_id
from .job import Job
from .requirement import Requirement

if TYPE_CHECKING:
    from polars._typing import EngineType

__all__ = [
    "RESULT_COLUMNS",
    "SORT_KEYS",
    "STREAMING_MIN_ROWS",
    "costed_plan",
    "engine_for",
    "rank",
    "rank_plan",
]

#: The total order of the result. ``config_id`` (from
#: :func:`pricing.frame.with_config_id`) follows the lexicographic order of (provider,
#: offer_id, region, price_basis), so ties on the key break by provider, then offer_id,
#: then region and basis, then term; sorting by one integer instead of four strings keeps
#: the top-k cheap.
SORT_KEYS: tuple[str, ...] = ("usd_per_effective_tflop_hour", "config_id", "term")

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
    "gpu_memory_gb",
    "total_gpu_memory_gb",
    "gpu_form_factor",
    "form_factor_stated",
    "gpu_interconnect",
    "fabric",
    "fabric_gbps",
    "cpu_cores",
    "vcpus",
    "ram_gb",
    "storage_gb",
    "storage_type",
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
    "billed_hours",
    "job_cost_usd",
    "usd_per_effective_tflop_hour",
    "memory_needed_gb",
    "on_demand_usd_per_hour",
    "break_even_hours",
    "break_even",
    # service and provenance
    "reliability",
    "verified",
    "available_now",
    "fetched_at",
    "price_age_hours",
    "config_id",
)

#: How each row's peak was had (see :func:`pricing.frame.catalog_frame`): carried from the
#: catalog table to the result so every output can say "derived" or "ranked at FP16".
_FIGURE_COLUMNS = ("peak_basis", "peak_precision", "peak_note")

_CATALOG_COLUMNS = (
    "gpu_model",
    "gpu_family",
    "catalog_form_factor",
    "catalog_memory_gb",
    "form_factor_varies",
    "pcie_no_p2p",
    "tflops_bf16",
    "peak_tflops",
    *_FIGURE_COLUMNS,
    "mfu",
)


#: Internal row number of an offer in its frame: the top rows fetch their wide offer columns
#: (identity, hardware, price text) back by it, so only the columns the costing reads are
#: carried through the filter, the catalog join and the top-k.
_ROW = "_offer_row"
#: How many rows the fast path's cut kept (see :func:`_best_terms`); internal to :func:`rank`.
_CANDIDATES = "_candidates"

#: What the costing adds to an offer row and :func:`rank_plan` keeps for the top rows; every
#: other result column is an offer column (fetched back by :data:`_ROW`) or is computed on
#: the top rows only.
_COSTED_COLUMNS = (
    _ROW,
    "config_id",
    "term",
    "gpu_family",
    "catalog_memory_gb",
    "form_factor_varies",
    "peak_tflops",
    *_FIGURE_COLUMNS,
    "mfu",
    "nodes",
    "total_gpus",
    "scaling_intra_node",
    "scaling_inter_node",
    "scaling",
    "effective_tflops",
    "compute_hours",
    "wall_clock_hours",
    "billed_hours",
    "job_cost_usd",
    "usd_per_effective_tflop_hour",
)


#: Below this many offer rows the in-memory engine answers faster than the streaming one (its
#: fixed start-up cost dominates small frames); from here on streaming's pipelining wins.
STREAMING_MIN_ROWS = 500_000


def engine_for(offers: pl.DataFrame | pl.LazyFrame) -> EngineType:
    """The polars engine :func:`rank` collects with: in-memory for small frames."""
    small = isinstance(offers, pl.DataFrame) and offers.height < STREAMING_MIN_ROWS
    return "in-memory" if small else "auto"


def _as_lazy(offers: Iterable[Offer] | pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    if isinstance(offers, pl.LazyFrame):
        names = offers.collect_schema().names()
        return offers if "config_id" in names else with_config_id(offers.collect()).lazy()
    if isinstance(offers, pl.DataFrame):
        return (offers if "config_id" in offers.columns else with_config_id(offers)).lazy()
    return offers_to_frame(offers).lazy()


def _catalog_table(
    precision: Precision, efficiency: Efficiency, mfu: float | None, catalog: pl.DataFrame | None
) -> pl.DataFrame:
    """Per GPU model with a peak at ``precision``: that peak, the MFU and catalog facts."""
    if catalog is None and efficiency is default_efficiency():
        return _default_catalog_table(precision, mfu)
    return _build_catalog_table(precision, efficiency, mfu, catalog)


@functools.lru_cache(maxsize=32)
def _default_catalog_table(precision: Precision, mfu: float | None) -> pl.DataFrame:
    return _build_catalog_table(precision, default_efficiency(), mfu, None)


def _build_catalog_table(
    precision: Precision, efficiency: Efficiency, mfu: float | None, catalog: pl.DataFrame | None
) -> pl.DataFrame:
    frame = catalog if catalog is not None else catalog_frame(efficiency=efficiency)
    mfu_expr = ex.mfu(precision, efficiency.low_precision_speedup) if mfu is None else pl.lit(mfu)
    return (
        frame.lazy()
        .with_columns(
            peak_tflops=ex.peak_tflops(precision),
            peak_basis=ex.peak_basis(precision),
            peak_precision=ex.peak_precision(precision),
            peak_note=ex.peak_note(precision),
            mfu=mfu_expr,
        )
        .filter(pl.col("peak_tflops") > 0)
        .select(_CATALOG_COLUMNS)
        .collect()
    )


def _qualified(
    offers: pl.LazyFrame, catalog: pl.DataFrame, requirement: Requirement, now: datetime
) -> pl.LazyFrame:
    """Offer rows that meet ``requirement``, with their GPU's catalog columns.

    The offer-only conditions are pushed below the join; GPUs without a peak drop out.
    """
    return offers.join(catalog.lazy(), on="gpu_model", how="inner").filter(
        ex.qualifies(requirement, now)
    )


def _costed(
    qualified: pl.LazyFrame,
    job: Job,
    efficiency: Efficiency,
    memory_needed: float | None,
    scaling: float | None,
) -> pl.LazyFrame:
    """Effective TFLOPs, hours and cost of every qualified row (see :func:`costed_plan`)."""
    scaling_expr = ex.scaling() if scaling is None else pl.lit(scaling)
    plan = (
        qualified.with_columns(nodes=ex.node_count(job.gpus))
        .filter((pl.col("nodes") <= 1) | pl.col("multi_node").fill_null(True))
        .with_columns(
            total_gpus=ex.total_gpus(),
            scaling_intra_node=ex.intra_node_scaling(efficiency.scaling),
            scaling_inter_node=ex.inter_node_scaling(efficiency.scaling),
        )
        .with_columns(scaling=scaling_expr)
        .with_columns(effective_tflops=ex.effective_tflops())
        .filter(pl.col("effective_tflops") > 0)
    )
    if memory_needed is not None:
        plan = plan.with_columns(total_gpu_memory_gb=ex.total_gpu_memory_gb()).filter(
            ex.memory_fits(memory_needed, efficiency.memory_usable_fraction)
        )
    return (
        plan.with_columns(compute_hours=ex.compute_hours(job))
        .with_columns(wall_clock_hours=ex.wall_clock_hours(job.overhead(efficiency)))
        .with_columns(billed_hours=ex.billed_hours())
        .with_columns(job_cost_usd=ex.job_cost_usd())
        .with_columns(usd_per_effective_tflop_hour=ex.usd_per_effective_tflop_hour())
    )


def costed_plan(
    offers: Iterable[Offer] | pl.DataFrame | pl.LazyFrame,
    requirement: Requirement | None = None,
    job: Job | None = None,
    *,
    precision: Precision = Precision.BF16,
    now: datetime | None = None,
    mfu: float | None = None,
    scaling: float | None = None,
    efficiency: Efficiency | None = None,
    catalog: pl.DataFrame | None = None,
    require_fit: bool = True,
) -> pl.LazyFrame:
    """Every qualifying (offer, term) row with its effective TFLOPs, hours and cost.

    Offers whose GPU is not in the catalog, or has no figure to rank by (datasheet, derived
    or fallback, see :meth:`adapters.gpus.GpuSpec.figure`), are dropped: their effective
    TFLOPs are unknown; :mod:`pricing.coverage` names them. Training runs drop
    configurations the model does not fit in (unless ``require_fit`` is false), and
    multi-node configurations of offers marked ``multi_node=False``.
    """
    job = job or Job.for_hours(1)
    eff = efficiency or default_efficiency()
    memory_needed = job.memory_needed_gb(precision, eff) if require_fit else None
    qualified = _qualified(
        _as_lazy(offers),
        _catalog_table(precision, eff, mfu, catalog),
        requirement or Requirement(),
        now or datetime.now(UTC),
    )
    return _costed(qualified, job, eff, memory_needed, scaling)


def _best_terms(costed: pl.LazyFrame, limit: int | None) -> pl.LazyFrame:
    """The cheapest term of each configuration, the ``limit`` cheapest configurations.

    Works on the best ``limit x len(RentalTerm)`` rows. Whenever those rows hold at least
    ``limit`` configurations the answer is exact: every row cheaper than the ``limit``-th
    configuration's best is among them. So it is when fewer rows than that qualify at all
    (the cut kept every row): each row carries ``_CANDIDATES``, the number of rows the cut
    kept, for :func:`rank` to tell. Otherwise :func:`rank` re-runs without the cut.
    """
    keys = [*SORT_KEYS, _ROW]  # the row breaks ties between variants of one term
    if limit is None:
        candidates = costed.with_columns(pl.lit(None, dtype=pl.UInt32).alias(_CANDIDATES))
    else:
        candidates = costed.bottom_k(limit * len(RentalTerm), by=keys).with_columns(
            pl.len().alias(_CANDIDATES)
        )
    best = candidates.sort(keys).unique(subset=["config_id"], keep="first", maintain_order=True)
    return best if limit is None else best.head(limit)


def _peers_summary(qualified: pl.LazyFrame, chosen: pl.LazyFrame) -> pl.LazyFrame:
    """Per chosen configuration: its on-demand price and its best commitment's break-even.

    Reads the qualifying rows of the chosen configurations only (a semi-join on the
    integer ``config_id``), so the costing is not run twice.
    """
    on_demand = pl.col("term") == RentalTerm.ON_DEMAND.value
    return (
        qualified.select("config_id", "term", "usd_per_hour", "commitment_hours")
        .join(chosen.select("config_id"), on="config_id", how="semi")
        .with_columns(
            on_demand_usd_per_hour=pl.col("usd_per_hour").filter(on_demand).min().over("config_id")
        )
        .with_columns(be=ex.break_even_hours())
        .group_by("config_id")
        .agg(
            pl.col("on_demand_usd_per_hour").first(),
            best_commitment_term=pl.when(pl.col("be").min().is_not_null()).then(
                pl.col("term").sort_by("be", "term", nulls_last=True).first()
            ),
            best_commitment_hours=pl.col("be").min(),
        )
    )


def rank_plan(
    offers: Iterable[Offer] | pl.DataFrame | pl.LazyFrame,
    requirement: Requirement | None = None,
    job: Job | None = None,
    *,
    precision: Precision = Precision.BF16,
    limit: int | None = 50,
    now: datetime | None = None,
    mfu: float | None = None,
    scaling: float | None = None,
    efficiency: Efficiency | None = None,
    catalog: pl.DataFrame | None = None,
    with_candidate_count: bool = False,
) -> pl.LazyFrame:
    """The lazy plan behind :func:`rank` (for ``explain()`` and benchmarks).

    ``with_candidate_count`` adds the internal ``_candidates`` column :func:`rank` reads to
    tell whether the fast path's answer is exact.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, not {limit}")
    now = now or datetime.now(UTC)
    job = job or Job.for_hours(1)
    eff = efficiency or default_efficiency()
    memory_needed = job.memory_needed_gb(precision, eff)
    offers_ = _as_lazy(offers).with_row_index(_ROW)
    qualified = _qualified(
        offers_, _catalog_table(precision, eff, mfu, catalog), requirement or Requirement(), now
    ).cache()
    chosen = _best_terms(_costed(qualified, job, eff, memory_needed, scaling), limit).select(
        *_COSTED_COLUMNS, _CANDIDATES
    )
    on_commitment = pl.col("commitment_hours").is_not_null()
    on_demand = pl.col("term") == RentalTerm.ON_DEMAND.value
    return (
        chosen.join(offers_.drop("config_id", "term"), on=_ROW, how="inner")
        .join(_peers_summary(qualified, chosen), on="config_id", how="left")
        .with_columns(
            break_even_hours=pl.when(on_commitment)
            .then(ex.break_even_hours())
            .when(on_demand)
            .then(pl.col("best_commitment_hours")),
        )
        .with_columns(
            break_even=ex.break_even_text(),
            usd_per_gpu_hour=ex.usd_per_gpu_hour(),
            gpu_memory_gb=ex.gpu_memory_gb(),
            total_gpu_memory_gb=ex.total_gpu_memory_gb(),
            memory_needed_gb=pl.lit(memory_needed, dtype=pl.Float64),
            precision=pl.lit(precision.value),
            price_age_hours=ex.price_age_hours(now),
            form_factor_stated=ex.form_factor_stated(),
        )
        .sort(list(SORT_KEYS))
        .with_row_index("rank", offset=1)
        .select(*RESULT_COLUMNS, *([_CANDIDATES] if with_candidate_count else []))
    )


def rank(
    offers: Iterable[Offer] | pl.DataFrame | pl.LazyFrame,
    requirement: Requirement | None = None,
    job: Job | None = None,
    *,
    precision: Precision = Precision.BF16,
    limit: int | None = 50,
    now: datetime | None = None,
    mfu: float | None = None,
    scaling: float | None = None,
    efficiency: Efficiency | None = None,
    catalog: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The best ``limit`` configurations for ``job`` under ``requirement``, cheapest first.

    ``offers`` may be Offer objects or a frame from :func:`pricing.frame.offers_to_frame`
    (kept in memory by the API). One row per configuration (provider, offer_id, region,
    price basis) with its cheapest term; columns :data:`RESULT_COLUMNS`. ``mfu`` and
    ``scaling`` replace the modelled factors for every offer; ``efficiency`` replaces the
    whole default table (``pricing/efficiency.toml``). The job defaults to one hour.
    """
    frame = offers if isinstance(offers, pl.DataFrame | pl.LazyFrame) else offers_to_frame(offers)

    def run(candidate_limit: int | None) -> pl.DataFrame:
        plan = rank_plan(
            frame,
            requirement,
            job,
            precision=precision,
            limit=candidate_limit,
            now=now,
            mfu=mfu,
            scaling=scaling,
            efficiency=efficiency,
            catalog=catalog,
            with_candidate_count=True,
        )
        return plan.collect(engine=engine_for(frame))

    result = run(limit)
    if limit is not None and result.height < limit:
        # The fast path keeps the best ``limit x terms`` rows before picking each
        # configuration's best; configurations with many term variants (spot zones,
        # reservation options) can crowd it. Fewer than ``limit`` configurations means it
        # may have, unless the cut kept every qualifying row (then nothing was cut): rank
        # every qualifying row otherwise (cheap, since few rows qualify then).
        kept = result.get_column(_CANDIDATES).cast(pl.Int64).fill_null(-1).max()
        if result.height and (not isinstance(kept, int) or kept >= limit * len(RentalTerm)):
            result = run(None).head(limit)
    return result.drop(_CANDIDATES)
