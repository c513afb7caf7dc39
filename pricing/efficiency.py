"""The efficiency model: MFU per GPU family, multi-GPU scaling, job overheads.

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

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Efficiency", "FamilyMfu", "Scaling", "default_efficiency", "load_efficiency"]

Factor = Annotated[float, Field(gt=0, le=1)]


class FamilyMfu(BaseModel):
    """Published MFU (against the dense BF16 peak) shared by some GPU families."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    families: tuple[str, ...]
    bf16: Factor
    range: tuple[float, float] | None = None
    source: str


class Scaling(BaseModel):
    """Multi-GPU scaling factors (share of linear speed-up kept), with their thresholds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    single_gpu: Factor = 1.0
    nvlink: Factor
    nvlink_bridge: Factor
    infinity_fabric: Factor
    pcie: Factor
    pcie_no_p2p: Factor
    pcie_no_p2p_families: tuple[str, ...] = ()
    inter_node_fast: Factor
    inter_node_fast_min_gbps_per_gpu: Annotated[float, Field(gt=0)]
    inter_node_medium: Factor
    inter_node_medium_min_gbps_per_gpu: Annotated[float, Field(gt=0)]
    inter_node_slow: Factor


class Efficiency(BaseModel):
    """Everything that turns peak TFLOPs into effective TFLOPs, and job overheads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default_mfu_bf16: Factor
    low_precision_speedup: Annotated[float, Field(ge=1)]
    family_mfu: tuple[FamilyMfu, ...]
    scaling: Scaling
    interruptible_overhead: Annotated[float, Field(ge=0)]
    memory_usable_fraction: Factor
    bytes_per_param: dict[str, Annotated[float, Field(gt=0)]]

    def mfu_bf16(self, family: str | None) -> float:
        """The BF16 MFU of ``family`` (the default when unpublished)."""
        return self.mfu_by_family().get(family or "", self.default_mfu_bf16)

    def mfu_by_family(self) -> dict[str, float]:
        return {fam: entry.bf16 for entry in self.family_mfu for fam in entry.families}


def load_efficiency(text: str) -> Efficiency:
    """Parse an efficiency TOML file (the layout of ``efficiency.toml``)."""
    data: dict[str, Any] = tomllib.loads(text)
    mfu, job = data["mfu"], data["job"]
    return Efficiency(
        default_mfu_bf16=mfu["default_bf16"],
        low_precision_speedup=mfu["low_precision_speedup"],
        family_mfu=tuple(FamilyMfu(**entry) for entry in mfu.get("family", [])),
        scaling=Scaling(**data["scaling"]),
        interruptible_overhead=job["interruptible_overhead"],
        memory_usable_fraction=job["memory_usable_fraction"],
        bytes_per_param=job["bytes_per_param"],
    )


@functools.cache
def default_efficiency() -> Efficiency:
    """The shipped defaults, read once."""
    package = __package__ or "pricing"
    return load_efficiency(resources.files(package).joinpath("efficiency.toml").read_text("utf-8"))
