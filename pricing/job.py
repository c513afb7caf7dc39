"""The size of a job: wall-clock hours, GPU-hours, or a training run.

A training run is measured in FLOPs: ``6 x params x tokens`` (forward + backward of a dense
transformer, Kaplan et al. 2020 / Chinchilla), plus the attention FLOPs ``12 x layers x
hidden x context`` per token when the model's shape or context is given (PaLM, Chowdhery et
al. 2022, appendix B: the convention MFU figures are stated in). It must fit on every GPU:
weights, gradients and optimizer state sharded over the job's GPUs (ZeRO-3/FSDP), plus
activations and a per-GPU floor (``efficiency.toml`` [memory]). A job of hours or GPU-hours
may carry ``params`` too: then only the memory check uses it.
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
MAX_STORAGE_GB = 1e7
MAX_EGRESS_GB = 1e9
MAX_LAYERS = 10_000
MAX_HIDDEN = 1_000_000
MAX_CONTEXT = 10_000_000
#: Attention FLOPs per token per layer x hidden x context (PaLM appendix B: 6N + 12LHQT).
ATTENTION_FLOPS_FACTOR = 12


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
    active_params: Annotated[Positive, Field(le=MAX_PARAMS)] | None = Field(
        default=None,
        description="a mixture of experts' parameters active per token (FLOPs); params is"
        " then its total (memory)",
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
    storage_gb: Annotated[float | None, Field(ge=0, le=MAX_STORAGE_GB)] = Field(
        default=None,
        description="disk GB per instance for the job (default: the requirement's"
        " min_storage_gb, else the offer's included disk), at least the offer's boot disk",
    )
    egress_gb: Annotated[float | None, Field(ge=0, le=MAX_EGRESS_GB)] = Field(
        default=None, description="GB the job sends out (billed at the offer's egress price)"
    )
    layers: Annotated[PositiveInt, Field(le=MAX_LAYERS)] | None = Field(
        default=None, description="transformer layers (attention FLOPs and activations)"
    )
    hidden_size: Annotated[PositiveInt, Field(le=MAX_HIDDEN)] | None = Field(
        default=None, description="model width d (attention FLOPs and activations)"
    )
    context_tokens: Annotated[PositiveInt, Field(le=MAX_CONTEXT)] | None = Field(
        default=None, description="sequence length in training (attention FLOPs, activations)"
    )

    @model_validator(mode="after")
    def _one_kind(self) -> Job:
        sized = self.hours is not None or self.gpu_hours is not None
        if self.active_params is not None and (
            self.params is None or self.active_params > self.params
        ):
            raise ValueError("active_params: needs params, its total, and at most that")
        if self.tokens is not None and self.params is None:
            raise ValueError("params: a training run needs both params and tokens")
        if self.params is not None and self.tokens is None and not sized:
            raise ValueError("tokens: a training run needs both params and tokens")
        # params belongs to a training run when tokens come with it (beside hours alone it
        # only sizes the memory check)
        given = [
            name
            for name, value in (
                ("hours", self.hours),
                ("gpu_hours", self.gpu_hours),
                ("params", self.params if self.tokens is not None else None),
                ("tokens", self.tokens),
            )
            if value is not None
        ]
        if len([name for name in given if name != "params"]) != 1:
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
    def is_moe(self) -> bool:
        """A mixture of experts: fewer parameters active per token than in total."""
        return (
            self.active_params is not None
            and self.params is not None
            and self.active_params < self.params
        )

    @property
    def flops_params(self) -> float | None:
        """The parameters each token's FLOPs go through: the active ones of a mixture of
        experts, else all (``params``)."""
        return self.active_params if self.active_params is not None else self.params

    @property
    def counts_attention(self) -> bool:
        """Whether the FLOPs count attention: the shape or the context is given."""
        return (
            self.layers is not None
            or self.hidden_size is not None
            or (self.context_tokens is not None)
        )

    def shape(self, efficiency: Efficiency | None = None) -> tuple[float, float, int] | None:
        """(layers, hidden size, context) as given, the rest derived from ``params``:
        ``params = 12 L d^2`` with ``d = hidden_per_layer x L`` (``efficiency.toml``
        [memory], an assumption), context by default 4096. None without ``params``.

        >>> [round(x) for x in Job.training(70e9, 1e12).shape()]
        [71, 9072, 4096]
        """
        params = self.flops_params
        if params is None:
            return None
        mem = (efficiency or default_efficiency()).memory
        ratio = mem.hidden_per_layer
        layers: float | None = self.layers
        hidden: float | None = self.hidden_size
        # at least one layer one wide: a tiny model has no fractional layers
        if layers is None and hidden is None:
            layers = max(1.0, (params / (12 * ratio**2)) ** (1 / 3))
        if hidden is None:
            assert layers is not None
            hidden = max(1.0, math.sqrt(params / (12 * layers)))
        if layers is None:
            layers = max(1.0, params / (12 * hidden**2))
        return layers, hidden, self.context_tokens or mem.default_context_tokens

    def flops_per_token(self, efficiency: Efficiency | None = None) -> float | None:
        """``6 N`` plus, when the shape or context is given, ``12 L d ctx`` (PaLM app. B);
        ``N`` the active parameters of a mixture of experts (:attr:`flops_params`).

        >>> Job.training(7e9, 2e12).flops_per_token()
        42000000000.0
        >>> Job(params=7e9, tokens=2e12, layers=32, hidden_size=4096,
        ...     context_tokens=4096).flops_per_token()
        48442450944.0
        """
        params = self.flops_params
        if params is None:
            return None
        dense = FLOPS_PER_PARAM_TOKEN * params
        shape = self.shape(efficiency) if self.counts_attention else None
        if shape is None:
            return dense
        layers, hidden, context = shape
        return dense + ATTENTION_FLOPS_FACTOR * layers * hidden * context

    @property
    def total_flops(self) -> float | None:
        """Training FLOPs, tokens x :meth:`flops_per_token`; None for hour-sized jobs.

        >>> Job.training(7e9, 2e12).total_flops
        8.4e+22
        """
        if self.tokens is None:
            return None
        per_token = self.flops_per_token()
        assert per_token is not None
        return per_token * self.tokens

    def memory_needed_gb(
        self, precision: str, efficiency: Efficiency | None = None
    ) -> float | None:
        """GB of weights + gradients + optimizer state over the whole job (None without
        ``params``): what ZeRO-3/FSDP shards over the job's GPUs.

        >>> Job.training(7e9, 2e12).memory_needed_gb("bf16")
        112.0
        """
        if self.params is None:
            return None
        eff = efficiency or default_efficiency()
        per_param = self.bytes_per_param or eff.bytes_per_param[str(precision)]
        return self.params * per_param / 1e9

    def per_gpu_extra_gb(self, efficiency: Efficiency | None = None) -> float | None:
        """GB each GPU needs beside its shard: activations of one micro-batch with full
        recomputation (``2 s h L + 34 s h`` bytes, Korthikanti et al. 2022) plus the floor.

        >>> round(Job(params=7e9, hours=1, layers=32, hidden_size=4096,
        ...     context_tokens=4096).per_gpu_extra_gb(), 3)
        4.644
        """
        shape = self.shape(efficiency)
        if shape is None:
            return None
        mem = (efficiency or default_efficiency()).memory
        layers, hidden, context = shape
        per_sh = mem.activation_bytes_per_layer_token_hidden * layers
        per_sh += mem.activation_working_bytes_per_token_hidden
        return per_sh * context * hidden / 1e9 + mem.per_gpu_floor_gb

    def memory_per_gpu_gb(
        self, gpus: float, precision: str, efficiency: Efficiency | None = None
    ) -> float | None:
        """GB one of ``gpus`` GPUs needs: its shard of the state plus activations and floor."""
        state = self.memory_needed_gb(precision, efficiency)
        extra = self.per_gpu_extra_gb(efficiency)
        if state is None or extra is None:
            return None
        return state / gpus + extra

    def min_gpus_to_fit(
        self, gpu_memory_gb: float, precision: str, efficiency: Efficiency | None = None
    ) -> int | None:
        """Fewest GPUs of ``gpu_memory_gb`` each holding its shard, activations and floor
        (None without ``params``, or when no count fits: activations alone overflow)."""
        state = self.memory_needed_gb(precision, efficiency)
        extra = self.per_gpu_extra_gb(efficiency)
        if state is None or extra is None:
            return None
        room = gpu_memory_gb - extra
        if room <= 0:
            return None
        return max(1, math.ceil(state / room - 1e-9))

    def max_bytes_per_param_to_fit(
        self, gpu_memory_gb: float, gpus: float, efficiency: Efficiency | None = None
    ) -> float | None:
        """Most bytes of training state per parameter (``bytes_per_param``) whose shard over
        ``gpus`` GPUs of ``gpu_memory_gb`` each fits beside the activations and floor (None
        without ``params``, or when those alone overflow): the figure to get under with a
        leaner optimizer or frozen weights (LoRA keeps about 2, the bf16 weights).

        >>> round(Job.training(70e9, 1e9).max_bytes_per_param_to_fit(80, 8), 2)
        8.05
        """
        extra = self.per_gpu_extra_gb(efficiency)
        if self.params is None or extra is None:
            return None
        room = gpu_memory_gb - extra
        if room <= 0:
            return None
        return room * gpus * 1e9 / self.params
