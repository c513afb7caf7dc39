"""Digest subscriptions and their weekly deliveries (issue "Weekly email digest").

Layout::

    subscription        an address, a name, a time zone, a saved requirement and job (JSON
                        of pricing.Requirement / pricing.Job), a ``kind`` (``digest``: the
                        weekly digest; ``alert``: a price alert, see :mod:`db.alerts`;
                        both share the double opt-in and unsubscribe), and a status:
                        pending (not confirmed) -> active -> unsubscribed
                        pending -> invalid (its stored search no longer validates: skipped
                        by every digest run, the reason in ``problem``)
    digest_delivery     one row per (subscription, period): the exactly-once record of a
                        weekly digest (period: the ISO week) or of one alert firing's mail
                        or webhook call (period: ``alert:<firing>``,
                        ``hook:<firing>:<hook>``): claimed -> sending -> sent (or failed,
                        claimable again after ``retry_at``; or refused, final), with the
                        Message-ID chosen before the first send
    mail_quota          one row per limit key (an address, a client, "global"): the row a
                        subscription request locks while it counts and uses its quota
    mail_quota_use      one row per confirmation mail counted against a key, for the sliding
                        windows of :func:`create_subscription`

The delivery protocol itself is in :mod:`service.digest.delivery`. The models share
:class:`db.models.Base`, so the Alembic environment sees them once this module is imported.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Mapped, mapped_column

from .engine import write_connection
from .models import Base, BigId
from .types import UtcDateTime

__all__ = [
    "QUOTA_MAX_WINDOW",
    "DeliveryStatus",
    "DigestDelivery",
    "MailQuota",
    "MailQuotaUse",
    "Quota",
    "QuotaExceeded",
    "Subscription",
    "SubscriptionKind",
    "SubscriptionRecord",
    "SubscriptionStatus",
    "activate_subscription",
    "active_subscriptions",
    "create_subscription",
    "end_subscription",
    "get_subscription",
    "mark_subscription_invalid",
]


class SubscriptionKind(StrEnum):
    DIGEST = "digest"  # the weekly digest
    ALERT = "alert"  # a price alert (gpuscout.db.alerts holds its condition)


class SubscriptionStatus(StrEnum):
    PENDING = "pending"  # created, confirmation link sent, nothing else goes out
    ACTIVE = "active"  # confirmed: digests go out
    UNSUBSCRIBED = "unsubscribed"
    INVALID = "invalid"  # its stored search does not validate any more: skipped, see problem


class DeliveryStatus(StrEnum):
    CLAIMED = "claimed"  # a process reserved this week's digest (lease); nothing sent yet
    SENDING = "sending"  # recorded just before the SMTP transaction: may have been sent
    SENT = "sent"  # the SMTP server accepted it: final
    FAILED = "failed"  # the last attempt failed; claimable again from retry_at on
    REFUSED = "refused"  # the SMTP server refused this message for good (5xx): final


class Subscription(Base):
    __tablename__ = "subscription"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(sa.String(320), index=True, comment="normalized address")
    name: Mapped[str] = mapped_column(sa.String(100))
    time_zone: Mapped[str] = mapped_column(sa.String(64), comment="IANA name, e.g. Europe/Paris")
    requirement: Mapped[str] = mapped_column(sa.Text, comment="pricing.Requirement as JSON")
    job: Mapped[str] = mapped_column(sa.Text, comment="pricing.Job as JSON")
    status: Mapped[str] = mapped_column(
        sa.String(16), index=True, comment="pending | active | unsubscribed | invalid"
    )
    kind: Mapped[str] = mapped_column(
        sa.String(16), server_default="digest", index=True, comment="digest | alert"
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    confirmed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    unsubscribed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    problem: Mapped[str | None] = mapped_column(
        sa.Text, comment="why the subscription was marked invalid"
    )


class DigestDelivery(Base):
    __tablename__ = "digest_delivery"
    __table_args__ = (sa.UniqueConstraint("subscription_id", "week"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    subscription_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("subscription.id", ondelete="CASCADE")
    )
    week: Mapped[str] = mapped_column(
        sa.String(40),
        comment="ISO week in the subscriber's zone; alert:<firing> | hook:<firing>:<webhook>",
    )
    status: Mapped[str] = mapped_column(
        sa.String(16), index=True, comment="claimed | sending | sent | failed | refused"
    )
    message_id: Mapped[str] = mapped_column(
        sa.String(255), unique=True, comment="chosen at the first claim, reused by every resend"
    )
    attempts: Mapped[int] = mapped_column(sa.Integer, comment="claims taken so far")
    claimed_by: Mapped[str | None] = mapped_column(sa.String(64))
    claimed_at: Mapped[datetime] = mapped_column(UtcDateTime)
    lease_expires_at: Mapped[datetime | None] = mapped_column(
        UtcDateTime, comment="a claimed/sending row is reserved until then"
    )
    sending_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    possible_duplicate: Mapped[bool] = mapped_column(
        sa.Boolean, comment="resent after an attempt that may have reached the server"
    )
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    retry_at: Mapped[datetime | None] = mapped_column(
        UtcDateTime, comment="a failed row is not claimed again before then (backoff)"
    )


class MailQuota(Base):
    __tablename__ = "mail_quota"

    key: Mapped[str] = mapped_column(
        sa.String(80), primary_key=True, comment="address:<sha256> | client:<sha256> | global"
    )
    used_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)


class MailQuotaUse(Base):
    __tablename__ = "mail_quota_use"
    __table_args__ = (sa.Index("ix_mail_quota_use_key_at", "key", "at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(sa.String(80))
    at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)


_subscription = cast(sa.Table, Subscription.__table__)
_quota = cast(sa.Table, MailQuota.__table__)
_quota_use = cast(sa.Table, MailQuotaUse.__table__)


@dataclasses.dataclass(frozen=True, slots=True)
class SubscriptionRecord:
    id: int
    email: str
    name: str
    time_zone: str
    requirement_json: str
    job_json: str
    status: SubscriptionStatus
    created_at: datetime
    confirmed_at: datetime | None
    unsubscribed_at: datetime | None
    problem: str | None = None
    kind: SubscriptionKind = SubscriptionKind.DIGEST


def _record(row: sa.RowMapping) -> SubscriptionRecord:
    return SubscriptionRecord(
        id=row["id"],
        email=row["email"],
        name=row["name"],
        time_zone=row["time_zone"],
        requirement_json=row["requirement"],
        job_json=row["job"],
        status=SubscriptionStatus(row["status"]),
        created_at=row["created_at"],
        confirmed_at=row["confirmed_at"],
        unsubscribed_at=row["unsubscribed_at"],
        problem=row["problem"],
        kind=SubscriptionKind(row["kind"]),
    )


#: The longest window a :class:`Quota` may have: older uses are deleted.
QUOTA_MAX_WINDOW = timedelta(days=7)


@dataclasses.dataclass(frozen=True, slots=True)
class Quota:
    """At most ``limit`` uses of ``key`` within any ``window`` (a sliding window)."""

    key: str
    """what is limited, e.g. ``address:<hash>``; at most 80 characters"""
    limit: int
    window: timedelta

    def __post_init__(self) -> None:
        if not 0 < len(self.key) <= 80 or self.limit < 1:
            raise ValueError(f"quota {self.key!r}: a key of 1-80 characters, a limit >= 1")
        if not timedelta(0) < self.window <= QUOTA_MAX_WINDOW:
            raise ValueError(f"quota {self.key!r}: window must be within {QUOTA_MAX_WINDOW}")


class QuotaExceeded(Exception):
    """A :class:`Quota` is used up; nothing was stored. ``retry_after_s``: when it frees."""

    def __init__(self, quota: Quota, retry_after_s: int) -> None:
        super().__init__(f"{quota.key}: {quota.limit} per {quota.window} used up")
        self.quota = quota
        self.retry_after_s = retry_after_s


def _upsert(connection: Connection, table: sa.Table) -> Any:
    if connection.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def _use_quotas(connection: Connection, quotas: Sequence[Quota], now: datetime) -> None:
    """Check and use every quota inside the caller's write transaction, or raise.

    Atomic on both databases: on PostgreSQL each key's ``mail_quota`` row is upserted first
    (``INSERT ... ON CONFLICT DO UPDATE`` locks it until commit, in key order, so two
    requests never deadlock) and only then counted; on SQLite the whole transaction is
    ``BEGIN IMMEDIATE``, one writer at a time. Concurrent requests therefore count each
    other's uses: exactly ``limit`` get through.
    """
    u = _quota_use.c
    for quota in sorted(quotas, key=lambda q: q.key):
        connection.execute(
            _upsert(connection, _quota)
            .values(key=quota.key, used_at=now)
            .on_conflict_do_update(index_elements=["key"], set_={"used_at": now})
        )
        recent = list(
            connection.execute(
                sa.select(u.at)
                .where(u.key == quota.key, u.at > now - quota.window)
                .order_by(u.at.desc())
                .limit(quota.limit)
            ).scalars()
        )
        if len(recent) >= quota.limit:
            frees_at = recent[-1] + quota.window  # when the window holds one use fewer
            raise QuotaExceeded(quota, max(1, math.ceil((frees_at - now).total_seconds())))
    if quotas:
        _prune_quotas(connection, now - QUOTA_MAX_WINDOW)
        connection.execute(sa.insert(_quota_use), [{"key": q.key, "at": now} for q in quotas])


def _prune_quotas(connection: Connection, horizon: datetime) -> None:
    """Delete uses and lock rows older than ``horizon`` (no window sees them any more).

    Rows another transaction holds are skipped (``FOR UPDATE SKIP LOCKED``; SQLite has one
    writer at a time and no row locks): a request holding an old key's row while it waits
    for a key this one holds would otherwise deadlock with this very delete.
    """
    for table, key, at in (
        (_quota_use, _quota_use.c.id, _quota_use.c.at),
        (_quota, _quota.c.key, _quota.c.used_at),
    ):
        stale = sa.select(key).where(at <= horizon).with_for_update(skip_locked=True)
        connection.execute(sa.delete(table).where(key.in_(stale.scalar_subquery())))


def create_subscription(
    engine: Engine,
    *,
    email: str,
    name: str,
    time_zone: str,
    requirement_json: str,
    job_json: str,
    now: datetime,
    quotas: Sequence[Quota] = (),
    kind: SubscriptionKind = SubscriptionKind.DIGEST,
    on_created: Callable[[Connection, int], None] | None = None,
) -> SubscriptionRecord:
    """A new pending subscription (values already validated by the caller).

    ``quotas`` are checked and used in the same transaction: :class:`QuotaExceeded` and
    nothing stored once one of them is used up. ``on_created`` runs in that transaction
    with the new id (an alert stores its condition there, or raises: nothing is stored).
    """
    with write_connection(engine) as connection:
        _use_quotas(connection, quotas, now)
        new_id = connection.execute(
            sa.insert(_subscription)
            .values(
                email=email,
                name=name,
                time_zone=time_zone,
                requirement=requirement_json,
                job=job_json,
                status=SubscriptionStatus.PENDING.value,
                kind=kind.value,
                created_at=now,
            )
            .returning(_subscription.c.id)
        ).scalar_one()
        if on_created is not None:
            on_created(connection, new_id)
        row = (
            connection.execute(sa.select(_subscription).where(_subscription.c.id == new_id))
            .mappings()
            .one()
        )
    return _record(row)


def get_subscription(
    engine: Engine | Connection, subscription_id: int
) -> SubscriptionRecord | None:
    query = sa.select(_subscription).where(_subscription.c.id == subscription_id)
    if isinstance(engine, Connection):
        row = engine.execute(query).mappings().first()
    else:
        with engine.connect() as connection:
            row = connection.execute(query).mappings().first()
    return None if row is None else _record(row)


def active_subscriptions(
    engine: Engine, kind: SubscriptionKind = SubscriptionKind.DIGEST
) -> list[SubscriptionRecord]:
    """Confirmed, not unsubscribed subscriptions of ``kind``, by id."""
    query = (
        sa.select(_subscription)
        .where(
            _subscription.c.status == SubscriptionStatus.ACTIVE.value,
            _subscription.c.kind == kind.value,
        )
        .order_by(_subscription.c.id)
    )
    with engine.connect() as connection:
        return [_record(r) for r in connection.execute(query).mappings()]


def activate_subscription(engine: Engine, subscription_id: int, now: datetime) -> bool:
    """pending -> active; True if it is active now (idempotent), False if it cannot be
    (unknown or unsubscribed: an old confirmation link does not resurrect it)."""
    with write_connection(engine) as connection:
        connection.execute(
            sa.update(_subscription)
            .where(
                _subscription.c.id == subscription_id,
                _subscription.c.status == SubscriptionStatus.PENDING.value,
            )
            .values(status=SubscriptionStatus.ACTIVE.value, confirmed_at=now)
        )
        status = connection.execute(
            sa.select(_subscription.c.status).where(_subscription.c.id == subscription_id)
        ).scalar_one_or_none()
    return status == SubscriptionStatus.ACTIVE.value


def end_subscription(engine: Engine, subscription_id: int, now: datetime) -> bool:
    """-> unsubscribed (idempotent); False if there is no such subscription."""
    with write_connection(engine) as connection:
        connection.execute(
            sa.update(_subscription)
            .where(
                _subscription.c.id == subscription_id,
                _subscription.c.status != SubscriptionStatus.UNSUBSCRIBED.value,
            )
            .values(status=SubscriptionStatus.UNSUBSCRIBED.value, unsubscribed_at=now)
        )
        status = connection.execute(
            sa.select(_subscription.c.status).where(_subscription.c.id == subscription_id)
        ).scalar_one_or_none()
    return status == SubscriptionStatus.UNSUBSCRIBED.value


def mark_subscription_invalid(engine: Engine, subscription_id: int, problem: str) -> bool:
    """pending/active -> invalid with ``problem`` (why), so no run tries it again; False if
    it is unknown or already ended."""
    with write_connection(engine) as connection:
        return (
            connection.execute(
                sa.update(_subscription)
                .where(
                    _subscription.c.id == subscription_id,
                    _subscription.c.status.in_(
                        [SubscriptionStatus.PENDING.value, SubscriptionStatus.ACTIVE.value]
                    ),
                )
                .values(status=SubscriptionStatus.INVALID.value, problem=problem[:2000])
            ).rowcount
            == 1
        )
