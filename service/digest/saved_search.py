"""A subscription's saved search (its requirement and job) to JSON and back, strictly.

A serving search (issue 51) also carries a :class:`pricing.serve_rank.ServeRequest`: it is
stored in the job's JSON under the key ``"serve"`` (the job column is the workload; no
migration), and read back by :func:`load_serve`. A search without it has no such key.

pydantic writes a non-finite float as JSON ``null``: a requirement with
``max_usd_per_hour: Infinity`` was stored as ``null`` and read back as *no constraint*, so
the subscriber got digests of offers they had excluded. Both directions are strict now:

* in (:func:`dump_search`): a non-finite number is refused naming its field, and the JSON
  must read back to exactly the search given, or nothing is stored;
* out (:func:`load_search`): a stored row that does not validate any more (edited by hand,
  written before this check, which left ``null`` where the number was, a constraint since
  tightened) is :class:`CorruptSubscription`, which a digest run reports, marks ``invalid``
  and skips; it never stops the run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from gpuscout.db.subscriptions import SubscriptionRecord
from gpuscout.pricing import Job, Requirement
from gpuscout.pricing.serve_rank import DEFAULT_SERVICE_HOURS, ServeRequest

__all__ = [
    "SERVE_KEY",
    "CorruptSubscription",
    "dump_search",
    "load_search",
    "load_search_json",
    "load_serve",
    "load_serve_json",
    "service_hours",
    "storable",
]

#: The key of the job's stored JSON that holds a serving search's :class:`ServeRequest`.
SERVE_KEY = "serve"


class CorruptSubscription(ValueError):
    """A stored subscription whose requirement or job does not validate."""

    def __init__(self, subscription_id: int, problem: str) -> None:
        super().__init__(f"subscription {subscription_id}: {problem}")
        self.subscription_id = subscription_id
        self.problem = problem


def _non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, (tuple, list)):
        return any(_non_finite(v) for v in value)
    return False


def _require_finite(model: BaseModel, prefix: str, names: Iterable[str] | None = None) -> None:
    """ValueError naming each field of ``model`` (of ``names`` only, if given: the fields a
    stored row sets, the others hold their finite defaults) holding Infinity or NaN, e.g.
    ``requirement.max_usd_per_hour: must be a finite number``."""
    fields = type(model).model_fields if names is None else names
    bad = [f"{prefix}.{name}" for name in fields if _non_finite(getattr(model, name))]
    if bad:
        raise ValueError(f"{', '.join(bad)}: must be a finite number")


def storable(model: BaseModel, field: str) -> str:
    """The JSON stored for ``model`` (defaults left out); ValueError naming the field if it
    holds a non-finite number or would not read back as exactly ``model``."""
    _require_finite(model, field)
    text = model.model_dump_json(exclude_defaults=True)
    if type(model).model_validate_json(text) != model:
        raise ValueError(f"{field}: does not read back as given")
    return text


def dump_search(
    requirement: Requirement, job: Job, serve: ServeRequest | None = None
) -> tuple[str, str]:
    """The stored JSON of a search: (requirement, job); see :func:`storable`. A ``serve``
    request goes into the job's JSON under :data:`SERVE_KEY`."""
    job_json = storable(job, "job")
    if serve is not None:
        job_raw = json.loads(job_json)
        job_raw[SERVE_KEY] = json.loads(storable(serve, "serve"))
        job_json = json.dumps(job_raw, separators=(",", ":"))
    return storable(requirement, "requirement"), job_json


def _split_job(text: str) -> tuple[str, str | None]:
    """The job's own JSON and its serve request's JSON (``None``: not a serving search);
    text that is not a JSON object is returned as is, for :func:`_load` to refuse."""
    try:
        raw = json.loads(text)
    except ValueError:
        return text, None
    if not isinstance(raw, dict) or SERVE_KEY not in raw:
        return text, None
    serve = raw.pop(SERVE_KEY)
    return json.dumps(raw), json.dumps(serve)


def _load(model: type[BaseModel], text: str, field: str) -> Any:
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        # defaults and None are never written (exclude_defaults / exclude_none): a stored
        # null is a non-finite number pydantic wrote as null, a constraint lost
        lost = [f"{field}.{name}" for name, v in raw.items() if v is None]
        if lost:
            raise ValueError(f"{', '.join(lost)}: stored as null (a non-finite number)")
        value = model.model_validate(raw)
    except (ValidationError, ValueError, TypeError) as exc:
        detail = " ".join(str(exc).split())
        raise ValueError(detail if detail.startswith(field) else f"{field}: {detail}") from None
    _require_finite(value, field, raw)
    return value


def load_search(record: SubscriptionRecord) -> tuple[Requirement, Job]:
    """The stored requirement and job of ``record``; :class:`CorruptSubscription` if either
    (or its serve request, read by :func:`load_serve`) does not validate."""
    search = load_search_json(record.id, record.requirement_json, record.job_json)
    load_serve(record)
    return search


def load_search_json(
    subscription_id: int, requirement_json: str, job_json: str
) -> tuple[Requirement, Job]:
    """:func:`load_search` of stored JSON (an alert's row carries its subscription's)."""
    try:
        requirement = _load(Requirement, requirement_json, "requirement")
        job = _load(Job, _split_job(job_json)[0], "job")
    except ValueError as exc:
        raise CorruptSubscription(subscription_id, str(exc)) from None
    return requirement, job


def load_serve(record: SubscriptionRecord) -> ServeRequest | None:
    """The stored serve request of ``record`` (``None``: a training search);
    :class:`CorruptSubscription` if it does not validate."""
    return load_serve_json(record.id, record.job_json)


def load_serve_json(subscription_id: int, job_json: str) -> ServeRequest | None:
    """:func:`load_serve` of a stored job's JSON."""
    serve_json = _split_job(job_json)[1]
    if serve_json is None:
        return None
    try:
        serve: ServeRequest = _load(ServeRequest, serve_json, "serve")
    except ValueError as exc:
        raise CorruptSubscription(subscription_id, str(exc)) from None
    return serve


def service_hours(job: Job) -> float:
    """The hours of service a serving search's terms are chosen for: the job's ``hours``,
    else a month of 24/7 serving (as ``/v1/offers?serve=`` does)."""
    return job.hours or DEFAULT_SERVICE_HOURS
