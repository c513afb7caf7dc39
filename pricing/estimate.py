"""The training-run question: how long, how many GPU-hours, and what it costs.

For one GPU model and GPU count, :func:`estimate` runs the same expressions as
:func:`pricing.rank.rank` over a *reference* node: the catalog's form factor, up to 8 GPUs
per node, and a fabric of ``fabric_gbps_per_gpu`` between nodes (default 400 Gbps/GPU
InfiniBand, as in DGX-class clusters). The cost comes from the cheapest current offer that
makes exactly that many GPUs, using that offer's own topology.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from adapters.gpus import Precision, get_gpu
from adapters.schema import Fabric, Offer, RentalTerm

from .efficiency import Efficiency, default_efficiency
from .frame import OFFER_SCHEMA, with_config_id
from .job import Job
from .rank import RankOptions, costed_plan, rank
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
    total_flops: float
    peak_tflops_per_gpu: float
    mfu: float
    scaling: float
    effective_tflops: float
    gpu_hours: float
    wall_clock_hours: float
    memory_needed_gb: float
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
) -> Estimate:
    """GPU-hours, wall clock, memory and cost of training ``params`` on ``tokens``.

    Raises ValueError for an unknown GPU model, a count below 1, or a GPU without a peak
    at ``precision``.
    """
    spec = get_gpu(gpu_model)
    if spec is None:
        raise ValueError(f"unknown GPU model {gpu_model!r}")
    if count < 1:
        raise ValueError(f"GPU count must be >= 1, not {count}")
    eff = efficiency or default_efficiency()
    now = now or datetime.now(UTC)
    job = Job.training(params, tokens, gpus=count)
    options = RankOptions(
        precision=precision, limit=None, now=now, mfu=mfu, scaling=scaling, efficiency=eff
    )
    reference = costed_plan(
        _reference_frame(spec.name, count, fabric, fabric_gbps_per_gpu, now),
        None,
        job,
        options,
        require_fit=False,
    ).collect()
    if reference.is_empty():
        raise ValueError(f"{spec.name} has no published peak at {precision.value}")
    ref = reference.row(0, named=True)
    memory_needed = job.memory_needed_gb(precision, eff) or 0.0
    memory_available = None if spec.memory_gb is None else spec.memory_gb * count
    fits = (
        memory_available is not None
        and memory_needed <= memory_available * eff.memory_usable_fraction
    )
    nodes = int(ref["nodes"])
    assumptions = (
        f"{nodes} node(s) of {int(ref['gpus'])} {spec.form_factor.value.upper()} GPUs"
        + (f", {fabric.value} at {fabric_gbps_per_gpu:g} Gbps per GPU" if nodes > 1 else "")
        + f"; MFU {ref['mfu']:.2f}, scaling {ref['scaling']:.3f}"
    )
    offer, cost, reason = None, None, None
    if offers is None:
        reason = "no offers given"
    else:
        ranked = rank(offers, Requirement(gpus=(spec.name,), max_gpus=count), job, options).filter(
            pl.col("total_gpus") == count
        )
        if ranked.is_empty():
            reason = f"no current offer of {spec.name} makes exactly {count} GPUs" + (
                "" if fits else " (and the training state does not fit in their memory)"
            )
        else:
            best = ranked.row(0, named=True)
            cost = float(best["all_in_cost_usd"])
            offer = OfferCost(
                provider=best["provider"],
                offer_id=best["offer_id"],
                instance_name=best["instance_name"],
                region=best["region"],
                term=best["term"],
                nodes=best["nodes"],
                usd_per_hour=best["usd_per_hour"],
                effective_tflops=best["effective_tflops"],
                wall_clock_hours=best["wall_clock_hours"],
                billed_hours=best["billed_hours"],
                job_cost_usd=best["job_cost_usd"],
                required_extras_usd=best["required_extras_usd"],
                storage_cost_usd=best["storage_cost_usd"],
                all_in_cost_usd=cost,
                caveats=best["caveats"],
                break_even=best["break_even"],
            )
    return Estimate(
        gpu_model=spec.name,
        gpu_count=count,
        precision=precision.value,
        params=params,
        tokens=tokens,
        total_flops=job.total_flops or 0.0,
        peak_tflops_per_gpu=ref["peak_tflops"],
        mfu=ref["mfu"],
        scaling=ref["scaling"],
        effective_tflops=ref["effective_tflops"],
        gpu_hours=ref["compute_hours"] * ref["total_gpus"],
        wall_clock_hours=ref["compute_hours"],
        memory_needed_gb=memory_needed,
        memory_available_gb=memory_available,
        memory_fits=fits,
        assumptions=assumptions,
        cost_usd=cost,
        offer=offer,
        cost_reason=reason,
    )
