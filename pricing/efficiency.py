"""The efficiency model: MFU per GPU family, multi-GPU scaling, memory, interruptions.

The defaults live in ``efficiency.toml`` beside this module, each value with its source
(the figures come from published training reports, collected in
``/work/shared/reference/efficiency_notes.md``). :class:`Efficiency` is the parsed,
validated form; a request may pass its own (``Efficiency.model_copy(update=...)``).
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "Efficiency",
    "FamilyMfu",
    "Interruptible",
    "Memory",
    "Scaling",
    "default_efficiency",
    "load_efficiency",
]

Factor = Annotated[float, Field(gt=0, le=1)]


class ModelScaleMfu(BaseModel):
    """The MFU a family reaches on dense models below ``below_params`` parameters at the
    scale they were published at: a small model on a large cluster has little work per GPU
    per step, and spends more of it waiting on the network."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    families: tuple[str, ...]
    below_params: Annotated[float, Field(gt=0)]
    bf16: Annotated[float, Field(gt=0, le=1)]
    source: str


class FamilyMfu(BaseModel):
    """Published MFU (against the dense BF16 peak) shared by some GPU families."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    families: tuple[str, ...]
    bf16: Factor
    range: tuple[float, float] | None = None
    source: str


class Scaling(BaseModel):
    """Multi-GPU scaling relative to the reference topology the MFU was measured at (8 GPUs
    on NVLink per node, >= 400 Gbps/GPU RDMA between nodes): 1.0 there, never above 1."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    single_gpu: Factor = 1.0
    nvlink: Factor
    nvlink_bridge: Factor
    infinity_fabric: Factor
    pcie: Factor
    separate_nodes: Factor
    pcie_no_p2p_sync_ratio: Annotated[float, Field(ge=0)]
    pcie_no_p2p_families: tuple[str, ...] = ()
    fabric_points: tuple[tuple[Annotated[float, Field(gt=0)], Factor], ...]
    fabric_source: str = ""
    ethernet_share: Factor

    @model_validator(mode="after")
    def _monotone(self) -> Scaling:
        gbps = [g for g, _ in self.fabric_points]
        factors = [f for _, f in self.fabric_points]
        if len(gbps) < 2 or gbps != sorted(set(gbps)) or factors != sorted(factors):
            raise ValueError(
                "fabric_points: at least two points, Gbps strictly increasing and factors"
                " non-decreasing (more bandwidth never scores lower)"
            )
        return self


class Interruptible(BaseModel):
    """Preemption and restart cost on interruptible terms (see ``efficiency.toml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    preemptions_per_node_hour: Annotated[float, Field(ge=0)]
    rate_source: str = ""
    checkpoint_interval_hours: Annotated[float, Field(ge=0)]
    restart_hours: Annotated[float, Field(ge=0)]

    @property
    def hours_lost_per_preemption(self) -> float:
        """Half a checkpoint interval of lost work plus the restart."""
        return self.checkpoint_interval_hours / 2 + self.restart_hours


class Memory(BaseModel):
    """Per-GPU memory beyond the sharded training state (see ``efficiency.toml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    activation_bytes_per_layer_token_hidden: Annotated[float, Field(ge=0)]
    activation_working_bytes_per_token_hidden: Annotated[float, Field(ge=0)]
    hidden_per_layer: Annotated[float, Field(gt=0)]
    default_context_tokens: Annotated[int, Field(gt=0)]
    per_gpu_floor_gb: Annotated[float, Field(ge=0)]


class Efficiency(BaseModel):
    """Everything that turns peak TFLOPs into effective TFLOPs, and job overheads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default_mfu_bf16: Factor
    low_precision_speedup: Annotated[float, Field(ge=1)]
    low_precision_source: str = ""
    family_mfu: tuple[FamilyMfu, ...]
    #: A mixture of experts' MFU relative to a dense model's on the same GPUs (all-to-all
    #: between experts), with its source.
    moe_mfu_factor: Factor = 1.0
    moe_source: str = ""
    model_scale_mfu: tuple[ModelScaleMfu, ...] = ()
    scaling: Scaling
    interruptible: Interruptible
    memory: Memory
    bytes_per_param: dict[str, Annotated[float, Field(gt=0)]]

    def mfu_bf16(self, family: str | None) -> float:
        """The BF16 MFU of ``family`` (the default when unpublished)."""
        return self.mfu_by_family().get(family or "", self.default_mfu_bf16)

    def mfu_by_family(self) -> dict[str, float]:
        return {fam: entry.bf16 for entry in self.family_mfu for fam in entry.families}

    def mfu_source(self, family: str | None) -> str:
        """Where the BF16 MFU of ``family`` comes from (the default's: an assumption)."""
        for entry in reversed(self.family_mfu):  # the last entry of a family wins
            if family in entry.families:
                return entry.source
        return "[assumption] default_bf16 (efficiency.toml [mfu])"

    def for_model_size(self, params: float) -> Efficiency:
        """These factors for a dense model of ``params`` parameters: the families of the
        smallest :class:`ModelScaleMfu` band above it take its MFU (unchanged when none)."""
        bands = sorted(self.model_scale_mfu, key=lambda band: band.below_params)
        band = next((b for b in bands if params < b.below_params), None)
        if band is None:
            return self
        entry = FamilyMfu(families=band.families, bf16=band.bf16, source=band.source)
        return self.model_copy(update={"family_mfu": (*self.family_mfu, entry)})

    def for_moe(self) -> Efficiency:
        """These factors for a mixture of experts: every BF16 MFU x :attr:`moe_mfu_factor`."""
        factor = self.moe_mfu_factor
        families = tuple(
            entry.model_copy(update={"bf16": entry.bf16 * factor}) for entry in self.family_mfu
        )
        return self.model_copy(
            update={"default_mfu_bf16": self.default_mfu_bf16 * factor, "family_mfu": families}
        )


def load_efficiency(text: str) -> Efficiency:
    """Parse an efficiency TOML file (the layout of ``efficiency.toml``)."""
    data: dict[str, Any] = tomllib.loads(text)
    mfu, job = data["mfu"], data["job"]
    return Efficiency(
        default_mfu_bf16=mfu["default_bf16"],
        low_precision_speedup=mfu["low_precision_speedup"],
        low_precision_source=mfu.get("low_precision_source", ""),
        moe_mfu_factor=mfu.get("moe_factor", 1.0),
        moe_source=mfu.get("moe_source", ""),
        family_mfu=tuple(FamilyMfu(**entry) for entry in mfu.get("family", [])),
        model_scale_mfu=tuple(ModelScaleMfu(**e) for e in mfu.get("model_scale", [])),
        scaling=Scaling(**data["scaling"]),
        interruptible=Interruptible(**data["interruptible"]),
        memory=Memory(**data["memory"]),
        bytes_per_param=job["bytes_per_param"],
    )


@functools.cache
def default_efficiency() -> Efficiency:
    """The shipped defaults, read once."""
    package = __package__ or "pricing"
    return load_efficiency(resources.files(package).joinpath("efficiency.toml").read_text("utf-8"))
