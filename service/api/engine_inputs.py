"""A validated ``/v1/offers`` query (:mod:`service.api.offers_query`) as the pricing
engine's inputs: its :class:`~pricing.requirement.Requirement` (a preset merged with the
query's own values, providers spelled as the snapshot knows them) and
:class:`~pricing.job.Job`, with what the answer is shaped by.

A route parses only on a cache miss: the canonical key of the validated query finds a
cached answer first, and the engine's rules (a 422 naming the parameter) are checked once
per query and snapshot.
"""

from __future__ import annotations

import typing
from collections.abc import Collection

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from gpuscout.adapters.gpus import Precision
from gpuscout.pricing.job import Job
from gpuscout.pricing.names import UnknownName, check_providers
from gpuscout.pricing.requirement import PRESETS, Requirement

from .offers_query import JOB_PARAMS, REQUIREMENT_PARAMS, OffersQuery

__all__ = ["ParsedQuery", "checked_providers", "parse_offers_query"]


class ParsedQuery(typing.NamedTuple):
    requirement: Requirement
    job: Job | None
    precision: Precision
    sort: str
    limit: int
    mfu: float | None
    scaling: float | None
    key: str  # canonical form: equal for queries that mean the same
    offset: int = 0  # offers ranked before this page (from the cursor)


def _reraise(exc: ValidationError, rename: dict[str, str] | None = None) -> RequestValidationError:
    """A model-level error of the engine, as a 422 naming the query parameter."""
    errors = []
    for e in exc.errors(include_url=False, include_context=False):
        loc = [str(p) for p in e["loc"]]
        if loc and rename:
            loc[0] = rename.get(loc[0], loc[0])
        msg = e["msg"]
        if not loc:  # a model-level rule: name the parameter it mentions, if any
            head = msg.removeprefix("Value error, ").split(":", 1)[0].split(" ", 1)[0]
            loc = [head] if head in OffersQuery.model_fields else []
        errors.append(
            {"type": e["type"], "loc": ("query", *loc), "msg": msg, "input": e.get("input")}
        )
    return RequestValidationError(errors)


def checked_providers(
    requirement: Requirement, known: Collection[str], at: tuple[str, ...] = ("query",)
) -> Requirement:
    """``requirement`` with its providers spelled as ``known`` has them
    (:func:`pricing.names.check_providers`); a 422 for a provider name nothing in ``known``
    has, located at ``at`` and the field: the query parameter (``("query", "providers")``)
    or the body path of a requirement in a JSON body (``("body", "requirement",
    "providers")``). The one way every route refuses an unknown provider."""
    try:
        return check_providers(requirement, known)
    except UnknownName as exc:
        values = getattr(requirement, exc.field)
        raise RequestValidationError(
            [
                {
                    "type": "value_error",
                    "loc": (*at, exc.field),
                    "msg": exc.message,
                    "input": list(values),
                }
            ]
        ) from None


def parse_offers_query(
    query: BaseModel,
    key: str,
    offset: int = 0,
    providers: Collection[str] | None = None,
) -> ParsedQuery:
    """The engine's Requirement and Job from a validated query; a 422 if they refuse it,
    or if it names a provider not in ``providers`` (the state's
    :attr:`~service.api.state.ApiState.known_providers`; ``None``: not checked)."""
    data = query.model_dump(exclude_defaults=True)
    req_data = {k: v for k, v in data.items() if k in REQUIREMENT_PARAMS}
    job_data = {JOB_PARAMS[k]: v for k, v in data.items() if k in JOB_PARAMS}
    try:
        base = Requirement.model_validate(PRESETS[data["preset"]]) if "preset" in data else None
        requirement = (
            base.merged(**req_data) if base is not None else Requirement.model_validate(req_data)
        )
    except ValidationError as exc:
        raise _reraise(exc) from None
    if providers is not None:
        requirement = checked_providers(requirement, providers)
    job = None
    if job_data:
        try:
            job = Job.model_validate(job_data)
        except ValidationError as exc:
            raise _reraise(exc, {v: k for k, v in JOB_PARAMS.items()}) from None
    return ParsedQuery(
        requirement=requirement,
        job=job,
        precision=Precision(getattr(query, "precision")),  # noqa: B009
        sort=str(getattr(query, "sort")),  # noqa: B009
        limit=int(getattr(query, "limit")),  # noqa: B009
        mfu=getattr(query, "mfu"),  # noqa: B009
        scaling=getattr(query, "scaling"),  # noqa: B009
        key=key,
        offset=offset,
    )
