"""The alerts' best offer per search equals the first row of the search's ranking.

:func:`service.alerts.search_best.best_per_search` takes the ranking apart (one costing per
job, masks per requirement field, an argmin per metric); each search here, over the offline
sample, is ranked by :func:`pricing.rank.rank` as well and the two must agree on the row
and its value, for every metric and for the best offer available now.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import polars as pl
import pytest

from gpuscout.adapters.schema import Fabric, RentalTerm, default_fx
from gpuscout.pricing import Job, RankOptions, Requirement, rank
from gpuscout.service.alerts.condition import METRICS
from gpuscout.service.alerts.search_best import best_per_search
from gpuscout.service.current import load_sample

IDENTITY = ("provider", "offer_id", "region", "term")


def _identity(row: dict[str, Any]) -> tuple[str | None, ...]:
    return tuple(None if row[c] is None else str(row[c]) for c in IDENTITY)


def _searches(count: int) -> dict[str, tuple[Requirement, Job]]:
    rng = random.Random(7)
    choices: dict[str, list[Any]] = {
        "gpus": [(), ("H100",), ("A100",), ("nvidia",), ("RTX-4090", "L40S"), ("amd",)],
        "min_gpus": [None, 1, 2, 8],
        "max_gpus": [None, 8],
        "terms": [(), (RentalTerm.ON_DEMAND,), (RentalTerm.INTERRUPTIBLE, RentalTerm.COMMIT_1Y)],
        "exclude_interruptible": [False, True],
        "max_commitment_hours": [None, 730],
        "max_usd_per_gpu_hour": [None, 2.5],
        "regions": [(), ("us",), ("eu",)],
        "min_gpu_memory_gb": [None, 48],
        "fabrics": [(), (Fabric.INFINIBAND,)],
        "allow_ethernet": [False, True],
        "min_storage_gb": [None, 2000],
        "available_now": [False, True],
        "max_price_age_hours": [None, 48],
        "allow_unknown": [False, True],
    }
    jobs = [
        Job.for_hours(1),
        Job.for_hours(100, gpus=16),
        Job.for_hours(24, gpus=64),
        Job(params=7e9, tokens=2e10, gpus=8),
        Job(hours=10, storage_gb=500, egress_gb=100),
    ]
    searches: dict[str, tuple[Requirement, Job]] = {}
    while len(searches) < count:
        fields = {k: rng.choice(v) for k, v in choices.items() if rng.random() < 0.35}
        requirement = Requirement.model_validate(fields)
        job = rng.choice(jobs)
        searches[f"{requirement.model_dump_json()}|{job.model_dump_json()}"] = (requirement, job)
    return searches


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return load_sample(default_fx()).frame


def _first(frame: pl.DataFrame, *args: Any, **options: Any) -> dict[str, Any] | None:
    ranked = rank(frame, *args, RankOptions(limit=1, **options))
    return ranked.row(0, named=True) if ranked.height else None


def test_each_search_gets_its_rankings_first_row(frame: pl.DataFrame) -> None:
    now = frame["fetched_at"].max() + timedelta(hours=6)  # type: ignore[operator]
    searches = _searches(120)
    bests = best_per_search(frame, searches, now)
    fired = 0
    for key, (requirement, job) in searches.items():
        best = bests[key]
        for metric in METRICS:
            first = _first(frame, requirement, job, now=now, sort=metric)
            offer = best.offers[metric]
            if first is None:
                assert best.values[metric] is None and offer is None, key
                continue
            fired += 1
            assert offer is not None, (key, metric)
            assert _identity(offer) == _identity(first), (key, metric)
            assert best.values[metric] == first[metric], (key, metric)
        if not requirement.allow_unknown:
            stocked = _first(frame, requirement.merged(available_now=True), job, now=now)
            offer = best.offers["in_stock"]
            assert (best.in_stock > 0) == (stocked is not None), key
            if stocked is not None:
                assert offer is not None
                assert _identity(offer) == _identity(stocked), key
    assert fired > 100  # the searches find offers: the comparison is not vacuous


def test_a_search_that_admits_nothing_has_no_best(frame: pl.DataFrame) -> None:
    now = frame["fetched_at"].max()
    nothing = Requirement(gpus=("H100",), max_usd_per_gpu_hour=0.01)
    best = best_per_search(frame, {"k": (nothing, Job.for_hours(1))}, now)["k"]  # type: ignore[arg-type]
    assert best.values == dict.fromkeys(METRICS) and best.in_stock == 0
    assert all(v is None for v in best.offers.values())


@pytest.mark.parametrize(
    "requirement",
    [Requirement(), Requirement(gpus=("H100",))],
    ids=["no constraint", "models alone"],
)
def test_a_search_without_a_filtering_field_alone_gets_its_first_row(
    frame: pl.DataFrame, requirement: Requirement
) -> None:
    """A search whose requirement filters by nothing but its GPU models (every term allowed)
    qualifies by a literal True, which a select gives as one value: alone in a batch, its
    mask was that one value, and indexing it by the rows' order an IndexError."""
    now = frame["fetched_at"].max()
    job = Job.for_hours(1)
    best = best_per_search(frame, {"k": (requirement, job)}, now)["k"]  # type: ignore[arg-type]
    for metric in METRICS:
        first = _first(frame, requirement, job, now=now, sort=metric)
        offer = best.offers[metric]
        assert first is not None and offer is not None
        assert _identity(offer) == _identity(first) and best.values[metric] == first[metric]


@pytest.mark.parametrize(
    "gpus",
    [("H100:8",), ("H100:1..2",), ("H100:8", "A100:1"), ("nvidia:..1",), ("H100:2..", "L40S")],
)
def test_a_gpu_named_with_a_count_gets_its_rankings_first_row(
    frame: pl.DataFrame, gpus: tuple[str, ...]
) -> None:
    """A count rides on its name (``H100:8``): the model slices alone would admit every
    H100 offer, so the count is a mask of its own."""
    now = frame["fetched_at"].max() + timedelta(hours=6)  # type: ignore[operator]
    requirement = Requirement(gpus=gpus)
    job = Job.for_hours(10)
    best = best_per_search(frame, {"k": (requirement, job)}, now)["k"]
    for metric in METRICS:
        first = _first(frame, requirement, job, now=now, sort=metric)
        assert first is not None  # the sample holds such offers: the comparison is not vacuous
        offer = best.offers[metric]
        assert offer is not None and _identity(offer) == _identity(first), metric
        assert any(
            first["gpu_model"] in {m.name for m in choice.models()}
            and (choice.min_gpus or 0) <= first["gpus"] <= (choice.max_gpus or first["gpus"])
            for choice in requirement.gpu_choices()
        ), (metric, first["gpu_model"], first["gpus"])
