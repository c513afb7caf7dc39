"""The training-run question: how long, how many GPU-hours, and what it costs.

For one GPU model and GPU count, :func:`estimate` ranks the current offers of that model
for the job exactly as ``offers`` does (the same placement: ``ceil(count / gpus)`` nodes, a
declared multi-node capability and fabric, stock, memory per GPU; the same scaling and
pricing), and describes the best one: its wall clock, GPU-hours (``wall x count``), memory
and cost are all of that one topology. Without offers, or when none can run the job, the
figures are those of a *reference* topology (the catalog's form factor, up to 8 GPUs per
node), and the answer says so.

The fabric between nodes is a "what if": ``fabric`` and ``fabric_gbps_per_gpu``, when given,
replace what every offer states (the offers are ranked as if they ran on that fabric), and
make the reference's; a field neither the caller nor the offer states is the reference
default, 400 Gbps/GPU InfiniBand (the scale the MFU figures were measured at). Plain
Ethernet given by the caller is admitted between nodes (it was asked for); an offer's own
Ethernet is not, as in ``offers``. The answer names the fabric it assumed and where each
half came from (:class:`FabricSource`).

FLOPs are ``6 x params x tokens``, plus ``12 x layers x hidden x context`` per token when the
model's shape or context is given (PaLM, Chowdhery et al. 2022, appendix B). A mixture of
experts gives its ``active_params`` too: its FLOPs count those, its memory all ``params``, and
its MFU is the dense one x ``moe_factor`` (``efficiency.toml``). The answer names the source
of every factor (``factor_sources``) and warns of a run longer than a year (``warnings``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from gpuscout.adapters.gpus import Precision
from gpuscout.adapters.schema import Fabric, RentalTerm

from .coverage import Unrankable, left_out_note
from .efficiency import Efficiency, default_efficiency
from .expressions import ETHERNET_ONLY, NO_FABRIC
from .frame import OFFER_SCHEMA, with_config_id
from .job import Job
from .names import one_gpu_model
from .offer_facts import with_offer_facts
from .rank import RankOptions, costed_plan, placement_plan, rank
from .requirement import Requirement

__all__ = [
    "REFERENCE_FABRIC",
    "REFERENCE_FABRIC_GBPS_PER_GPU",
    "REFERENCE_GPUS_PER_NODE",
    "Estimate",
    "EstimateInputError",
    "FabricSource",
    "OfferCost",
    "estimate",
]

#: GPUs per node of the reference topology (HGX/DGX-class servers).
REFERENCE_GPUS_PER_NODE = 8
#: The fabric between nodes the MFU figures were measured at (``efficiency.toml`` [scaling]):
#: what an estimate assumes where neither the caller nor the offer says otherwise.
REFERENCE_FABRIC = Fabric.INFINIBAND
REFERENCE_FABRIC_GBPS_PER_GPU = 400.0


class FabricSource(StrEnum):
    """Where an assumed fabric (or its speed) came from."""

    USER = "user"
    OFFER = "offer"
    DEFAULT = "default"


#: How the topology text says each source.
_SOURCE_WORDS = {
    FabricSource.USER: "as given",
    FabricSource.OFFER: "as the offer states",
    FabricSource.DEFAULT: "the reference default",
}


class EstimateInputError(ValueError):
    """An input :func:`estimate` cannot answer for; ``field`` names it (``gpu_model``,
    ``job_gpus``, ``precision``, ``fabric``), so each surface can name its own option."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class OfferCost(BaseModel):
    """The cheapest qualifying offer for the run."""

    model_config = ConfigDict(frozen=True)

    provider: str
    offer_id: str
    instance_name: str | None
    region: str | None
    term: str
    nodes: int
    usd_per_hour: float
    effective_tflops: float
    wall_clock_hours: float
    billed_hours: float
    job_cost_usd: float = Field(description="compute: billed hours x price x nodes")
    required_extras_usd: float = Field(description="boot disk beyond the included, public IPv4")
    storage_cost_usd: float = Field(description="the run's further disk")
    all_in_cost_usd: float = Field(description="the whole bill: compute + extras + disk")
    caveats: str | None = Field(description="what the cost does not say; null: nothing")
    break_even: str | None


class Estimate(BaseModel):
    """Answer to "how much for params x tokens on count GPUs of this model"."""

    model_config = ConfigDict(frozen=True)

    gpu_model: str
    gpu_count: int
    precision: str
    params: float
    active_params: float | None = Field(
        default=None, description="a mixture of experts' active parameters (FLOPs); null: dense"
    )
    tokens: float
    flops_per_token: float
    flops_formula: str
    total_flops: float
    basis: str = Field(description="offer: the cheapest offer that can run it | reference")
    topology: str
    nodes: int
    gpus_per_node: float
    rented_gpus: float
    peak_tflops_per_gpu: float
    mfu: float
    scaling: float
    effective_tflops: float
    effective_tflops_per_gpu: float
    gpu_hours: float = Field(description="wall_clock_hours x gpu_count")
    wall_clock_hours: float = Field(
        description="total_flops over effective_tflops: the run on this topology, before"
        " an interruptible term's restarts (the offer's own wall clock adds them)"
    )
    memory_needed_gb: float = Field(description="training state over the whole job")
    memory_per_gpu_gb: float = Field(description="shard + activations + floor, per GPU")
    gpu_memory_gb: float | None
    memory_available_gb: float | None
    memory_fits: bool
    fabric: str | None = Field(
        description="the fabric assumed between nodes; null on one node (none is crossed)"
    )
    fabric_gbps_per_gpu: float | None = Field(
        description="its bandwidth per GPU, Gbit/s; null on one node, or when the offer's"
        " fabric states none (then scored as the slowest point of the curve)"
    )
    fabric_source: FabricSource | None = Field(
        description="where the fabric came from: user (your option) | offer | default"
    )
    fabric_gbps_source: FabricSource | None = Field(
        description="where its bandwidth came from: user | offer | default"
    )
    assumptions: str
    factor_sources: dict[str, str] = Field(
        description="where each factor of the estimate comes from (MFU, precision, MoE, FLOPs)"
    )
    warnings: list[str] = Field(description="what makes the run implausible as planned")
    cost_usd: float | None = Field(description="the cheapest offer's all-in cost")
    offer: OfferCost | None
    cost_reason: str | None


def _reference_frame(
    gpu_model: str, count: int, fabric: Fabric, fabric_gbps_per_gpu: float, now: datetime
) -> pl.DataFrame:
    per_node = min(count, REFERENCE_GPUS_PER_NODE)
    row: dict[str, object] = dict.fromkeys(OFFER_SCHEMA)
    row.update(
        provider="reference",
        offer_id="reference",
        fetched_at=now,
        gpu_model=gpu_model,
        gpu_count=per_node,
        gpus=float(per_node),
        fabric=fabric.value,
        fabric_gbps=fabric_gbps_per_gpu * per_node,
        multi_node=True,
        price_amount=None,
        term=RentalTerm.ON_DEMAND.value,
        usd_per_hour=0.0,
    )
    return with_offer_facts(with_config_id(pl.DataFrame([row], schema=OFFER_SCHEMA)))


def _on_fabric(
    frame: pl.DataFrame, fabric: Fabric | None, fabric_gbps_per_gpu: float | None
) -> pl.DataFrame:
    """``frame`` with every offer on the fabric the caller gave: each given field replaces
    the offer's, one neither states is the reference default. Unchanged when neither is
    given (the offers as they state themselves)."""
    if fabric is None and fabric_gbps_per_gpu is None:
        return frame
    kind = pl.lit((fabric or REFERENCE_FABRIC).value)
    per_gpu = pl.lit(fabric_gbps_per_gpu or REFERENCE_FABRIC_GBPS_PER_GPU)
    return frame.with_columns(
        fabric=kind if fabric is not None else pl.coalesce(pl.col("fabric"), kind),
        fabric_gbps=per_gpu * pl.col("gpus")
        if fabric_gbps_per_gpu is not None
        else pl.coalesce(pl.col("fabric_gbps"), per_gpu * pl.col("gpus")),
    )


def _source(given: object, stated: object) -> FabricSource:
    if given is not None:
        return FabricSource.USER
    return FabricSource.OFFER if stated is not None else FabricSource.DEFAULT


def _fabric_text(
    fabric: str, per_gpu: float | None, kind: FabricSource, speed: FabricSource, slowest: float
) -> str:
    """``ethernet at 25 Gbps per GPU (as given)``; each half's source when they differ."""
    speed_text = (
        f"{per_gpu:g} Gbps per GPU"
        if per_gpu is not None
        else f"an unstated speed (scored as the slowest, {slowest:g} Gbps per GPU)"
    )
    if kind is speed:
        return f"{fabric} at {speed_text} ({_SOURCE_WORDS[kind]})"
    return f"{fabric} ({_SOURCE_WORDS[kind]}) at {speed_text} ({_SOURCE_WORDS[speed]})"


def _unnamed(setting: str) -> None:
    """No name for a job setting in an estimate's reason: the reason is one text for the
    CLI and the API (which name the GPU count differently) and an estimate takes no
    ``bytes_per_param``, so a remedy is told in words only."""
    return None


def estimate(
    gpu_model: str,
    count: int,
    params: float,
    tokens: float,
    *,
    offers: pl.DataFrame | None = None,
    precision: Precision = Precision.BF16,
    fabric: Fabric | None = None,
    fabric_gbps_per_gpu: float | None = None,
    mfu: float | None = None,
    scaling: float | None = None,
    efficiency: Efficiency | None = None,
    now: datetime | None = None,
    layers: int | None = None,
    hidden_size: int | None = None,
    context_tokens: int | None = None,
    unrankable: Unrankable | None = None,
    active_params: float | None = None,
) -> Estimate:
    """GPU-hours, wall clock, memory and cost of training ``params`` on ``tokens``.

    ``gpu_model`` is a canonical name or one that means a single model (``"H100 SXM"``,
    :func:`pricing.names.one_gpu_model`). ``fabric`` and ``fabric_gbps_per_gpu`` (None: not
    given) replace what the offers state (see the module's docstring); ``offers`` is a
    frame of :func:`pricing.frame.offers_to_frame` or its like. ``unrankable``:
    the offers' :class:`~pricing.coverage.Unrankable`, when the caller keeps it (the API,
    once per snapshot), for the note on why no offer can run the job (found otherwise,
    ~100 ms for 100k offers: most of an estimate no offer can run).

    Raises :class:`EstimateInputError` (a ValueError) for an unknown GPU model or one naming
    several (a family), a count below 1, a GPU without a peak at ``precision``, or a
    non-positive fabric bandwidth.
    """
    try:
        spec = one_gpu_model(gpu_model)
    except ValueError as exc:
        raise EstimateInputError("gpu_model", str(exc)) from None
    if count < 1:
        raise EstimateInputError("job_gpus", f"GPU count must be >= 1, not {count}")
    if spec.figure(precision) is None:  # what the ranking's catalog drops (rank.py)
        has = [p.value for p in Precision if spec.figure(p) is not None]
        raise EstimateInputError(
            "precision",
            f"{spec.name} has no published peak at {precision.value}"
            + (f" (it has {', '.join(has)})" if has else ""),
        )
    if fabric_gbps_per_gpu is not None and not fabric_gbps_per_gpu > 0:
        raise EstimateInputError(
            "fabric_gbps_per_gpu", f"fabric bandwidth must be > 0 Gbps, not {fabric_gbps_per_gpu}"
        )
    eff = efficiency or default_efficiency()
    now = now or datetime.now(UTC)
    job = Job(
        params=params,
        tokens=tokens,
        active_params=active_params,
        gpus=count,
        layers=layers,
        hidden_size=hidden_size,
        context_tokens=context_tokens,
    )
    # a mixture of experts runs at the dense MFU x its factor (the all-to-all between experts)
    # a dense model at the MFU its size reached at its published scale
    ranked_eff = eff.for_moe() if job.is_moe else eff.for_model_size(params)
    options = RankOptions(
        precision=precision, limit=None, now=now, mfu=mfu, scaling=scaling, efficiency=ranked_eff
    )
    # the caller's Ethernet is what they asked about: it may join nodes
    allow_ethernet = fabric is Fabric.ETHERNET
    best: dict[str, object] | None = None
    stated: dict[str, object] = {}
    reason: str | None = "no offers given"
    if offers is not None:
        frame = _on_fabric(offers, fabric, fabric_gbps_per_gpu)
        requirement = Requirement(gpus=(spec.name,), allow_ethernet=allow_ethernet)
        ranked = rank(frame, requirement, job, options)
        if ranked.is_empty():
            why = left_out_note(
                frame, requirement, now, precision=precision, job=job, name=_unnamed,
                unrankable=unrankable,
            )  # fmt: skip
            gpus = "1 GPU" if count == 1 else f"{count} GPUs"
            reason = f"no current offer of {spec.name} can run {gpus} of this job" + (
                f" ({why})" if why else ""
            )
        else:
            best, reason = ranked.row(0, named=True), None
            # what the offer itself states (the ranked row carries the caller's fabric)
            stated = offers.filter(pl.col("config_id") == best["config_id"]).row(0, named=True)
    if best is None:
        reference_frame = _reference_frame(
            spec.name,
            count,
            fabric or REFERENCE_FABRIC,
            fabric_gbps_per_gpu or REFERENCE_FABRIC_GBPS_PER_GPU,
            now,
        )
        reference_requirement = Requirement(allow_ethernet=allow_ethernet)
        reference = costed_plan(
            reference_frame, reference_requirement, job, options, require_fit=False
        ).collect()
        if reference.is_empty():  # not for want of a peak (checked above): say why
            placed = placement_plan(reference_frame, reference_requirement, job, options)
            reasons: list[str] = (
                placed.select("placement_reason").collect().to_series().drop_nulls().to_list()
            )
            raise EstimateInputError(
                "fabric" if reasons and reasons[0] in (NO_FABRIC, ETHERNET_ONLY) else "job_gpus",
                f"the reference topology of {count} {spec.name} cannot run the job"
                + (f": {reasons[0]}" if reasons else ""),
            )
        row = reference.row(0, named=True)
    else:
        row = best
    memory_needed = job.memory_needed_gb(precision, eff) or 0.0
    per_gpu = job.memory_per_gpu_gb(count, precision, eff) or 0.0
    gpu_memory = row.get("gpu_memory_gb") if best is not None else spec.memory_gb
    gpu_memory = spec.memory_gb if gpu_memory is None else float(str(gpu_memory))
    fits = gpu_memory is not None and per_gpu <= gpu_memory
    nodes = int(str(row["nodes"]))
    per_node = float(str(row["gpus"]))
    # the run at the effective rate, before restarts: an interruptible offer's own wall
    # clock (the offer's, below) adds its expected lost work, which is the term's, not the
    # topology's
    wall = float(str(row["compute_hours"]))
    offer_wall = float(str(row["wall_clock_hours"]))
    effective = float(str(row["effective_tflops"]))
    where = (
        f"{best['provider']} {best['instance_name'] or best['offer_id']} ({best['term']})"
        if best is not None
        else f"reference {spec.form_factor.value.upper()} nodes"
    )
    assumed_fabric: str | None = None
    assumed_gbps: float | None = None
    fabric_source: FabricSource | None = None
    gbps_source: FabricSource | None = None
    if nodes > 1:
        assumed_fabric = str(row["fabric"])
        gbps = row["fabric_gbps"]
        assumed_gbps = None if gbps is None else float(str(gbps)) / per_node
        fabric_source = _source(fabric, stated.get("fabric"))
        # no speed at all: the offer's fabric states none (a default would have filled it)
        gbps_source = (
            FabricSource.OFFER
            if assumed_gbps is None
            else _source(fabric_gbps_per_gpu, stated.get("fabric_gbps"))
        )
        slowest = eff.scaling.fabric_points[0][0]
        fabric_text = ", " + _fabric_text(
            assumed_fabric, assumed_gbps, fabric_source, gbps_source, slowest
        )
    else:
        fabric_text = ", one node (no fabric between nodes)"
    topology = f"{nodes} node(s) x {per_node:g} GPUs, {count} used: {where}{fabric_text}"
    formula = "6ND" if not job.counts_attention else "6ND + 12 x layers x hidden x context"
    assumptions = (
        f"{topology}; MFU {float(str(row['mfu'])):.2f} (published at the reference scale),"
        f" scaling {float(str(row['scaling'])):.3f}; FLOPs {formula}"
    )
    offer = None
    if best is not None:
        offer = OfferCost(
            provider=str(best["provider"]),
            offer_id=str(best["offer_id"]),
            instance_name=None if best["instance_name"] is None else str(best["instance_name"]),
            region=None if best["region"] is None else str(best["region"]),
            term=str(best["term"]),
            nodes=nodes,
            usd_per_hour=float(str(best["usd_per_hour"])),
            effective_tflops=effective,
            wall_clock_hours=offer_wall,
            billed_hours=float(str(best["billed_hours"])),
            job_cost_usd=float(str(best["job_cost_usd"])),
            required_extras_usd=float(str(best["required_extras_usd"])),
            storage_cost_usd=float(str(best["storage_cost_usd"])),
            all_in_cost_usd=float(str(best["all_in_cost_usd"])),
            caveats=None if best["caveats"] is None else str(best["caveats"]),
            break_even=None if best["break_even"] is None else str(best["break_even"]),
        )
    sources = _factor_sources(spec.family, precision, job, ranked_eff, mfu, formula)
    return Estimate(
        gpu_model=spec.name,
        gpu_count=count,
        precision=precision.value,
        params=params,
        active_params=active_params,
        tokens=tokens,
        flops_per_token=job.flops_per_token(eff) or 0.0,
        flops_formula=formula,
        total_flops=job.total_flops or 0.0,
        basis="offer" if best is not None else "reference",
        topology=topology,
        nodes=nodes,
        gpus_per_node=per_node,
        rented_gpus=nodes * per_node,
        peak_tflops_per_gpu=float(str(row["peak_tflops"])),
        mfu=float(str(row["mfu"])),
        scaling=float(str(row["scaling"])),
        effective_tflops=effective,
        effective_tflops_per_gpu=effective / count,
        gpu_hours=wall * count,
        wall_clock_hours=wall,
        memory_needed_gb=memory_needed,
        memory_per_gpu_gb=per_gpu,
        gpu_memory_gb=gpu_memory,
        memory_available_gb=None if gpu_memory is None else gpu_memory * count,
        memory_fits=fits,
        fabric=assumed_fabric,
        fabric_gbps_per_gpu=assumed_gbps,
        fabric_source=fabric_source,
        fabric_gbps_source=gbps_source,
        assumptions=assumptions,
        factor_sources=sources,
        warnings=_warnings(wall, count),
        cost_usd=None if offer is None else offer.all_in_cost_usd,
        offer=offer,
        cost_reason=reason,
    )


#: Hours in a year: a run longer than this is warned of.
HOURS_PER_YEAR = 8760.0
_LOW_PRECISIONS = (Precision.FP8, Precision.INT8)


def _factor_sources(
    family: str | None,
    precision: Precision,
    job: Job,
    eff: Efficiency,
    mfu: float | None,
    formula: str,
) -> dict[str, str]:
    """Where each factor of the estimate comes from, in words (``efficiency.toml`` cites
    /work/shared/reference's notes by key)."""
    sources = {
        "mfu": "as given" if mfu is not None else eff.mfu_source(family),
        "flops": f"{formula} (Kaplan et al. 2020; attention: PaLM, Chowdhery et al. 2022,"
        " appendix B)",
    }
    if precision in _LOW_PRECISIONS and mfu is None:
        sources["precision"] = (
            f"{precision.value}: {eff.low_precision_speedup:g} x the BF16 throughput"
            f" ({eff.low_precision_source})"
        )
    if job.is_moe:
        sources["moe"] = (
            f"mixture of experts: FLOPs of the {job.active_params:g} active parameters, memory"
            f" of all {job.params:g}; MFU x {eff.moe_mfu_factor:g} ({eff.moe_source})"
        )
    return sources


def _warnings(wall_clock_hours: float, count: int) -> list[str]:
    """A run longer than a year is a plan no one runs: say so, with what would shorten it."""
    if wall_clock_hours <= HOURS_PER_YEAR:
        return []
    years = wall_clock_hours / HOURS_PER_YEAR
    return [
        f"the run takes {years:.1f} years of wall clock on {count} GPU(s): more GPUs, fewer"
        " tokens or a smaller model would finish it within a year"
    ]
