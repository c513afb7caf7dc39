"""Subscribing, confirming (double opt-in) and unsubscribing: one place for the API and CLI.

A subscription is created ``pending`` and a confirmation link goes to the address; no
digest goes out until that link is followed. Links carry signed, expiring tokens
(:mod:`.tokens`); a token that is forged, altered, expired, made for another purpose or for
another address does nothing. How many confirmation mails a request may cause is limited
per address, per client and in all (:mod:`.limits`), atomically with storing it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from sqlalchemy.engine import Connection, Engine

from gpuscout.db.subscriptions import (
    QuotaExceeded,
    SubscriptionKind,
    SubscriptionRecord,
    SubscriptionStatus,
    activate_subscription,
    create_subscription,
    end_subscription,
    get_subscription,
)
from gpuscout.pricing import Job, Requirement
from gpuscout.pricing.serve_rank import ServeRequest

from ..settings import Settings
from .limits import SubscribeRateLimited, subscribe_quotas
from .mail import (
    HeaderInjectionError,
    InvalidAddressError,
    SmtpSendError,
    build_confirmation_message,
    new_message_id,
    normalize_address,
    parse_sender,
    safe_header,
)
from .saved_search import dump_search, storable
from .tokens import InvalidToken, Purpose, TokenClaims, read_token

__all__ = ["SubscriptionManager", "SubscriptionRequest", "valid_time_zone"]

NAME_MAX_CHARS = 100


def valid_time_zone(name: str) -> str:
    """``name`` if it is an IANA time zone (``Europe/Paris``, ``UTC``), else ValueError."""
    if not name or len(name) > 64 or name != name.strip():
        raise ValueError(f"unknown time zone {name!r}")
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"unknown time zone {name!r}") from None
    return name


class SubscriptionRequest(BaseModel):
    """A request for a weekly digest (the body of ``POST /v1/subscriptions``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    email: Annotated[str, Field(max_length=320, description="the address digests go to")]
    name: Annotated[
        str, Field(min_length=1, max_length=NAME_MAX_CHARS, description="what to call it")
    ]
    time_zone: str = Field("UTC", description="IANA time zone of the weekly schedule")
    requirement: Requirement = Field(default_factory=Requirement)
    job: Job = Field(default_factory=lambda: Job.for_hours(1))
    serve: ServeRequest | None = Field(
        None, description="a serving search: rank by USD per million tokens (docs/serving.md)"
    )

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        try:
            return normalize_address(value)
        except InvalidAddressError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        try:
            safe_header(value, field="name")
        except HeaderInjectionError as exc:
            raise ValueError(str(exc)) from None
        value = value.strip()
        if not value:
            raise ValueError("name is blank")
        return value

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return valid_time_zone(value)

    @field_validator("requirement", "job", "serve")
    @classmethod
    def _storable(
        cls, value: Requirement | Job | ServeRequest | None, info: ValidationInfo
    ) -> Requirement | Job | ServeRequest | None:
        """Stored as given or refused: Infinity or NaN would be stored as null, and the
        constraint would vanish."""
        if value is not None:
            storable(value, str(info.field_name))
        return value


Transport = Callable[[EmailMessage], int]


@dataclasses.dataclass
class SubscriptionManager:
    settings: Settings
    engine: Engine
    transport: Transport
    clock: Callable[[], datetime] = dataclasses.field(default=lambda: datetime.now(UTC))

    def subscribe(
        self,
        request: SubscriptionRequest,
        *,
        client: str | None = None,
        kind: SubscriptionKind = SubscriptionKind.DIGEST,
        on_created: Callable[[Connection, int], None] | None = None,
        alert: str | None = None,
    ) -> SubscriptionRecord:
        """Store a pending subscription and send its confirmation link.

        :class:`SubscribeRateLimited` (nothing stored, nothing sent) once a quota is used
        up: the address's, the ``client``'s (the request's client address; ``None`` from the
        CLI) or the global one (:func:`.limits.subscribe_quotas`). A price alert passes its
        ``kind``, what stores its condition (``on_created``, in the same transaction) and
        the line the confirmation mail describes it with (``alert``).
        """
        now = self.clock()
        requirement_json, job_json = dump_search(request.requirement, request.job, request.serve)
        try:
            record = create_subscription(
                self.engine,
                email=request.email,
                name=request.name,
                time_zone=request.time_zone,
                requirement_json=requirement_json,
                job_json=job_json,
                now=now,
                quotas=subscribe_quotas(self.settings, request.email, client),
                kind=kind,
                on_created=on_created,
            )
        except QuotaExceeded as exc:
            quota = exc.quota
            limited = quota.key.split(":", 1)[0]
            who = {
                "address": request.email,
                "client": "this client",
                "network": "this client's network",
            }.get(limited, "gpuscout")
            raise SubscribeRateLimited(who, quota.limit, quota.window, exc.retry_after_s) from None
        try:
            self.send_confirmation(record, alert=alert)
        except SmtpSendError as exc:
            exc.record = record  # stored all the same: the caller may say so and retry
            raise
        return record

    def send_confirmation(self, record: SubscriptionRecord, *, alert: str | None = None) -> None:
        # the mail's templates (Jinja2) and the digest's composition load with the first
        # mail, not with every API worker that imports this module for its request model
        from .build import build_confirmation
        from .compose import confirm_url, subscription_view

        view = subscription_view(record)
        sender = parse_sender(self.settings.mail_from)
        confirmation = build_confirmation(
            view,
            confirm_url=confirm_url(self.settings, record.id, record.email, now=self.clock()),
            alert=alert,
        )
        self.transport(
            build_confirmation_message(
                confirmation,
                sender=sender,
                to_email=record.email,
                message_id=new_message_id(sender),
                date=self.clock(),
            )
        )

    def _claims(self, token: str, purpose: Purpose, max_age_days: int) -> SubscriptionRecord:
        claims: TokenClaims = read_token(
            self.settings.signing_key(),
            purpose,
            token,
            max_age=timedelta(days=max_age_days),
            now=self.clock(),
        )
        record = get_subscription(self.engine, claims.subscription_id)
        if record is None or not claims.matches(record.email):
            raise InvalidToken("invalid link")
        return record

    def check_confirm(self, token: str) -> SubscriptionRecord:
        """The subscription a confirmation token names, changing nothing (for the GET page:
        mail scanners fetch the links in a mail, so only the page's button confirms)."""
        return self._claims(token, Purpose.CONFIRM, self.settings.token_max_age_days)

    def confirm(self, token: str) -> SubscriptionRecord:
        """pending -> active; an unsubscribed subscription stays unsubscribed."""
        record = self._claims(token, Purpose.CONFIRM, self.settings.token_max_age_days)
        if record.status is SubscriptionStatus.PENDING:
            activate_subscription(self.engine, record.id, self.clock())
        return get_subscription(self.engine, record.id) or record

    def check_unsubscribe(self, token: str) -> SubscriptionRecord:
        """The subscription an unsubscribe token names, changing nothing (for the GET page)."""
        return self._claims(token, Purpose.UNSUBSCRIBE, self.settings.unsubscribe_max_age_days)

    def unsubscribe(self, token: str) -> SubscriptionRecord:
        record = self._claims(token, Purpose.UNSUBSCRIBE, self.settings.unsubscribe_max_age_days)
        end_subscription(self.engine, record.id, self.clock())
        return get_subscription(self.engine, record.id) or record
