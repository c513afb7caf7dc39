"""The configurations a job cannot be placed on, read off the ranking's placed rows.

A configuration is left out for placement when none of its terms can take the job
(:func:`pricing.expressions.placement_reason`). The ranking places every qualifying row
anyway, so :func:`pricing.rank.rank_page` groups the rows it placed into these
configurations in the same collect (the placement then runs once per query, not once for
the ranking and again for the coverage note), and :mod:`pricing.coverage` counts them.
"""

from __future__ import annotations

import polars as pl

from .expressions import REASON, gpu_memory_gb
from .frame import OFFER_ROW

__all__ = ["UNPLACED_COLUMNS", "UNPLACED_SCHEMA", "unplaced_configurations"]

#: One row per configuration the job cannot be placed on, with these columns and dtypes:
#: its first term's reason and the figures of the memory check there (the GPU's memory, the
#: job's GPUs, what each needs). The table of a job no row refuses is empty with them.
UNPLACED_SCHEMA = pl.Schema(
    {
        "config_id": pl.UInt32(),
        "provider": pl.String(),
        "gpu_raw_name": pl.Categorical(),
        "gpu_model": pl.String(),
        "reason": REASON,
        "gpu_memory_gb": pl.Float64(),
        "job_gpus": pl.Float64(),
        "memory_per_gpu_gb": pl.Float64(),
    }
)
#: :data:`UNPLACED_SCHEMA`'s columns, in order.
UNPLACED_COLUMNS = tuple(UNPLACED_SCHEMA)


#: A row's place among its configuration's rows: its term (the Enum's order), then its
#: frame row. Its least is the same row whatever order the engine hands a group's rows in
#: (``arg_min`` of the term alone took the first of equal terms as they came), and its low
#: bits (below :data:`_ROWS`, more rows than a frame holds) are that row.
_ROWS = 2**40
_TERM_THEN_ROW = pl.col("term").to_physical().cast(pl.Int64) * _ROWS + pl.col(OFFER_ROW)


def unplaced_configurations(placed: pl.LazyFrame) -> pl.LazyFrame:
    """:data:`UNPLACED_COLUMNS` of the configurations among ``placed`` (rows with
    ``placement_reason``, ``nodes``, ``job_gpus`` and ``memory_per_gpu_gb``, as
    :meth:`pricing.rank.placement_plan` gives them) that no row of theirs can take.

    A configuration's figures are those of its earliest term, the earliest frame row among
    equal terms: the least :data:`_TERM_THEN_ROW` per configuration, one value per row,
    whose low bits are the row, joined back by it (plain minima and null counts take
    polars' fast group-by path). ``placed`` carries :data:`~pricing.frame.OFFER_ROW`."""
    rows = placed.select(
        "config_id",
        OFFER_ROW,
        "provider",
        "gpu_raw_name",
        "gpu_model",
        "job_gpus",
        "memory_per_gpu_gb",
        reason=pl.col("placement_reason"),
        gpu_memory_gb=gpu_memory_gb(),
    )
    first_rows = (
        placed.group_by("config_id")
        .agg(_TERM_THEN_ROW.min().alias("_first"), placed=pl.col("placement_reason").null_count())
        .filter(pl.col("placed") == 0)  # a null reason is a placed row: none here
        .select((pl.col("_first") % _ROWS).cast(pl.get_index_type()).alias(OFFER_ROW))
    )
    return first_rows.join(rows, on=OFFER_ROW, how="inner").select(UNPLACED_COLUMNS)
