"""``/v1/alerts``: price alerts, confirmed and ended like the digest's subscriptions.

* ``POST /v1/alerts`` stores a *pending* alert and mails a confirmation link (202); the link
  and the one-click unsubscribe are the digest's (``/v1/subscriptions/confirm`` and
  ``/unsubscribe``). Nothing fires before the link is followed. The answer carries each
  webhook's signing secret, once. Limits: the digest's quotas of confirmation mails
  (429 with ``Retry-After``), ``alerts_per_address`` (409), ``alert_webhooks_per_alert`` and
  the production check of webhook URLs (422).
* ``GET /v1/alerts/{id}/firings?token=`` lists the alert's firings, newest first; the
  token is the one in the alert's mails (a signed, expiring link for that alert's address).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from gpuscout.service.alerts.manager import AlertRequest

from ..deps import SavedSearchProvidersDep, SettingsDep, reject_unknown
from ..problems import problem_response
from .subscriptions import ManagerDep, TokenQuery, checked_search, rate_limited, request_client

__all__ = ["AlertAccepted", "Firing", "FiringHistory", "router"]

log = logging.getLogger("gpuscout.api")

router = APIRouter(prefix="/v1/alerts", tags=["alerts"])


class AlertAccepted(BaseModel):
    id: int = Field(description="the alert's id")
    subscription_id: int
    status: str = Field(description="pending: follow the link mailed to the address")
    email: str
    confirmation_sent: bool = Field(description="false: the mail failed; post again later")
    webhook_secrets: dict[str, str] = Field(
        description="per webhook URL, the HMAC-SHA256 key of its signatures (shown only now)"
    )
    detail: str


class Firing(BaseModel):
    seq: int
    fired_at: datetime
    value: float | None = Field(description="the metric when it fired (null: in_stock)")
    baseline: float | None = Field(description="the 7-day median a drop alert compared to")
    offer: dict[str, Any] | None = Field(description="the best offer and its factors")
    delivered: bool = Field(description="every delivery (mail, webhooks) is final")


class FiringHistory(BaseModel):
    alert_id: int
    name: str
    condition: dict[str, Any]
    armed: bool
    firings: list[Firing]


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=AlertAccepted,
    responses={
        409: {"description": "the address holds the most alerts allowed"},
        429: {"description": "too many confirmation mails (Retry-After)"},
    },
)
def create(
    request: Request,
    body: AlertRequest,
    manager: ManagerDep,
    settings: SettingsDep,
    providers: SavedSearchProvidersDep,
) -> AlertAccepted | Response:
    """Store a pending alert and mail the confirmation link to the address.

    A provider (or seller) name no offer has is refused (422) as `/v1/offers` refuses it;
    one differing only in case is stored as the offers spell it.
    """
    from gpuscout.service.alerts.manager import AlertLimitExceeded, create_alert
    from gpuscout.service.digest.limits import SubscribeRateLimited
    from gpuscout.service.digest.mail import SmtpSendError

    body = checked_search(body, providers)
    try:
        created = create_alert(manager, body, client=request_client(request, settings))
        sent, detail = True, "a confirmation link was sent to the address"
    except SubscribeRateLimited as exc:
        return rate_limited(exc, request)
    except AlertLimitExceeded as exc:
        return problem_response(
            request.scope, status.HTTP_409_CONFLICT, str(exc), slug="alert-limit"
        )
    except ValueError as exc:  # too many webhooks, a refused URL (WebhookUrlRefused)
        return problem_response(request.scope, 422, str(exc), slug="webhook-refused")
    except SmtpSendError as exc:
        log.warning("alert confirmation mail not sent: %s", exc)
        created, sent = exc.record, False
        detail = "stored, but the confirmation mail could not be sent now; try again later"
    return AlertAccepted(
        id=created.alert_id,
        subscription_id=created.record.id,
        status=created.record.status.value,
        email=created.record.email,
        confirmation_sent=sent,
        webhook_secrets=created.webhook_secrets,
        detail=detail + "; nothing fires before the link is followed",
    )


@router.get(
    "/{alert_id}/firings",
    response_model=FiringHistory,
    responses={400: {"description": "invalid or expired link, or not this alert's"}},
)
async def firing_history(
    request: Request, alert_id: int, token: TokenQuery, manager: ManagerDep
) -> FiringHistory:
    """The alert's firings, newest first (at most 100)."""
    reject_unknown(request, frozenset({"token"}))
    return await run_in_threadpool(_history, manager, alert_id, token)


def _history(manager: Any, alert_id: int, token: str) -> FiringHistory:
    from gpuscout.db.alerts import firings, get_alert
    from gpuscout.service.alerts.evaluate import condition_of
    from gpuscout.service.digest.tokens import Purpose, TokenError, read_token

    try:  # a forged or expired token is refused before the database is asked
        claims = read_token(
            manager.settings.signing_key(),
            Purpose.ALERT_HISTORY,
            token,
            max_age=timedelta(days=manager.settings.unsubscribe_max_age_days),
            now=manager.clock(),
        )
    except TokenError as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None
    alert = get_alert(manager.engine, alert_id)
    if (
        alert is None
        or claims.subscription_id != alert.subscription_id
        or not claims.matches(alert.email)
    ):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "invalid link")
    return FiringHistory(
        alert_id=alert.id,
        name=alert.name,
        condition=condition_of(alert).model_dump(mode="json", exclude_none=True),
        armed=alert.armed,
        firings=[
            Firing(
                seq=f.seq,
                fired_at=f.fired_at,
                value=f.value,
                baseline=f.baseline,
                offer=json.loads(f.offer_json),
                delivered=f.settled,
            )
            for f in firings(manager.engine, alert.id)
        ],
    )
