"""Gathering a digest's inputs (offers, history, links) and turning it into a message.

This is the impure side of :func:`.build.build_digest`. Once per run it takes the current
state (read by the caller, already a frame) and the week-over-week changes from the database
(framed once); per subscription it ranks those two frames with the subscription's
requirement, reads the price index, signs the unsubscribe link, and hands the result to
:mod:`.mail`.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from urllib.parse import quote

import polars as pl
from sqlalchemy.engine import Engine

from gpuscout.adapters.run import RunStatus
from gpuscout.adapters.schema import FxTable
from gpuscout.db.current import CurrentState
from gpuscout.db.history import (
    HistoryLabel,
    PriceChange,
    WeekOverWeek,
    daily_index,
    index_label,
    week_over_week,
)
from gpuscout.db.subscriptions import SubscriptionRecord
from gpuscout.pricing import RankOptions, offers_to_frame, rank
from gpuscout.pricing.offer_facts import with_offer_facts

from ..publication import publishable_changes, withheld_everywhere
from ..settings import Settings
from .build import Digest, DigestLinks, StaleProvider, SubscriptionView, build_digest
from .chart import IndexPoint
from .mail import build_digest_message, parse_sender
from .saved_search import load_search, load_serve
from .tokens import Purpose, make_token

__all__ = [
    "DigestComposer",
    "WeekChanges",
    "confirm_url",
    "signed_link",
    "stale_providers",
    "subscription_view",
    "unsubscribe_url",
]

#: At most this many GPU models are drawn in the chart.
CHART_MAX_MODELS = 4


def signed_link(
    settings: Settings,
    path: str,
    purpose: Purpose,
    subscription_id: int,
    email: str,
    *,
    now: datetime | None = None,
) -> str:
    """``public_base_url`` + ``path`` with a ``purpose`` token for one subscription."""
    token = make_token(settings.signing_key(), purpose, subscription_id, email, now=now)
    return f"{settings.public_base_url.rstrip('/')}{path}?token={quote(token, safe='')}"


def confirm_url(
    settings: Settings, subscription_id: int, email: str, *, now: datetime | None = None
) -> str:
    return signed_link(
        settings, "/v1/subscriptions/confirm", Purpose.CONFIRM, subscription_id, email, now=now
    )


def unsubscribe_url(
    settings: Settings, subscription_id: int, email: str, *, now: datetime | None = None
) -> str:
    return signed_link(
        settings,
        "/v1/subscriptions/unsubscribe",
        Purpose.UNSUBSCRIBE,
        subscription_id,
        email,
        now=now,
    )


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
        serve=load_serve(record),
    )


def stale_providers(current: CurrentState) -> list[StaleProvider]:
    """Stale and failed providers, each with the fetch time of its offers held and the
    error of its latest attempt."""
    return [
        StaleProvider(name, p.fetched_at, p.error)
        for name, p in current.providers.items()
        if p.stale or p.last_status is RunStatus.ERROR
    ]


@dataclasses.dataclass(frozen=True)
class WeekChanges:
    """The week's price changes of every offer, and those offers as one frame whose
    ``config_id`` is the change's position: ranked, each offer stands alone."""

    changes: WeekOverWeek
    frame: pl.DataFrame
    keys: tuple[str, ...]
    """offer key of each frame row"""

    @classmethod
    def of(cls, changes: WeekOverWeek, fx: FxTable) -> WeekChanges:
        every = [*changes.cheaper, *changes.dearer, *changes.new, *changes.gone]
        frame = with_offer_facts(
            offers_to_frame([c.offer for c in every], fx).with_columns(
                config_id=pl.int_range(pl.len(), dtype=pl.UInt32)
            )
        )
        return cls(changes, frame, tuple(c.offer_key for c in every))

    def qualifying(self, view: SubscriptionView, now: datetime) -> WeekOverWeek:
        """The changes of offers (possibly gone, possibly old) that meet the subscription's
        requirement. Freshness constraints are dropped: a gone offer is old by definition."""
        requirement = view.requirement.model_copy(
            update={"max_price_age_hours": None, "available_now": False}
        )
        ranked = rank(self.frame, requirement, view.job, RankOptions(limit=None, now=now))
        keys = {self.keys[i] for i in ranked.get_column("config_id").to_list()}

        def kept(changes: list[PriceChange]) -> list[PriceChange]:
            return [c for c in changes if c.offer_key in keys]

        wow = self.changes
        return WeekOverWeek(
            wow.since, wow.until, kept(wow.cheaper), kept(wow.dearer), kept(wow.new), kept(wow.gone)
        )


@dataclasses.dataclass
class DigestComposer:
    """Builds the digests of one run: the ``current`` state is read once, by the caller, and
    the week's changes once, here, on first use."""

    settings: Settings
    current: CurrentState
    now: datetime
    engine: Engine | None = None
    """the database with the price history; ``None``: no history (a sample preview)"""

    @functools.cached_property
    def week(self) -> WeekChanges | None:
        if self.engine is None:
            return None
        changes = publishable_changes(self.settings, week_over_week(self.engine, until=self.now))
        return WeekChanges.of(changes, self.current.fx)

    def inputs(
        self, view: SubscriptionView
    ) -> tuple[WeekOverWeek | None, list[IndexPoint], HistoryLabel]:
        """The week's changes that qualify for ``view``, the daily index of the GPU models of
        its top offers, and that index's label: the sample's when any price it counts was
        replayed from the offline sample (:func:`db.history.index_label`, over every series
        drawn), so the chart says so as ``gpuscout history --plot`` does."""
        if self.engine is None or self.week is None:
            return None, [], HistoryLabel()
        changes = self.week.qualifying(view, self.now)
        ranked = rank(
            self.current.frame,
            view.requirement,
            view.job,
            RankOptions(limit=self.settings.digest_top_offers, now=self.now),
        )
        series: dict[tuple[str, str], None] = {}
        for model, term in ranked.select("gpu_model", "term").iter_rows():
            if model is not None and len({m for m, _ in series}) < CHART_MAX_MODELS:
                series[(model, str(term))] = None
        end = self.now.astimezone(UTC).date()
        start = end - timedelta(weeks=self.settings.digest_history_weeks)
        points: list[IndexPoint] = []
        sample, total, providers = 0, 0, set[str]()
        withheld = tuple(withheld_everywhere(self.settings))
        for model, term in series:
            frame = daily_index(
                self.engine, gpu=model, start=start, end=end, term=term, exclude=withheld
            )
            for day, median in frame.select("day", "median_usd_per_gpu_hour").iter_rows():
                if median is not None:
                    points.append(IndexPoint(day, model, term, float(median)))
            label = index_label(
                self.engine, frame, gpu=model, start=start, end=end, term=term, exclude=withheld
            )
            sample += int(frame["sample_offers"].sum())
            total += int(frame["offers"].sum())
            providers.update(label.sample_providers)
        return changes, points, HistoryLabel.of(sample=sample, total=total, providers=providers)

    def digest(self, view: SubscriptionView) -> Digest:
        changes, points, label = self.inputs(view)
        return build_digest(
            view,
            self.current.frame,
            changes=changes,
            price_index=points,
            price_index_label=label,
            stale_providers=stale_providers(self.current),
            links=DigestLinks(
                unsubscribe_url=unsubscribe_url(self.settings, view.id, view.email, now=self.now),
                home_url=self.settings.public_base_url,
            ),
            now=self.now,
            top=self.settings.digest_top_offers,
            source_note=self.current.note,
            sample_note=self.current.note if self.current.sample else None,
            sample_providers=self.current.sample_providers,
            fx_note=self.current.fx_note,
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
