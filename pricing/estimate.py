"""The training-run question: how long, how many GPU-hours, and what it costs.

For one GPU model and GPU count, :func:`estimate` ranks the current offers of that model
for the job exactly as ``offers`` does (the same placement: ``ceil(count / gpus)`` nodes, a
declared multi-node capability and fabric, stock, memory per GPU; the same scaling and
pricing), and describes the best one: its wall clock, GPU-hours (``wall x count``), memory
and cost are all of that one topology. Without offers, or when none can run the job, the
figures are those of a *reference* topology (the catalog's form factor, up to 8 GPUs per
node, ``fabric_gbps_per_gpu`` of ``fabric`` between nodes, by default 400 Gbps/GPU
InfiniBand: the scale the MFU figures were measured at), and the answer says so.

FLOPs are ``6 x params x tokens``, plus ``12 x layers x hidden x context`` per token when the
model's shape or context is given (PaLM, Chowdhery et al. 2022, appendix B).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from adapters.gpus import Precision
from adapters.schema import Fabric, Offer, RentalTerm

from .coverage import left_out_note
from .efficiency import Efficiency, default_efficiency
from .frame import OFFER_SCHEMA, with_config_id
from .job import Job
from .names import one_gpu_model
from .rank import RankOptions, _as_frame, costed_plan, rank
from .requirement import Requirement

__all__ = ["REFERENCE_GPUS_PER_NODE", "Estimate", "OfferCost", "estimate"]

#: GPUs per node of the reference topology (HGX/DGX-class servers).
REFERENCE_GPUS_PER_NODE = 8


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
    wall_clock_hours: float
    memory_needed_gb: float = Field(description="training state over the whole job")
    memory_per_gpu_gb: float = Field(description="shard + activations + floor, per GPU")
    gpu_memory_gb: float | None
    memory_available_gb: float | None
    memory_fits: bool
    assumptions: str
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
    return with_config_id(pl.DataFrame([row], schema=OFFER_SCHEMA))


def estimate(
    gpu_model: str,
    count: int,
    params: float,
    tokens: float,
    *,
    offers: Iterable[Offer] | pl.DataFrame | None = None,
    precision: Precision = Precision.BF16,
    fabric: Fabric = Fabric.INFINIBAND,
    fabric_gbps_per_gpu: float = 400.0,
    mfu: float | None = None,
    scaling: float | None = None,
    efficiency: Efficiency | None = None,
    now: datetime | None = None,
    layers: int | None = None,
    hidden_size: int | None = None,
    context_tokens: int | None = None,
) -> Estimate:
    """GPU-hours, wall clock, memory and cost of training ``params`` on ``tokens``.

    ``gpu_model`` is a canonical name or one that means a single model (``"H100 SXM"``,
    :func:`pricing.names.one_gpu_model`). Raises ValueError for an unknown GPU model, one
    naming several (a family), a count below 1, or a GPU without a peak at ``precision``.
    """
    spec = one_gpu_model(gpu_model)
    if count < 1:
        raise ValueError(f"GPU count must be >= 1, not {count}")
    eff = efficiency or default_efficiency()
    now = now or datetime.now(UTC)
    job = Job(
        params=params,
        tokens=tokens,
        gpus=count,
        layers=layers,
        hidden_size=hidden_size,
        context_tokens=context_tokens,
    )
    options = RankOptions(
        precision=precision, limit=None, now=now, mfu=mfu, scaling=scaling, efficiency=eff
    )
    best: dict[str, object] | None = None
    reason: str | None = "no offers given"
    if offers is not None:
        requirement = Requirement(gpus=(spec.name,))
        ranked = rank(offers, requirement, job, options)
        if ranked.is_empty():
            why = left_out_note(_as_frame(offers), requirement, now, precision=precision, job=job)
            reason = f"no current offer of {spec.name} can run {count} GPUs of this job" + (
                f" ({why})" if why else ""
            )
        else:
            best, reason = ranked.row(0, named=True), None
    if best is None:
        reference = costed_plan(
            _reference_frame(spec.name, count, fabric, fabric_gbps_per_gpu, now),
            None,
            job,
            options,
            require_fit=False,
        ).collect()
        if reference.is_empty():
            raise ValueError(f"{spec.name} has no published peak at {precision.value}")
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
    wall = float(str(row["wall_clock_hours"]))
    effective = float(str(row["effective_tflops"]))
    where = (
        f"{best['provider']} {best['instance_name'] or best['offer_id']} ({best['term']})"
        if best is not None
        else f"reference {spec.form_factor.value.upper()} nodes"
    )
    fabric_text = (
        f", {row['fabric']} at {float(str(row['fabric_gbps'])) / per_node:g} Gbps per GPU"
        if nodes > 1 and row["fabric_gbps"] is not None
        else ""
    )
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
            wall_clock_hours=wall,
            billed_hours=float(str(best["billed_hours"])),
            job_cost_usd=float(str(best["job_cost_usd"])),
            required_extras_usd=float(str(best["required_extras_usd"])),
            storage_cost_usd=float(str(best["storage_cost_usd"])),
            all_in_cost_usd=float(str(best["all_in_cost_usd"])),
            caveats=None if best["caveats"] is None else str(best["caveats"]),
            break_even=None if best["break_even"] is None else str(best["break_even"]),
        )
    return Estimate(
        gpu_model=spec.name,
        gpu_count=count,
        precision=precision.value,
        params=params,
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
        assumptions=assumptions,
        cost_usd=None if offer is None else offer.all_in_cost_usd,
        offer=offer,
        cost_reason=reason,
    )
