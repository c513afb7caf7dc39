"""``pricing.unplaced``: the configurations a job cannot be placed on, against a reference
written out in Python (each configuration whose rows are all refused, with the figures of
its earliest term, the earliest row among equal terms)."""

from __future__ import annotations

import random
from typing import Any

import polars as pl
from polars.testing import assert_frame_equal

from pricing.frame import OFFER_ROW, OFFER_SCHEMA
from pricing.unplaced import UNPLACED_COLUMNS, unplaced_configurations

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
