"""Price alerts: conditions, their armed state, firings and webhooks.

An alert *is* a subscription of kind ``alert`` (:mod:`db.subscriptions`): its address, name,
saved requirement and job, and its pending -> active -> unsubscribed life (double opt-in,
one-click unsubscribe) are the digest's. This module holds what an alert adds::

    alert               one per alert subscription: the condition (kind, metric, threshold,
                        drop percentage), the quiet period, the canonical ``search_key`` of
                        its requirement and job (alerts sharing one are ranked once), and the
                        state: ``armed`` (fires at the next crossing) and ``fire_count``
    alert_firing        one row per firing, numbered per alert (unique (alert_id, seq): the
                        armed -> fired compare-and-set and this insert share a transaction,
                        so a crossing fires once however many evaluators run); ``settled``
                        once every channel's delivery is final
    alert_webhook       the alert's webhook URLs with their signing secret, consecutive
                        failures and ``disabled_at`` (after too many)
    search_observation  the best value of each search at each evaluation: the series the
                        "drops by X% from its 7-day median" condition reads

The deliveries of a firing (its mail, each webhook call) are ``digest_delivery`` rows with
the period ``alert:<firing>`` or ``hook:<firing>:<webhook>``: the digest's claim -> sending
-> sent protocol (:mod:`service.digest.delivery`) makes each exactly once.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Mapped, mapped_column

from .engine import select_rows, write_connection
from .models import Base, BigId
from .subscriptions import Subscription, SubscriptionKind, SubscriptionStatus
from .types import UtcDateTime

__all__ = [
    "Alert",
    "AlertFiring",
    "AlertRow",
    "AlertWebhook",
    "Firing",
    "FiringRow",
    "SearchObservation",
    "WebhookRow",
    "active_alerts",
    "add_observations",
    "alert_by_subscription",
    "alerts_for_address",
    "count_alerts_for_address",
    "fire_alerts",
    "firings",
    "get_alert",
    "insert_alert",
    "median_best",
    "note_webhook_result",
    "rearm_alerts",
    "settle_firing",
    "unsettled_firings",
    "webhooks_of",
]


class Alert(Base):
    __tablename__ = "alert"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    subscription_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("subscription.id", ondelete="CASCADE"), unique=True
    )
    condition: Mapped[str] = mapped_column(sa.String(16), comment="below | in_stock | drop")
    metric: Mapped[str] = mapped_column(
        sa.String(40), comment="usd_per_gpu_hour | usd_per_effective_tflop_hour | job_cost_usd"
    )
    threshold: Mapped[str | None] = mapped_column(
        sa.String(40), comment="exact decimal, USD in the metric's unit (below)"
    )
    drop_pct: Mapped[float | None] = mapped_column(sa.Float, comment="percent (drop)")
    quiet_minutes: Mapped[int] = mapped_column(sa.Integer, comment="no firing sooner after one")
    search_key: Mapped[str] = mapped_column(
        sa.String(64), index=True, comment="sha256 of the canonical requirement and job"
    )
    armed: Mapped[bool] = mapped_column(sa.Boolean, comment="fires at the next crossing")
    fire_count: Mapped[int] = mapped_column(sa.Integer, comment="firings so far")
    last_value: Mapped[float | None] = mapped_column(sa.Float)
    last_evaluated_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_fired_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class AlertFiring(Base):
    __tablename__ = "alert_firing"
    __table_args__ = (sa.UniqueConstraint("alert_id", "seq"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    alert_id: Mapped[int] = mapped_column(BigId, sa.ForeignKey("alert.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(sa.Integer, comment="1, 2, ... per alert")
    fired_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    value: Mapped[float | None] = mapped_column(sa.Float, comment="the metric when it fired")
    baseline: Mapped[float | None] = mapped_column(sa.Float, comment="7-day median (drop)")
    offer: Mapped[str] = mapped_column(sa.Text, comment="the best offer, JSON")
    settled: Mapped[bool] = mapped_column(sa.Boolean, index=True, comment="every delivery final")


class AlertWebhook(Base):
    __tablename__ = "alert_webhook"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    alert_id: Mapped[int] = mapped_column(BigId, sa.ForeignKey("alert.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(sa.String(2048))
    secret: Mapped[str] = mapped_column(sa.String(128), comment="HMAC-SHA256 signing key")
    failures: Mapped[int] = mapped_column(sa.Integer, comment="consecutive failed deliveries")
    disabled_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_error: Mapped[str | None] = mapped_column(sa.Text)


class SearchObservation(Base):
    __tablename__ = "search_observation"
    __table_args__ = (sa.Index("ix_search_observation_key_at", "search_key", "at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    search_key: Mapped[str] = mapped_column(sa.String(64))
    at: Mapped[datetime] = mapped_column(UtcDateTime)
    usd_per_gpu_hour: Mapped[float | None] = mapped_column(sa.Float)
    usd_per_effective_tflop_hour: Mapped[float | None] = mapped_column(sa.Float)
    job_cost_usd: Mapped[float | None] = mapped_column(sa.Float)


_alert = cast(sa.Table, Alert.__table__)
_firing = cast(sa.Table, AlertFiring.__table__)
_webhook = cast(sa.Table, AlertWebhook.__table__)
_observation = cast(sa.Table, SearchObservation.__table__)
_subscription = cast(sa.Table, Subscription.__table__)

#: The metrics an observation records (column names of ``search_observation``).
OBSERVED_METRICS = ("usd_per_gpu_hour", "usd_per_effective_tflop_hour", "job_cost_usd")


@dataclasses.dataclass(frozen=True, slots=True)
class AlertRow:
    """An alert with what evaluating and delivering it needs of its subscription."""

    id: int
    subscription_id: int
    email: str
    name: str
    requirement_json: str
    job_json: str
    condition: str
    metric: str
    threshold: str | None
    drop_pct: float | None
    quiet_minutes: int
    search_key: str
    armed: bool
    fire_count: int
    last_value: float | None
    last_fired_at: datetime | None
    status: str


@dataclasses.dataclass(frozen=True, slots=True)
class FiringRow:
    id: int
    alert_id: int
    seq: int
    fired_at: datetime
    value: float | None
    baseline: float | None
    offer_json: str
    settled: bool


@dataclasses.dataclass(frozen=True, slots=True)
class WebhookRow:
    id: int
    alert_id: int
    url: str
    secret: str = dataclasses.field(repr=False)
    failures: int = 0
    disabled_at: datetime | None = None
    last_error: str | None = None


def _alerts_query() -> sa.Select[Any]:
    a, s = _alert.c, _subscription.c
    return sa.select(
        a.id,
        a.subscription_id,
        s.email,
        s.name,
        s.requirement,
        s.job,
        a.condition,
        a.metric,
        a.threshold,
        a.drop_pct,
        a.quiet_minutes,
        a.search_key,
        a.armed,
        a.fire_count,
        a.last_value,
        a.last_fired_at,
        s.status,
    ).join_from(_alert, _subscription, a.subscription_id == s.id)


def _alert_row(row: Any) -> AlertRow:
    return AlertRow(*row)


def insert_alert(connection: Connection, subscription_id: int, **values: Any) -> int:
    """Store an alert's condition (inside the subscription's creating transaction)."""
    webhooks: Sequence[tuple[str, str]] = values.pop("webhooks", ())
    alert_id = connection.execute(
        sa.insert(_alert)
        .values(subscription_id=subscription_id, armed=True, fire_count=0, **values)
        .returning(_alert.c.id)
    ).scalar_one()
    if webhooks:
        connection.execute(
            sa.insert(_webhook),
            [{"alert_id": alert_id, "url": u, "secret": k, "failures": 0} for u, k in webhooks],
        )
    return int(alert_id)


def count_alerts_for_address(connection: Connection, email: str) -> int:
    """Pending and active alerts of ``email`` (normalized address)."""
    s = _subscription.c
    return int(
        connection.execute(
            sa.select(sa.func.count())
            .select_from(_subscription)
            .where(
                s.email == email,
                s.kind == SubscriptionKind.ALERT.value,
                s.status.in_([SubscriptionStatus.PENDING.value, SubscriptionStatus.ACTIVE.value]),
            )
        ).scalar_one()
    )


def active_alerts(engine: Engine) -> list[AlertRow]:
    """Alerts whose subscription is confirmed and not ended, by id."""
    query = _alerts_query().where(_subscription.c.status == SubscriptionStatus.ACTIVE.value)
    with engine.connect() as connection:
        return [_alert_row(r) for r in connection.execute(query.order_by(_alert.c.id))]


def get_alert(engine: Engine, alert_id: int) -> AlertRow | None:
    with engine.connect() as connection:
        row = connection.execute(_alerts_query().where(_alert.c.id == alert_id)).first()
    return None if row is None else _alert_row(row)


def alert_by_subscription(engine: Engine, subscription_id: int) -> AlertRow | None:
    with engine.connect() as connection:
        row = connection.execute(
            _alerts_query().where(_alert.c.subscription_id == subscription_id)
        ).first()
    return None if row is None else _alert_row(row)


def alerts_for_address(engine: Engine, email: str) -> list[AlertRow]:
    with engine.connect() as connection:
        rows = connection.execute(
            _alerts_query().where(_subscription.c.email == email).order_by(_alert.c.id)
        )
        return [_alert_row(r) for r in rows]


@dataclasses.dataclass(frozen=True, slots=True)
class Firing:
    """A firing to store: the alert as read (its ``fire_count`` is the compare-and-set's
    expectation) and what it fired on."""

    alert: AlertRow
    value: float | None
    baseline: float | None
    offer_json: str


def fire_alerts(engine: Engine, items: Sequence[Firing], *, now: datetime) -> list[FiringRow]:
    """armed -> fired and a firing row for each of ``items``, in one transaction.

    The alerts are read again inside the transaction, row-locked on PostgreSQL (``FOR
    UPDATE``; SQLite's ``BEGIN IMMEDIATE`` has one writer at a time): an alert no longer
    armed, or fired since it was read (its ``fire_count`` moved on), was fired by another
    evaluator and is left out of the answer. The unique (alert_id, seq) is the last guard.
    """
    a = _alert.c
    if not items:
        return []
    wanted = {item.alert.id: item for item in items}
    with write_connection(engine) as connection:
        live: dict[int, int] = {}
        ids = sorted(wanted)
        for start in range(0, len(ids), 1000):
            query = (
                sa.select(a.id, a.fire_count)
                .where(a.id.in_(ids[start : start + 1000]), a.armed.is_(True))
                .with_for_update()
            )
            live.update({row.id: row.fire_count for row in connection.execute(query)})
        taken = [i for i in ids if live.get(i) == wanted[i].alert.fire_count]
        if not taken:
            return []
        connection.execute(
            sa.update(_alert)
            .where(a.id == sa.bindparam("alert_id"))
            .values(
                armed=False,
                fire_count=sa.bindparam("seq"),
                last_fired_at=now,
                last_value=sa.bindparam("value"),
                last_evaluated_at=now,
            ),
            [{"alert_id": i, "seq": live[i] + 1, "value": wanted[i].value} for i in taken],
        )
        rows = [
            {
                "alert_id": i,
                "seq": live[i] + 1,
                "fired_at": now,
                "value": wanted[i].value,
                "baseline": wanted[i].baseline,
                "offer": wanted[i].offer_json,
                "settled": False,
            }
            for i in taken
        ]
        connection.execute(sa.insert(_firing), rows)
        f = _firing.c
        stored = {
            (r.alert_id, r.seq): r.id
            for r in connection.execute(
                sa.select(f.id, f.alert_id, f.seq).where(f.fired_at == now, f.settled.is_(False))
            )
        }
    return [
        FiringRow(
            stored[(i, live[i] + 1)],
            i,
            live[i] + 1,
            now,
            wanted[i].value,
            wanted[i].baseline,
            wanted[i].offer_json,
            False,
        )
        for i in taken
    ]


def rearm_alerts(engine: Engine, alert_ids: Sequence[int], *, now: datetime) -> int:
    """fired -> armed for ``alert_ids`` (their condition stopped holding, past the band)."""
    if not alert_ids:
        return 0
    with write_connection(engine) as connection:
        return int(
            connection.execute(
                sa.update(_alert)
                .where(_alert.c.id.in_(list(alert_ids)), _alert.c.armed.is_(False))
                .values(armed=True, last_evaluated_at=now)
            ).rowcount
        )


def _firing_row(row: Any) -> FiringRow:
    return FiringRow(*row)


_FIRING_COLUMNS = (
    _firing.c.id,
    _firing.c.alert_id,
    _firing.c.seq,
    _firing.c.fired_at,
    _firing.c.value,
    _firing.c.baseline,
    _firing.c.offer,
    _firing.c.settled,
)


def firings(engine: Engine, alert_id: int, *, limit: int = 100) -> list[FiringRow]:
    """The alert's firings, newest first."""
    query = (
        sa.select(*_FIRING_COLUMNS)
        .where(_firing.c.alert_id == alert_id)
        .order_by(_firing.c.seq.desc())
        .limit(limit)
    )
    with engine.connect() as connection:
        return [_firing_row(r) for r in connection.execute(query)]


def unsettled_firings(engine: Engine) -> list[FiringRow]:
    """Firings with a delivery not yet final, oldest first."""
    query = sa.select(*_FIRING_COLUMNS).where(_firing.c.settled.is_(False)).order_by(_firing.c.id)
    with engine.connect() as connection:
        return [_firing_row(r) for r in connection.execute(query)]


def settle_firing(engine: Engine, firing_id: int) -> None:
    with write_connection(engine) as connection:
        connection.execute(sa.update(_firing).where(_firing.c.id == firing_id).values(settled=True))


def webhooks_of(engine: Engine, alert_id: int) -> list[WebhookRow]:
    w = _webhook.c
    query = sa.select(
        w.id, w.alert_id, w.url, w.secret, w.failures, w.disabled_at, w.last_error
    ).where(w.alert_id == alert_id)
    with engine.connect() as connection:
        return [WebhookRow(*r) for r in connection.execute(query.order_by(w.id))]


def note_webhook_result(
    engine: Engine,
    webhook_id: int,
    *,
    ok: bool,
    error: str | None,
    now: datetime,
    max_failures: int,
) -> bool:
    """Count a delivery's outcome; True if the webhook is disabled now (``max_failures``
    consecutive failures). A success resets the count."""
    w = _webhook.c
    with write_connection(engine) as connection:
        if ok:
            connection.execute(
                sa.update(_webhook).where(w.id == webhook_id).values(failures=0, last_error=None)
            )
            return False
        connection.execute(
            sa.update(_webhook)
            .where(w.id == webhook_id)
            .values(failures=w.failures + 1, last_error=(error or "")[:2000])
        )
        connection.execute(
            sa.update(_webhook)
            .where(w.id == webhook_id, w.failures >= max_failures, w.disabled_at.is_(None))
            .values(disabled_at=now)
        )
        return (
            connection.execute(sa.select(w.disabled_at).where(w.id == webhook_id)).scalar_one()
            is not None
        )


def add_observations(
    engine: Engine,
    at: datetime,
    best: dict[str, dict[str, float | None]],
    *,
    keep_since: datetime,
) -> None:
    """Record each search's best values at ``at`` (``best``: search key -> metric -> value)
    and delete those older than ``keep_since`` (no median reads them any more)."""
    rows = [
        {"search_key": key, "at": at, **{m: values.get(m) for m in OBSERVED_METRICS}}
        for key, values in best.items()
    ]
    with write_connection(engine) as connection:
        connection.execute(sa.delete(_observation).where(_observation.c.at < keep_since))
        if rows:
            connection.execute(sa.insert(_observation), rows)


def median_best(
    engine: Engine, keys: Sequence[str], metric: str, *, since: datetime, min_points: int
) -> dict[str, float]:
    """Per search key, the median of its recorded best ``metric`` since ``since``; keys with
    fewer than ``min_points`` observations are left out (no baseline yet)."""
    if metric not in OBSERVED_METRICS:
        raise ValueError(f"unknown metric {metric!r}")
    o = _observation.c
    column = o[metric]
    values: dict[str, list[float]] = {}
    query = sa.select(o.search_key, column).where(
        o.search_key.in_(sa.bindparam("keys", expanding=True)),
        o.at >= since,
        column.is_not(None),
    )
    with engine.connect() as connection:
        for start in range(0, len(keys), 1000):
            chunk = list(keys[start : start + 1000])
            for key, value in select_rows(connection, query, {"keys": chunk}):
                values.setdefault(key, []).append(float(value))
    return {k: statistics.median(v) for k, v in values.items() if len(v) >= min_points}
