"""``pricing.unplaced``: the configurations a job cannot be placed on, against a reference
written out in Python (each configuration whose rows are all refused, with the figures of
its earliest term, the earliest row among equal terms)."""

from __future__ import annotations

import random
from typing import Any

import polars as pl
from polars.testing import assert_frame_equal

from gpuscout.pricing import Job, RankOptions, Requirement
from gpuscout.pricing import expressions as ex
from gpuscout.pricing.efficiency import default_efficiency
from gpuscout.pricing.frame import OFFER_ROW, OFFER_SCHEMA, offers_to_frame
from gpuscout.pricing.rank import _Chain, placement_plan, rank_page
from gpuscout.pricing.unplaced import UNPLACED_COLUMNS, UNPLACED_SCHEMA, unplaced_configurations

from .factories import NOW, make_offer, mixed_frame

TERMS = OFFER_SCHEMA["term"]
REASONS = (None, None, "needs more nodes than the provider has", "does not fit one GPU")


def _placed(rng: random.Random) -> pl.DataFrame:
    """Rows as placement gives them: a few terms per configuration, in shuffled order,
    some refused, some placed; memory published or the catalog's."""
    terms = list(TERMS.categories)  # type: ignore[attr-defined]
    rows = []
    for config in range(rng.randint(0, 40)):
        for _ in range(rng.randint(1, 4)):
            rows.append(
                {
                    "config_id": config,
                    "term": rng.choice(terms),
                    "provider": f"p{config % 3}",
                    "gpu_raw_name": f"raw {config}",
                    "gpu_model": "H100-SXM5-80GB" if config % 2 else None,
                    "placement_reason": rng.choice(REASONS),
                    "job_gpus": float(rng.choice((1, 8, 64))),
                    "memory_per_gpu_gb": rng.choice((None, 40.0, 90.0)),
                    "gpu_memory_gb": rng.choice((None, 80.0)),
                    "catalog_memory_gb": 80.0,
                    "gpu_fraction": rng.choice((None, 0.5)),
                }
            )
    rng.shuffle(rows)
    schema: dict[str, Any] = {
        "config_id": pl.UInt32, "term": TERMS, "provider": pl.String, "gpu_raw_name": pl.String,
        "gpu_model": pl.String, "placement_reason": pl.String, "job_gpus": pl.Float64,
        "memory_per_gpu_gb": pl.Float64, "gpu_memory_gb": pl.Float64,
        "catalog_memory_gb": pl.Float64, "gpu_fraction": pl.Float64,
    }  # fmt: skip
    return pl.DataFrame(rows, schema=schema).with_row_index(OFFER_ROW)


def _expected(placed: pl.DataFrame) -> pl.DataFrame:
    order = {term: i for i, term in enumerate(TERMS.categories)}  # type: ignore[attr-defined]
    by_config: dict[int, list[dict[str, Any]]] = {}
    for row in placed.iter_rows(named=True):
        by_config.setdefault(row["config_id"], []).append(row)
    out = []
    for rows in by_config.values():
        if any(r["placement_reason"] is None for r in rows):
            continue
        first = min(rows, key=lambda r: (order[r["term"]], r[OFFER_ROW]))
        memory = first["gpu_memory_gb"]
        if memory is None:
            memory = first["catalog_memory_gb"] * (first["gpu_fraction"] or 1.0)
        out.append({**first, "reason": first["placement_reason"], "gpu_memory_gb": memory})
    schema: dict[str, Any] = {c: placed.schema.get(c, pl.String) for c in UNPLACED_COLUMNS}
    schema["gpu_memory_gb"] = pl.Float64
    return pl.DataFrame([{c: r[c] for c in UNPLACED_COLUMNS} for r in out], schema=schema)


def test_each_wholly_refused_configuration_with_its_earliest_terms_figures() -> None:
    rng = random.Random(11)
    found = 0
    for _ in range(60):
        placed = _placed(rng)
        got = unplaced_configurations(placed.lazy()).collect().sort("config_id")
        want = _expected(placed).sort("config_id")
        assert_frame_equal(got, want, check_exact=True)
        found += got.height
    assert found > 100  # the reference was not empty throughout


def _chain_cases() -> list[tuple[Any, Any]]:
    """(job, efficiency) pairs: one-node jobs of hours, GPU counts, model sizes, a
    restart model given or not, and preemptions so frequent one node never finishes."""

    eff = default_efficiency()
    rate = eff.interruptible.preemptions_per_node_hour
    stormy = eff.model_copy(  # a preemption costs more hours than one comes per hour
        update={"interruptible": eff.interruptible.model_copy(update={"restart_hours": 2 / rate})}
    )
    jobs = [
        Job.for_hours(1),
        Job.for_hours(720),
        Job.for_hours(10, gpus=4),
        Job.for_hours(10, gpus=64),
        Job.training(7e9, 2e11),
        Job.training(7e9, 2e11, gpus=8),
        Job.for_hours(10).model_copy(update={"interruptible_overhead": 0.1}),
    ]
    return [(job, e) for job in jobs for e in (eff, stormy)]


def test_a_job_said_to_refuse_no_row_refuses_none() -> None:
    """:attr:`_Chain.refuses_none` plans no reason: it must be the null the reason would
    be on every row of every offer (one node, no memory check, preemptions that never
    outpace the work), and say so for the jobs of hours alone."""

    frame = pl.concat([mixed_frame(random.Random(n)) for n in range(4)], how="vertical")
    assert frame.height and (frame["term"] == "interruptible").any()
    said = []
    for job, efficiency in _chain_cases():
        options = RankOptions(now=NOW, efficiency=efficiency)
        chain = _Chain.of(Requirement(), job, options)
        memory = job.memory_needed_gb(options.precision, efficiency)
        reason = ex.placement_reason(
            Requirement(),
            memory is not None,
            efficiency.interruptible,
            modelled=job.interruptible_overhead is None,
        )
        # nodes, job GPUs and memory per GPU as the chain places them; the reason in full
        placed = chain.placed(chain.qualified(frame.lazy()))
        reasons = placed.select(reason.alias("r")).collect()["r"]
        refused = reasons.null_count() < reasons.len()
        assert not (chain.refuses_none and refused), (job, efficiency.interruptible)
        said.append((chain.refuses_none, refused))
    # hours alone: none refused, but where preemptions outpace a node (its spot rows are);
    # a count or a model size: not said (64 GPUs are more than a node; 7B needs memory)
    assert said[:4] == [(True, False), (False, True)] * 2
    assert [s for s, _ in said[4:12]] == [False] * 8 and any(r for _, r in said[4:12])
    assert said[12:] == [(True, False), (True, False)]  # no restart model: never refused


def test_a_job_no_row_refuses_gives_an_empty_table_of_its_columns() -> None:
    """Nothing grouped: the page's unplaced table is empty, with the columns and dtypes
    grouping gives (:data:`UNPLACED_SCHEMA`)."""

    frame = offers_to_frame([make_offer(), make_offer(offer_id="b", gpu_count=1)])
    page = rank_page(frame, Requirement(), Job.for_hours(5), RankOptions(now=NOW), unplaced=True)
    assert page.unplaced is not None and page.unplaced.is_empty()
    assert page.unplaced.schema == UNPLACED_SCHEMA
    grouped = unplaced_configurations(placement_plan(frame, None, Job.for_hours(5, gpus=64)))
    assert grouped.collect_schema() == UNPLACED_SCHEMA
