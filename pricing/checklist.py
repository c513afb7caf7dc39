"""The renter's checklist, declared once: what a renter checks before renting a training server.

The seed (``../shared/seed/``) walks a renter through eight groups: compute, memory and
storage, network, power and cooling, chassis, software, cost and term, support. Each
:class:`ChecklistItem` below is one thing it asks for, with the threshold it gives, the
offer fields behind it and the :class:`~pricing.requirement.Requirement` constraints that
decide it: the checklist of an offer (:mod:`pricing.offer_checklist`) runs those very
filters, so an item and its filter never disagree, and the ``full-checklist`` preset is
the union of the items' constraints (:func:`checklist_requirement`).

Where the seed gives no number, the threshold says which reading was taken and why
("hundreds of GB" is 200 GB or more; a CUDA stack is a stated CUDA 11.0 or later, the
first release for the A100, the seed's GPU). Two items are not filters: price and term
(every offer states them; comparing them is what the ranking does) and support (met when
the provider states a support tier or an SLA, unknown otherwise).

Plain data: no polars, no pydantic, so :mod:`pricing.requirement` can build its preset
from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from gpuscout.adapters.schema import Cooling, Fabric, StorageType

__all__ = ["CHECKLIST", "SEED_SERVER", "ChecklistItem", "checklist_requirement"]


@dataclasses.dataclass(frozen=True, slots=True)
class ChecklistItem:
    """One item of the renter's checklist."""

    key: str
    """stable name (API, tests)"""
    group: str
    """the :data:`adapters.schema.FIELD_GROUPS` title it belongs to"""
    item: str
    """what the seed asks, in a few words"""
    threshold: str
    """what meets it"""
    fields: tuple[str, ...]
    """the offer's fields behind it (frame columns), shown as the value behind the status"""
    requirement: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """the Requirement constraints that decide it; empty: met when the offer states any
    of ``fields``, unknown otherwise"""


def _constraints(**values: Any) -> Mapping[str, Any]:
    return MappingProxyType(values)


#: The seed's preferred training GPUs (its section on compute).
SEED_GPUS = ("H100", "H800", "A100", "A800", "V100")

CHECKLIST: tuple[ChecklistItem, ...] = (
    ChecklistItem(
        "server_cpu", "Compute", "Server-class CPUs", "a server line: Xeon, EPYC, ...",
        ("cpu_model",), _constraints(server_cpu=True),
    ),
    ChecklistItem(
        "cpu_sockets", "Compute", "At least two CPUs", ">= 2 CPU sockets",
        ("cpu_sockets",), _constraints(min_cpu_sockets=2),
    ),
    ChecklistItem(
        "gpu_count", "Compute", "Four or more GPUs", ">= 4 GPUs per instance",
        ("gpu_count",), _constraints(min_gpus=4),
    ),
    ChecklistItem(
        "gpu_model", "Compute", "A training GPU the seed names", ", ".join(SEED_GPUS),
        ("gpu_model",), _constraints(gpus=SEED_GPUS),
    ),
    ChecklistItem(
        "ram", "Memory and storage", "Hundreds of GB of RAM", ">= 200 GB",
        ("ram_gb",), _constraints(min_ram_gb=200),
    ),
    ChecklistItem(
        "ram_ecc", "Memory and storage", "ECC RAM", "ECC stated",
        ("ram_ecc",), _constraints(ram_ecc=True),
    ),
    ChecklistItem(
        "fast_storage", "Memory and storage", "Fast SSD / NVMe storage", "NVMe or SSD",
        ("storage_type", "storage_gb"),
        _constraints(storage_types=(StorageType.NVME, StorageType.SSD)),
    ),
    ChecklistItem(
        "fabric", "Network", "InfiniBand at 400G or more", "InfiniBand, >= 400 Gbit/s",
        ("fabric", "fabric_gbps"),
        _constraints(fabrics=(Fabric.INFINIBAND,), min_fabric_gbps=400),
    ),
    ChecklistItem(
        "psu_watts", "Power and cooling", "Power supplies of 2000 W or more",
        ">= 2000 W, all PSUs together", ("psu_watts",), _constraints(min_psu_watts=2000),
    ),
    ChecklistItem(
        "psu_redundancy", "Power and cooling", "Redundant power supplies",
        "a spare PSU (2+2, N+1, 1+1, 2N)", ("psu_redundancy",),
        _constraints(psu_redundant=True),
    ),
    ChecklistItem(
        "cooling", "Power and cooling", "Air or liquid cooling", "cooling stated",
        ("cooling",), _constraints(cooling=(Cooling.AIR, Cooling.LIQUID)),
    ),
    ChecklistItem(
        "chassis", "Chassis", "A 4U or taller rack server", ">= 4U",
        ("chassis_form_factor",), _constraints(min_chassis_u=4),
    ),
    ChecklistItem(
        "os", "Software", "A stable OS", "Ubuntu 22.04 LTS (the seed's) or 24.04 LTS",
        ("os_images",), _constraints(os_images=("Ubuntu 22.04", "Ubuntu 24.04")),
    ),
    ChecklistItem(
        "cuda", "Software", "A CUDA stack", "CUDA >= 11.0 stated (the first for the A100)",
        ("cuda_version", "driver_version"), _constraints(min_cuda_version="11.0"),
    ),
    ChecklistItem(
        "frameworks", "Software", "PyTorch or TensorFlow", "either installed",
        ("frameworks",), _constraints(frameworks=("pytorch", "tensorflow")),
    ),
    ChecklistItem(
        "backup", "Software", "Backup and recovery", "a backup service",
        ("backup_service",), _constraints(backup_service=True),
    ),
    ChecklistItem(
        "price_term", "Price and term", "Price and rental term",
        "a price and its term (every offer; the ranking compares them)",
        ("usd_per_hour", "term"),
    ),
    ChecklistItem(
        "support", "Support", "Technical support", "a support tier or an SLA stated",
        ("support_tier", "sla_uptime_pct"),
    ),
)  # fmt: skip

#: The seed's example server: 8x A100-80G, 2x 64-core EPYC, 512 GB ECC RAM, 8x 1.92 TB SSD
#: (~15 TB), 400G InfiniBand (the ``8xa100-pretrain`` preset).
SEED_SERVER: Mapping[str, Any] = _constraints(
    gpus=("A100-SXM4-80GB", "A100-PCIE-80GB"),
    min_gpus=8,
    max_gpus=8,
    min_cpu_cores=128,
    min_ram_gb=512,
    min_storage_gb=15000,
    storage_types=(StorageType.NVME, StorageType.SSD),
    fabrics=(Fabric.INFINIBAND,),
    min_fabric_gbps=400,
)


def checklist_requirement() -> dict[str, Any]:
    """Every item's constraints, the example server's figures where it is stricter (8 GPUs
    of A100-80GB, 512 GB RAM): the ``full-checklist`` preset's fields."""
    fields: dict[str, Any] = {}
    for entry in CHECKLIST:
        fields.update(entry.requirement)
    return {**fields, **SEED_SERVER}
