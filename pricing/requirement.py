"""What a renter needs: a pydantic :class:`Requirement` over the offer schema, and presets.

Every constraint is optional; an empty requirement admits every offer. A constraint on a
field the offer does not publish (``None``) excludes the offer unless ``allow_unknown`` is
set: a renter who asks for InfiniBand should not get an offer that merely fails to say.
The one exception is documented on ``min_cpu_cores``.

A GPU in ``gpus`` may carry how many of it an offer has, as dstack spells a GPU requirement
(:class:`GpuChoice`: ``H100:8``, ``A100:2..8``, ``A100:80GB:8``): the API's ``gpus`` and the
CLI's ``--gpus`` are generated from this model, so both read it.

The filter itself is the polars expression :func:`pricing.expressions.qualifies`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    field_validator,
    model_validator,
)

from gpuscout.adapters.gpus import GpuSpec, gpus_named
from gpuscout.adapters.schema import Cooling, Fabric, GpuFormFactor, RentalTerm, StorageType

from .checklist import SEED_SERVER, checklist_requirement
from .names import refused_gpus
from .readings import VERSION_PATTERN

__all__ = [
    "PRESETS",
    "PRESET_ALIASES",
    "GpuChoice",
    "Requirement",
    "gpu_choice",
    "preset",
    "preset_name",
    "preset_names",
]


def _version(value: str) -> str:
    """A renter's version, checked here so the API's query and the CLI refuse it by name."""
    if not re.fullmatch(VERSION_PATTERN, value.strip()):
        raise ValueError(
            f"not a version: {value!r}; give major[.minor[.patch]], e.g. 12.4"
            " (each part at most 4 digits)"
        )
    return value.strip()


@dataclass(frozen=True, slots=True)
class GpuChoice:
    """One entry of a requirement's ``gpus``: a GPU name and, where given, how many GPUs of
    it an offer has, at least ``min_gpus`` and at most ``max_gpus`` (``None``: no bound)."""

    name: str
    min_gpus: int | None = None
    max_gpus: int | None = None

    @property
    def counted(self) -> bool:
        """Whether the entry says how many GPUs an offer has."""
        return self.min_gpus is not None or self.max_gpus is not None

    def models(self) -> tuple[GpuSpec, ...]:
        """The catalog models the name means (:func:`adapters.gpus.gpus_named`)."""
        return gpus_named(self.name)


_COUNT = re.compile(r"(?P<low>\d+)?(?P<range>\.\.)?(?P<high>\d+)?")
_MEMORY_PART = re.compile(r"\d+(?:\.\d+)? ?(?:gb|g)", re.IGNORECASE)
_COUNT_FORMS = "a count (8) or a range (2..8, 2.., ..8)"


def _count(part: str, text: str) -> tuple[int | None, int | None]:
    """The bounds of a count part: ``8``, ``2..8``, ``2..`` or ``..8``."""
    found = _COUNT.fullmatch(part)
    if not found or not (found["low"] or found["high"]):
        raise ValueError(f"bad GPU count {part!r} in {text!r}: give {_COUNT_FORMS}")
    low = int(found["low"]) if found["low"] else None
    high = int(found["high"]) if found["high"] else None
    if not found["range"]:
        low = high = int(part)
    if (low is not None and low < 1) or (high is not None and high < 1):
        raise ValueError(f"GPU count {part!r} in {text!r}: an offer has at least 1 GPU")
    if low is not None and high is not None and low > high:
        raise ValueError(f"GPU count {part!r} in {text!r}: the range is empty ({low} > {high})")
    return low, high


def gpu_choice(text: str) -> GpuChoice:
    """A ``gpus`` entry read as dstack spells a GPU requirement: ``NAME``, ``NAME:COUNT``
    with a count or a range of GPUs per offer (``H100:8``, ``A100:2..8``, ``L4:..4``), and
    optionally a memory part (``A100:80GB:8`` is ``A100 80GB``, 8 per offer). A ValueError
    names what was wrong.

    >>> gpu_choice("A100:2..8")
    GpuChoice(name='A100', min_gpus=2, max_gpus=8)
    >>> gpu_choice("A100:80GB:8")
    GpuChoice(name='A100 80GB', min_gpus=8, max_gpus=8)
    """
    name, *parts = (part.strip() for part in text.split(":"))
    if not name:
        raise ValueError(f"no GPU name before ':' in {text!r}: give NAME:COUNT, e.g. H100:8")
    bounds: tuple[int | None, int | None] | None = None
    for part in parts:
        if _MEMORY_PART.fullmatch(part):
            name = f"{name} {part}"
        elif not part:
            raise ValueError(f"no GPU count after ':' in {text!r}: give {_COUNT_FORMS}")
        elif bounds is None:
            bounds = _count(part, text)
        else:
            raise ValueError(f"two GPU counts in {text!r}: give one, {_COUNT_FORMS}")
    low, high = bounds or (None, None)
    return GpuChoice(name, low, high)


#: ``major[.minor[.patch]]`` (:data:`pricing.readings.VERSION_PATTERN`).
Version = Annotated[str, Field(max_length=20), AfterValidator(_version)]
NonNegative = Annotated[float, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]


class Requirement(BaseModel):
    """Constraints on offers. Units are in the field names; ``None``/empty = no constraint."""

    #: NaN and Infinity are not sizes or bounds (JSON bodies and CLI options can carry them).
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # GPU
    gpus: tuple[str, ...] = Field(
        default=(),
        description="GPU models: canonical name, family (H100) or vendor (amd), or a name"
        ' as providers write it ("H100 SXM", "A100 80GB", "4090D", "昇腾910B"); NAME:COUNT'
        " also asks how many GPUs of it an offer has, as dstack spells it: a count or a"
        ' range ("H100:8", "A100:2..8", "A100:80GB:8")',
    )
    min_gpus: NonNegative | None = Field(
        default=None, description="GPUs per offer (instance), at least"
    )
    max_gpus: NonNegative | None = Field(default=None, description="GPUs per offer, at most")
    min_gpu_memory_gb: Positive | None = Field(default=None, description="GB per GPU, at least")
    min_total_gpu_memory_gb: Positive | None = Field(
        default=None, description="GB of all the offer's GPUs together, at least"
    )
    form_factors: tuple[GpuFormFactor, ...] = Field(
        default=(), description="GPU form factors (sxm, pcie, ...); an unstated one is left out"
    )
    nvlink: bool | None = Field(
        default=None, description="True: NVLink/NVSwitch/bridge between GPUs; False: without"
    )
    # CPU, memory, storage
    min_cpu_cores: Positive | None = Field(
        default=None,
        description="physical cores; where only vCPUs are published, vcpus / 2 (2 threads/core)",
    )
    min_cpu_sockets: PositiveInt | None = Field(
        default=None, description="CPU sockets (physical CPUs) per instance, at least"
    )
    server_cpu: bool | None = Field(
        default=None,
        description="True: a server CPU line named in cpu_model (Xeon, EPYC, Opteron, Arm"
        " server parts such as Graviton, Grace or Altra); False: a desktop or workstation"
        " line (Core, Ryzen, Threadripper); a name that says neither is unknown",
    )
    min_vcpus: Positive | None = Field(default=None, description="vCPUs (threads), at least")
    min_vcpus_per_gpu: Positive | None = Field(
        default=None,
        description="vCPUs per GPU (a slice counts as its fraction); the ranking flags"
        " offers below 2 whatever this says",
    )
    min_ram_gb: Positive | None = Field(default=None, description="system RAM in GB, at least")
    min_ram_gb_per_gpu: Positive | None = Field(
        default=None,
        description="GB of RAM per GPU; the ranking flags offers below 8 whatever this says",
    )
    ram_ecc: bool | None = Field(default=None, description="True: ECC RAM; False: without")
    min_storage_gb: Positive | None = Field(
        default=None, description="local storage in GB, at least"
    )
    storage_types: tuple[StorageType, ...] = Field(
        default=(), description="local storage kinds allowed (nvme, ssd, ...)"
    )
    min_disk_bandwidth_mbps: Positive | None = Field(
        default=None,
        description="disk bandwidth as the provider measures it (Vast.ai: MB/s), at least",
    )
    # network
    min_bandwidth_down_mbps: Positive | None = Field(
        default=None, description="internet download bandwidth in Mbit/s, at least"
    )
    min_bandwidth_up_mbps: Positive | None = Field(
        default=None, description="internet upload bandwidth in Mbit/s, at least"
    )
    fabrics: tuple[Fabric, ...] = Field(
        default=(), description="cluster fabrics between nodes allowed (infiniband, roce, ...)"
    )
    min_fabric_gbps: Positive | None = Field(
        default=None, description="fabric bandwidth per node in Gbit/s, at least"
    )
    multi_node: bool | None = Field(
        default=None, description="True: offers that can be clustered across nodes"
    )
    allow_ethernet: bool = Field(
        default=False,
        description="let a multi-node job span nodes joined by plain Ethernet (no RDMA)",
    )
    # power and cooling
    min_psu_watts: Positive | None = Field(
        default=None,
        description="power supply capacity in W, all PSUs together (4 x 2000 W is 8000)",
    )
    psu_redundant: bool | None = Field(
        default=None,
        description='True: redundant PSUs (a spare: "2+2", "N+1", "1+1", "2N");'
        ' False: without ("2+0", "N")',
    )
    cooling: tuple[Cooling, ...] = Field(default=(), description="cooling kinds allowed")
    # chassis
    min_chassis_u: Positive | None = Field(
        default=None, description='chassis height in rack units, at least ("4U" is 4)'
    )
    # software
    os_images: tuple[Annotated[str, Field(min_length=1, max_length=100)], ...] = Field(
        default=(),
        description='OS images, any of: "Ubuntu 22.04" matches an image whose name states'
        ' those words side by side, case and separators aside ("ubuntu-22.04", "Ubuntu'
        ' 22.04.3 LTS"), not one that does not say it ("lambda-stack-22-04")',
    )
    min_cuda_version: Version | None = Field(
        default=None,
        description="CUDA version the offer states, at least (major[.minor[.patch]]:"
        ' "12.4" < "12.10")',
    )
    min_driver_version: Version | None = Field(
        default=None, description='NVIDIA driver version the offer states, at least ("535.104")'
    )
    frameworks: tuple[Annotated[str, Field(min_length=1, max_length=100)], ...] = Field(
        default=(),
        description="frameworks installed, any of, case-insensitive, version aside"
        " (pytorch, tensorflow)",
    )
    backup_service: bool | None = Field(
        default=None, description="True: the provider offers backup and recovery"
    )
    # where and who
    regions: tuple[str, ...] = Field(
        default=(), description="region prefixes, case-insensitive (us-east matches us-east-1)"
    )
    countries: tuple[str, ...] = Field(default=(), description="ISO 3166-1 alpha-2")
    providers: tuple[str, ...] = Field(
        default=(), description="providers, or sellers behind them (a price sheet's seller)"
    )
    exclude_providers: tuple[str, ...] = Field(
        default=(), description="providers or sellers left out"
    )
    # term and price
    terms: tuple[RentalTerm, ...] = Field(default=(), description="allowed terms; empty: all")
    exclude_interruptible: bool = Field(
        default=False, description="leave out interruptible (spot, preemptible) terms"
    )
    max_commitment_hours: NonNegative | None = Field(
        default=None, description="longest commitment allowed (730 = one month)"
    )
    max_usd_per_hour: Positive | None = Field(
        default=None, description="USD per hour of the whole instance, at most"
    )
    max_usd_per_gpu_hour: Positive | None = Field(
        default=None, description="USD per GPU-hour, at most"
    )
    # service and availability
    min_reliability: Annotated[float | None, Field(ge=0, le=1)] = Field(
        default=None, description="marketplace host reliability, 0-1, at least"
    )
    support_tiers: tuple[Annotated[str, Field(min_length=1, max_length=100)], ...] = Field(
        default=(), description="the provider's support tiers allowed, case-insensitive"
    )
    min_sla_uptime_pct: Annotated[float | None, Field(gt=0, le=100)] = Field(
        default=None, description="uptime the provider's SLA promises, in %, at least"
    )
    verified_only: bool = Field(
        default=False, description="only hosts the marketplace has verified"
    )
    datacenter_only: bool = Field(
        default=False, description="only machines in a datacenter (no home hosts)"
    )
    available_now: bool = Field(
        default=False,
        description="leave out offers the provider says are not available now"
        " (otherwise they rank after the available ones)",
    )
    max_price_age_hours: Positive | None = Field(
        default=None, description="oldest fetched_at allowed, in hours before now"
    )
    min_availability: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="in stock in at least this share of its provider's snapshots of the last"
        " 7 days (0.8: 80%), from the stored snapshots; none stored is unknown",
    )
    allow_unknown: bool = Field(
        default=False, description="admit offers that do not publish a constrained field"
    )

    @field_validator("gpus")
    @classmethod
    def _known_gpus(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        message = refused_gpus([gpu_choice(text).name for text in value])
        if message:
            raise ValueError(message)
        return value

    @field_validator("countries")
    @classmethod
    def _countries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [c for c in value if len(c) != 2 or not c.isalpha()]
        if bad:
            raise ValueError(f"not ISO 3166-1 alpha-2 codes: {', '.join(bad)}")
        return tuple(c.upper() for c in value)

    @field_validator("os_images", "frameworks", "support_tiers")
    @classmethod
    def _words(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        blank = [v for v in value if not re.search(r"[0-9A-Za-z]", v)]
        if blank:
            raise ValueError(f"names need a letter or digit: {', '.join(map(repr, blank))}")
        return tuple(v.strip() for v in value)

    @model_validator(mode="after")
    def _ranges(self) -> Requirement:
        if (
            self.min_gpus is not None
            and self.max_gpus is not None
            and self.min_gpus > self.max_gpus
        ):
            raise ValueError(f"max_gpus ({self.max_gpus}) is below min_gpus ({self.min_gpus})")
        both = set(self.providers) & set(self.exclude_providers)
        if both:
            raise ValueError(f"exclude_providers: {', '.join(sorted(both))} also included")
        return self

    def gpu_choices(self) -> tuple[GpuChoice, ...]:
        """The ``gpus`` entries read (:func:`gpu_choice`): each name and its count."""
        return tuple(gpu_choice(text) for text in self.gpus)

    def gpu_names(self) -> tuple[str, ...]:
        """The GPU names of ``gpus`` without their counts (``H100:8`` is ``H100``)."""
        return tuple(choice.name for choice in self.gpu_choices())

    def gpu_models(self) -> tuple[str, ...]:
        """Canonical catalog names the ``gpus`` queries resolve to (empty: any GPU): a
        model, family or vendor as named, else what the raw-name resolver reads in the name
        (:func:`adapters.gpus.gpus_named`: ``"H100 SXM"`` is ``H100-SXM5-80GB``); a count
        (``H100:8``) does not change which."""
        names: dict[str, None] = {}
        for choice in self.gpu_choices():
            for spec in choice.models():
                names[spec.name] = None
        return tuple(names)

    def allowed_terms(self) -> tuple[RentalTerm, ...]:
        """The terms left after ``terms`` and ``max_commitment_hours``."""
        chosen = self.terms or tuple(RentalTerm)
        limit = self.max_commitment_hours
        return tuple(
            t
            for t in chosen
            if (limit is None or t.commitment_hours is None or float(t.commitment_hours) <= limit)
            and not (self.exclude_interruptible and t is RentalTerm.INTERRUPTIBLE)
        )

    def merged(self, **changes: Any) -> Requirement:
        """A copy with ``changes`` applied, validated again (a preset plus CLI options)."""
        data = self.model_dump(exclude_unset=True)
        data.update({k: v for k, v in changes.items() if v is not None and v != ()})
        return Requirement.model_validate(data)


#: Named common needs. ``8xa100-pretrain`` is the renter's example training server (8x
#: A100 80GB, 128 cores, 512 GB RAM, 15 TB NVMe, 400G InfiniBand); ``full-checklist`` is
#: every item of the renter's checklist (:mod:`pricing.checklist`) at its thresholds, the
#: example server's own figures where it names them.
PRESETS: dict[str, dict[str, Any]] = {
    "8xa100-pretrain": dict(SEED_SERVER),
    "full-checklist": checklist_requirement(),
    "1xh100": {"gpus": ("H100",), "min_gpus": 1, "max_gpus": 1},
    "8xh100": {"gpus": ("H100",), "min_gpus": 8, "max_gpus": 8},
    "8xh100-ib": {
        "gpus": ("H100",),
        "min_gpus": 8,
        "max_gpus": 8,
        "nvlink": True,
        "fabrics": (Fabric.INFINIBAND,),
    },
    "1xa100-80gb": {
        "gpus": ("A100-SXM4-80GB", "A100-PCIE-80GB"),
        "min_gpus": 1,
        "max_gpus": 1,
    },
    "8xa100": {"gpus": ("A100",), "min_gpus": 8, "max_gpus": 8},
    "8xh200": {"gpus": ("H200",), "min_gpus": 8, "max_gpus": 8},
    "8xmi300x": {"gpus": ("MI300X",), "min_gpus": 8, "max_gpus": 8},
    "24gb-consumer": {
        "gpus": ("RTX-4090", "RTX-3090", "RTX-3090-TI"),
        "min_gpus": 1,
        "min_gpu_memory_gb": 24,
    },
    "48gb-workstation": {
        "gpus": ("RTX-A6000", "RTX-6000-ADA", "L40S", "L40", "A40"),
        "min_gpu_memory_gb": 48,
    },
}


#: The presets' former names, still accepted until the next release but listed nowhere:
#: old name -> name. Who gives one is told the new name (the API's ``Deprecation``
#: header, a note on the CLI's stderr).
PRESET_ALIASES: dict[str, str] = {
    "seed-8xa100": "8xa100-pretrain",
    "seed-checklist": "full-checklist",
}


def preset_names() -> tuple[str, ...]:
    return tuple(PRESETS)


def preset_name(name: str) -> str:
    """``name``, or the name a former preset name (:data:`PRESET_ALIASES`) now goes by."""
    return PRESET_ALIASES.get(name, name)


def preset(name: str) -> Requirement:
    """The preset ``name`` (or a former name of it); KeyError lists the known ones."""
    try:
        data = PRESETS[preset_name(name)]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None
    return Requirement.model_validate(data)
