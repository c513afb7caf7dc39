"""Query parameters of ``/v1/offers`` (and the body of ``/v1/estimate``), derived from the
pricing engine's :class:`~pricing.requirement.Requirement` and :class:`~pricing.job.Job`.

The parameters are generated from those models' fields, so every constraint the engine
knows is a query parameter with the same name, type, bounds and description (a test pins
this). List-valued ones may repeat (``?gpus=H100&gpus=A100``) or be comma-separated
(``?gpus=H100,A100``). The job's GPU count is ``job_gpus`` (``gpus`` is the model filter),
the model's parameter count ``model_params``: the old name ``params`` is still accepted
(:data:`QUERY_ALIASES`) but not declared in the OpenAPI document, where a query parameter
of that name breaks generated clients (openapi-python-client names its own query dict
``params``).

Unknown parameters are rejected (``extra="forbid"``), non-finite numbers too.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args, get_origin

from fastapi.exceptions import RequestValidationError
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
)

from gpuscout.adapters.gpus import Precision
from gpuscout.pricing.job import Job
from gpuscout.pricing.requirement import PRESET_ALIASES, PRESETS, Requirement
from gpuscout.pricing.serve_rank import ServeRequest

from .input_limits import too_many_items

__all__ = [
    "JOB_PARAMS",
    "QUERY_ALIASES",
    "REQUIREMENT_PARAMS",
    "OffersQuery",
    "SortKey",
    "deprecated_names",
    "deprecated_values",
    "openapi_parameters",
    "validate_query",
]

#: API name -> Job field (the job's GPU count is ``job_gpus``, the model's parameters
#: ``model_params``).
JOB_PARAMS: dict[str, str] = {
    "hours": "hours",
    "gpu_hours": "gpu_hours",
    "model_params": "params",
    "tokens": "tokens",
    "active_params": "active_params",
    "job_gpus": "gpus",
    "interruptible_overhead": "interruptible_overhead",
    "bytes_per_param": "bytes_per_param",
    "job_storage_gb": "storage_gb",
    "egress_gb": "egress_gb",
    "layers": "layers",
    "hidden_size": "hidden_size",
    "context_tokens": "context_tokens",
}
REQUIREMENT_PARAMS: tuple[str, ...] = tuple(Requirement.model_fields)

#: Upper bound on a requirement's numbers (the job's own bounds are on :class:`Job`).
_NUMBER_LIMIT = 1e12

SortKey = Literal[
    "usd_per_effective_tflop_hour",
    "all_in_cost_usd",
    "job_cost_usd",
    "usd_per_hour",
    "usd_per_gpu_hour",
]
PresetName = Literal[tuple(PRESETS)]  # type: ignore[valid-type]


def _preset_name(value: Any) -> Any:
    """A former preset name (:data:`PRESET_ALIASES`) read as the name it now goes by: taken,
    though the document lists only the current names."""
    return PRESET_ALIASES.get(value, value) if isinstance(value, str) else value


MAX_LIMIT = 500


def _is_tuple(annotation: Any) -> bool:
    return get_origin(annotation) is tuple


def _numeric(annotation: Any) -> bool:
    for arg in (annotation, *get_args(annotation)):
        inner = get_args(arg)[0] if get_origin(arg) is Annotated else arg
        if inner in (int, float):
            return True
    return False


def _query_field(name: str, model: type[BaseModel], source: str) -> tuple[Any, Any]:
    info = model.model_fields[source]
    annotation: Any = info.annotation
    if _is_tuple(annotation):
        (item, _ellipsis) = get_args(annotation)
        return list[item], Field(default_factory=list, description=info.description)  # type: ignore[valid-type]
    if _numeric(annotation) and model is Requirement:
        annotated: Any = Annotated[annotation, *info.metadata, Field(le=_NUMBER_LIMIT)]
        return annotated, Field(default=info.default, description=info.description)
    if info.metadata:
        annotation = Annotated[annotation, *info.metadata]
    return annotation, Field(default=info.default, description=info.description)


def _split_commas(value: Any) -> Any:
    """``["H100,A100", "L40S"]`` -> ``["H100", "A100", "L40S"]``."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        return [part.strip() for v in value for part in str(v).split(",") if part.strip()]
    return value


def _build_query_model() -> type[BaseModel]:
    fields: dict[str, Any] = {
        "preset": (
            Annotated[PresetName | None, BeforeValidator(_preset_name)],
            Field(default=None, description="a named requirement; other parameters refine it"),
        )
    }
    for name in REQUIREMENT_PARAMS:
        fields[name] = _query_field(name, Requirement, name)
    for name, source in JOB_PARAMS.items():
        fields[name] = _query_field(name, Job, source)
    fields["precision"] = (
        Precision,
        Field(default=Precision.BF16, description="arithmetic precision of the job"),
    )
    for name, info in ServeRequest.model_fields.items():  # serving a model (?serve=...)
        if name not in fields:
            annotation: Any = (
                Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
            )
            fields[name] = (annotation | None, Field(default=None, description=info.description))
    for factor in ("mfu", "scaling"):
        fields[factor] = (
            float | None,
            Field(default=None, gt=0, le=1, description=f"replace the modelled {factor}"),
        )
    fields["sort"] = (
        SortKey,
        Field(default="usd_per_effective_tflop_hour", description="order of the answer"),
    )
    fields["limit"] = (
        int,
        Field(default=20, ge=1, le=MAX_LIMIT, description="offers in one page of the answer"),
    )
    fields["cursor"] = (
        str | None,
        Field(
            default=None,
            max_length=200,
            pattern=r"^[A-Za-z0-9_-]+$",
            description="the next page: the cursor of the previous page's answer (opaque;"
            " valid for the snapshot it came from)",
        ),
    )
    lists = [n for n, (ann, _f) in fields.items() if get_origin(ann) is list]
    validators: dict[str, Any] = {
        "split_commas": field_validator(*lists, mode="before")(
            classmethod(lambda cls, v: _split_commas(v))
        )
    }
    return create_model(
        "OffersQuery",
        __config__=ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True),
        __doc__="Requirement, job and presentation of an offers query.",
        __validators__=validators,
        **fields,
    )


OffersQuery: type[BaseModel] = _build_query_model()


#: Query parameters that take several values.
LIST_PARAMS: frozenset[str] = frozenset(
    n for n, f in OffersQuery.model_fields.items() if get_origin(f.annotation) is list
)


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline_refs(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


#: Examples of the offers query in the OpenAPI document.
EXAMPLES: dict[str, Any] = {
    "preset": "8xa100-pretrain",
    "gpus": ["H100"],
    "min_gpus": 8,
    "regions": ["us-east-1"],
    "providers": ["lambda"],
    "terms": ["on_demand"],
    "max_usd_per_gpu_hour": 3.5,
    "max_price_age_hours": 24,
    "hours": 100,
    "model_params": 7e9,
    "tokens": 2e12,
    "job_gpus": 64,
    "sort": "job_cost_usd",
    "limit": 20,
}


def openapi_parameters() -> list[dict[str, Any]]:
    """The query parameters of :data:`OffersQuery` as OpenAPI parameter objects.

    The offers route validates its query itself (faster than FastAPI's per-request model
    handling, see :func:`validate_query`), so it declares them here for the docs.
    """
    schema = OffersQuery.model_json_schema()
    defs = schema.get("$defs", {})
    out = []
    for name, prop in schema["properties"].items():
        prop = _inline_refs(prop, defs)
        description = prop.pop("description", None)
        param: dict[str, Any] = {"name": name, "in": "query", "required": False, "schema": prop}
        if description:
            param["description"] = description
        if name in LIST_PARAMS:
            param["style"], param["explode"] = "form", True
        if name in EXAMPLES:
            param["example"] = EXAMPLES[name]
        out.append(param)
    return out


#: Deprecated query names still accepted: old -> new.
QUERY_ALIASES: dict[str, str] = {"params": "model_params"}


def deprecated_names(params: Any) -> list[tuple[str, str]]:
    """The ``(old, new)`` names of :data:`QUERY_ALIASES` a query uses."""
    return [(old, new) for old, new in QUERY_ALIASES.items() if old in params]


def deprecated_values(params: Any) -> list[tuple[str, str]]:
    """A former preset name the query gives, as ``("preset=old", "preset=new")``."""
    old = params.get("preset")
    if old not in PRESET_ALIASES:
        return []
    return [(f"preset={old}", f"preset={PRESET_ALIASES[old]}")]


def validate_query(params: Any, max_list_items: int | None = None) -> BaseModel:
    """Validate a request's query (a multi-dict) into :data:`OffersQuery`; 422 if invalid.

    A list parameter with more than ``max_list_items`` values (repeated or comma-separated)
    is refused before any value is validated (setting ``api_max_list_items``).
    """
    data: dict[str, Any] = {}
    too_long = []
    for old, new in deprecated_names(params):
        if new in params:
            raise RequestValidationError(
                [
                    {
                        "type": "value_error",
                        "loc": ("query", old),
                        "msg": f"deprecated name of {new}; give {new} only",
                        "input": params.get(old),
                    }
                ]
            )
        data[new] = params.get(old)
    for name in params:
        if name in QUERY_ALIASES:
            continue
        if name in LIST_PARAMS:
            values = _split_commas(params.getlist(name))
            if max_list_items is not None and len(values) > max_list_items:
                too_long.append(too_many_items(("query", name), len(values), max_list_items))
            data[name] = values
        else:
            data[name] = params.get(name)
    if too_long:
        raise RequestValidationError(too_long)
    try:
        return OffersQuery.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError(
            [
                {
                    "type": e["type"],
                    "loc": ("query", *e["loc"]),
                    "msg": e["msg"],
                    "input": e.get("input"),
                }
                for e in exc.errors(include_url=False, include_context=False)
            ]
        ) from None


def canonical_key(query: BaseModel) -> str:
    """The query in a canonical form: defaults dropped, list values sorted and deduplicated."""
    data = query.model_dump(mode="json", exclude_defaults=True)
    for name, value in data.items():
        if isinstance(value, list):
            data[name] = sorted(set(value), key=str)
    return json.dumps(data, sort_keys=True, separators=(",", ":"))
