"""The options of ``gpuscout offers``, generated from the engine's models, named as the API.

Every field of :class:`~pricing.requirement.Requirement` and :class:`~pricing.job.Job` is
an option, named after the API's query parameter (``gpus`` -> ``--gpus``; the job's GPU
count is ``--job-gpus`` as the API's ``job_gpus``), with the field's description as its
help: a field added to either model is an option of the CLI and a parameter of the API at
once. A list field takes the option repeatedly (``--gpus H100 --gpus A100``) or
comma-separated (``--gpus H100,A100``), as the API.

:data:`ALIASES` are the other spellings each option accepts (the singular of a list option,
and the CLI's older names): documented here and in ``--help``, checked by a test against
the API's parameters. Where another command's old name meant something else or is
retired (``history --gpu``, ``estimate --gpu``/``--count``, ``subscribe --gpus`` as a job
GPU count), :mod:`.deprecated` keeps it working, hidden, with a one-line note.
"""

from __future__ import annotations

import enum
import inspect
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Union, get_args, get_origin

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gpuscout.pricing.job import Job
from gpuscout.pricing.names import UnknownName
from gpuscout.pricing.requirement import Requirement

from .errors import typed_spelling

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "ALIASES",
    "INTEGER_FIELDS",
    "JOB_NAMES",
    "OptionSpec",
    "field_options",
    "fields_from_options",
    "model_options",
    "option_name",
    "spelled_providers",
    "split_commas",
]

#: API parameter -> the Job field it sets, where the names differ (as the API's JOB_PARAMS).
JOB_NAMES: dict[str, str] = {
    "job_gpus": "gpus",
    "job_storage_gb": "storage_gb",
    "model_params": "params",
}

#: Other spellings an option accepts: the singular of a list option, older CLI names.
ALIASES: dict[str, tuple[str, ...]] = {
    "gpus": ("--gpu",),
    "providers": ("--provider",),
    "exclude_providers": ("--exclude-provider",),
    "terms": ("--term",),
    "regions": ("--region",),
    "countries": ("--country",),
    "fabrics": ("--fabric", "--interconnect"),
    "form_factors": ("--form-factor",),
    "storage_types": ("--storage-type",),
    "model_params": ("--params",),
}

#: Fields the CLI reads as whole numbers (a count of GPUs per offer).
INTEGER_FIELDS: frozenset[str] = frozenset({"min_gpus", "max_gpus"})


def option_name(param: str) -> str:
    """The CLI option of an API parameter: ``min_gpus`` -> ``--min-gpus``."""
    return "--" + param.replace("_", "-")


def spelled_providers(requirement: Requirement, frame: Callable[[], pl.DataFrame]) -> Requirement:
    """``requirement`` with its ``--providers`` and ``--exclude-providers`` spelled as known
    (a name differing only in case is the known one): the adapters' names and every
    provider and seller of the offers ``frame()`` gives, loaded only when a name is given
    (:func:`pricing.names.check_providers`). An :class:`~pricing.names.UnknownName` (a
    ValueError) for any other name, its message naming the option: ``--providers: unknown
    provider 'lamda' (did you mean 'lambda'?); known: ...``, as ``/v1/offers`` words it."""
    if not (requirement.providers or requirement.exclude_providers):
        return requirement
    from gpuscout.adapters import provider_names
    from gpuscout.pricing.names import check_providers, known_providers

    try:
        return check_providers(requirement, known_providers(frame(), provider_names()))
    except UnknownName as exc:
        raise UnknownName(exc.field, f"{option_name(exc.field)}: {exc.message}") from None


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """``(base type, optional)`` of a field annotation (Annotated and ``| None`` removed)."""
    optional = False
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            optional = optional or len(args) < len(get_args(annotation))
            annotation = args[0] if len(args) == 1 else annotation
            if len(args) != 1:
                return annotation, optional
        else:
            return annotation, optional


class OptionSpec:
    """One generated option: the API parameter, the model field, the typer parameter."""

    __slots__ = ("field", "info", "model", "param")

    def __init__(self, param: str, model: type[BaseModel], field: str, info: FieldInfo) -> None:
        self.param, self.model, self.field, self.info = param, model, field, info

    @property
    def names(self) -> tuple[str, ...]:
        return (option_name(self.param), *ALIASES.get(self.param, ()))

    @property
    def is_list(self) -> bool:
        return get_origin(_unwrap(self.info.annotation)[0]) is tuple

    def parameter(self) -> inspect.Parameter:
        base, _optional = _unwrap(self.info.annotation)
        help_text = self.info.description or ""
        if self.is_list:
            (item, _ellipsis) = get_args(base)
            if isinstance(item, type) and issubclass(item, enum.Enum):
                help_text += f" (of: {', '.join(str(m.value) for m in item)})"
            annotation: Any = list[str] | None  # commas split, then the model validates
            default: Any = None
        elif base is bool and self.info.default is None:
            annotation, default = bool | None, None  # --x / --no-x, unset by default
        elif base is bool:
            annotation, default = bool, bool(self.info.default)
        else:
            kind = int if self.field in INTEGER_FIELDS else base
            annotation, default = kind | None, None
        panel = "What to rent" if self.model is Requirement else "The job"
        option = typer.Option(
            *self.names, help=help_text, show_default=False, rich_help_panel=panel
        )
        return inspect.Parameter(
            self.param,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[annotation, option],
            default=default,
        )


def model_options() -> list[OptionSpec]:
    """Every Requirement field, then every Job field, as an option named as the API."""
    specs = [
        OptionSpec(name, Requirement, name, info) for name, info in Requirement.model_fields.items()
    ]
    by_field = {field: param for param, field in JOB_NAMES.items()}
    for field, info in Job.model_fields.items():
        specs.append(OptionSpec(by_field.get(field, field), Job, field, info))
    return specs


def split_commas(values: list[Any] | None) -> tuple[Any, ...]:
    """``["H100,A100", "L40S"]`` -> ``("H100", "A100", "L40S")``."""
    return tuple(part.strip() for v in values or () for part in str(v).split(",") if part.strip())


def fields_from_options(
    options: Mapping[str, Any], specs: list[OptionSpec]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The Requirement fields, the Job fields and the API query (its parameter names) the
    given ``options`` (typer's values by parameter) set; unset and default-off ones left out."""
    requirement: dict[str, Any] = {}
    job: dict[str, Any] = {}
    query: dict[str, Any] = {}
    for spec in specs:
        value = options.get(spec.param)
        if spec.is_list:
            value = split_commas(value) or None
        if value is None or (value is False and spec.info.default is False):
            continue
        (requirement if spec.model is Requirement else job)[spec.field] = value
        query[spec.param] = list(value) if isinstance(value, tuple) else value
    return requirement, job, query


def field_options(specs: list[OptionSpec]) -> Mapping[type[BaseModel], dict[str, str]]:
    """For each model, its field -> the CLI option that sets it, spelled as this command's
    arguments spell it (errors name the option the user typed: ``--gpu``, ``--gpus``)."""
    out: dict[type[BaseModel], dict[str, str]] = {}
    for spec in specs:
        out.setdefault(spec.model, {})[spec.field] = typed_spelling(spec.names)
    return out
