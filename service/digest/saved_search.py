"""A subscription's saved search (its requirement and job) to JSON and back, strictly.

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

__all__ = ["CorruptSubscription", "dump_search", "load_search", "load_search_json", "storable"]


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


def dump_search(requirement: Requirement, job: Job) -> tuple[str, str]:
    """The stored JSON of a search: (requirement, job); see :func:`storable`."""
    return storable(requirement, "requirement"), storable(job, "job")


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
    does not validate."""
    return load_search_json(record.id, record.requirement_json, record.job_json)


def load_search_json(
    subscription_id: int, requirement_json: str, job_json: str
) -> tuple[Requirement, Job]:
    """:func:`load_search` of stored JSON (an alert's row carries its subscription's)."""
    try:
        requirement = _load(Requirement, requirement_json, "requirement")
        job = _load(Job, job_json, "job")
    except ValueError as exc:
        raise CorruptSubscription(subscription_id, str(exc)) from None
    return requirement, job
