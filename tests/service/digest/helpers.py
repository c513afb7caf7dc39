"""Offers, a week of price history and subscriptions for the digest tests."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from email.message import EmailMessage
from typing import Any
from urllib.parse import parse_qs, urlsplit

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.adapters.schema import Offer, default_fx
from gpuscout.db.current import CurrentState, load_current_offers
from gpuscout.db.snapshots import store_snapshot
from gpuscout.db.subscriptions import Subscription, SubscriptionStatus
from gpuscout.pricing import Job, Requirement

#: A Monday, 09:00 UTC: digests for UTC subscribers (Monday 08:00) are due.
NOW = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)
WEEK_AGO = NOW - timedelta(days=7)

REQUIREMENT = Requirement(gpus=("H100",), min_gpus=8, max_gpus=8)
JOB = Job.for_hours(100)


def offer(provider: str, offer_id: str, price: str, at: datetime, **extra: Any) -> Offer:
    fields: dict[str, Any] = {
        "provider": provider,
        "offer_id": offer_id,
        "region": "eu-west",
        "fetched_at": at,
        "gpu_model": "H100-SXM5-80GB",
        "gpu_count": 8,
        "price_amount": Decimal(price),
        "price_currency": "USD",
        "price_unit": "hour",
        "price_basis": "instance",
        "term": "on_demand",
    }
    fields.update(extra)
    return Offer(**fields)


def _ok(provider: str, offers: list[Offer], at: datetime) -> ProviderRun:
    return ProviderRun(provider, RunStatus.OK, at, 0.5, offers=offers)


def seed_history(engine: Engine) -> None:
    """Two snapshots a week apart: alpha cheaper, beta dearer, gamma/g1 gone, gamma/g2 new,
    and delta failing now (stale)."""
    before = [
        _ok("alpha", [offer("alpha", "a1", "20.00", WEEK_AGO)], WEEK_AGO),
        _ok("beta", [offer("beta", "b1", "25.00", WEEK_AGO)], WEEK_AGO),
        _ok("gamma", [offer("gamma", "g1", "30.00", WEEK_AGO)], WEEK_AGO),
        _ok("delta", [offer("delta", "d1", "26.00", WEEK_AGO)], WEEK_AGO),
    ]
    store_snapshot(engine, before, started_at=WEEK_AGO, finished_at=WEEK_AGO)
    now = NOW - timedelta(hours=2)
    after = [
        _ok("alpha", [offer("alpha", "a1", "18.00", now)], now),
        _ok("beta", [offer("beta", "b1", "27.50", now)], now),
        _ok("gamma", [offer("gamma", "g2", "22.00", now)], now),
        ProviderRun("delta", RunStatus.ERROR, now, 0.1, error="HTTP 503"),
    ]
    store_snapshot(engine, after, started_at=now, finished_at=now)


def current_from_db(engine: Engine) -> CurrentState:
    return load_current_offers(engine, fx=default_fx(), now=NOW)


def link_in(message: EmailMessage, path: str) -> str:
    """The first link to ``path`` in the text part of ``message``."""
    body = message.get_body(preferencelist=("plain",))
    assert body is not None
    text = body.get_content()
    match = re.search(r"https?://\S*" + re.escape(path) + r"\?token=\S+", text)
    assert match, f"no link to {path} in:\n{text}"
    return match.group(0)


def token_of(link: str) -> str:
    return parse_qs(urlsplit(link).query)["token"][0]


def insert_active(engine: Engine, email: str, requirement_json: str, job_json: str) -> int:
    """An active subscription stored as is, bypassing validation: a row written by hand or
    by an older version."""
    table = Subscription.__table__
    with engine.begin() as connection:
        return int(
            connection.execute(
                sa.insert(table)
                .values(
                    email=email,
                    name="old",
                    time_zone="UTC",
                    requirement=requirement_json,
                    job=job_json,
                    status=SubscriptionStatus.ACTIVE.value,
                    created_at=NOW - timedelta(days=30),
                )
                .returning(table.c.id)
            ).scalar_one()
        )
