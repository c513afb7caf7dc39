"""Each saved search's best offer, for many searches at once: what the ranking's first row
would be, without a ranking per search.

An alert watches the first row of its search's ranking (:func:`pricing.rank.rank` of its
requirement and job, sorted by the alert's metric): the explorer's top row. Ranking every
distinct search costs a plan, a group-by and a sort each; at 10k searches that is far too
slow. The ranking is taken apart instead, in the steps it is made of:

1. **Costing** reads the job, and of the requirement only ``allow_ethernet`` (placement)
   and ``min_storage_gb`` (the disk a job without ``storage_gb`` is billed): the frame is
   costed once per distinct (job, those two) by :func:`pricing.rank.costed_plan`, with no
   filter. Every step of the costing is row-wise, so costing then filtering equals
   filtering then costing.
2. **Qualifying** (:func:`pricing.expressions.qualifies`) is a conjunction of one condition
   per requirement field (the three term fields together). Each distinct (field, value,
   ``allow_unknown``) is evaluated once over the costed rows, in one polars ``select``;
   a search's rows are the AND of its fields' masks (numpy), within the row slices of its
   GPU models (the costed rows are sorted by model), so a search naming one GPU touches
   that model's rows only; a GPU named with a count (``H100:8``) is a mask of its own.
3. **Choosing**: the ranking represents each configuration by its cheapest qualifying term
   (ranked-after, then key, then term, then frame row) and orders those by
   (ranked-after, metric, key, configuration). The costed rows are sorted by (model,
   configuration, ranked-after, key, term, row), so a configuration's representative is its
   first qualifying row; and each row's place in the ranking's order for each metric is
   computed once, so the best representative is one ``argmin``.

``tests/service/alerts/test_search_best.py`` compares the result with
:func:`pricing.rank.rank`'s first row on varied searches; ``benchmarks/alerts.py``
measures it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import numpy as np
import polars as pl

from gpuscout.pricing import Job, RankOptions, Requirement
from gpuscout.pricing.expressions import ALWAYS, qualifies, usd_per_gpu_hour
from gpuscout.pricing.rank import AFTER, KEY, costed_plan

from .condition import METRICS

__all__ = ["BEST_OFFER_COLUMNS", "OFFER_HEAD_COLUMNS", "SearchBest", "best_per_search"]

#: What names an offer and its price in a firing, a training search's or a serving one's.
OFFER_HEAD_COLUMNS = (
    "provider",
    "offer_id",
    "instance_name",
    "region",
    "gpu_model",
    "gpu_count",
    "term",
    "usd_per_hour",
)
#: What a firing records of its best offer (and the mail and webhook show).
BEST_OFFER_COLUMNS = (
    *OFFER_HEAD_COLUMNS,
    "usd_per_gpu_hour",
    "peak_tflops",
    "mfu",
    "scaling",
    "effective_tflops",
    "job_cost_usd",
    "usd_per_effective_tflop_hour",
    "available_now",
    "fetched_at",
)

#: The frame's row number, as :func:`pricing.rank.rank` numbers it (its last tie-break).
_ROW = "_alert_row"
#: Requirement fields that filter together: they decide the allowed terms.
_TERM_FIELDS = ("terms", "max_commitment_hours", "exclude_interruptible")
#: Requirement fields that are not a row filter of their own.
_NOT_FILTERS = frozenset(("allow_unknown", "allow_ethernet", "gpus", *_TERM_FIELDS))
_DEFAULTS = Requirement()
#: What :attr:`SearchBest.offers` holds: the first row per metric, and of those in stock.
_CHOICES = (*METRICS, "in_stock")
#: Masks evaluated per ``select`` (bounds the memory of one batch).
_MASK_BATCH = 256


@dataclasses.dataclass(frozen=True, slots=True)
class SearchBest:
    """A search's best value of each metric (``None``: nothing qualifies), how many of its
    qualifying offer rows are available now, and the ranking's first row for each metric
    (under ``"in_stock"``: the first row of those available now), :data:`BEST_OFFER_COLUMNS`.
    """

    values: Mapping[str, float | None]
    in_stock: int
    offers: Mapping[str, dict[str, Any] | None]


def _costing_key(requirement: Requirement, job: Job) -> tuple[Job, bool]:
    """What the costing reads of a search: the job (its disk made explicit) and
    ``allow_ethernet``."""
    if job.storage_gb is None and requirement.min_storage_gb is not None:
        job = job.model_copy(update={"storage_gb": requirement.min_storage_gb})
    return job, requirement.allow_ethernet


def _atoms(requirement: Requirement, known: dict[Any, Requirement]) -> list[Any]:
    """The requirement as one requirement per filtering field (the term fields together),
    each with the search's ``allow_unknown``: their conjunction qualifies the same rows.
    Returns their keys; ``known`` maps each key to its requirement (made once per key)."""
    unknown = requirement.allow_unknown
    keys: list[Any] = [("terms", *(getattr(requirement, f) for f in _TERM_FIELDS), unknown)]
    if keys[0] not in known:
        terms = {f: getattr(requirement, f) for f in _TERM_FIELDS}
        known[keys[0]] = Requirement(**terms, allow_unknown=unknown)
    fields = requirement.model_fields_set - _NOT_FILTERS
    if any(choice.counted for choice in requirement.gpu_choices()):
        fields |= {"gpus"}  # H100:8: a count per name, which the model slices do not hold
    for name in fields:
        value = getattr(requirement, name)
        if value == getattr(_DEFAULTS, name):
            continue
        key = (name, value, unknown)
        if key not in known:
            known[key] = Requirement.model_validate({name: value, "allow_unknown": unknown})
        keys.append(key)
    return keys


def _json_value(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class _Found:
    """A :class:`SearchBest` whose offers are places in a :class:`_CostedRows` order."""

    values: dict[str, float | None]
    in_stock: int
    places: dict[str, int]


def _sortable(values: pl.Series) -> np.ndarray:
    """A numeric column as floats that sort as the ranking sorts it: nulls last."""
    floats = values.cast(pl.Float64).to_numpy()
    return np.where(np.isnan(floats), np.inf, floats)


class _CostedRows:
    """One costing of the frame, ordered and indexed for many searches.

    The costed frame stays as polars made it; the order (GPU model, configuration,
    ranked-after, key, term, row) is a permutation, and every array a search reads (its
    masks, configurations, places) is held in that order, so a GPU model's rows are one
    slice and a configuration's rows are adjacent, its ranking representative first.
    """

    def __init__(self, numbered: pl.DataFrame, job: Job, allow_ethernet: bool, now: datetime):
        self.now = now
        costing = Requirement(allow_ethernet=allow_ethernet)
        rows = (
            costed_plan(numbered, costing, job, RankOptions(now=now))
            .with_columns(usd_per_gpu_hour=usd_per_gpu_hour())
            .collect()
        )
        self.rows = rows
        keys = rows.select(
            model=pl.col("gpu_model").rank("dense"),
            config=pl.col("config_id"),
            after=pl.col(AFTER),
            term=pl.col("term").to_physical(),
            row=pl.col(_ROW),
            available=pl.col("available_now").fill_null(False),
        )
        config, after = keys["config"].to_numpy(), keys["after"].to_numpy()
        key = _sortable(rows[KEY])
        model, term, row = (keys[c].to_numpy() for c in ("model", "term", "row"))
        # np.lexsort sorts by its last key first
        order = np.lexsort((row, term, key, after, config, model))
        self.order = order
        self.config = config[order]
        self.available = keys["available"].to_numpy()[order]
        #: per metric, each row's place in the ranking's order by that metric: (ranked-after,
        #: metric, key, configuration) is total over one representative per configuration
        self.place: dict[str, np.ndarray] = {}
        self.values: dict[str, np.ndarray] = {}
        for metric in METRICS:
            values = _sortable(rows[metric])[order]
            ranked = np.lexsort((self.config, key[order], values, after[order]))
            place = np.empty(rows.height, dtype=np.int64)
            place[ranked] = np.arange(rows.height)
            self.place[metric] = place
            self.values[metric] = values
        self.slices: dict[str, slice] = {}
        models = rows["gpu_model"].gather(order)
        if rows.height:
            starts = np.flatnonzero(np.concatenate(([True], model[order][1:] != model[order][:-1])))
            for start, stop in zip(starts, [*starts[1:], rows.height], strict=True):
                self.slices[str(models[int(start)])] = slice(int(start), int(stop))
        self.masks: dict[Any, np.ndarray] = {}

    def prepare(self, atoms: Mapping[Any, Requirement]) -> None:
        """Evaluate the masks of ``atoms`` (by their keys) not evaluated yet."""
        predicates = {k: qualifies(atoms[k], self.now) for k in atoms if k not in self.masks}
        # a requirement without a constraint (every term allowed) qualifies by a literal, which
        # a select gives as one value, not a mask: every row qualifies
        every = np.ones(self.rows.height, dtype=bool)
        self.masks |= {k: every for k, p in predicates.items() if p is ALWAYS}
        keys = [k for k, p in predicates.items() if p is not ALWAYS]
        for start in range(0, len(keys), _MASK_BATCH):
            chunk = keys[start : start + _MASK_BATCH]
            masks = self.rows.select(
                predicates[k].fill_null(False).alias(str(i)) for i, k in enumerate(chunk)
            )
            for i, key in enumerate(chunk):
                self.masks[key] = masks[str(i)].to_numpy()[self.order]

    def offers(self, places: Iterable[int]) -> dict[int, dict[str, Any]]:
        """The offer columns of the rows at ``places`` (of the order), gathered at once."""
        wanted = sorted(set(places))
        rows = self.rows.select(BEST_OFFER_COLUMNS)[self.order[wanted]].to_dicts()
        return {
            p: {c: _json_value(v) for c, v in row.items()}
            for p, row in zip(wanted, rows, strict=True)
        }

    def best(self, models: tuple[str, ...], atoms: list[Any]) -> _Found:
        """The best of the rows of ``models`` (empty: all) that every mask of ``atoms``
        (keys of prepared masks) admits."""
        if models:
            parts = [self.slices[m] for m in models if m in self.slices]
        else:
            parts = [slice(0, len(self.order))]
        masks = [self.masks[a] for a in atoms]
        found = [
            np.flatnonzero(np.logical_and.reduce([m[part] for m in masks])) + part.start
            for part in parts
        ]
        rows = np.concatenate(found) if len(found) > 1 else found[0] if found else found
        if len(rows) == 0:
            return _Found({m: None for m in METRICS}, 0, {})
        config = self.config[rows]
        firsts = rows[np.concatenate(([True], config[1:] != config[:-1]))]
        values: dict[str, float | None] = {}
        places: dict[str, int] = {}
        for metric in METRICS:
            first = int(firsts[np.argmin(self.place[metric][firsts])])
            value = float(self.values[metric][first])
            values[metric] = None if value == np.inf else value
            places[metric] = first
        in_stock = rows[self.available[rows]]
        if in_stock.size:
            places["in_stock"] = int(in_stock[np.argmin(self.place[KEY][in_stock])])
        return _Found(values, int(in_stock.size), places)


def best_per_search(
    frame: pl.DataFrame, searches: Mapping[str, tuple[Requirement, Job]], now: datetime
) -> dict[str, SearchBest]:
    """Each search's :class:`SearchBest` over ``frame``: for each metric, the first row of
    ``rank(frame, requirement, job, RankOptions(now=now, sort=metric))`` and its value."""
    numbered = frame.with_row_index(_ROW)
    by_costing: dict[tuple[str, bool], list[str]] = {}
    jobs: dict[tuple[str, bool], Job] = {}
    for key, (requirement, job) in searches.items():
        costing_job, ethernet = _costing_key(requirement, job)
        group = (costing_job.model_dump_json(), ethernet)
        jobs[group] = costing_job
        by_costing.setdefault(group, []).append(key)
    result: dict[str, SearchBest] = {}
    known: dict[Any, Requirement] = {}
    models: dict[tuple[str, ...], tuple[str, ...]] = {}
    for group, keys in by_costing.items():
        costed = _CostedRows(numbered, jobs[group], group[1], now)
        atoms = {k: _atoms(searches[k][0], known) for k in keys}
        costed.prepare({a: known[a] for k in keys for a in atoms[k]})
        found: dict[str, _Found] = {}
        for key in keys:
            requirement = searches[key][0]
            if requirement.gpus not in models:
                models[requirement.gpus] = requirement.gpu_models()
            found[key] = costed.best(models[requirement.gpus], atoms[key])
        offers = costed.offers(p for f in found.values() for p in f.places.values())
        for key, f in found.items():
            chosen = {k: offers.get(f.places[k]) if k in f.places else None for k in _CHOICES}
            result[key] = SearchBest(f.values, f.in_stock, chosen)
    return result
