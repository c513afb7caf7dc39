"""The configurations a job cannot be placed on, read off the ranking's placed rows.

A configuration is left out for placement when none of its terms can take the job
(:func:`pricing.expressions.placement_reason`). The ranking places every qualifying row
anyway, so :func:`pricing.rank.rank_page` groups the rows it placed into these
configurations in the same collect (the placement then runs once per query, not once for
the ranking and again for the coverage note), and :mod:`pricing.coverage` counts them.
"""

from __future__ import annotations

import polars as pl

from .expressions import gpu_memory_gb
from .frame import OFFER_ROW

__all__ = ["UNPLACED_COLUMNS", "unplaced_configurations"]

#: One row per configuration the job cannot be placed on: its first term's reason and the
#: figures of the memory check there (the GPU's memory, the job's GPUs, what each needs).
UNPLACED_COLUMNS = (
    "config_id",
    "provider",
    "gpu_raw_name",
    "gpu_model",
    "reason",
    "gpu_memory_gb",
    "job_gpus",
    "memory_per_gpu_gb",
)


#: A row's place among its configuration's rows: its term (the Enum's order), then its
#: frame row. Its least is the same row whatever order the engine hands a group's rows in
#: (``arg_min`` of the term alone took the first of equal terms as they came).
_TERM_THEN_ROW = pl.col("term").to_physical().cast(pl.Int64) * 2**40 + pl.col(OFFER_ROW)


def unplaced_configurations(placed: pl.LazyFrame) -> pl.LazyFrame:
    """:data:`UNPLACED_COLUMNS` of the configurations among ``placed`` (rows with
    ``placement_reason``, ``nodes``, ``job_gpus`` and ``memory_per_gpu_gb``, as
    :meth:`pricing.rank.placement_plan` gives them) that no row of theirs can take.

    Only configurations with some refused row are grouped (most jobs fit almost
    everywhere: few rows), and a configuration's figures are those of its earliest term,
    the earliest frame row among equal terms (:data:`_TERM_THEN_ROW`'s ``arg_min``:
    sorting each group took 2x longer where most rows are refused, a 7B training job on 8
    GPUs over 100k offers: 71k rows). ``placed`` carries :data:`~pricing.frame.OFFER_ROW`."""
    rows = placed.select(
        "config_id",
        "term",
        OFFER_ROW,
        "provider",
        "gpu_raw_name",
        "gpu_model",
        "placement_reason",
        "job_gpus",
        "memory_per_gpu_gb",
        gpu_memory_gb=gpu_memory_gb(),
        _first=_TERM_THEN_ROW,
    )
    first_term = pl.col("_first").arg_min()
    refused = rows.filter(pl.col("placement_reason").is_not_null()).select("config_id")
    return (
        rows.join(refused.unique(), on="config_id", how="semi")
        .group_by("config_id")
        .agg(
            pl.col("provider").first(),
            pl.col("gpu_raw_name").first(),
            pl.col("gpu_model").first(),
            reason=pl.col("placement_reason").get(first_term),
            placed=pl.col("placement_reason").is_null().any(),
            gpu_memory_gb=pl.col("gpu_memory_gb").get(first_term),
            job_gpus=pl.col("job_gpus").get(first_term),
            memory_per_gpu_gb=pl.col("memory_per_gpu_gb").get(first_term),
        )
        .filter(~pl.col("placed"))
        .select(UNPLACED_COLUMNS)
    )
