"""Small named polars expressions: the vocabulary :func:`pricing.rank.rank` chains.

Each function returns a ``pl.Expr`` over the columns of :func:`pricing.frame.offers_to_frame`
joined with :func:`pricing.frame.catalog_frame`, or over columns an earlier expression
added (named in its docstring). Units are in the names: hours, USD, TFLOPs.

The model, in one place:

* ``nodes = ceil(job GPUs / offer GPUs)`` (1 without a job GPU count); ``job_gpus`` the GPUs
  the job runs on, ``total_gpus = nodes x gpus`` those rented
* placement (:func:`placement_reason`): several nodes need a declared ``multi_node`` and a
  stated fabric (RDMA; Ethernet if allowed), no more nodes than ``available_count``, the
  training state's shard + activations + floor within one GPU's memory
* ``effective_tflops = job_gpus x peak_tflops x mfu x scaling``; MFU as published at the
  reference scale, ``scaling = node link x fabric`` relative to it (1.0 there)
* ``compute_hours``: the job's hours, GPU-hours / job GPUs, or FLOPs / effective FLOP/s
* ``wall_clock_hours = compute_hours / (1 - nodes x preemption rate x hours lost each)`` on
  interruptible terms
* ``billed_hours``: whole commitment periods; else the compute hours at least the minimum
  rental, rounded up to the billing increment once, plus the expected restart hours as
  expected (an expectation is not rounded), capped per month where hourly billing stops at
  a monthly price; ``billing_rounding_hours`` is what that adds to the wall clock
* ``job_cost_usd = billed_hours x usd_per_hour x nodes``
* ``all_in_cost_usd = job_cost_usd + required_extras_usd + storage_cost_usd +
  egress_cost_usd``: compute, then what the configuration cannot run without (its boot disk
  beyond the included disk, a public IPv4), the job's further disk and its egress
* ``usd_per_effective_tflop_hour = all_in_cost_usd / (effective_tflops x compute_hours)``:
  what one TFLOP-hour of useful work costs, billing waste, extras and restarts included
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, cast

import polars as pl

from gpuscout.adapters.billing_rules import assumed_providers
from gpuscout.adapters.gpus import Precision
from gpuscout.adapters.schema import (
    HOURS_PER_MONTH,
    Fabric,
    GpuFormFactor,
    GpuInterconnect,
    RentalTerm,
)

from . import readings
from .efficiency import Interruptible, Scaling
from .job import Job, JobKind
from .requirement import Requirement

__all__ = [
    "ALWAYS",
    "ASSUMED_HOURLY",
    "BILLING_STAGE_COLUMNS",
    "ETHERNET_ONLY",
    "FORM_FACTOR_NOT_STATED",
    "MEMORY_UNKNOWN",
    "MULTI_NODE_UNSTATED",
    "NEVER_FINISHES",
    "NOT_IN_CATALOG",
    "NOT_MULTI_NODE",
    "NO_FABRIC",
    "NO_FIGURE",
    "NO_FIT",
    "PLACEMENT_REASONS",
    "REASON",
    "RUNNABLE_MIN_RAM_GB_PER_GPU",
    "RUNNABLE_MIN_VCPUS_PER_GPU",
    "TERM_WORDS",
    "TOO_FEW_NODES",
    "UNIDENTIFIED",
    "all_in_cost_usd",
    "availability",
    "billed_hours",
    "billed_hours_stages",
    "billing_rounding_hours",
    "break_even_hours",
    "break_even_text",
    "caveats",
    "compute_hours",
    "effective_tflops",
    "egress_cost_usd",
    "fabric_gbps_per_gpu",
    "form_factor",
    "form_factor_stated",
    "gpu_memory_gb",
    "included_storage_gb",
    "inter_node_scaling",
    "interruptible_risk",
    "interruptions_expected",
    "intra_node_scaling",
    "job_cost_usd",
    "job_gpus",
    "job_storage_gb",
    "job_usd_per_hour",
    "memory_per_gpu_gb",
    "mfu",
    "monthly_capped_hours",
    "node_count",
    "peak_basis",
    "peak_note",
    "peak_precision",
    "peak_tflops",
    "placement_reason",
    "placement_text",
    "price_age_hours",
    "qualifies",
    "refuses_none",
    "required_extras_usd",
    "scaling",
    "storage_cost_usd",
    "total_gpu_memory_gb",
    "total_gpus",
    "unavailable",
    "usd_per_effective_tflop_hour",
    "usd_per_gpu_hour",
    "wall_clock_hours",
    "where",
]

#: Keeps the expressions a ranking builds from hashable arguments only (the precision, the
#: frozen efficiency tables, a job's GPU count or egress): each is one immutable polars
#: expression, safe to share between queries and threads, and building them in Python was
#: ~1.2 ms of every ranking's ~12 ms on 100k offers.
_kept = functools.lru_cache(maxsize=256)

SECONDS_PER_HOUR = 3600.0
HOURLY_INCREMENT_S = 3600
#: The caveat of a row billed by the whole hour because its provider publishes no increment.
ASSUMED_HOURLY = "billing increment not published by the provider: whole hours assumed"
TFLOPS = 1e12
#: Float slack when rounding up hours to whole periods (1e-9 h is 3.6 microseconds).
_EPS = 1e-9
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

_LOW_PRECISIONS = (Precision.FP8, Precision.INT8)


# --- GPUs and nodes ----------------------------------------------------------------------
@_kept
def node_count(job_gpus: int | None) -> pl.Expr:
    """Instances rented side by side: ``ceil(job_gpus / gpus)``, at least 1."""
    if job_gpus is None:
        return pl.lit(1, dtype=pl.Int64)
    per_node = pl.col("gpus")
    return (
        pl.when(per_node > 0)
        .then((pl.lit(float(job_gpus)) / per_node - _EPS).ceil().clip(lower_bound=1))
        .cast(pl.Int64)
    )


@_kept
def total_gpus() -> pl.Expr:
    """GPUs over all nodes (a slice counts as its fraction). Needs ``nodes``."""
    return pl.col("gpus") * pl.col("nodes")


@_kept
def gpu_memory_gb() -> pl.Expr:
    """Memory of one GPU (or slice): published, else the catalog's (x slice fraction)."""
    return pl.coalesce(
        pl.col("gpu_memory_gb"),
        pl.col("catalog_memory_gb") * pl.col("gpu_fraction").fill_null(1.0),
    )


@_kept
def total_gpu_memory_gb() -> pl.Expr:
    """GPU memory over all GPUs of all nodes. Needs ``nodes``."""
    return gpu_memory_gb() * pl.col("gpu_count").cast(pl.Float64) * pl.col("nodes")


# --- effective TFLOPs --------------------------------------------------------------------
@_kept
def peak_tflops(precision: Precision) -> pl.Expr:
    """Dense peak TFLOPs of one whole GPU for a job at ``precision`` (from the catalog: the
    datasheet's, derived by a rule, or a fallback's; see :func:`peak_basis`)."""
    return pl.col(f"tflops_{precision.value}")


@_kept
def peak_basis(precision: Precision) -> pl.Expr:
    """How :func:`peak_tflops` was had: ``datasheet``, ``derived`` (a rule) or ``fallback``."""
    return pl.col(f"tflops_{precision.value}_basis")


@_kept
def peak_precision(precision: Precision) -> pl.Expr:
    """The precision :func:`peak_tflops` is at (a fallback's differs from ``precision``)."""
    return pl.col(f"tflops_{precision.value}_precision")


@_kept
def peak_note(precision: Precision) -> pl.Expr:
    """What to show beside the figure ("ranked at FP16: no BF16 figure", "BF16 figure
    derived by rule ..."); null for a datasheet figure."""
    return pl.col(f"tflops_{precision.value}_note")


#: The caveat of a row whose provider names a GPU family without its form factor, before the
#: model it was ranked as: "form factor not stated: ranked as the slower variant
#: (H100-PCIE-80GB)". The text before the colon is the explorer's badge.
FORM_FACTOR_NOT_STATED = "form factor not stated: ranked as the slower variant"


@_kept
def form_factor_stated() -> pl.Expr:
    """False where the offer does not state a form factor its GPU family needs: the model is
    the family's slower variant, assumed ("form factor not stated"). Needs
    ``form_factor_varies`` (from the catalog)."""
    return pl.col("gpu_form_factor").is_not_null() | ~pl.col("form_factor_varies").fill_null(False)


@_kept
def form_factor() -> pl.Expr:
    """The offer's form factor, else its model's in the catalog; unknown (null) where the
    variant was assumed (:func:`form_factor_stated`), so a form-factor requirement does not
    take the assumption for a fact."""
    known = pl.coalesce(pl.col("gpu_form_factor"), pl.col("catalog_form_factor"))
    return pl.when(form_factor_stated()).then(known)


@_kept
def mfu(precision: Precision, low_precision_speedup: float) -> pl.Expr:
    """Model FLOPs utilisation against the peak at ``precision``. Needs ``mfu_bf16``.

    FP8/INT8 are credited ``low_precision_speedup`` x the BF16 effective throughput, not
    their 2x datasheet peak: ``mfu_bf16 x speedup x peak_bf16 / peak_fp8``, capped at the
    BF16 MFU. Other precisions use the BF16 figure (no published per-precision MFU).
    """
    base = pl.col("mfu_bf16")
    if precision not in _LOW_PRECISIONS:
        return base
    ratio = pl.col("tflops_bf16") / peak_tflops(precision)
    return pl.min_horizontal(base * low_precision_speedup * ratio, base)


def _nvlinked() -> pl.Expr:
    """GPUs joined by NVLink/NVSwitch: as published, else by the form factor."""
    form = pl.coalesce(pl.col("gpu_form_factor"), pl.col("catalog_form_factor"))
    link = pl.col("gpu_interconnect")
    return (link == GpuInterconnect.NVLINK.value) | (
        link.is_null() & form.is_in([GpuFormFactor.SXM.value, GpuFormFactor.SUPERCHIP.value])
    )


@_kept
def job_gpus(gpus: int | None) -> pl.Expr:
    """GPUs the job runs on: its own count, else every GPU of the one instance. Fewer than
    the rented ``total_gpus`` when the count is not a multiple of the node's (12 GPUs on
    two 8-GPU nodes use 12, rent 16)."""
    if gpus is None:
        return pl.col("gpus")
    return pl.lit(float(gpus), dtype=pl.Float64)


@_kept
def fabric_gbps_per_gpu() -> pl.Expr:
    """The node's cluster-fabric Gbps over its GPUs (``fabric_gbps`` is the aggregate)."""
    return pl.col("fabric_gbps") / pl.col("gpus")


def _gpus_per_node_used() -> pl.Expr:
    """GPUs of one node the job uses. Needs ``job_gpus``."""
    return pl.min_horizontal(pl.col("gpus"), pl.col("job_gpus"))


@_kept
def intra_node_scaling(s: Scaling, whole_instance: bool = False) -> pl.Expr:
    """The node-link factor, relative to the reference NVLink node (1.0). Needs ``nodes``
    and ``job_gpus``; a ``whole_instance`` job (no GPU count: it runs on every GPU of one
    instance) reads ``gpus`` alone, without the per-row minimum of the two (it is
    ``gpus``, and the minimum is evaluated four times a row).

    One GPU on one node communicates with none: 1.0. Nodes of one GPU in a multi-node job
    have no NVLink domain: what a node would keep on NVLink crosses the network card
    (``separate_nodes``), so such a job never beats NVLink nodes of the same fabric per GPU.
    GPUs without peer-to-peer (GeForce) sync through host memory, a ring of ``n`` GPUs
    keeping ``1 / (1 + r x 2(n-1)/n)`` (``pcie_no_p2p_sync_ratio``, from measurements).
    """
    n = pl.col("gpus") if whole_instance else _gpus_per_node_used()
    link = pl.col("gpu_interconnect")
    form = pl.coalesce(pl.col("gpu_form_factor"), pl.col("catalog_form_factor"))
    ring = 2 * (n - 1) / n
    return (
        pl.when((n <= 1) & (pl.col("nodes") <= 1))
        .then(pl.lit(s.single_gpu))
        .when(n <= 1)
        .then(pl.lit(s.separate_nodes))
        .when(_nvlinked())
        .then(pl.lit(s.nvlink))
        .when(link == GpuInterconnect.NVLINK_BRIDGE.value)
        .then(pl.lit(s.nvlink_bridge))
        .when(
            (link == GpuInterconnect.INFINITY_FABRIC.value)
            | (link.is_null() & (form == GpuFormFactor.OAM.value))
        )
        .then(pl.lit(s.infinity_fabric))
        .when(pl.col("pcie_no_p2p").fill_null(False))
        .then(1 / (1 + s.pcie_no_p2p_sync_ratio * ring))
        .otherwise(pl.lit(s.pcie))
    )


def _interpolated(x: pl.Expr, points: Sequence[tuple[float, float]]) -> pl.Expr:
    """Piecewise-linear in ``log2(x)`` through ``points`` (x ascending), flat beyond them;
    null ``x`` takes the lowest point's value. Monotone when the points are."""
    lx = x.log(2)
    (x0, y0), *rest = points
    expr: Any = pl.when(x.is_null() | (x <= x0)).then(pl.lit(y0))
    for (xa, ya), (xb, yb) in itertools.pairwise(points):
        la, lb = math.log2(xa), math.log2(xb)
        expr = expr.when(x <= xb).then(ya + (yb - ya) * (lx - la) / (lb - la))
    return cast(pl.Expr, expr.otherwise(pl.lit(rest[-1][1] if rest else y0)))


@_kept
def inter_node_scaling(s: Scaling) -> pl.Expr:
    """The fabric factor between nodes, relative to >= 400 Gbps/GPU RDMA (1.0): a monotone
    curve of the fabric's Gbps per GPU (``fabric_points``); plain Ethernet counts
    ``ethernet_share`` of its Gbps; an unstated speed counts as the slowest point. 1 node:
    1.0. Needs ``nodes``; a multi-node row without a fabric is never placed
    (:func:`placement_reason`)."""
    per_gpu = fabric_gbps_per_gpu()
    effective = (
        pl.when(pl.col("fabric") == Fabric.ETHERNET.value)
        .then(per_gpu * s.ethernet_share)
        .otherwise(per_gpu)
    )
    return (
        pl.when(pl.col("nodes") <= 1)
        .then(pl.lit(1.0))
        .otherwise(_interpolated(effective, s.fabric_points))
    )


@_kept
def scaling() -> pl.Expr:
    """Total multi-GPU scaling. Needs ``scaling_intra_node`` and ``scaling_inter_node``."""
    return pl.col("scaling_intra_node") * pl.col("scaling_inter_node")


@_kept
def effective_tflops() -> pl.Expr:
    """``job_gpus x peak_tflops x mfu x scaling``. Needs those four columns."""
    return pl.col("job_gpus") * pl.col("peak_tflops") * pl.col("mfu") * pl.col("scaling")


# --- placement ---------------------------------------------------------------------------
#: Why a configuration cannot run the job (the coverage note counts them by reason).
NOT_MULTI_NODE = "provider does not offer it across nodes"
MULTI_NODE_UNSTATED = "multi-node use not stated"
NO_FABRIC = "no cluster fabric stated"
#: (Worded for every surface: the API's ``allow_ethernet`` and the CLI's ``--allow-ethernet``
#: are one setting, so the text names neither.)
ETHERNET_ONLY = "plain Ethernet fabric (admitted when Ethernet between nodes is allowed)"
TOO_FEW_NODES = "needs more nodes than the provider has (available_count)"
NO_FIT = "training state does not fit in one GPU's memory"
MEMORY_UNKNOWN = "GPU memory not known"
NEVER_FINISHES = "interruptible: expected to be preempted faster than it progresses"
PLACEMENT_REASONS: tuple[str, ...] = (
    NO_FABRIC, NOT_MULTI_NODE, MULTI_NODE_UNSTATED, ETHERNET_ONLY, TOO_FEW_NODES,
    NO_FIT, MEMORY_UNKNOWN, NEVER_FINISHES,
)  # fmt: skip
#: Why an offer is not ranked at all, whatever the job (:mod:`pricing.coverage` counts
#: these beside the placement reasons).
UNIDENTIFIED = "GPU not identified"
NOT_IN_CATALOG = "GPU model not in the catalog"
NO_FIGURE = "no TFLOPs figure at this or a wider precision"
#: The dtype of a reason a row is left out: one of :data:`PLACEMENT_REASONS` (the dtype of
#: ``placement_reason``) or of those above, as a small integer, not text. Every qualifying
#: row gets its placement reason, and a job most rows refuse wrote that text into every
#: one of them (a 7B training job on 8 GPUs over 100k offers: 71k rows; a chain of text
#: literals over 100k rows took ~4 ms, of this enum ~0.5 ms, and grouping by it 7 ms
#: against 1.6); one enum for both kinds, so the coverage note's table of them is made
#: without casting one to the other (through text: ~2% of that query).
REASON = pl.Enum([*PLACEMENT_REASONS, UNIDENTIFIED, NOT_IN_CATALOG, NO_FIGURE])


def _reason(text: str) -> pl.Expr:
    return pl.lit(text, dtype=REASON)


def refuses_none(
    one_node: bool, memory_per_gpu_needed: bool, i: Interruptible, modelled: bool
) -> bool:
    """Whether :func:`placement_reason` (of ``memory_per_gpu_needed``, ``i`` and
    ``modelled``) is null on every row of a job on one node (``one_node``: ``nodes`` is 1):
    one node needs no fabric and is never more than the stock, no memory is checked, and
    on one node preemptions never outpace the work (its share lost is the rate x the hours
    a preemption loses; a row's published band, at most the top band's 20% a month, is never
    above the default rate). A caller may then plan the reason as that null."""
    if not one_node or memory_per_gpu_needed:
        return False
    return not modelled or i.preemptions_per_node_hour * i.hours_lost_per_preemption < 1


@_kept
def preemption_rate(i: Interruptible) -> pl.Expr:
    """Preemptions per node-hour of a row: where its provider publishes the type's and
    region's interruption band (``interruption_pct_per_month``, AWS Spot Instance Advisor),
    that share of capacity reclaimed per month as a rate, ``-ln(1 - share) / 730 h`` (the
    form of ``efficiency.toml``'s default); elsewhere the model's default rate."""
    pct = pl.col("interruption_pct_per_month")
    banded = -((1 - pct / 100).log()) / float(HOURS_PER_MONTH)
    return (
        pl.when(pct.is_not_null() & (pct >= 0) & (pct < 100))
        .then(banded)
        .otherwise(pl.lit(i.preemptions_per_node_hour))
    )


@_kept
def _preempted_share(i: Interruptible) -> pl.Expr:
    """Share of wall-clock time lost on an interruptible row: nodes x rate x hours lost per
    preemption (0 on other terms). Needs ``nodes`` and ``interruption_pct_per_month``."""
    on = pl.col("term") == RentalTerm.INTERRUPTIBLE.value
    share = pl.col("nodes").cast(pl.Float64) * preemption_rate(i) * i.hours_lost_per_preemption
    return pl.when(on).then(share).otherwise(pl.lit(0.0))


def placement_reason(
    req: Requirement, memory_per_gpu_needed: bool, i: Interruptible, modelled: bool = True
) -> pl.Expr:
    """Why the job cannot be placed on this row (null: it can). Needs ``nodes`` and, with
    ``memory_per_gpu_needed``, ``memory_per_gpu_gb``. Of ``req`` it reads only
    ``allow_ethernet`` (:func:`_placement_reason`)."""
    return _placement_reason(req.allow_ethernet, memory_per_gpu_needed, i, modelled)


@_kept
def _placement_reason(
    allow_ethernet: bool, memory_per_gpu_needed: bool, i: Interruptible, modelled: bool
) -> pl.Expr:
    """:func:`placement_reason`, kept per argument.

    More than one node needs a declared ``multi_node`` and a stated fabric: RDMA, or plain
    Ethernet when ``allow_ethernet``. No configuration takes more nodes than the
    provider states it has (``available_count``; 0 is sold out: one node later, never
    more). The training state, its activations and the per-GPU floor must fit one GPU's
    memory. An interruptible row on so
    many nodes that preemptions outpace the work (``modelled``: the restart model is used)
    cannot finish.
    """
    multi = pl.col("nodes") > 1
    fabric = pl.col("fabric")
    expr = (
        pl.when(multi & fabric.is_null())
        .then(_reason(NO_FABRIC))
        .when(multi & (pl.col("multi_node") == False))  # noqa: E712 (a polars comparison)
        .then(_reason(NOT_MULTI_NODE))
        .when(multi & pl.col("multi_node").is_null())
        .then(_reason(MULTI_NODE_UNSTATED))
    )
    if not allow_ethernet:
        expr = expr.when(multi & (fabric == Fabric.ETHERNET.value)).then(_reason(ETHERNET_ONLY))
    # a sold-out offer (0) still runs a one-node job later (it ranks after: unavailable()),
    # but is never multiplied
    stock = pl.col("available_count").clip(lower_bound=1)
    expr = expr.when(pl.col("nodes") > stock).then(_reason(TOO_FEW_NODES))
    if memory_per_gpu_needed:
        memory = gpu_memory_gb()
        expr = (
            expr.when(memory.is_null())
            .then(_reason(MEMORY_UNKNOWN))
            .when(pl.col("memory_per_gpu_gb") > memory)
            .then(_reason(NO_FIT))
        )
    if modelled:
        expr = expr.when(_preempted_share(i) >= 1).then(_reason(NEVER_FINISHES))
    return expr.otherwise(pl.lit(None, dtype=REASON))


@_kept
def memory_per_gpu_gb(state_gb: float | None, extra_gb: float | None) -> pl.Expr:
    """GB one GPU needs: its ZeRO-3/FSDP shard of ``state_gb`` over the job's GPUs plus
    ``extra_gb`` (activations and floor). Needs ``job_gpus``; null without a model size.

    The need is in decimal GB (bytes / 1e9), compared with the GPU's nominal size
    (:func:`gpu_memory_gb`: the "80 GB" an H100 is sold by, really GiB). That leaves the
    memory a driver and ECC keep back: an 80 GB H100 has 81559 MiB usable (85.5e9 bytes),
    a 48 GB L40S with ECC 46068 MiB (48.3e9), both above the 80e9 and 48e9 bytes the
    check admits (:func:`adapters.gpus.sold_memory_gb` has the figures)."""
    if state_gb is None or extra_gb is None:
        return pl.lit(None, dtype=pl.Float64)
    return pl.lit(state_gb) / pl.col("job_gpus") + extra_gb


@_kept
def availability() -> pl.Expr:
    """``available`` / ``not available now`` / ``not stated``: what ``available_now`` says.
    Rows not available now rank after the others (:func:`unavailable`)."""
    now = pl.col("available_now")
    return (
        pl.when(pl.col("available_count") == 0)
        .then(pl.lit("not available now"))
        .when(now.is_null())
        .then(pl.lit("not stated"))
        .when(now)
        .then(pl.lit("available"))
        .otherwise(pl.lit("not available now"))
    )


@_kept
def unavailable() -> pl.Expr:
    """1 where the provider says the offer is not available now (``available_now`` false or
    ``available_count`` 0), else 0: the first sort key, so such offers rank after every
    other."""
    not_now = pl.col("available_now") == False  # noqa: E712 (a polars comparison)
    sold_out = not_now | (pl.col("available_count") == 0)
    return sold_out.fill_null(False).cast(pl.UInt8)


@_kept
def placement_text() -> pl.Expr:
    """The topology in words: ``64 node(s) x 8 GPUs, efa 400 Gbps/GPU``. Needs ``nodes``."""
    gpus = pl.col("gpus").round(2).cast(pl.String).str.replace(r"\.0$", "")
    head = pl.format("{} node(s) x {} GPUs", pl.col("nodes"), gpus)
    per_gpu = fabric_gbps_per_gpu().round(1).cast(pl.String).str.replace(r"\.0$", "")
    fabric = pl.format("{} {} Gbps/GPU", pl.col("fabric"), per_gpu.fill_null("?"))
    return (
        pl.when(pl.col("nodes") > 1)
        .then(pl.concat_str([head, pl.lit(", "), fabric]))
        .otherwise(pl.concat_str([head, pl.lit(", one node")]))
    )


# --- hours and money ---------------------------------------------------------------------
def compute_hours(job: Job) -> pl.Expr:
    """Hours of useful work on one configuration, before restarts.

    Needs ``job_gpus`` (GPU-hour jobs) or ``effective_tflops`` (training runs).
    """
    match job.kind:
        case JobKind.HOURS:
            return pl.lit(job.hours, dtype=pl.Float64)
        case JobKind.GPU_HOURS:
            return pl.lit(job.gpu_hours, dtype=pl.Float64) / pl.col("job_gpus")
        case JobKind.TRAINING:
            flop_per_hour = pl.col("effective_tflops") * (TFLOPS * SECONDS_PER_HOUR)
            return pl.lit(job.total_flops, dtype=pl.Float64) / flop_per_hour


@_kept
def wall_clock_hours(i: Interruptible, flat_overhead: float | None = None) -> pl.Expr:
    """``compute_hours``, plus restarts on interruptible terms. Needs ``nodes``.

    Preemptions arrive at ``nodes x rate`` per hour of wall clock and each loses
    ``interval / 2 + restart`` hours, redone work included, so ``wall = compute / (1 -
    share)`` (:func:`_preempted_share`; rows at a share >= 1 are not placed). A job's
    ``flat_overhead`` replaces the model: ``compute x (1 + overhead)``.
    """
    compute = pl.col("compute_hours")
    if flat_overhead is not None:
        extra = pl.when(pl.col("term") == RentalTerm.INTERRUPTIBLE.value).then(
            pl.lit(1.0 + flat_overhead)
        )
        return compute * extra.otherwise(pl.lit(1.0))
    return compute / (1 - _preempted_share(i))


@_kept
def interruptions_expected(i: Interruptible) -> pl.Expr:
    """Expected preemptions over the job: ``nodes x rate x wall hours`` on interruptible
    rows, 0 on others. Needs ``nodes`` and ``wall_clock_hours``."""
    on = pl.col("term") == RentalTerm.INTERRUPTIBLE.value
    rate = pl.col("nodes").cast(pl.Float64) * preemption_rate(i)
    return pl.when(on).then(rate * pl.col("wall_clock_hours")).otherwise(pl.lit(0.0))


@_kept
def interruptible_risk() -> pl.Expr:
    """The caveat of an interruptible row, in words (null on other terms): the expected
    preemptions and wall clock, then the billed hours as the expectation and the rounding
    apart. Needs ``interruptions_expected``, ``wall_clock_hours``, ``compute_hours``,
    ``billed_hours`` and ``nodes``."""
    on = pl.col("term") == RentalTerm.INTERRUPTIBLE.value
    extra = (pl.col("wall_clock_hours") / pl.col("compute_hours") - 1) * 100
    band = pl.col("interruption_band")
    rate = (
        pl.when(pl.col("interruption_pct_per_month").is_not_null())
        .then(pl.format("its band {} of capacity reclaimed a month, AWS Spot Advisor", band))
        .otherwise(pl.lit("default: AWS Spot Advisor top band, none published for it"))
    )
    return pl.when(on).then(
        pl.format(
            "interruptible: ~{} preemption(s) expected on {} node(s), +{}% wall clock for lost"
            " work and restarts (spot reclaim rate: {}); billed {} h = {} h expected + {} h"
            " rounding to the billing increment; exclude interruptible terms to rank"
            " without",
            pl.col("interruptions_expected").round(2).cast(pl.String),
            pl.col("nodes").cast(pl.String),
            extra.round(2).cast(pl.String),
            rate,
            pl.col("billed_hours").round(4).cast(pl.String),
            pl.col("wall_clock_hours").round(4).cast(pl.String),
            billing_rounding_hours().round(4).cast(pl.String),
        )
    )


def _round_up(hours: pl.Expr, step_hours: pl.Expr) -> pl.Expr:
    return (hours / step_hours - _EPS).ceil() * step_hours


def _at_least(x: pl.Expr, bound: pl.Expr) -> pl.Expr:
    """``max(x, bound)`` for a ``bound`` never null: ``bound`` where ``x`` is null (or NaN),
    as ``pl.max_horizontal`` gives, at a fraction of its cost (a branch, where the
    horizontal maximum and a clip to a column took ~1-1.7 ms each on 100k rows)."""
    return pl.when(x > bound).then(x).otherwise(bound)


def _floor_hours(compute: pl.Expr) -> pl.Expr:
    """``compute`` hours, at least the minimum rental (never null)."""
    return _at_least(compute, pl.col("min_rental_hours").fill_null(0.0))


def _metered_hours(floor: pl.Expr) -> pl.Expr:
    """``floor`` hours rounded up to the billing increment (unknown: per second, as is)."""
    step = pl.col("billing_increment_s").cast(pl.Float64) / SECONDS_PER_HOUR
    return pl.when(step.is_null()).then(floor).otherwise(_round_up(floor, step))


def _restart_hours() -> pl.Expr:
    """Expected hours restarts add to the run: ``wall_clock_hours - compute_hours`` (0 on
    terms that are not interrupted). An expectation, so it is billed as it is: rounding it
    up to a whole increment would bill a 1-hour job 2 hours for a 0.03% chance of a
    preemption."""
    return (pl.col("wall_clock_hours") - pl.col("compute_hours")).clip(lower_bound=0.0)


def _billed(wall: pl.Expr, floor: pl.Expr, metered: pl.Expr) -> pl.Expr:
    """:func:`billed_hours` of ``wall`` hours, given the :func:`_floor_hours` of the compute
    hours and the :func:`_metered_hours` of that."""
    period = pl.col("commitment_hours")
    rounded = _round_up(wall, period)  # null without a period
    periods = pl.when(rounded < period).then(period).otherwise(rounded)  # at least one
    expected = metered + _restart_hours()
    capped = monthly_capped_hours(expected, pl.col("billing_cap_hours_per_month"))
    return pl.when(period.is_not_null()).then(_at_least(periods, floor)).otherwise(capped)


@_kept
def billed_hours() -> pl.Expr:
    """Hours the provider bills for ``wall_clock_hours``.

    A commitment bills whole periods (a 1-month commitment for 100 h bills 730 h). Otherwise
    the job's ``compute_hours`` take the minimum rental and round up to the billing
    increment, once (an unknown increment is taken as per-second: no rounding); the
    expected restart hours of an interruptible term are added as expected, unrounded
    (:func:`_restart_hours`); then the monthly cap applies (:func:`monthly_capped_hours`).
    :func:`billed_hours_stages` is the same in steps; :func:`billing_rounding_hours` is
    what the rounding added to the expected wall clock.
    """
    wall = pl.col("wall_clock_hours")
    floor = _floor_hours(pl.col("compute_hours"))
    return _billed(wall, floor, _metered_hours(floor))


@_kept
def billing_rounding_hours() -> pl.Expr:
    """Hours billed beyond the expected wall clock: the minimum rental, the rounding to the
    increment or the commitment period (negative where a monthly cap bills less). Needs
    ``billed_hours`` and ``wall_clock_hours``."""
    return pl.col("billed_hours") - pl.col("wall_clock_hours")


#: The intermediate columns of :func:`billed_hours_stages`, for the caller to drop.
BILLING_STAGE_COLUMNS: tuple[str, ...] = ("_floor_hours", "_metered_hours")


@_kept
def billed_hours_stages() -> tuple[dict[str, pl.Expr], ...]:
    """:func:`billed_hours` as three ``with_columns`` steps, the last adding
    ``billed_hours``: the same expressions on the same values, so the same hours, but the
    floor and the metered hours are columns the next step reads. Polars' common
    subexpression elimination does not reach into the subexpressions it takes out (the
    metered hours inside the cap's whole months, the floor inside the metered hours), so
    in one expression the floor was computed five times and the metered hours three
    (100k placed offers: 5.5 ms of CPU in one expression, 4.0 in steps). The caller drops
    :data:`BILLING_STAGE_COLUMNS` after."""
    wall = pl.col("wall_clock_hours")
    floor, metered = (pl.col(c) for c in BILLING_STAGE_COLUMNS)
    return (
        {"_floor_hours": _floor_hours(pl.col("compute_hours"))},
        {"_metered_hours": _metered_hours(floor)},
        {"billed_hours": _billed(wall, floor, metered)},
    )


def monthly_capped_hours(metered: pl.Expr, cap_hours: pl.Expr) -> pl.Expr:
    """``metered`` hours under a monthly price cap of ``cap_hours`` a calendar month.

    A provider that bills hourly "up to the monthly price" (Vultr: GPU instances up to 730 h,
    bare metal up to 672 h a month, docs.vultr.com/support/platform/billing/
    how-am-i-billed-for-my-servers) bills each month at most ``cap_hours``. The job is taken
    to start with a month (of :data:`~adapters.schema.HOURS_PER_MONTH` hours): whole months
    bill ``min(730, cap)`` each, the rest ``min(rest, cap)``. A job that straddles two
    calendar months can bill more (each month's part is capped on its own). A null cap:
    ``metered`` unchanged.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"h": [730.0, 1000.0, 100.0], "cap": [672.0, 672.0, None]})
    >>> frame.select(monthly_capped_hours(pl.col("h"), pl.col("cap")))["h"].to_list()
    [672.0, 942.0, 100.0]
    """
    month = float(HOURS_PER_MONTH)
    months = (metered / month + _EPS).floor()
    rest = (metered - months * month).clip(lower_bound=0.0)
    capped = months * pl.min_horizontal(cap_hours, pl.lit(month)) + pl.min_horizontal(
        rest, cap_hours
    )
    return pl.when(cap_hours.is_null()).then(metered).otherwise(capped)


@_kept
def job_usd_per_hour() -> pl.Expr:
    """What the job pays an hour while it runs: ``usd_per_hour`` (one instance) x
    ``nodes`` (a 512-GPU job on 8-GPU instances rents 64)."""
    return pl.col("usd_per_hour") * pl.col("nodes")


@_kept
def job_cost_usd() -> pl.Expr:
    """``billed_hours x usd_per_hour x nodes``."""
    return pl.col("billed_hours") * job_usd_per_hour()


# --- extras: disk, IPv4, egress ----------------------------------------------------------
#: [assumption] The least a GPU server is taken to run a job with: 2 vCPUs and 8 GB of RAM per
#: GPU. No provider publishes such a floor; ours sits well below the smallest GPU instances
#: the hyperscalers sell (AWS g4dn.xlarge: 4 vCPUs and 16 GiB for one T4; Azure NC4as T4 v3:
#: 4 vCPUs and 28 GiB) and above what feeds a GPU nothing (Cudo composes VMs down to 1 vCPU
#: and 1 GiB). Offers below it are flagged (:func:`caveats`), and left out by the
#: requirement's ``min_vcpus_per_gpu`` / ``min_ram_gb_per_gpu``.
RUNNABLE_MIN_VCPUS_PER_GPU = 2.0
RUNNABLE_MIN_RAM_GB_PER_GPU = 8.0


@_kept
def included_storage_gb() -> pl.Expr:
    """Disk GB the compute price includes: as stated, else ``storage_gb`` where no storage
    price is published (the disk comes with the machine), else 0 (every GB is billed)."""
    stated = pl.col("storage_included_gb")
    unpriced = pl.when(pl.col("storage_usd_per_gb_hour").is_null()).then(pl.col("storage_gb"))
    return pl.coalesce(stated, unpriced, pl.lit(0.0))


@_kept
def job_storage_gb(storage_gb: float | None) -> pl.Expr:
    """Disk GB per instance the job runs with: ``storage_gb`` (the job's, else the
    requirement's ``min_storage_gb``), else the included disk; at least ``boot_disk_min_gb``."""
    chosen = included_storage_gb() if storage_gb is None else pl.lit(float(storage_gb))
    return pl.max_horizontal(chosen, pl.col("boot_disk_min_gb").fill_null(0.0))


def _billed_gb(gb: pl.Expr) -> pl.Expr:
    """GB of ``gb`` beyond the included disk."""
    return (gb - included_storage_gb()).clip(lower_bound=0.0)


def _boot_billed_gb() -> pl.Expr:
    return _billed_gb(pl.col("boot_disk_min_gb").fill_null(0.0))


def _further_billed_gb() -> pl.Expr:
    """GB of the job's disk billed beyond the included disk and the boot disk. Needs
    ``job_storage_gb``."""
    return (_billed_gb(pl.col("job_storage_gb")) - _boot_billed_gb()).clip(lower_bound=0.0)


def _over_billed_hours(usd_per_hour: pl.Expr) -> pl.Expr:
    return usd_per_hour * pl.col("billed_hours") * pl.col("nodes")


@_kept
def required_extras_usd() -> pl.Expr:
    """What each instance cannot run without, over the billed hours: its boot disk (beyond
    the included disk at the storage price, or a hyperscaler's network boot disk priced per
    instance-hour, ``boot_disk_usd_per_hour``) and a public IPv4. Needs ``billed_hours`` and
    ``nodes``; an unpublished price counts 0 (nothing is known to be billed)."""
    disk = _boot_billed_gb() * pl.col("storage_usd_per_gb_hour").fill_null(0.0)
    per_instance = pl.col("boot_disk_usd_per_hour").fill_null(0.0)
    return _over_billed_hours(disk + per_instance + pl.col("ipv4_usd_per_hour").fill_null(0.0))


@_kept
def storage_cost_usd() -> pl.Expr:
    """The job's disk beyond the included disk and the boot disk, at the storage price over
    the billed hours. Needs ``job_storage_gb``, ``billed_hours``, ``nodes``; no published
    price counts 0 and is said in :func:`caveats`."""
    per_hour = _further_billed_gb() * pl.col("storage_usd_per_gb_hour").fill_null(0.0)
    return _over_billed_hours(per_hour)


@_kept
def egress_cost_usd(egress_gb: float | None) -> pl.Expr:
    """The job's ``egress_gb`` at the offer's egress price (no price: 0, see :func:`caveats`)."""
    return pl.lit(float(egress_gb or 0.0)) * pl.col("egress_usd_per_gb").fill_null(0.0)


@_kept
def all_in_cost_usd() -> pl.Expr:
    """Compute plus required extras plus storage plus egress: the job's whole bill."""
    return (
        pl.col("job_cost_usd")
        + pl.col("required_extras_usd")
        + pl.col("storage_cost_usd")
        + pl.col("egress_cost_usd")
    )


def _per_gpu(column: str) -> pl.Expr:
    return pl.col(column) / pl.col("gpus")


@_kept
def caveats(egress_gb: float | None) -> pl.Expr:
    """What the row's figures do not say, in words, ``; ``-joined; null when nothing: a form
    factor the provider does not state (ranked as the family's slower variant:
    :func:`form_factor_stated`), a configuration below :data:`RUNNABLE_MIN_VCPUS_PER_GPU` /
    :data:`RUNNABLE_MIN_RAM_GB_PER_GPU`, disk or egress the job needs with no published price,
    a billing increment the provider does not publish (whole hours assumed:
    :mod:`adapters.billing_rules`). Needs ``job_storage_gb``, ``gpu_form_factor`` and
    ``form_factor_varies``."""
    vcpus, ram = _per_gpu("vcpus"), _per_gpu("ram_gb")
    small = (vcpus < RUNNABLE_MIN_VCPUS_PER_GPU) | (ram < RUNNABLE_MIN_RAM_GB_PER_GPU)
    shown = [
        pl.when(x.is_not_null()).then(x.round(2).cast(pl.String)).otherwise(pl.lit("?"))
        for x in (vcpus, ram)
    ]
    notes = [
        pl.when(~form_factor_stated()).then(
            pl.format("{} ({})", pl.lit(FORM_FACTOR_NOT_STATED), pl.col("gpu_model"))
        ),
        pl.when(small.fill_null(False)).then(
            pl.format(
                "below a runnable GPU server: {} vCPU and {} GB RAM per GPU (a runnable"
                f" server has at least {RUNNABLE_MIN_VCPUS_PER_GPU:g} vCPU and"
                f" {RUNNABLE_MIN_RAM_GB_PER_GPU:g} GB RAM per GPU)",
                *shown,
            )
        ),
        pl.when(
            (_billed_gb(pl.col("job_storage_gb")) > 0) & pl.col("storage_usd_per_gb_hour").is_null()
        ).then(pl.lit("disk beyond the included not priced")),
        pl.when(
            pl.col("provider").is_in(sorted(assumed_providers()))
            & (pl.col("billing_increment_s") == HOURLY_INCREMENT_S)
            & pl.col("commitment_hours").is_null()
        ).then(pl.lit(ASSUMED_HOURLY)),
    ]
    if egress_gb:
        notes.append(
            pl.when(pl.col("egress_usd_per_gb").is_null()).then(pl.lit("egress not priced"))
        )
    joined = pl.concat_str(notes, separator="; ", ignore_nulls=True)
    return pl.when(joined != "").then(joined)


@_kept
def usd_per_gpu_hour() -> pl.Expr:
    """Whole-instance price over its GPUs (a slice: over its fraction)."""
    return pl.col("usd_per_hour") / pl.col("gpus")


@_kept
def usd_per_effective_tflop_hour() -> pl.Expr:
    """USD of the whole bill per effective TFLOP-hour of useful work: the ranking key.
    Needs ``all_in_cost_usd``."""
    return pl.col("all_in_cost_usd") / (pl.col("effective_tflops") * pl.col("compute_hours"))


def _instant(now: datetime) -> pl.Expr:
    """``now`` as a UTC literal; built from its epoch microseconds, which is much cheaper
    than ``pl.lit`` of an aware datetime (that evaluates a one-row frame per call)."""
    if now.tzinfo is None:
        return pl.lit(now)
    return pl.lit((now - _EPOCH) // _MICROSECOND, dtype=pl.Datetime("us", "UTC"))


@_kept
def price_age_hours(now: datetime) -> pl.Expr:
    """Hours since the price was fetched."""
    return (_instant(now) - pl.col("fetched_at")).dt.total_seconds() / SECONDS_PER_HOUR


# --- break-even --------------------------------------------------------------------------
@_kept
def break_even_hours() -> pl.Expr:
    """Wall-clock hours after which a commitment beats on-demand (one period's price / the
    on-demand hourly price). Needs ``on_demand_usd_per_hour``; null off commitments."""
    return pl.col("commitment_hours") * pl.col("usd_per_hour") / pl.col("on_demand_usd_per_hour")


#: A rental term in the words of :func:`break_even_text` (``commit_1y``: a code of the API
#: and the command line's ``--terms``, not a word).
TERM_WORDS: dict[str, str] = {
    RentalTerm.ON_DEMAND.value: "on-demand",
    RentalTerm.INTERRUPTIBLE.value: "interruptible",
    RentalTerm.COMMIT_1D.value: "a 1-day commitment",
    RentalTerm.COMMIT_1W.value: "a 1-week commitment",
    RentalTerm.COMMIT_1MO.value: "a 1-month commitment",
    RentalTerm.COMMIT_3MO.value: "a 3-month commitment",
    RentalTerm.COMMIT_6MO.value: "a 6-month commitment",
    RentalTerm.COMMIT_1Y.value: "a 1-year commitment",
    RentalTerm.COMMIT_3Y.value: "a 3-year commitment",
}


def _in_words(term: pl.Expr) -> pl.Expr:
    return term.cast(pl.String).replace_strict(TERM_WORDS, return_dtype=pl.String)


@_kept
def break_even_text() -> pl.Expr:
    """Why the chosen term won, in words. Needs ``term``, ``break_even_hours``,
    ``on_demand_usd_per_hour``, ``best_commitment_term`` and ``best_commitment_hours``."""
    term = _in_words(pl.col("term"))
    hours = pl.col("break_even_hours").round(0).cast(pl.Int64).cast(pl.String)
    best = pl.col("best_commitment_hours").round(0).cast(pl.Int64).cast(pl.String)
    saving = (1 - pl.col("usd_per_hour") / pl.col("on_demand_usd_per_hour")) * 100
    return (
        pl.when(pl.col("term") == RentalTerm.ON_DEMAND.value)
        .then(
            pl.when(pl.col("best_commitment_term").is_not_null())
            .then(
                pl.format(
                    "on-demand; {} would beat it after {} h",
                    _in_words(pl.col("best_commitment_term")),
                    best,
                )
            )
            .otherwise(pl.lit("on-demand; no commitment offered"))
        )
        .when(pl.col("on_demand_usd_per_hour").is_null())
        .then(pl.format("{}; no on-demand price to compare", term))
        .when(pl.col("term") == RentalTerm.INTERRUPTIBLE.value)
        .then(
            pl.format(
                "interruptible: {}% below on-demand per hour, before restarts",
                saving.round(0).cast(pl.Int64).cast(pl.String),
            )
        )
        .otherwise(pl.format("{} beats on-demand after {} h", term, hours))
    )


# --- the requirement ---------------------------------------------------------------------
def _known(cond: pl.Expr, allow_unknown: bool) -> pl.Expr:
    return cond.fill_null(allow_unknown)


def _in(column: str, values: Sequence[object]) -> pl.Expr:
    return _is_in(column, tuple(getattr(v, "value", v) for v in values))


@_kept
def _is_in(column: str, values: tuple[object, ...]) -> pl.Expr:
    """``column`` is one of ``values``: kept, since each call builds a Series of them."""
    return pl.col(column).is_in(list(values))


def _provider_in(names: Sequence[str]) -> pl.Expr:
    """The provider or the seller behind it (an aggregator's cloud, a sheet's seller) is
    one of ``names``: asking for ``coreweave`` finds CoreWeave's offers on every channel."""
    return _in("provider", names) | _in("seller", names).fill_null(False)


def _seed_conditions(req: Requirement) -> list[pl.Expr]:
    """The power, chassis and software constraints, on the frame's readings of the
    published text (:mod:`pricing.readings`; unknown where a reading is null)."""
    u = req.allow_unknown
    conds: list[pl.Expr] = []
    if req.min_psu_watts is not None:
        conds.append(_known(pl.col("psu_watts") >= req.min_psu_watts, u))
    if req.psu_redundant is not None:
        conds.append(_known(pl.col("psu_redundant") == req.psu_redundant, u))
    if req.min_chassis_u is not None:
        conds.append(_known(pl.col("chassis_u") >= req.min_chassis_u, u))
    if req.os_images:
        keys = pl.col("os_image_keys")
        matches = [readings.os_image_matches(keys, image) for image in req.os_images]
        conds.append(_known(pl.any_horizontal(matches), u))
    for column, wanted in (
        ("cuda_version_key", req.min_cuda_version),
        ("driver_version_key", req.min_driver_version),
    ):
        if wanted is not None:
            conds.append(_known(pl.col(column) >= readings.version_key(pl.lit(wanted)), u))
    if req.frameworks:
        names = [pl.select(readings.framework_key(pl.lit(f))).item() for f in req.frameworks]
        has = pl.col("framework_keys").list.eval(pl.element().is_in(names)).list.any()
        conds.append(_known(has, u))
    if req.backup_service is not None:
        conds.append(_known(pl.col("backup_service") == req.backup_service, u))
    return conds


def _gpu_conditions(req: Requirement) -> list[pl.Expr]:
    """The GPU models ``req.gpus`` names and, where a name carries a count (``H100:8``,
    ``A100:2..8``), how many GPUs an offer of that name's models has: one condition per name,
    any of them met."""
    choices = req.gpu_choices()
    if not any(choice.counted for choice in choices):
        return [_in("gpu_model", req.gpu_models())]
    per_name = []
    for choice in choices:
        cond = _in("gpu_model", [spec.name for spec in choice.models()])
        if choice.min_gpus is not None:
            cond = cond & (pl.col("gpus") >= choice.min_gpus)
        if choice.max_gpus is not None:
            cond = cond & (pl.col("gpus") <= choice.max_gpus)
        per_name.append(cond)
    return [pl.any_horizontal(per_name)]


def qualifies(req: Requirement, now: datetime) -> pl.Expr:
    """True for rows that meet every constraint of ``req`` at ``now``.

    Offer columns only, except memory per GPU and form factor, which fall back to the
    catalog (``catalog_memory_gb``, and :func:`form_factor`, which reads
    ``catalog_form_factor`` and ``form_factor_varies``).
    """
    u = req.allow_unknown
    terms = req.allowed_terms()
    # every row has one of the terms: a condition only when some are left out
    conds: list[pl.Expr] = [] if len(terms) == len(RentalTerm) else [_in("term", terms)]
    if req.gpus:
        conds += _gpu_conditions(req)
    if req.min_gpus is not None:
        conds.append(pl.col("gpus") >= req.min_gpus)
    if req.max_gpus is not None:
        conds.append(pl.col("gpus") <= req.max_gpus)
    if req.min_gpu_memory_gb is not None:
        conds.append(_known(gpu_memory_gb() >= req.min_gpu_memory_gb, u))
    if req.min_total_gpu_memory_gb is not None:
        total = gpu_memory_gb() * pl.col("gpu_count").cast(pl.Float64)
        conds.append(_known(total >= req.min_total_gpu_memory_gb, u))
    if req.form_factors:
        conds.append(_known(form_factor().is_in([f.value for f in req.form_factors]), u))
    if req.nvlink is not None:
        linked = _nvlinked() | (pl.col("gpu_interconnect") == GpuInterconnect.NVLINK_BRIDGE.value)
        conds.append(_known(linked == req.nvlink, u))
    if req.min_cpu_cores is not None:
        cores = pl.coalesce(pl.col("cpu_cores"), pl.col("vcpus") / 2)
        conds.append(_known(cores >= req.min_cpu_cores, u))
    if req.min_cpu_sockets is not None:
        conds.append(_known(pl.col("cpu_sockets") >= req.min_cpu_sockets, u))
    if req.server_cpu is not None:
        conds.append(_known(pl.col("cpu_server_class") == req.server_cpu, u))
    if req.min_vcpus is not None:
        conds.append(_known(pl.col("vcpus") >= req.min_vcpus, u))
    if req.min_vcpus_per_gpu is not None:
        conds.append(_known(_per_gpu("vcpus") >= req.min_vcpus_per_gpu, u))
    if req.min_ram_gb is not None:
        conds.append(_known(pl.col("ram_gb") >= req.min_ram_gb, u))
    if req.min_ram_gb_per_gpu is not None:
        conds.append(_known(_per_gpu("ram_gb") >= req.min_ram_gb_per_gpu, u))
    if req.ram_ecc is not None:
        conds.append(_known(pl.col("ram_ecc") == req.ram_ecc, u))
    if req.min_storage_gb is not None:
        conds.append(_known(pl.col("storage_gb") >= req.min_storage_gb, u))
    if req.storage_types:
        conds.append(_known(_in("storage_type", req.storage_types), u))
    if req.min_disk_bandwidth_mbps is not None:
        conds.append(_known(pl.col("disk_bandwidth_mbps") >= req.min_disk_bandwidth_mbps, u))
    if req.min_bandwidth_down_mbps is not None:
        down = pl.col("public_bandwidth_down_mbps") >= req.min_bandwidth_down_mbps
        conds.append(_known(down, u))
    if req.min_bandwidth_up_mbps is not None:
        conds.append(_known(pl.col("public_bandwidth_up_mbps") >= req.min_bandwidth_up_mbps, u))
    if req.fabrics:
        conds.append(_known(_in("fabric", req.fabrics), u))
    if req.min_fabric_gbps is not None:
        conds.append(_known(pl.col("fabric_gbps") >= req.min_fabric_gbps, u))
    if req.multi_node is not None:
        conds.append(_known(pl.col("multi_node") == req.multi_node, u))
    if req.cooling:
        conds.append(_known(_in("cooling", req.cooling), u))
    conds += _seed_conditions(req)
    if req.regions:
        region = pl.col("region").cast(pl.String).str.to_lowercase()
        starts = [region.str.starts_with(r.lower()) for r in req.regions]
        conds.append(_known(pl.any_horizontal(starts), u))
    if req.countries:
        conds.append(_known(_in("country", req.countries), u))
    if req.providers:
        conds.append(_provider_in(req.providers))
    if req.exclude_providers:
        conds.append(~_provider_in(req.exclude_providers))
    if req.max_usd_per_hour is not None:
        conds.append(pl.col("usd_per_hour") <= req.max_usd_per_hour)
    if req.max_usd_per_gpu_hour is not None:
        conds.append(_known(usd_per_gpu_hour() <= req.max_usd_per_gpu_hour, u))
    if req.min_reliability is not None:
        conds.append(_known(pl.col("reliability") >= req.min_reliability, u))
    if req.support_tiers:
        tiers = [t.lower() for t in req.support_tiers]
        conds.append(_known(pl.col("support_tier").str.to_lowercase().is_in(tiers), u))
    if req.min_sla_uptime_pct is not None:
        conds.append(_known(pl.col("sla_uptime_pct") >= req.min_sla_uptime_pct, u))
    if req.verified_only:
        conds.append(_known(pl.col("verified"), u))
    if req.datacenter_only:
        conds.append(_known(pl.col("datacenter"), u))
    if req.available_now:
        conds.append(_known(pl.col("available_now"), u))
    if req.min_availability is not None:
        conds.append(_known(pl.col("in_stock_7d") >= req.min_availability, u))
    if req.max_price_age_hours is not None:
        conds.append(price_age_hours(now) <= req.max_price_age_hours)
    # A chain of ``&`` (not all_horizontal) lets polars push each offer-only condition
    # below the catalog join.
    return functools.reduce(operator.and_, conds) if conds else ALWAYS


#: What :func:`qualifies` gives for a requirement without a constraint: the literal True,
#: this very expression, so that :func:`where` plans no filter for it and a caller can
#: tell a requirement that filters nothing.
ALWAYS: Final = pl.lit(True)


def where(frame: pl.LazyFrame, predicate: pl.Expr) -> pl.LazyFrame:
    """``frame`` filtered by ``predicate``, or as it is for :data:`ALWAYS` (see there)."""
    return frame if predicate is ALWAYS else frame.filter(predicate)
