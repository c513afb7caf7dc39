"""Rank offers by USD per million output tokens for serving a model.

What the renter asks is a :class:`ServeRequest` (the model, precision, scenario, request
shape, optional daily demand): the API's query parameters and the CLI's options are its
fields. :func:`rank_serving` costs every configuration the requirement admits with the
training ranking's own term and billing logic (:func:`pricing.rank.rank` for a job of
``hours`` of service: each configuration's cheapest term for that duration, all-in), then
plans the serving on each (:func:`pricing.serving.plan_serving`) and divides:

    usd_per_service_hour = all_in_cost_usd / compute_hours
    usd_per_m_tokens     = usd_per_service_hour / output tokens per hour x 1e6

``usd_per_m_input_tokens`` charges prompts their share of GPU time (the roofline's prefill
share). With ``tokens_per_day``, an offer is rented as many times as that demand needs and
``usd_per_m_tokens_at_demand`` pays for the idle capacity too. An interruptible term
carries its restart risk, and for a live service (``server``, ``single_stream``) is ranked
after every other term; offers that cannot serve are counted by reason, never ranked.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from datetime import datetime
from typing import Annotated, Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpuscout.adapters.gpus import Precision

from .job import Job
from .rank import RankOptions, rank
from .requirement import Requirement
from .serving import (
    Refusal,
    RefusalReason,
    Scenario,
    ServePrecision,
    ServingPlan,
    Workload,
    default_workload,
    plan_serving,
)
from .serving_models import ServingModel, serving_model

__all__ = [
    "DEFAULT_SERVICE_HOURS",
    "SERVE_COLUMNS",
    "ServeRanking",
    "ServeRequest",
    "rank_serving",
]

#: Hours of service when the caller gives none: a month of 24/7 serving (730 h).
DEFAULT_SERVICE_HOURS = 730.0
_SECONDS_PER_HOUR = 3600
_HOURS_PER_DAY = 24
_PER_MILLION = 1e6
Positive = Annotated[float, Field(gt=0, le=1e12)]


class ServeRequest(BaseModel):
    """What a renter serving a model asks, beside the requirement and the service hours."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    serve: str = Field(description="the model to serve (gpuscout models lists them)")
    precision: ServePrecision = Field(
        default=ServePrecision.BF16, description="weights and tensor math: bf16, fp8, fp4"
    )
    scenario: Scenario = Field(
        default=Scenario.OFFLINE,
        description="offline (largest batch), server (latency targets), single_stream",
    )
    tokens_per_day: Positive | None = Field(
        default=None, description="output tokens a day to serve (rents as many offers)"
    )
    input_tokens: Positive | None = Field(default=None, description="prompt tokens a request")
    output_tokens: Positive | None = Field(default=None, description="output tokens a request")
    ttft_s: Positive | None = Field(default=None, description="server: time to first token, s")
    tpot_s: Positive | None = Field(default=None, description="server: time per output token, s")

    @field_validator("serve")
    @classmethod
    def _known_model(cls, value: str) -> str:
        return serving_model(value).name

    @model_validator(mode="after")
    def _within_context(self) -> ServeRequest:
        w, model = self.workload(), self.model_entry()
        if w.input_tokens + w.output_tokens > model.context_tokens:
            raise ValueError(
                f"input_tokens: a request of {w.input_tokens + w.output_tokens:g} tokens exceeds"
                f" {model.name}'s context of {model.context_tokens} tokens"
            )
        return self

    def model_entry(self) -> ServingModel:
        return serving_model(self.serve)

    def workload(self) -> Workload:
        """The request shape: the given fields over ``serving.toml``'s defaults."""
        d = default_workload()
        return Workload(
            input_tokens=self.input_tokens or d.input_tokens,
            output_tokens=self.output_tokens or d.output_tokens,
            ttft_s=self.ttft_s or d.ttft_s,
            tpot_s=self.tpot_s or d.tpot_s,
        )


#: Columns of a serving answer's rows, in order.
SERVE_COLUMNS: tuple[str, ...] = (
    "rank", "provider", "offer_id", "instance_name", "region", "gpu_model", "gpu_count",
    "gpu_memory_gb", "term", "usd_per_hour", "usd_per_service_hour", "gpus_per_replica",
    "replicas", "batch", "tokens_per_s_per_gpu", "output_tokens_per_hour",
    "throughput_measured", "throughput_source", "usd_per_m_tokens", "usd_per_m_input_tokens",
    "instances_needed", "usd_per_day", "usd_per_m_tokens_at_demand", "restart_risk",
    "config_id",
)  # fmt: skip


_TEXT, _REAL, _INT = pl.String, pl.Float64, pl.Int64
#: The types of :data:`SERVE_COLUMNS` but ``rank`` (an empty answer has them too).
_SCHEMA: dict[str, type[pl.DataType]] = {
    "provider": _TEXT, "offer_id": _TEXT, "instance_name": _TEXT, "region": _TEXT,
    "gpu_model": _TEXT, "gpu_count": _INT, "gpu_memory_gb": _REAL, "term": _TEXT,
    "usd_per_hour": _REAL, "usd_per_service_hour": _REAL, "gpus_per_replica": _INT,
    "replicas": _INT, "batch": _INT, "tokens_per_s_per_gpu": _REAL,
    "output_tokens_per_hour": _REAL, "throughput_measured": pl.Boolean,
    "throughput_source": _TEXT, "usd_per_m_tokens": _REAL, "usd_per_m_input_tokens": _REAL,
    "instances_needed": _INT, "usd_per_day": _REAL, "usd_per_m_tokens_at_demand": _REAL,
    "restart_risk": _TEXT, "config_id": _INT,
}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class ServeRanking:
    """The ranked rows (:data:`SERVE_COLUMNS`), the request, and what was left out:
    ``left_out`` counts configurations by :class:`~pricing.serving.RefusalReason`, and
    ``examples`` gives one message per reason (the memory a model needs, the GPU unknown)."""

    rows: pl.DataFrame
    request: ServeRequest
    workload: Workload
    hours: float
    left_out: dict[str, int]
    examples: dict[str, str]


def _restart_risk(row: dict[str, Any]) -> str | None:
    if row["term"] != "interruptible":
        return None
    expected = row.get("interruptions_expected")
    count = f"~{expected:.1f} interruptions expected" if expected else "interruptions expected"
    return f"interruptible: the service stops whenever the provider reclaims it ({count})"


def _served_row(row: dict[str, Any], plan: ServingPlan, request: ServeRequest) -> dict[str, Any]:
    w = request.workload()
    busy_gpus = plan.replicas * plan.gpus_per_replica
    per_hour = plan.tokens_per_s_per_gpu * busy_gpus * _SECONDS_PER_HOUR
    service_usd_per_hour = row["all_in_cost_usd"] / row["compute_hours"]
    input_per_hour = per_hour * w.input_tokens / w.output_tokens
    out: dict[str, Any] = {
        **{k: row[k] for k in ("provider", "offer_id", "instance_name", "region", "gpu_model")},
        "gpu_count": row["gpu_count"],
        "gpu_memory_gb": row["gpu_memory_gb"],
        "term": row["term"],
        "usd_per_hour": row["usd_per_hour"],
        "usd_per_service_hour": service_usd_per_hour,
        "gpus_per_replica": plan.gpus_per_replica,
        "replicas": plan.replicas,
        "batch": plan.batch,
        "tokens_per_s_per_gpu": plan.tokens_per_s_per_gpu,
        "output_tokens_per_hour": per_hour,
        "throughput_measured": plan.measured,
        "throughput_source": plan.source,
        "usd_per_m_tokens": service_usd_per_hour / per_hour * _PER_MILLION,
        "usd_per_m_input_tokens": (
            service_usd_per_hour * plan.prefill_time_share / input_per_hour * _PER_MILLION
        ),
        "instances_needed": None,
        "usd_per_day": None,
        "usd_per_m_tokens_at_demand": None,
        "restart_risk": _restart_risk(row),
        "config_id": row["config_id"],
    }
    if request.tokens_per_day is not None:
        instances = math.ceil(request.tokens_per_day / (per_hour * _HOURS_PER_DAY))
        usd_per_day = instances * service_usd_per_hour * _HOURS_PER_DAY
        out["instances_needed"] = instances
        out["usd_per_day"] = usd_per_day
        out["usd_per_m_tokens_at_demand"] = usd_per_day / request.tokens_per_day * _PER_MILLION
    return out


def _unknown_gpu_configurations(frame: pl.DataFrame) -> int:
    """Configurations whose GPU the catalog does not know (the costing never sees them)."""
    unknown = frame.filter(pl.col("gpu_model").is_null())
    return unknown.get_column("config_id").n_unique() if unknown.height else 0


def rank_serving(
    frame: pl.DataFrame,
    request: ServeRequest,
    requirement: Requirement | None = None,
    hours: float = DEFAULT_SERVICE_HOURS,
    now: datetime | None = None,
) -> ServeRanking:
    """Every configuration ``requirement`` admits that can serve ``request``, cheapest per
    million output tokens first (at the demand, when ``tokens_per_day`` is given); ties by
    ``config_id``. ``frame`` is an offers frame as :func:`pricing.rank.rank` reads it."""
    model = request.model_entry()
    workload = request.workload()
    costed = rank(
        frame,
        requirement,
        Job(hours=hours),
        RankOptions(precision=Precision.BF16, limit=None, now=now),
    )
    plans: dict[tuple[Any, ...], ServingPlan | Refusal] = {}
    rows: list[dict[str, Any]] = []
    left_out: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for row in costed.iter_rows(named=True):
        key = (row["gpu_model"], row["gpu_count"], row["gpu_memory_gb"])
        if key not in plans:
            plans[key] = plan_serving(
                model, key[0], key[1], key[2], request.precision, request.scenario, workload
            )
        plan = plans[key]
        if isinstance(plan, Refusal):
            left_out[plan.reason.value] += 1
            examples.setdefault(plan.reason.value, f"{row['gpu_count']} x {plan.message}")
            continue
        rows.append(_served_row(row, plan, request))
    unknown = (
        0 if requirement is not None and requirement.gpus else _unknown_gpu_configurations(frame)
    )
    if unknown:
        left_out[RefusalReason.GPU_UNKNOWN.value] += unknown
        examples.setdefault(
            RefusalReason.GPU_UNKNOWN.value, "GPU not in the catalog: no figures to serve on"
        )
    table = pl.DataFrame(rows, schema=_SCHEMA)
    order = "usd_per_m_tokens_at_demand" if request.tokens_per_day else "usd_per_m_tokens"
    if rows:
        # a live service (server, single stream) stops when an interruptible term is
        # reclaimed: those rows follow the others; an offline batch just resumes
        live = request.scenario is not Scenario.OFFLINE
        after = pl.col("restart_risk").is_not_null() & live
        table = table.sort([after, pl.col(order), pl.col("config_id")], nulls_last=True)
    table = table.with_row_index("rank", offset=1).select(SERVE_COLUMNS)
    return ServeRanking(
        rows=table,
        request=request,
        workload=workload,
        hours=hours,
        left_out=dict(left_out),
        examples=examples,
    )
