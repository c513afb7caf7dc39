"""Evaluating every alert against the newest snapshot, once per distinct search.

Alerts are grouped by their :func:`.condition.search_key` (requirement and job): each group
is costed once, by :func:`pricing.rank.costed_plan` over the current frame, and reduced to
its best value of each metric and its count of offers available now; the plans of all
groups are collected together (``pl.collect_all``, run in parallel by polars). So 10k
alerts over a few hundred searches cost a few hundred costings, not 10k rankings
(``benchmarks/alerts.py`` measures it). The current frame is cut to the providers whose
latest fetch succeeded: held (stale) offers of a failing provider never fire an alert.

Each alert's verdict comes from :func:`.condition.judge`; a firing is stored with the
compare-and-set of :func:`db.alerts.fire_alert`, so two evaluators of one snapshot fire a
crossing once. The best value of every search is recorded (``search_observation``) after
the drop baselines were read, for the next evaluations' 7-day medians.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import polars as pl
from sqlalchemy.engine import Engine

from adapters.collect import RunStatus
from db.alerts import (
    AlertRow,
    Firing,
    FiringRow,
    active_alerts,
    add_observations,
    fire_alerts,
    median_best,
    rearm_alerts,
)
from db.current import CurrentState
from db.subscriptions import mark_subscription_invalid
from pricing import Job, RankOptions, Requirement
from pricing.expressions import qualifies, usd_per_gpu_hour
from pricing.rank import KEY, costed_plan

from ..digest.saved_search import CorruptSubscription, load_search_json
from ..settings import Settings
from .condition import METRICS, AlertCondition, State, judge

__all__ = [
    "BEST_OFFER_COLUMNS",
    "DROP_WINDOW",
    "EvaluationReport",
    "SearchBest",
    "best_per_search",
    "condition_of",
    "evaluate_alerts",
    "fresh_frame",
]

log = logging.getLogger("gpuscout.alerts")

#: The window of a drop alert's median.
DROP_WINDOW = timedelta(days=7)
#: Searches whose plans are collected together (bounds the memory of one batch).
BATCH = 64
#: What a firing records of its best offer (and the mail and webhook show).
BEST_OFFER_COLUMNS = (
    "provider",
    "offer_id",
    "instance_name",
    "region",
    "gpu_model",
    "gpu_count",
    "term",
    "usd_per_hour",
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


@dataclasses.dataclass(frozen=True, slots=True)
class SearchBest:
    """A search's best value of each metric (``None``: nothing qualifies), how many of its
    qualifying offer rows are available now, and the offer that gave each best (of the rows
    tied on the value, the first in the frame, which is in offer-key order), under
    ``"in_stock"`` the best by :data:`pricing.rank.KEY` of those available now."""

    values: Mapping[str, float | None]
    in_stock: int
    offers: Mapping[str, dict[str, Any] | None]
    """per metric (and ``in_stock``) the best offer, :data:`BEST_OFFER_COLUMNS`"""


#: The frame's row number: ties between equally good rows go to the first.
_ROW = "_alert_row"


def fresh_frame(current: CurrentState) -> pl.DataFrame:
    """The current frame without the held offers of providers whose latest fetch failed."""
    if not current.providers:
        return current.frame
    fresh = [n for n, p in current.providers.items() if p.last_status is RunStatus.OK]
    return current.frame.filter(pl.col("provider").is_in(fresh))


def _costed_for_job(frame: pl.DataFrame, job: Job, now: datetime) -> pl.DataFrame:
    """Every row of ``frame`` costed for ``job``, no requirement applied yet."""
    return (
        costed_plan(frame, Requirement(), job, RankOptions(now=now))
        .with_columns(usd_per_gpu_hour=usd_per_gpu_hour())
        .collect()
    )


def _best_row(values: pl.Expr, among: pl.Expr | None = None) -> pl.Expr:
    """The best row's offer columns as a struct: of the rows with the least ``values``
    (``among`` those only, if given), the first in the frame."""
    rows = pl.col(_ROW) if among is None else pl.col(_ROW).filter(among)
    kept = values if among is None else values.filter(among)
    first = rows.filter(kept == kept.min()).min()
    return pl.struct(*BEST_OFFER_COLUMNS).filter(pl.col(_ROW) == first).first()


def _best_plan(costed: pl.DataFrame, requirement: Requirement, now: datetime) -> pl.LazyFrame:
    available = pl.col("available_now").fill_null(False)
    return (
        costed.lazy()
        .filter(qualifies(requirement, now))
        .select(
            *[pl.col(m).min().cast(pl.Float64) for m in METRICS],
            *[_best_row(pl.col(m)).alias(f"row:{m}") for m in METRICS],
            in_stock=available.sum().cast(pl.Int64),
            in_stock_row=_best_row(pl.col(KEY), available),
        )
    )


class _GpuRows:
    """A costed frame split by GPU model: a search naming GPUs filters only their rows
    (most do, and one model holds a small share of the market), not the whole frame."""

    def __init__(self, costed: pl.DataFrame) -> None:
        self.costed = costed
        self.parts = {
            str(model[0]): part
            for model, part in costed.partition_by("gpu_model", as_dict=True).items()
        }
        self.joined: dict[tuple[str, ...], pl.DataFrame] = {}

    def rows(self, requirement: Requirement) -> pl.DataFrame:
        models = requirement.gpu_models()
        if not models:
            return self.costed
        if models not in self.joined:
            parts = [self.parts[m] for m in models if m in self.parts]
            self.joined[models] = pl.concat(parts) if parts else self.costed.clear()
        return self.joined[models]


def best_per_search(
    frame: pl.DataFrame, searches: Mapping[str, tuple[Requirement, Job]], now: datetime
) -> dict[str, SearchBest]:
    """Each search's :class:`SearchBest` over ``frame``.

    Costing depends on the job only and the requirement is a row filter (row-wise, like
    every step of the costing, so the two commute): the frame is costed once per distinct
    job, and each search is that costed frame (only its GPU models' rows, when it names
    some: the requirement keeps no other) filtered by its requirement and reduced,
    ``BATCH`` searches collected together.
    """
    numbered = frame.with_row_index(_ROW)
    by_job: dict[str, list[str]] = {}
    for key, (_requirement, job) in searches.items():
        by_job.setdefault(job.model_dump_json(), []).append(key)
    result: dict[str, SearchBest] = {}
    for keys in by_job.values():
        costed = _costed_for_job(numbered, searches[keys[0]][1], now)
        by_gpu = _GpuRows(costed)
        for start in range(0, len(keys), BATCH):
            chunk = keys[start : start + BATCH]
            plans = [_best_plan(by_gpu.rows(searches[k][0]), searches[k][0], now) for k in chunk]
            for key, answer in zip(chunk, pl.collect_all(plans), strict=True):
                row = answer.row(0, named=True)
                rows = {m: row[f"row:{m}"] for m in METRICS} | {"in_stock": row["in_stock_row"]}
                result[key] = SearchBest(
                    {m: row[m] for m in METRICS},
                    int(row["in_stock"] or 0),
                    {k: None if v is None else _json_row(v) for k, v in rows.items()},
                )
    return result


def _json_value(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def _json_row(row: Mapping[str, Any]) -> dict[str, Any] | None:
    if all(v is None for v in row.values()):
        return None
    return {c: _json_value(row.get(c)) for c in BEST_OFFER_COLUMNS}


def condition_of(alert: AlertRow) -> AlertCondition:
    return AlertCondition(
        kind=alert.condition,
        metric=alert.metric,
        threshold=None if alert.threshold is None else Decimal(alert.threshold),
        drop_pct=alert.drop_pct,
    )


@dataclasses.dataclass(slots=True)
class EvaluationReport:
    alerts: int = 0
    searches: int = 0
    fired: list[FiringRow] = dataclasses.field(default_factory=list)
    rearmed: int = 0
    quiet: int = 0
    invalid: int = 0
    seconds: float = 0.0


def _medians(
    engine: Engine, alerts: Sequence[AlertRow], settings: Settings, now: datetime
) -> dict[tuple[str, str], float]:
    """The 7-day median of each (search, metric) a drop alert reads."""
    wanted: dict[str, set[str]] = {}
    for alert in alerts:
        if alert.condition == "drop":
            wanted.setdefault(alert.metric, set()).add(alert.search_key)
    medians: dict[tuple[str, str], float] = {}
    for metric, keys in wanted.items():
        found = median_best(
            engine,
            sorted(keys),
            metric,
            since=now - DROP_WINDOW,
            min_points=settings.alert_drop_min_observations,
        )
        medians.update({(k, metric): v for k, v in found.items()})
    return medians


def evaluate_alerts(
    settings: Settings, engine: Engine, current: CurrentState, *, now: datetime
) -> EvaluationReport:
    """Judge every active alert against ``current`` and store firings and re-armings."""
    started = time.perf_counter()
    report = EvaluationReport()
    searches: dict[str, tuple[Requirement, Job]] = {}
    alerts: list[AlertRow] = []
    for alert in active_alerts(engine):
        if alert.search_key not in searches:
            try:
                searches[alert.search_key] = load_search_json(
                    alert.subscription_id, alert.requirement_json, alert.job_json
                )
            except CorruptSubscription as exc:
                log.error("%s; marked invalid, skipped", exc)
                mark_subscription_invalid(engine, alert.subscription_id, exc.problem)
                report.invalid += 1
                continue
        alerts.append(alert)
    report.alerts, report.searches = len(alerts), len(searches)
    if not alerts:
        return report
    frame = fresh_frame(current)
    bests = best_per_search(frame, searches, now)
    medians = _medians(engine, alerts, settings, now)
    add_observations(
        engine,
        now,
        {k: dict(b.values) for k, b in bests.items()},
        keep_since=now - DROP_WINDOW - timedelta(days=1),
    )
    rearm: list[int] = []
    to_fire: list[Firing] = []
    for alert in alerts:
        best = bests[alert.search_key]
        condition = condition_of(alert)
        baseline = medians.get((alert.search_key, alert.metric))
        verdict = judge(
            State(
                condition, alert.armed, alert.last_fired_at, timedelta(minutes=alert.quiet_minutes)
            ),
            value=best.values.get(alert.metric),
            in_stock=best.in_stock,
            baseline=baseline,
            band_pct=settings.alert_hysteresis_pct,
            now=now,
        )
        if verdict == "rearm":
            rearm.append(alert.id)
        elif verdict == "quiet":
            report.quiet += 1
        elif verdict == "fire":
            offer = best.offers.get("in_stock" if condition.kind == "in_stock" else alert.metric)
            value = None if condition.kind == "in_stock" else best.values.get(alert.metric)
            to_fire.append(Firing(alert, value, baseline, json.dumps(offer, sort_keys=True)))
    report.fired = fire_alerts(engine, to_fire, now=now)
    for firing in report.fired:
        log.info("alert %s fired (#%d)", firing.alert_id, firing.seq)
    report.rearmed = rearm_alerts(engine, rearm, now=now)
    report.seconds = time.perf_counter() - started
    return report
