"""The engine rank collects with (pricing.rank.ENGINE, chosen by measurement) answers
exactly as the other engine does, at every frame size, on both shapes of the chain."""

from __future__ import annotations

import importlib
import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pricing import Job, RankOptions, rank
from pricing.rank import ENGINE, engine_for, rank_plan

from .factories import NOW
from .test_rank import _random_frame

rank_module = importlib.import_module("pricing.rank")


def test_the_measured_engine_serves_every_size() -> None:
    """No measured size gives the streaming engine the lead (see ENGINE's figures)."""
    small = pl.DataFrame({"x": [1]})
    large = pl.DataFrame({"x": pl.int_range(0, 3_000_000, eager=True)})
    assert engine_for(small) == engine_for(large) == ENGINE == "in-memory"


@pytest.mark.parametrize("large", [False, True], ids=["cached", "costed-again"])
def test_either_engine_gives_the_same_answer(large: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if large:
        monkeypatch.setattr(rank_module, "STREAMING_MIN_ROWS", 0)
    rng = random.Random(5)
    for _ in range(10):
        frame = _random_frame(rng)
        job = Job.for_hours(rng.choice((1, 100)), gpus=rng.choice((None, 8)))
        options = RankOptions(limit=rng.choice((None, 1, 3)), now=NOW)
        ranked = rank(frame, job=job, options=options)
        streamed = rank_plan(frame, job=job, options=options).collect(engine="streaming")
        assert_frame_equal(ranked, streamed, check_exact=True)
