"""Digest subscriptions and their weekly deliveries (issue "Weekly email digest").

Layout::

    subscription        an address, a name, a time zone, a saved requirement and job (JSON
                        of pricing.Requirement / pricing.Job), and a status:
                        pending (not confirmed) -> active -> unsubscribed
    digest_delivery     one row per (subscription, ISO week): the exactly-once record of a
                        weekly digest: claimed -> sending -> sent (or failed, claimable again),
                        with the Message-ID chosen before the first send

The delivery protocol itself is in :mod:`service.digest.delivery`. The models share
:class:`db.models.Base`, so the Alembic environment sees them once this module is imported.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from enum import StrEnum
from typing import cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Mapped, mapped_column

from .engine import write_connection
from .models import Base, BigId
from .types import UtcDateTime

__all__ = [
    "DeliveryStatus",
    "DigestDelivery",
    "Subscription",
    "SubscriptionRecord",
    "SubscriptionStatus",
    "activate_subscription",
    "active_subscriptions",
    "create_subscription",
    "end_subscription",
    "get_subscription",
    "subscription_times",
]


class SubscriptionStatus(StrEnum):
    PENDING = "pending"  # created, confirmation link sent, nothing else goes out
    ACTIVE = "active"  # confirmed: digests go out
    UNSUBSCRIBED = "unsubscribed"


class DeliveryStatus(StrEnum):
    CLAIMED = "claimed"  # a process reserved this week's digest (lease); nothing sent yet
    SENDING = "sending"  # recorded just before the SMTP transaction: may have been sent
    SENT = "sent"  # the SMTP server accepted it: final
    FAILED = "failed"  # the last attempt failed; claimable again by the next run


class Subscription(Base):
    __tablename__ = "subscription"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(sa.String(320), index=True, comment="normalized address")
    name: Mapped[str] = mapped_column(sa.String(100))
    time_zone: Mapped[str] = mapped_column(sa.String(64), comment="IANA name, e.g. Europe/Paris")
    requirement: Mapped[str] = mapped_column(sa.Text, comment="pricing.Requirement as JSON")
    job: Mapped[str] = mapped_column(sa.Text, comment="pricing.Job as JSON")
    status: Mapped[str] = mapped_column(
        sa.String(16), index=True, comment="pending | active | unsubscribed"
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    confirmed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    unsubscribed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class DigestDelivery(Base):
    __tablename__ = "digest_delivery"
    __table_args__ = (sa.UniqueConstraint("subscription_id", "week"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    subscription_id: Mapped[int] = mapped_column(
        BigId, sa.ForeignKey("subscription.id", ondelete="CASCADE")
    )
    week: Mapped[str] = mapped_column(sa.String(8), comment="ISO week in the subscriber's zone")
    status: Mapped[str] = mapped_column(
        sa.String(16), index=True, comment="claimed | sending | sent | failed"
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


_subscription = cast(sa.Table, Subscription.__table__)


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
    )


def subscription_times(engine: Engine, email: str, since: datetime) -> list[datetime]:
    """When subscriptions for ``email`` were created after ``since``, oldest first.

    The address compares case-insensitively: ``Ada@`` and ``ADA@`` reach one inbox.
    """
    with engine.connect() as connection:
        return list(
            connection.execute(
                sa.select(_subscription.c.created_at)
                .where(
                    sa.func.lower(_subscription.c.email) == email.lower(),
                    _subscription.c.created_at > since,
                )
                .order_by(_subscription.c.created_at)
            ).scalars()
        )


def create_subscription(
    engine: Engine,
    *,
    email: str,
    name: str,
    time_zone: str,
    requirement_json: str,
    job_json: str,
    now: datetime,
) -> SubscriptionRecord:
    """A new pending subscription (values already validated by the caller)."""
    with write_connection(engine) as connection:
        new_id = connection.execute(
            sa.insert(_subscription)
            .values(
                email=email,
                name=name,
                time_zone=time_zone,
                requirement=requirement_json,
                job=job_json,
                status=SubscriptionStatus.PENDING.value,
                created_at=now,
            )
            .returning(_subscription.c.id)
        ).scalar_one()
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


def active_subscriptions(engine: Engine) -> list[SubscriptionRecord]:
    """Confirmed, not unsubscribed subscriptions, by id."""
    query = (
        sa.select(_subscription)
        .where(_subscription.c.status == SubscriptionStatus.ACTIVE.value)
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
