"""A serving search's best offer in USD per million tokens, for its alerts.

An alert on ``usd_per_m_tokens`` watches the first row of its search's serving ranking
(:func:`pricing.serve_rank.rank_serving` of its requirement, service hours and serve
request): the same row ``gpuscout offers --serve`` and ``/v1/offers?serve=`` show first.
Serving searches are few, so each distinct one is ranked once, plainly; the optimised
:mod:`.search_best` path stays for the training metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import polars as pl

from gpuscout.pricing import Job, Requirement
from gpuscout.pricing.serve_rank import ServeRequest, rank_serving

from ..digest.saved_search import service_hours
from .condition import SERVE_METRIC
from .search_best import OFFER_HEAD_COLUMNS, SearchBest

__all__ = ["SERVE_OFFER_COLUMNS", "serve_best_per_search"]

#: What a firing records of a serving search's best offer (and the mail and webhook show).
SERVE_OFFER_COLUMNS = (
    *OFFER_HEAD_COLUMNS,
    "gpus_per_replica",
    "replicas",
    "batch",
    "tokens_per_s_per_gpu",
    "throughput_source",
    "usd_per_m_tokens",
    "usd_per_m_tokens_at_demand",
    "restart_risk",
)


def _offer(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {k: row[k] for k in SERVE_OFFER_COLUMNS}


def serve_best_per_search(
    frame: pl.DataFrame,
    searches: Mapping[str, tuple[Requirement, Job, ServeRequest]],
    now: datetime,
) -> dict[str, SearchBest]:
    """Each serving search's :class:`SearchBest`: the value of :data:`SERVE_METRIC` (at the
    demand when the request gives ``tokens_per_day``, as the ranking orders), how many
    ranked rows are available now, and the first row overall and of those available."""
    available = set(
        frame.filter(pl.col("available_now").fill_null(False)).get_column("config_id").to_list()
    )
    bests: dict[str, SearchBest] = {}
    for key, (requirement, job, serve) in searches.items():
        rows = rank_serving(frame, serve, requirement, service_hours(job), now).rows
        ordered = "usd_per_m_tokens_at_demand" if serve.tokens_per_day else SERVE_METRIC
        first = rows.row(0, named=True) if rows.height else None
        in_stock = rows.filter(pl.col("config_id").is_in(sorted(available)))
        bests[key] = SearchBest(
            values={SERVE_METRIC: None if first is None else first[ordered]},
            in_stock=in_stock.height,
            offers={
                SERVE_METRIC: _offer(first),
                "in_stock": _offer(in_stock.row(0, named=True) if in_stock.height else None),
            },
        )
    return bests
