"""Gathering a digest's inputs (offers, history, links) and turning it into a message.

This is the impure side of :func:`.build.build_digest`: it reads the current offers once per
run, the week-over-week changes and the price index from the database, signs the
unsubscribe link, and hands the result to :mod:`.mail`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from urllib.parse import quote

from sqlalchemy.engine import Engine

from adapters.schema import Offer
from db.history import WeekOverWeek, daily_index, week_over_week
from db.subscriptions import SubscriptionRecord
from pricing import rank

from ..current import CurrentOffers
from ..settings import Settings
from .build import Digest, DigestLinks, StaleProvider, SubscriptionView, build_digest
from .chart import IndexPoint
from .mail import build_digest_message, parse_sender
from .saved_search import load_search
from .tokens import Purpose, make_token

__all__ = [
    "DigestComposer",
    "confirm_url",
    "requirement_qualifier",
    "stale_providers",
    "subscription_view",
    "unsubscribe_url",
]

#: At most this many GPU models are drawn in the chart.
CHART_MAX_MODELS = 4


def _link(settings: Settings, path: str, token: str) -> str:
    return f"{settings.public_base_url.rstrip('/')}{path}?token={quote(token, safe='')}"


def confirm_url(
    settings: Settings, subscription_id: int, email: str, *, now: datetime | None = None
) -> str:
    token = make_token(
        settings.token_secret.get_secret_value(),
        Purpose.CONFIRM,
        subscription_id,
        email,
        now=now,
    )
    return _link(settings, "/v1/subscriptions/confirm", token)


def unsubscribe_url(
    settings: Settings, subscription_id: int, email: str, *, now: datetime | None = None
) -> str:
    token = make_token(
        settings.token_secret.get_secret_value(),
        Purpose.UNSUBSCRIBE,
        subscription_id,
        email,
        now=now,
    )
    return _link(settings, "/v1/subscriptions/unsubscribe", token)


def subscription_view(record: SubscriptionRecord) -> SubscriptionView:
    """What the digest needs of ``record``; :class:`.saved_search.CorruptSubscription` if its
    stored search does not validate."""
    requirement, job = load_search(record)
    return SubscriptionView(
        id=record.id,
        name=record.name,
        email=record.email,
        requirement=requirement,
        job=job,
        time_zone=record.time_zone,
    )


def stale_providers(current: CurrentOffers) -> list[StaleProvider]:
    """Stale and failed providers, each with the fetch time of its newest offer held."""
    newest: dict[str, datetime] = {}
    for offer in current.offers:
        if offer.provider not in newest or offer.fetched_at > newest[offer.provider]:
            newest[offer.provider] = offer.fetched_at
    names = sorted(set(current.stale_providers) | set(current.failed_providers))
    return [StaleProvider(name, newest.get(name)) for name in names]


def requirement_qualifier(view: SubscriptionView, now: datetime) -> Callable[[Offer], bool]:
    """Whether an offer (possibly gone, possibly old) meets the subscription's requirement.

    Freshness constraints are dropped: a gone offer is old by definition. Answers are cached
    per offer key, since the history module asks once per offer.
    """
    requirement = view.requirement.model_copy(
        update={"max_price_age_hours": None, "available_now": False}
    )

    answers: dict[Offer, bool] = {}

    def qualifies(offer: Offer) -> bool:
        if offer not in answers:
            answers[offer] = not rank([offer], requirement, view.job, limit=1, now=now).is_empty()
        return answers[offer]

    return qualifies


@dataclasses.dataclass
class DigestComposer:
    """Builds the digests of one run: ``current`` offers are read once, by the caller."""

    settings: Settings
    current: CurrentOffers
    now: datetime
    engine: Engine | None = None
    """the database with the price history; ``None``: no history (a sample preview)"""

    def inputs(self, view: SubscriptionView) -> tuple[WeekOverWeek | None, list[IndexPoint]]:
        if self.engine is None:
            return None, []
        changes = week_over_week(
            self.engine, until=self.now, qualifies=requirement_qualifier(view, self.now)
        )
        ranked = rank(
            self.current.offers,
            view.requirement,
            view.job,
            limit=self.settings.digest_top_offers,
            now=self.now,
        )
        series: dict[tuple[str, str], None] = {}
        for model, term in ranked.select("gpu_model", "term").iter_rows():
            if model is not None and len({m for m, _ in series}) < CHART_MAX_MODELS:
                series[(model, str(term))] = None
        end = self.now.astimezone(UTC).date()
        start = end - timedelta(weeks=self.settings.digest_history_weeks)
        points: list[IndexPoint] = []
        for model, term in series:
            frame = daily_index(self.engine, gpu=model, start=start, end=end, term=term)
            for day, median in frame.select("day", "median_usd_per_gpu_hour").iter_rows():
                if median is not None:
                    points.append(IndexPoint(day, model, term, float(median)))
        return changes, points

    def digest(self, view: SubscriptionView) -> Digest:
        changes, points = self.inputs(view)
        return build_digest(
            view,
            self.current.offers,
            changes=changes,
            price_index=points,
            stale_providers=stale_providers(self.current),
            links=DigestLinks(
                unsubscribe_url=unsubscribe_url(self.settings, view.id, view.email, now=self.now),
                home_url=self.settings.public_base_url,
            ),
            now=self.now,
            top=self.settings.digest_top_offers,
            source_note=self.current.note,
        )

    def message(self, record: SubscriptionRecord, message_id: str) -> EmailMessage:
        """The digest of ``record`` as a MIME message with ``message_id`` (for delivery)."""
        view = subscription_view(record)
        return build_digest_message(
            self.digest(view),
            sender=parse_sender(self.settings.mail_from),
            to_email=view.email,
            message_id=message_id,
            unsubscribe_url=unsubscribe_url(self.settings, view.id, view.email, now=self.now),
            date=self.now,
        )
