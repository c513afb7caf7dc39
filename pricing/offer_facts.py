"""What each row of a ranking frame says whatever the query: columns computed with the frame.

A ranking shows, for each configuration it keeps, how its term compares with the
on-demand price the provider publishes for the same configuration (the break-even), its
price per GPU-hour, its fabric's Gbps per GPU and whether it is available now; it ranks a
row the provider says is not available now after every other; and its top-k reads how
many rows a configuration has. None of that
depends on the requirement, the job or the time of the query: it is a fact of the row and
of its configuration's other rows. So these are columns of the frame
(:data:`FACT_COLUMNS`), computed once where the frame is built
(:func:`pricing.frame.offers_to_frame`, :func:`pricing.frame.records_to_frame`: once per
snapshot for the API, kept with its frame), not expressions of every ranking's plan.
polars plans and optimises a ranking anew on every call, and that planning, not the data,
is most of a ranking of a few thousand rows: each expression kept out of the plan is
planning saved on every query.

The break-even reads a configuration's rows of every term, whether or not a query admits
them: a query for interruptible or committed terms only (``terms``, a price cap) still
hears how they compare with the on-demand price of the same configuration. A frame whose
``config_id`` is reassigned (each row alone, as the digest's week of changes) computes its
facts again (:func:`with_offer_facts` replaces them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import polars as pl

from gpuscout.adapters.schema import RentalTerm

from . import expressions as ex

__all__ = [
    "AFTER",
    "CONFIGURATION_ROWS",
    "FACT_COLUMNS",
    "has_offer_facts",
    "with_offer_facts",
]

#: 1 where the provider says an offer is not available now (:func:`pricing.expressions.
#: unavailable`): the first key of every order, so those offers rank after all others.
AFTER: Final = "ranked_after"

#: How many rows the row's configuration has (its terms and their variants): the most of
#: them bounds the ranking's top-k (:func:`pricing.rank._top_configurations`).
CONFIGURATION_ROWS: Final = "configuration_rows"

_PERIOD_USD = pl.col("commitment_hours") * pl.col("usd_per_hour")
#: Per configuration: its on-demand price, its cheapest commitment period and that term.
#: The on-demand price is one per configuration, so the best commitment is the one with the
#: cheapest period; it breaks even after one period's price over the on-demand hourly price
#: (:func:`pricing.expressions.break_even_hours`).
_PEERS: Mapping[str, pl.Expr] = {
    "on_demand_usd_per_hour": pl.col("usd_per_hour")
    .filter(pl.col("term") == RentalTerm.ON_DEMAND.value)
    .min(),
    "_best_period_usd": _PERIOD_USD.min(),
    "best_commitment_term": pl.col("term").sort_by(_PERIOD_USD, "term", nulls_last=True).first(),
    CONFIGURATION_ROWS: pl.len(),
}
_BEST_HOURS = pl.col("_best_period_usd") / pl.col("on_demand_usd_per_hour")
_BEST_COMMITMENT: Mapping[str, pl.Expr] = {
    "best_commitment_hours": _BEST_HOURS,
    "best_commitment_term": pl.when(_BEST_HOURS.is_not_null()).then(pl.col("best_commitment_term")),
}
#: A commitment's break-even against on-demand; on-demand's, its best commitment's.
_BREAK_EVEN_HOURS = (
    pl.when(pl.col("commitment_hours").is_not_null())
    .then(ex.break_even_hours())
    .when(pl.col("term") == RentalTerm.ON_DEMAND.value)
    .then(pl.col("best_commitment_hours"))
)

#: The columns :func:`with_offer_facts` adds, in order.
FACT_COLUMNS: tuple[str, ...] = (
    AFTER,
    "usd_per_gpu_hour",
    "fabric_gbps_per_gpu",
    "availability",
    "on_demand_usd_per_hour",
    "break_even_hours",
    "best_commitment_term",
    "best_commitment_hours",
    CONFIGURATION_ROWS,
)


def has_offer_facts(frame: pl.DataFrame) -> bool:
    """Whether ``frame`` carries every column of :data:`FACT_COLUMNS`."""
    return all(name in frame.columns for name in FACT_COLUMNS)


def with_offer_facts(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (with ``config_id``) with :data:`FACT_COLUMNS` computed, replacing any it
    had; rows in the same order (~25 ms for 100k offers).

    The facts are computed apart and put beside ``frame``'s own columns, which stay as
    they are: a frame rebuilt by a join comes back in as many chunks as the engine's
    threads made, and joining the chosen rows back to a frame of 1M offers in ten chunks
    took 70 ms of a ranking against 17 in one."""
    base = frame.drop(FACT_COLUMNS, strict=False)
    peers = base.lazy().group_by("config_id").agg(**_PEERS).with_columns(**_BEST_COMMITMENT)
    facts = (
        base.lazy()
        .join(peers, on="config_id", how="left", maintain_order="left")
        .with_columns(
            **{AFTER: ex.unavailable()},
            usd_per_gpu_hour=ex.usd_per_gpu_hour(),
            fabric_gbps_per_gpu=ex.fabric_gbps_per_gpu(),
            availability=ex.availability(),
            break_even_hours=_BREAK_EVEN_HOURS,
        )
        .select(FACT_COLUMNS)
        .collect()
        .rechunk()
    )
    return base.hstack(facts)
