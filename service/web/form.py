"""The explorer's form, generated from the API's query model so both take the same names.

Every parameter of :data:`service.api.offers_query.OffersQuery` is a control here (a test
pins it), grouped the way a renter thinks: GPU, where and who, term and price, network,
the job, the checklist's groups (CPU, memory and storage; power and cooling; chassis; software;
support), then the rest. The controls carry the values of the request's query string: the
URL is the page's state.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args, get_origin

from starlette.datastructures import QueryParams

from gpuscout.pricing.serving import ServePrecision
from gpuscout.pricing.serving_models import serving_models
from gpuscout.service.api.offers_query import LIST_PARAMS, OffersQuery

__all__ = ["GROUPS", "NOT_A_SEARCH", "Control", "Group", "clean_query", "form_groups"]

Kind = Literal["text", "number", "select", "multi", "check", "tristate"]

#: Group title -> parameter names, in display order; unlisted parameters go to "More".
GROUPS: dict[str, tuple[str, ...]] = {
    "GPU": ("preset", "gpus", "min_gpus", "max_gpus", "min_gpu_memory_gb", "form_factors"),
    "Where and who": ("providers", "exclude_providers", "regions", "countries"),
    "Term and price": ("terms", "max_commitment_hours", "max_usd_per_hour", "max_usd_per_gpu_hour"),
    "Job": ("hours", "gpu_hours", "model_params", "tokens", "job_gpus", "precision"),
    "Network": ("fabrics", "min_fabric_gbps", "nvlink", "multi_node"),
    "CPU, memory and storage": (
        "server_cpu", "min_cpu_sockets", "min_cpu_cores", "min_ram_gb", "ram_ecc",
        "min_storage_gb", "storage_types", "min_disk_bandwidth_mbps",
    ),
    "Power and cooling": ("min_psu_watts", "psu_redundant", "cooling"),
    "Chassis": ("min_chassis_u",),
    "Software": (
        "os_images", "min_cuda_version", "min_driver_version", "frameworks", "backup_service",
    ),
    "Support": ("support_tiers", "min_sla_uptime_pct"),
    "Serve a model (ranked by $ per million tokens)": (
        "serve", "scenario", "tokens_per_day", "input_tokens", "output_tokens", "ttft_s",
        "tpot_s",
    ),
}  # fmt: skip
#: Presentation, not a filter: shown with the table rather than in the form groups.
PRESENTATION: tuple[str, ...] = ("sort", "limit")

_LABELS: dict[str, str] = {
    "serve": "Model to serve (blank: rank for the job)",
    "tokens_per_day": "Output tokens a day",
    "ttft_s": "Time to first token, s (server)",
    "tpot_s": "Time per output token, s (server)",
    "gpus": "GPU models or families",
    "job_gpus": "GPUs for the job",
    "min_gpus": "Min GPUs per offer",
    "max_gpus": "Max GPUs per offer",
    "hours": "Job hours (wall clock on one offer)",
    "gpu_hours": "Job GPU-hours",
    "model_params": "Model parameters",
    "tokens": "Training tokens",
    "mfu": "MFU (replace the model)",
    "server_cpu": "Server-class CPU (Xeon, EPYC, ...)",
    "min_cpu_sockets": "Min CPU sockets",
    "min_psu_watts": "Min PSU watts (all PSUs together)",
    "psu_redundant": "Redundant PSUs (2+2, N+1)",
    "min_chassis_u": "Min chassis height (U)",
    "os_images": "OS images (e.g. Ubuntu 22.04)",
    "min_cuda_version": "Min CUDA version",
    "min_driver_version": "Min driver version",
    "frameworks": "Frameworks (pytorch, tensorflow)",
    "backup_service": "Backup service",
    "support_tiers": "Support tiers",
    "min_disk_bandwidth_mbps": "Min disk bandwidth (MB/s)",
    "min_gpu_memory_gb": "Min GPU memory (GB per GPU)",
    "max_commitment_hours": "Max commitment (hours)",
    "max_usd_per_hour": "Max USD per hour (instance)",
    "max_usd_per_gpu_hour": "Max USD per GPU-hour",
    "min_fabric_gbps": "Min fabric speed (Gbps)",
    "nvlink": "NVLink",
    "multi_node": "Multi-node",
    "min_cpu_cores": "Min CPU cores",
    "min_ram_gb": "Min RAM (GB)",
    "ram_ecc": "ECC RAM",
    "min_storage_gb": "Min storage (GB)",
    "min_sla_uptime_pct": "Min SLA uptime (%)",
    "min_total_gpu_memory_gb": "Min GPU memory of the offer (GB, all GPUs)",
    "min_vcpus_per_gpu": "Min vCPUs per GPU",
    "min_ram_gb_per_gpu": "Min RAM per GPU (GB)",
    "job_storage_gb": "Job disk per instance (GB)",
    "egress_gb": "Job egress (GB)",
    "min_vcpus": "Min vCPUs",
    "min_bandwidth_down_mbps": "Min public bandwidth down (Mbps)",
    "min_bandwidth_up_mbps": "Min public bandwidth up (Mbps)",
    "allow_ethernet": "Allow Ethernet between nodes",
    "max_price_age_hours": "Max price age (hours)",
    "bytes_per_param": "Bytes per parameter (training state)",
}


@dataclasses.dataclass(frozen=True)
class Control:
    """One form control: its API name, how it is drawn, and the request's value(s)."""

    name: str
    label: str
    kind: Kind
    description: str | None
    options: tuple[str, ...] = ()
    values: tuple[str, ...] = ()

    @property
    def value(self) -> str:
        return ",".join(self.values)


@dataclasses.dataclass(frozen=True)
class Group:
    title: str
    controls: tuple[Control, ...]
    open: bool


def _unwrap(annotation: Any) -> list[Any]:
    """The non-None members of an annotation, ``Annotated`` stripped."""
    out = []
    for arg in get_args(annotation) or (annotation,):
        if get_origin(arg) is typing.Annotated:
            arg = get_args(arg)[0]
        if arg is not type(None):
            out.append(arg)
    return out


def _options(kind_of: Any) -> tuple[str, ...]:
    if isinstance(kind_of, type) and issubclass(kind_of, enum.Enum):
        return tuple(str(m.value) for m in kind_of)
    if get_origin(kind_of) is Literal:
        return tuple(str(v) for v in get_args(kind_of))
    return ()


def _kind(name: str, annotation: Any) -> tuple[Kind, tuple[str, ...]]:
    if get_origin(annotation) is Literal:
        return "select", _options(annotation)
    if name in LIST_PARAMS:
        (item,) = get_args(annotation)
        options = _options(item)
        return ("multi", options) if options else ("text", ())
    members = _unwrap(annotation)
    optional = type(None) in get_args(annotation)
    if members == [bool]:
        return ("tristate" if optional else "check"), ()
    options = _options(members[0]) if len(members) == 1 else ()
    if options:
        return "select", options
    if members and all(m in (int, float) for m in members):
        return "number", ()
    return "text", ()


def _control(name: str, params: QueryParams) -> Control:
    info = OffersQuery.model_fields[name]
    kind, options = _kind(name, info.annotation)
    if name == "serve":  # the model catalog's names
        kind, options = "select", tuple(m.name for m in serving_models())
    elif name == "precision":  # serving a model also takes FP4
        options = (*options, ServePrecision.FP4.value)
    raw = params.getlist(name)
    if name in LIST_PARAMS:
        values = tuple(p.strip() for v in raw for p in v.split(",") if p.strip())
    else:
        values = tuple(v for v in raw[-1:] if v != "")
        if not values and kind == "select" and info.default is not None:
            values = (str(getattr(info.default, "value", info.default)),)  # what applies
    return Control(
        name=name,
        label=_LABELS.get(name, name.replace("_", " ").capitalize()),
        kind=kind,
        description=info.description,
        options=options,
        values=values,
    )


#: Query parameters of ``/v1/offers`` that are not part of a search: ``cursor``, the API's
#: token for the next page of one answer. The pages show a query's first page (``limit``
#: sets its length), so a cursor is neither a control nor kept in their links, where a
#: cursor of another query made "This answer as JSON" an error.
NOT_A_SEARCH: frozenset[str] = frozenset({"cursor"})


def form_groups(params: QueryParams) -> list[Group]:
    """Every query parameter of a search as a control, grouped; a group with a value set is
    open."""
    placed = {n for names in GROUPS.values() for n in names} | set(PRESENTATION) | NOT_A_SEARCH
    rest = tuple(n for n in OffersQuery.model_fields if n not in placed)
    groups = []
    for title, names in (*GROUPS.items(), ("More", rest)):
        controls = tuple(_control(n, params) for n in names)
        is_open = title in ("GPU", "Job") or any(c.values for c in controls)
        groups.append(Group(title, controls, is_open))
    return groups


def presentation(params: QueryParams) -> dict[str, Control]:
    return {n: _control(n, params) for n in PRESENTATION}


def clean_query(params: Mapping[str, str] | QueryParams) -> QueryParams:
    """The query without empty values (a GET form sends every blank input as ``name=``)
    and without :data:`NOT_A_SEARCH`."""
    items: Sequence[tuple[str, str]] = (
        params.multi_items() if isinstance(params, QueryParams) else list(params.items())
    )
    return QueryParams([(k, v) for k, v in items if v.strip() != "" and k not in NOT_A_SEARCH])
