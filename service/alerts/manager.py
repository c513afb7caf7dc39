"""Creating a price alert (the digest's double opt-in) and reading its firings.

An alert request is a digest subscription request (address, name, requirement, job) plus a
condition, an optional quiet period and up to ``alert_webhooks_per_alert`` webhook URLs.
It is stored through :meth:`service.digest.subscriptions.SubscriptionManager.subscribe`
(kind ``alert``): the same per-address, per-client and global quotas of confirmation
mails, the same confirmation link, and nothing fires before it is followed. Within that
transaction the condition and webhooks are stored and the address's alerts counted: more
than ``alerts_per_address`` pending or active ones is :class:`AlertLimitExceeded`, nothing
stored, nothing sent.

Each webhook gets a fresh signing secret, returned once in the answer (not readable later).
"""

from __future__ import annotations

import dataclasses
import secrets
from typing import Annotated, Self

from pydantic import Field, field_validator, model_validator
from sqlalchemy.engine import Connection

from gpuscout.db.alerts import count_alerts_for_address, insert_alert
from gpuscout.db.subscriptions import SubscriptionKind, SubscriptionRecord

from ..digest.saved_search import dump_search
from ..digest.subscriptions import SubscriptionManager, SubscriptionRequest
from ..settings import Settings
from .condition import SERVE_METRIC, AlertCondition, search_key
from .message import describe_condition
from .webhooks import check_webhook_url

__all__ = ["AlertCreated", "AlertLimitExceeded", "AlertRequest", "create_alert"]


class AlertRequest(SubscriptionRequest):
    """The body of ``POST /v1/alerts``: a subscription request plus the condition."""

    condition: AlertCondition
    quiet_minutes: Annotated[
        int | None,
        Field(ge=0, le=43200, description="no firing sooner after one (default: the setting)"),
    ] = None
    webhooks: tuple[Annotated[str, Field(max_length=2048)], ...] = Field(
        default=(), description="URLs POSTed a signed JSON body when the alert fires"
    )

    @model_validator(mode="after")
    def _metric_fits_search(self) -> Self:
        """$/Mtok needs a serve request to rank by; a serving search is watched in $/Mtok."""
        condition = self.condition
        if condition.metric == SERVE_METRIC and self.serve is None:
            raise ValueError(
                f"metric {SERVE_METRIC} needs a serve request: the model to serve (--serve)"
            )
        if self.serve is not None and condition.kind != "in_stock":
            if condition.metric != SERVE_METRIC:
                raise ValueError(f"a serving alert compares {SERVE_METRIC}, not {condition.metric}")
            if condition.kind == "drop":
                raise ValueError(f"a 'drop' alert does not take {SERVE_METRIC} (use 'below')")
        return self

    @field_validator("webhooks")
    @classmethod
    def _distinct(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("webhooks: a URL is given twice")
        return value


class AlertLimitExceeded(Exception):
    """The address holds ``alerts_per_address`` alerts already; nothing was stored or sent."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"this address already holds {limit} alerts (the limit); unsubscribe one first"
        )
        self.limit = limit


@dataclasses.dataclass(frozen=True)
class AlertCreated:
    record: SubscriptionRecord
    alert_id: int
    webhook_secrets: dict[str, str] = dataclasses.field(repr=False)
    """URL -> its signing secret (shown once)"""


def _check_webhooks(settings: Settings, urls: tuple[str, ...]) -> None:
    if len(urls) > settings.alert_webhooks_per_alert:
        raise ValueError(
            f"webhooks: at most {settings.alert_webhooks_per_alert} per alert, not {len(urls)}"
        )
    for url in urls:
        check_webhook_url(
            url,
            production=settings.environment != "development",
            allow_private=settings.alert_webhook_allow_private,
        )


def create_alert(
    manager: SubscriptionManager, request: AlertRequest, *, client: str | None = None
) -> AlertCreated:
    """Store a pending alert and mail its confirmation link.

    ``ValueError`` (too many webhooks, a refused URL), :class:`AlertLimitExceeded` or
    :class:`service.digest.limits.SubscribeRateLimited`: nothing stored, nothing sent.
    An :class:`service.digest.mail.SmtpSendError` carries the stored record (``.record``).
    """
    settings = manager.settings
    _check_webhooks(settings, request.webhooks)
    requirement_json, job_json = dump_search(request.requirement, request.job, request.serve)
    keys = {url: secrets.token_urlsafe(32) for url in request.webhooks}
    condition = request.condition
    created: dict[str, int] = {}

    def store(connection: Connection, subscription_id: int) -> None:
        if count_alerts_for_address(connection, request.email) > settings.alerts_per_address:
            raise AlertLimitExceeded(settings.alerts_per_address)
        created["alert"] = insert_alert(
            connection,
            subscription_id,
            condition=condition.kind,
            metric=condition.metric,
            threshold=None if condition.threshold is None else str(condition.threshold),
            drop_pct=condition.drop_pct,
            quiet_minutes=(
                settings.alert_quiet_minutes
                if request.quiet_minutes is None
                else request.quiet_minutes
            ),
            search_key=search_key(requirement_json, job_json),
            webhooks=list(keys.items()),
        )

    def outcome(record: SubscriptionRecord) -> AlertCreated:
        return AlertCreated(record, created["alert"], keys)

    try:
        record = manager.subscribe(
            request,
            client=client,
            kind=SubscriptionKind.ALERT,
            on_created=store,
            alert=describe_condition(condition),
        )
    except Exception as exc:
        stored = getattr(exc, "record", None)
        if isinstance(stored, SubscriptionRecord):
            exc.record = outcome(stored)  # type: ignore[attr-defined]
        raise
    return outcome(record)
