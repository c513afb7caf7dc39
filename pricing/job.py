"""The size of a job: wall-clock hours, GPU-hours, or a training run.

A training run is measured in FLOPs: ``6 x params x tokens`` (forward + backward of a dense
transformer, Kaplan et al. 2020 / Chinchilla), and it must fit: weights, gradients and
optimizer state, sharded across all GPUs, must fit in the usable share of their memory.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

from .efficiency import Efficiency, default_efficiency

__all__ = ["FLOPS_PER_PARAM_TOKEN", "MAX_GPUS", "Job", "JobKind"]

#: Training FLOPs per parameter per token (2 forward + 4 backward).
FLOPS_PER_PARAM_TOKEN = 6

Positive = Annotated[float, Field(gt=0)]

#: Upper bounds on job sizes: beyond them the arithmetic says nothing useful (and integer
#: columns overflow). The API's query parameters and the CLI's options inherit them.
MAX_HOURS = 1e6
MAX_GPU_HOURS = 1e9
MAX_PARAMS = 1e15
MAX_TOKENS = 1e16
MAX_GPUS = 1_000_000
MAX_INTERRUPTIBLE_OVERHEAD = 10.0
MAX_BYTES_PER_PARAM = 1e3


class JobKind(StrEnum):
    HOURS = "hours"
    GPU_HOURS = "gpu_hours"
    TRAINING = "training"


class Job(BaseModel):
    """Exactly one of ``hours``, ``gpu_hours``, or ``params`` with ``tokens``.

    ``gpus`` is the total number of GPUs the job runs on; an offer with fewer GPUs is rented
    ``ceil(gpus / offer GPUs)`` times and the job spans that many nodes (its fabric then
    matters). Without it the job runs on one instance of each offer.
    """

    #: NaN and Infinity are not sizes or bounds (JSON bodies and CLI options can carry them).
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    hours: Annotated[Positive, Field(le=MAX_HOURS)] | None = Field(
        default=None, description="wall-clock hours"
    )
    gpu_hours: Annotated[Positive, Field(le=MAX_GPU_HOURS)] | None = Field(
        default=None, description="GPU-hours of rental"
    )
    params: Annotated[Positive, Field(le=MAX_PARAMS)] | None = Field(
        default=None, description="model parameters"
    )
    tokens: Annotated[Positive, Field(le=MAX_TOKENS)] | None = Field(
        default=None, description="training tokens"
    )
    gpus: Annotated[PositiveInt, Field(le=MAX_GPUS)] | None = Field(
        default=None, description="total GPUs of the job (spans several instances)"
    )
    interruptible_overhead: Annotated[float | None, Field(ge=0, le=MAX_INTERRUPTIBLE_OVERHEAD)] = (
        Field(
            default=None,
            description="extra share of hours on interruptible terms (default: toml)",
        )
    )
    bytes_per_param: Annotated[Positive, Field(le=MAX_BYTES_PER_PARAM)] | None = Field(
        default=None, description="weights + grads + optimizer bytes (default: by precision)"
    )

    @model_validator(mode="after")
    def _one_kind(self) -> Job:
        if (self.params is None) != (self.tokens is None):
            missing = "tokens" if self.tokens is None else "params"
            raise ValueError(f"{missing}: a training run needs both params and tokens")
        given = [
            name
            for name, value in (
                ("hours", self.hours),
                ("gpu_hours", self.gpu_hours),
                ("params", self.params),
            )
            if value is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "a job is exactly one of hours, gpu_hours, or params + tokens"
                + (f" (got {', '.join(given)})" if given else "")
            )
        return self

    @classmethod
    def for_hours(cls, hours: float, *, gpus: int | None = None) -> Job:
        return cls(hours=hours, gpus=gpus)

    @classmethod
    def for_gpu_hours(cls, gpu_hours: float, *, gpus: int | None = None) -> Job:
        return cls(gpu_hours=gpu_hours, gpus=gpus)

    @classmethod
    def training(cls, params: float, tokens: float, *, gpus: int | None = None) -> Job:
        return cls(params=params, tokens=tokens, gpus=gpus)

    @property
    def kind(self) -> JobKind:
        if self.hours is not None:
            return JobKind.HOURS
        if self.gpu_hours is not None:
            return JobKind.GPU_HOURS
        return JobKind.TRAINING

    @property
    def total_flops(self) -> float | None:
        """Training FLOPs, ``6 x params x tokens``; None for hour-sized jobs.

        >>> Job.training(7e9, 2e12).total_flops
        8.4e+22
        """
        if self.params is None or self.tokens is None:
            return None
        return FLOPS_PER_PARAM_TOKEN * self.params * self.tokens

    def overhead(self, efficiency: Efficiency | None = None) -> float:
        """Restart overhead on interruptible terms, as a share of compute hours."""
        if self.interruptible_overhead is not None:
            return self.interruptible_overhead
        return (efficiency or default_efficiency()).interruptible_overhead

    def memory_needed_gb(
        self, precision: str, efficiency: Efficiency | None = None
    ) -> float | None:
        """GB of weights + gradients + optimizer state (None for hour-sized jobs).

        >>> Job.training(7e9, 2e12).memory_needed_gb("bf16")
        112.0
        """
        if self.params is None:
            return None
        eff = efficiency or default_efficiency()
        per_param = self.bytes_per_param or eff.bytes_per_param[str(precision)]
        return self.params * per_param / 1e9

    def min_gpus_to_fit(
        self, gpu_memory_gb: float, precision: str, efficiency: Efficiency | None = None
    ) -> int | None:
        """Fewest GPUs of ``gpu_memory_gb`` whose usable memory holds the training state."""
        needed = self.memory_needed_gb(precision, efficiency)
        if needed is None:
            return None
        usable = gpu_memory_gb * (efficiency or default_efficiency()).memory_usable_fraction
        return max(1, math.ceil(needed / usable))
