"""What an alert waits for, and when it holds or re-arms: pure functions, no I/O.

Three kinds of condition, each over the best qualifying offer of the alert's search (its
requirement and job) in the newest snapshot:

* ``below``: ``metric`` (USD per GPU-hour, per effective TFLOP-hour, or the job's cost;
  for a serving search, USD per million output tokens) is at or below ``threshold``;
* ``in_stock``: at least one qualifying offer is available now;
* ``drop``: ``metric`` is at least ``drop_pct`` % below the median of the search's best
  value over the last 7 days (:func:`db.alerts.median_best`).

An alert fires when its condition holds while it is *armed*, and is then disarmed; it
re-arms only once the condition has clearly stopped holding: the value must rise above the
threshold (or the drop target) by the hysteresis band, ``Settings.alert_hysteresis_pct``
(default 5 %: an alert at $2.20 that fired re-arms above $2.31). A price wobbling between
$2.19 and $2.25 therefore fires once. An ``in_stock`` alert re-arms when nothing
qualifying is available. Independently, a *quiet period* per alert
(``quiet_minutes``) keeps a re-armed alert from firing again too soon.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "METRICS",
    "SERVE_METRIC",
    "AlertCondition",
    "Metric",
    "State",
    "Verdict",
    "judge",
    "search_key",
]

Metric = Literal[
    "usd_per_gpu_hour", "usd_per_effective_tflop_hour", "job_cost_usd", "usd_per_m_tokens"
]
#: The training metrics (a search's ranking by requirement and job).
METRICS: tuple[Metric, ...] = ("usd_per_gpu_hour", "usd_per_effective_tflop_hour", "job_cost_usd")
#: A serving search's metric: USD per million output tokens, the first row of its
#: :func:`pricing.serve_rank.rank_serving` (a ``below`` condition only: no 7-day series).
SERVE_METRIC: Metric = "usd_per_m_tokens"
Kind = Literal["below", "in_stock", "drop"]


class AlertCondition(BaseModel):
    """The condition of one alert (part of ``POST /v1/alerts``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    kind: Kind = Field(description="below: a threshold; in_stock; drop: % under 7-day median")
    metric: Metric = Field(
        "usd_per_gpu_hour", description="what below and drop compare (USD per unit)"
    )
    threshold: Decimal | None = Field(
        None, gt=0, max_digits=18, decimal_places=6, description="below: USD in the metric"
    )
    drop_pct: float | None = Field(None, gt=0, lt=100, description="drop: percent")

    @model_validator(mode="after")
    def _complete(self) -> Self:
        if self.kind == "below" and self.threshold is None:
            raise ValueError("a 'below' alert needs a threshold")
        if self.kind == "drop" and self.drop_pct is None:
            raise ValueError("a 'drop' alert needs drop_pct")
        if self.kind != "below" and self.threshold is not None:
            raise ValueError(f"threshold is for 'below' alerts, not {self.kind!r}")
        if self.kind != "drop" and self.drop_pct is not None:
            raise ValueError(f"drop_pct is for 'drop' alerts, not {self.kind!r}")
        return self


def search_key(requirement_json: str, job_json: str) -> str:
    """The canonical key of a search: alerts with equal keys are costed once.

    >>> search_key('{"gpus":["H100"]}', '{}') == search_key('{ "gpus": ["H100"] }', '{}')
    True
    """
    canonical = json.dumps(
        {"requirement": json.loads(requirement_json), "job": json.loads(job_json)},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclasses.dataclass(frozen=True, slots=True)
class State:
    """What :func:`judge` needs of a stored alert."""

    condition: AlertCondition
    armed: bool
    last_fired_at: datetime | None
    quiet: timedelta


Verdict = Literal["fire", "rearm", "quiet", "none"]


def _target(condition: AlertCondition, baseline: float | None) -> Decimal | None:
    if condition.kind == "below":
        return condition.threshold
    if condition.kind == "drop" and baseline is not None and condition.drop_pct is not None:
        return Decimal(repr(baseline)) * (1 - Decimal(repr(condition.drop_pct)) / 100)
    return None


def judge(
    state: State,
    *,
    value: float | None,
    in_stock: int,
    baseline: float | None,
    band_pct: float,
    now: datetime,
) -> Verdict:
    """What this evaluation does to the alert: fire, re-arm, hold back (quiet), or nothing.

    ``value``: the best ``metric`` of the search (``None``: nothing qualifies);
    ``in_stock``: qualifying offers available now; ``baseline``: the 7-day median
    (``None``: not enough history, a drop alert neither fires nor re-arms).

    >>> from datetime import UTC
    >>> below = AlertCondition(kind="below", threshold=Decimal("2.20"))
    >>> s = State(below, armed=False, last_fired_at=None, quiet=timedelta(0))
    >>> t = datetime(2026, 1, 1, tzinfo=UTC)
    >>> judge(s, value=2.25, in_stock=0, baseline=None, band_pct=5, now=t)  # in the band
    'none'
    >>> judge(s, value=2.32, in_stock=0, baseline=None, band_pct=5, now=t)
    'rearm'
    """
    condition = state.condition
    if condition.kind == "in_stock":
        holds, clear = in_stock > 0, in_stock == 0
    else:
        target = _target(condition, baseline)
        if target is None:
            return "none"
        exact = None if value is None else Decimal(repr(value))
        holds = exact is not None and exact <= target
        clear = exact is None or exact > target * (1 + Decimal(repr(band_pct)) / 100)
    if not state.armed:
        return "rearm" if clear else "none"
    if not holds:
        return "none"
    if state.last_fired_at is not None and now - state.last_fired_at < state.quiet:
        return "quiet"
    return "fire"
