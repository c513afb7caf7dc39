"""Evaluating every alert against the newest snapshot, once per distinct search.

Alerts are grouped by their :func:`.condition.search_key` (requirement and job); each
distinct search's best offer per metric (the first row its ranking would show, and how many
of its offers are available now) comes from :func:`.search_best.best_per_search`, which
costs the frame once per distinct job and evaluates each search as a filter and an argmin
over those costed rows, not a ranking per search (``benchmarks/alerts.py`` measures it).
The current frame is cut to the providers whose latest fetch succeeded: held (stale)
offers of a failing provider never fire an alert.

A serving search (one with a serve request, watched in ``usd_per_m_tokens``) is ranked by
:func:`.serve_best.serve_best_per_search` instead, once per distinct search.

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
from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal

import polars as pl
from sqlalchemy.engine import Engine

from gpuscout.adapters.run import RunStatus
from gpuscout.db.alerts import (
    AlertRow,
    Firing,
    FiringRow,
    active_alerts,
    add_observations,
    fire_alerts,
    median_best,
    rearm_alerts,
)
from gpuscout.db.current import CurrentState
from gpuscout.db.subscriptions import mark_subscription_invalid
from gpuscout.pricing import Job, Requirement
from gpuscout.pricing.serve_rank import ServeRequest

from ..digest.saved_search import CorruptSubscription, load_search_json, load_serve_json
from ..settings import Settings
from .condition import AlertCondition, State, judge
from .search_best import BEST_OFFER_COLUMNS, SearchBest, best_per_search
from .serve_best import serve_best_per_search

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


def fresh_frame(current: CurrentState) -> pl.DataFrame:
    """The current frame without the held offers of providers whose latest fetch failed."""
    if not current.providers:
        return current.frame
    fresh = [n for n, p in current.providers.items() if p.last_status is RunStatus.OK]
    return current.frame.filter(pl.col("provider").is_in(fresh))


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
    serving: dict[str, tuple[Requirement, Job, ServeRequest]] = {}
    alerts: list[AlertRow] = []
    for alert in active_alerts(engine):
        if alert.search_key not in searches and alert.search_key not in serving:
            try:
                requirement, job = load_search_json(
                    alert.subscription_id, alert.requirement_json, alert.job_json
                )
                serve = load_serve_json(alert.subscription_id, alert.job_json)
            except CorruptSubscription as exc:
                log.error("%s; marked invalid, skipped", exc)
                mark_subscription_invalid(engine, alert.subscription_id, exc.problem)
                report.invalid += 1
                continue
            if serve is None:
                searches[alert.search_key] = (requirement, job)
            else:
                serving[alert.search_key] = (requirement, job, serve)
        alerts.append(alert)
    report.alerts, report.searches = len(alerts), len(searches) + len(serving)
    if not alerts:
        return report
    frame = fresh_frame(current)
    bests = best_per_search(frame, searches, now) if searches else {}
    bests |= serve_best_per_search(frame, serving, now)
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
