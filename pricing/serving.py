"""Serving a model on one offer's GPUs: does it fit, how many replicas, how many tokens/s.

Pure functions over the model catalog (:mod:`.serving_models`), the GPU catalog
(:mod:`gpuscout.adapters.gpus`) and the constants of ``serving.toml`` beside this module.

* **Memory fit**: the weights at the serving precision plus the KV cache of one full
  request (input + output tokens) must fit in ``memory_utilization`` of a replica's GPUs. A
  replica is tensor parallel over 1, 2, 4 or 8 GPUs of the offer (within one instance); the
  offer holds ``gpu_count // gpus_per_replica`` replicas. A model that fits no replica is
  refused with the memory it needs.
* **Precision**: BF16 everywhere a BF16/FP16 tensor figure exists; FP8 where the GPU has an
  FP8 figure (datasheet or a catalog rule, never a fallback); FP4 only on the GPUs
  ``serving.toml`` [fp4] lists.
* **Throughput per GPU**: the MLPerf Inference v5.1 result for that (model, GPU, scenario,
  precision) where one exists (``serving_benchmarks.toml``, "measured", the submission
  named), else a roofline ("predicted"): a decode step of batch ``B`` takes the longer of
  reading the weights and the batch's KV cache at the memory bandwidth and computing
  ``2 x active params`` FLOPs per token; a request's prefill is compute bound. Both rates are
  the datasheet's times the fitted efficiencies of ``serving.toml`` [roofline].
* **Scenario**: ``offline`` runs the largest batch memory allows; ``server`` the largest
  batch whose decode step, with its share of prefills, meets the time per output token, and
  refuses a GPU whose prefill misses the time to first token; ``single_stream`` a batch of 1.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from enum import StrEnum
from importlib import resources
from typing import Any

from gpuscout.adapters.gpus import FigureBasis, GpuSpec, Precision, get_gpu

from .serving_models import ServingModel

__all__ = [
    "GPUS_PER_REPLICA",
    "MeasuredResult",
    "Refusal",
    "RefusalReason",
    "Roofline",
    "Scenario",
    "ServePrecision",
    "ServingPlan",
    "Workload",
    "default_workload",
    "measured_result",
    "measured_results",
    "plan_serving",
    "roofline",
]

#: Tensor-parallel sizes a replica may take, within one instance.
GPUS_PER_REPLICA = (1, 2, 4, 8)
_BYTES_PER_GB = 1e9


class ServePrecision(StrEnum):
    """The precision of the weights and the tensor math."""

    BF16 = "bf16"
    FP8 = "fp8"
    FP4 = "fp4"


#: Bytes per weight at each precision.
WEIGHT_BYTES_PER_PARAM = {
    ServePrecision.BF16: 2.0,
    ServePrecision.FP8: 1.0,
    ServePrecision.FP4: 0.5,
}


class Scenario(StrEnum):
    """How requests arrive: all at once, as a latency-bound stream, or one at a time."""

    OFFLINE = "offline"
    SERVER = "server"
    SINGLE_STREAM = "single_stream"


class RefusalReason(StrEnum):
    """Why an offer cannot serve the model."""

    GPU_UNKNOWN = "gpu_unknown"
    NO_PRECISION = "no_precision"
    DOES_NOT_FIT = "does_not_fit"
    LATENCY = "latency"


@dataclasses.dataclass(frozen=True, slots=True)
class Workload:
    """One request's shape and, for the server scenario, its latency targets."""

    input_tokens: float
    output_tokens: float
    ttft_s: float
    tpot_s: float

    def __post_init__(self) -> None:
        for name in ("input_tokens", "output_tokens", "ttft_s", "tpot_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, not {getattr(self, name)}")


@dataclasses.dataclass(frozen=True, slots=True)
class Roofline:
    """The constants of ``serving.toml`` (each with its source there)."""

    compute_efficiency: float
    bandwidth_efficiency: float
    memory_utilization: float
    max_batch: int
    kv_bytes_per_value: dict[ServePrecision, float]
    fp4_models: frozenset[str]
    fp4_factor_over_fp8: float


@dataclasses.dataclass(frozen=True, slots=True)
class MeasuredResult:
    """One row of ``serving_benchmarks.toml``: an MLPerf Inference v5.1 result."""

    model: str
    gpu_model: str
    scenario: Scenario
    precision: ServePrecision
    tokens_per_s_per_gpu: float
    submission: str


@dataclasses.dataclass(frozen=True, slots=True)
class ServingPlan:
    """How one offer serves the model. ``tokens_per_s_per_gpu`` counts output tokens;
    ``prefill_time_share`` is the share of GPU time the roofline gives to prompts."""

    gpus_per_replica: int
    replicas: int
    batch: int
    tokens_per_s_per_gpu: float
    input_tokens_per_s_per_gpu: float
    prefill_time_share: float
    measured: bool
    source: str
    weights_gb: float
    memory_needed_gb: float


@dataclasses.dataclass(frozen=True, slots=True)
class Refusal:
    """Why an offer is left out, in one line; ``memory_needed_gb`` when it does not fit."""

    reason: RefusalReason
    message: str
    memory_needed_gb: float | None = None


def _data() -> dict[str, Any]:
    package = __package__ or "pricing"
    return tomllib.loads(resources.files(package).joinpath("serving.toml").read_text("utf-8"))


@functools.cache
def roofline() -> Roofline:
    """The shipped constants, read once."""
    data = _data()
    r, fp4 = data["roofline"], data["fp4"]
    return Roofline(
        compute_efficiency=r["compute_efficiency"],
        bandwidth_efficiency=r["bandwidth_efficiency"],
        memory_utilization=r["memory_utilization"],
        max_batch=r["max_batch"],
        kv_bytes_per_value={ServePrecision(k): v for k, v in data["kv_cache"].items()},
        fp4_models=frozenset(fp4["models"]),
        fp4_factor_over_fp8=fp4["factor_over_fp8"],
    )


@functools.cache
def default_workload() -> Workload:
    """The request shape and latency targets when the caller gives none."""
    w = _data()["workload"]
    return Workload(w["input_tokens"], w["output_tokens"], w["ttft_s"], w["tpot_s"])


@functools.cache
def measured_results() -> tuple[MeasuredResult, ...]:
    """The MLPerf Inference v5.1 rows of ``serving_benchmarks.toml``."""
    package = __package__ or "pricing"
    text = resources.files(package).joinpath("serving_benchmarks.toml").read_text("utf-8")
    return tuple(
        MeasuredResult(
            model=row["model"],
            gpu_model=row["gpu_model"],
            scenario=Scenario(row["scenario"]),
            precision=ServePrecision(row["precision"]),
            tokens_per_s_per_gpu=row["tokens_per_s_per_gpu"],
            submission=row["submission"],
        )
        for row in tomllib.loads(text)["result"]
    )


def measured_result(
    model: str, gpu_model: str, scenario: Scenario, precision: ServePrecision
) -> MeasuredResult | None:
    """The published result for exactly this model, GPU, scenario and precision, if any."""
    for row in measured_results():
        key = (row.model, row.gpu_model, row.scenario, row.precision)
        if key == (model, gpu_model, scenario, precision):
            return row
    return None


def peak_tflops(spec: GpuSpec, precision: ServePrecision, constants: Roofline) -> float | None:
    """The dense peak ``spec`` runs ``precision`` at, or ``None`` when it lacks it: FP8 from
    the datasheet or a catalog rule (a fallback to BF16 is not FP8), FP4 only where
    ``serving.toml`` [fp4] lists the GPU."""
    if precision is ServePrecision.BF16:
        figure = spec.tensor_figure()
        return figure.tflops if figure is not None else None
    fp8 = spec.figure(Precision.FP8)
    if fp8 is None or fp8.basis is FigureBasis.FALLBACK:
        return None
    if precision is ServePrecision.FP8:
        return fp8.tflops
    if spec.name in constants.fp4_models:
        return fp8.tflops * constants.fp4_factor_over_fp8
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class _Replica:
    """The roofline of one replica of ``gpus`` GPUs: seconds per decode step and prefill."""

    gpus: int
    weights_bytes: float
    active_weights_bytes: float
    kv_bytes_per_token: float
    active_params: float
    bandwidth_bytes_s: float
    flops_s: float
    workload: Workload

    def decode_step_s(self, batch: int) -> float:
        """One decode step for ``batch`` sequences: weights (a mixture of experts reads the
        experts its batch touches, at most all) and KV cache at mid-answer, or the FLOPs."""
        w = self.workload
        weights = min(self.weights_bytes, batch * self.active_weights_bytes)
        kv = batch * self.kv_bytes_per_token * (w.input_tokens + w.output_tokens / 2)
        memory_s = (weights + kv) / (self.gpus * self.bandwidth_bytes_s)
        compute_s = batch * 2 * self.active_params / (self.gpus * self.flops_s)
        return max(memory_s, compute_s)

    def prefill_s(self) -> float:
        """One request's prompt, compute bound."""
        flops = 2 * self.active_params * self.workload.input_tokens
        return flops / (self.gpus * self.flops_s)

    def output_tokens_per_s(self, batch: int) -> float:
        """Output tokens/s of the replica: ``batch`` requests' prefills and their decode."""
        w = self.workload
        seconds = batch * self.prefill_s() + w.output_tokens * self.decode_step_s(batch)
        return batch * w.output_tokens / seconds

    def server_step_s(self, batch: int) -> float:
        """A decode step with its share of new requests' prefills (``batch / output``)."""
        return self.decode_step_s(batch) + batch / self.workload.output_tokens * self.prefill_s()


def _server_batch(replica: _Replica, most: int) -> int:
    """The largest batch up to ``most`` whose step meets the time per output token (0: none)."""
    target = replica.workload.tpot_s
    if replica.server_step_s(1) > target:
        return 0
    low, high = 1, most
    while low < high:
        middle = (low + high + 1) // 2
        if replica.server_step_s(middle) <= target:
            low = middle
        else:
            high = middle - 1
    return low


def plan_serving(
    model: ServingModel,
    gpu_model: str | None,
    gpu_count: int,
    gpu_memory_gb: float | None,
    precision: ServePrecision,
    scenario: Scenario,
    workload: Workload | None = None,
    *,
    use_measured: bool = True,
    constants: Roofline | None = None,
) -> ServingPlan | Refusal:
    """How an offer of ``gpu_count`` x ``gpu_model`` serves ``model``, or why it cannot.

    ``gpu_memory_gb`` is the offer's memory per GPU (default: the catalog's). Of the replica
    sizes that fit, the one with the most tokens/s per GPU wins (the smaller on a tie).
    ``use_measured=False`` ignores the MLPerf table (the calibration test's roofline alone).
    """
    c = constants or roofline()
    w = workload or default_workload()
    spec = get_gpu(gpu_model) if gpu_model else None
    if spec is None or spec.mem_bandwidth_gbs is None:
        name = gpu_model or "an unnamed GPU"
        return Refusal(
            RefusalReason.GPU_UNKNOWN,
            f"{name}: unknown to the benchmark table and to the roofline (no memory bandwidth)",
        )
    tflops = peak_tflops(spec, precision, c)
    if tflops is None:
        return Refusal(
            RefusalReason.NO_PRECISION, f"{spec.name} has no {precision.name} tensor math"
        )
    memory_gb = gpu_memory_gb or spec.memory_gb
    if not memory_gb:
        return Refusal(RefusalReason.GPU_UNKNOWN, f"{spec.name}: memory per GPU unknown")
    weights = model.params_b * 1e9 * WEIGHT_BYTES_PER_PARAM[precision]
    kv_token = model.kv_values_per_token() * c.kv_bytes_per_value[precision]
    sequence = kv_token * (w.input_tokens + w.output_tokens)
    needed_gb = (weights + sequence) / c.memory_utilization / _BYTES_PER_GB
    best: tuple[float, _Replica, int] | None = None
    latency_missed = False
    for gpus in (g for g in GPUS_PER_REPLICA if g <= gpu_count):
        free = c.memory_utilization * gpus * memory_gb * _BYTES_PER_GB - weights
        fits = int(free // sequence) if free > 0 else 0
        if fits < 1:
            continue
        replica = _Replica(
            gpus=gpus,
            weights_bytes=weights,
            active_weights_bytes=model.active_params_b * 1e9 * WEIGHT_BYTES_PER_PARAM[precision],
            kv_bytes_per_token=kv_token,
            active_params=model.active_params_b * 1e9,
            bandwidth_bytes_s=spec.mem_bandwidth_gbs * _BYTES_PER_GB * c.bandwidth_efficiency,
            flops_s=tflops * 1e12 * c.compute_efficiency,
            workload=w,
        )
        most = min(fits, c.max_batch)
        if scenario is Scenario.SINGLE_STREAM:
            batch = 1
        elif scenario is Scenario.OFFLINE:
            batch = most
        else:
            batch = _server_batch(replica, most) if replica.prefill_s() <= w.ttft_s else 0
            if batch == 0:
                latency_missed = True
                continue
        rate = replica.output_tokens_per_s(batch) / gpus
        if best is None or rate > best[0]:
            best = (rate, replica, batch)
    if best is None:
        if latency_missed:
            return Refusal(
                RefusalReason.LATENCY,
                f"{spec.name}: no replica meets TTFT {w.ttft_s:g} s and"
                f" {w.tpot_s * 1000:g} ms per token",
            )
        usable = c.memory_utilization * memory_gb * min(gpu_count, max(GPUS_PER_REPLICA))
        return Refusal(
            RefusalReason.DOES_NOT_FIT,
            f"{spec.name} needs {needed_gb:,.0f} GB of GPU memory"
            f" ({weights / _BYTES_PER_GB:,.0f} GB weights at {precision.name} + KV cache of one"
            f" {w.input_tokens + w.output_tokens:,.0f}-token request, at"
            f" {c.memory_utilization:.0%} usable); {min(gpu_count, 8)} x {memory_gb:g} GB"
            f" offers {usable:,.0f} GB",
            memory_needed_gb=round(needed_gb, 1),
        )
    rate, replica, batch = best
    prefill = batch * replica.prefill_s()
    share = prefill / (prefill + w.output_tokens * replica.decode_step_s(batch))
    measured = None
    if use_measured and scenario is not Scenario.SINGLE_STREAM:
        measured = measured_result(model.name, spec.name, scenario, precision)
    if measured is not None:
        rate = measured.tokens_per_s_per_gpu
        source = f"measured: MLPerf Inference v5.1 {measured.submission}"
    else:
        source = "predicted: roofline (serving.toml)"
    return ServingPlan(
        gpus_per_replica=replica.gpus,
        replicas=gpu_count // replica.gpus,
        batch=batch,
        tokens_per_s_per_gpu=rate,
        input_tokens_per_s_per_gpu=rate * w.input_tokens / w.output_tokens,
        prefill_time_share=share,
        measured=measured is not None,
        source=source,
        weights_gb=weights / _BYTES_PER_GB,
        memory_needed_gb=(weights + batch * sequence) / _BYTES_PER_GB,
    )
