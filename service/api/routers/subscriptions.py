"""``/v1/subscriptions``: the weekly email digest's double opt-in and one-click unsubscribe.

* ``POST /v1/subscriptions`` stores a *pending* subscription and mails a confirmation link
  (202). Nothing else is sent to the address until the link is followed. Limits per address,
  per client and in all answer 429 with ``Retry-After`` (:mod:`service.digest.limits`).
* ``GET /v1/subscriptions/confirm?token=`` shows a page with one button; ``POST`` to the
  same URL (the button) activates the subscription. Mail scanners and link previews fetch
  every link in a mail, so no GET changes anything.
* ``GET /v1/subscriptions/unsubscribe?token=`` shows a page with one button; ``POST`` to the
  same URL unsubscribes, which is also what a mail client's one-click unsubscribe does
  (RFC 8058: ``List-Unsubscribe-Post: List-Unsubscribe=One-Click``, a POST with that body).

A forged, altered, expired or misdirected token does nothing and answers 400.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Collection
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Query, Request, status
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from gpuscout.service.digest.subscriptions import SubscriptionRequest

from ..deps import SavedSearchProvidersDep, SettingsDep, reject_unknown
from ..engine_inputs import checked_providers
from ..problems import problem_response

__all__ = [
    "ManagerDep",
    "SubscriptionAccepted",
    "checked_search",
    "get_manager",
    "rate_limited",
    "request_client",
    "router",
]

log = logging.getLogger("gpuscout.api")

_PAGE_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"description": "invalid or expired link (an HTML page)", "content": {"text/html": {}}},
    409: {"description": "the subscription has ended", "content": {"text/html": {}}},
}

router = APIRouter(prefix="/v1/subscriptions", tags=["subscriptions"])

_TOKEN_ONLY = frozenset({"token"})


def get_manager(request: Request, settings: SettingsDep) -> Any:
    """The app's :class:`~service.digest.subscriptions.SubscriptionManager`, built on first use
    on the app's database (its history engine, else ``settings.database_url``). A request
    waits for one SMTP attempt only; the scheduler is the one that retries. Tests may set
    ``app.state.subscriptions``."""
    manager = getattr(request.app.state, "subscriptions", None)
    if manager is None:
        import dataclasses

        from sqlalchemy.engine import Engine

        from gpuscout.db.engine import make_engine
        from gpuscout.service.digest.mail import SmtpConfig, send_message
        from gpuscout.service.digest.subscriptions import SubscriptionManager

        history = request.app.state.context.history
        engine = history if isinstance(history, Engine) else make_engine(settings.database_url)
        config = dataclasses.replace(SmtpConfig.from_settings(settings), attempts=1)
        manager = SubscriptionManager(settings, engine, lambda m: send_message(m, config))
        request.app.state.subscriptions = manager
    return manager


ManagerDep = Annotated[Any, Depends(get_manager)]
Search = TypeVar("Search", bound=SubscriptionRequest)
TokenQuery = Annotated[str, Query(min_length=1, max_length=2048, description="from the link")]


class SubscriptionAccepted(BaseModel):
    id: int
    status: str = Field(description="pending: follow the link mailed to the address")
    email: str
    confirmation_sent: bool = Field(description="false: the mail failed; post again later")
    detail: str


def checked_search(body: Search, providers: Collection[str] | None) -> Search:
    """``body`` with its requirement's providers spelled as ``providers`` has them (a name
    differing only in case is the known one), as ``/v1/offers`` reads them; a 422 naming
    ``body.requirement.<field>`` for a name none of them is, worded as ``/v1/offers``
    words it (:func:`~service.api.engine_inputs.checked_providers`). A saved search naming
    no offer's provider would never find anything, and nobody would be told.
    ``providers=None`` (:func:`~service.api.deps.saved_search_providers`): not checked."""
    if providers is None:
        return body
    requirement = checked_providers(body.requirement, providers, ("body", "requirement"))
    if requirement is body.requirement:
        return body
    return body.model_copy(update={"requirement": requirement})


def request_client(request: Request, settings: Any) -> str:
    """The client a request comes from, for the per-client quota (see
    :func:`service.digest.limits.client_address`)."""
    from gpuscout.service.digest.limits import client_address

    return client_address(
        request.client.host if request.client else None,
        request.headers.get("x-forwarded-for"),
        settings.trusted_proxies,
    )


def rate_limited(exc: Any, request: Request) -> Response:
    """429 problem details with ``Retry-After`` for a
    :class:`service.digest.limits.SubscribeRateLimited`."""
    return problem_response(
        request.scope,
        status.HTTP_429_TOO_MANY_REQUESTS,
        str(exc),
        slug="rate-limited",
        headers={"Retry-After": str(exc.retry_after_s)},
    )


def _page(title: str, body: str, code: int = 200) -> HTMLResponse:
    """A page in the web pages' look (:mod:`service.web`); ``body`` is trusted markup."""
    from gpuscout.service.web.layout import message_page

    return HTMLResponse(
        message_page(title, body),
        status_code=code,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


def _token_error(exc: Exception) -> HTMLResponse:
    from gpuscout.service.digest.tokens import ExpiredToken

    if isinstance(exc, ExpiredToken):
        return _page("This link has expired", "<p>Nothing was changed.</p>", 400)
    return _page("This link is not valid", "<p>Nothing was changed.</p>", 400)


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=SubscriptionAccepted,
    responses={
        429: {
            "description": "too many requests for this address, from this client or in all"
            " (Retry-After)",
        }
    },
)
def subscribe(
    request: Request,
    body: SubscriptionRequest,
    manager: ManagerDep,
    settings: SettingsDep,
    providers: SavedSearchProvidersDep,
) -> SubscriptionAccepted | Response:
    """Store a pending subscription and mail the confirmation link to the address.

    An address gets at most ``subscriptions_per_address_per_day`` confirmation mails in
    24 hours, a client (its IP address; behind ``trusted_proxies`` the one they forward)
    ``subscriptions_per_client_per_hour`` requests an hour, and gpuscout sends at most
    ``subscriptions_per_hour`` in all; beyond that the answer is 429 with ``Retry-After``
    and nothing is stored or sent.

    A provider (or seller) name no offer has is refused (422) as `/v1/offers` refuses it;
    one differing only in case is stored as the offers spell it.
    """
    from gpuscout.service.digest.limits import SubscribeRateLimited
    from gpuscout.service.digest.mail import SmtpSendError

    body = checked_search(body, providers)
    try:
        record = manager.subscribe(body, client=request_client(request, settings))
        sent, detail = True, "a confirmation link was sent to the address"
    except SubscribeRateLimited as exc:
        return rate_limited(exc, request)
    except SmtpSendError as exc:
        log.warning("confirmation mail not sent: %s", exc)
        record, sent = exc.record, False
        detail = "stored, but the confirmation mail could not be sent now; try again later"
    return SubscriptionAccepted(
        id=record.id,
        status=record.status.value,
        email=record.email,
        confirmation_sent=sent,
        detail=detail + "; nothing else is sent before the link is followed",
    )


@router.get("/confirm", response_class=HTMLResponse, responses=_PAGE_RESPONSES)
async def show_confirm_page(
    request: Request, token: TokenQuery, manager: ManagerDep
) -> HTMLResponse:
    """A page with one button; the GET itself changes nothing (mail scanners fetch links)."""
    return await _confirm(request, token, manager, act=False)


@router.post("/confirm", response_class=HTMLResponse, responses=_PAGE_RESPONSES)
async def confirm(request: Request, token: TokenQuery, manager: ManagerDep) -> HTMLResponse:
    """Confirm a subscription (double opt-in): what the page's button posts."""
    return await _confirm(request, token, manager, act=True)


async def _confirm(request: Request, token: str, manager: Any, *, act: bool) -> HTMLResponse:
    from gpuscout.service.digest.tokens import TokenError

    reject_unknown(request, _TOKEN_ONLY)
    try:
        record = await run_in_threadpool(manager.confirm if act else manager.check_confirm, token)
    except TokenError as exc:
        return _token_error(exc)
    name, email = html.escape(record.name), html.escape(record.email)
    state = record.status.value
    if state not in ("pending", "active"):
        return _page("This subscription has ended", "<p>Nothing was changed.</p>", 409)
    what = _what(record)
    if state == "active":
        return _page(
            "Subscription confirmed",
            f"<p>The {what} <strong>{name}</strong> will be sent to {email}. Every "
            "mail has a one-click unsubscribe link.</p>",
        )
    return _page(
        "Confirm your subscription",
        f"<p>Send the {what} <strong>{name}</strong> to {email}?</p>" + _button(request, "Confirm"),
    )


def _what(record: Any) -> str:
    """What a subscription sends, in the pages' words."""
    return "price alert" if getattr(record.kind, "value", "digest") == "alert" else "weekly digest"


def _button(request: Request, label: str, hidden: dict[str, str] | None = None) -> str:
    """A form posting back to this very URL (token included), one button."""
    action = html.escape(str(request.url), quote=True)
    fields = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
        for k, v in (hidden or {}).items()
    )
    return (
        f'<form method="post" action="{action}">{fields}'
        f'<button type="submit">{label}</button></form>'
    )


@router.get("/unsubscribe", response_class=HTMLResponse, responses=_PAGE_RESPONSES)
async def show_unsubscribe_page(
    request: Request, token: TokenQuery, manager: ManagerDep
) -> HTMLResponse:
    """A page with one button; the GET itself changes nothing (mail scanners fetch links)."""
    return await _unsubscribe(request, token, manager, act=False)


@router.post("/unsubscribe", response_class=HTMLResponse, responses=_PAGE_RESPONSES)
async def unsubscribe(request: Request, token: TokenQuery, manager: ManagerDep) -> HTMLResponse:
    """Unsubscribe (RFC 8058 one-click: the body ``List-Unsubscribe=One-Click`` is accepted,
    not required)."""
    return await _unsubscribe(request, token, manager, act=True)


@router.api_route(
    "/confirm",
    methods=["DELETE", "OPTIONS", "PATCH", "PUT"],
    include_in_schema=False,
)
@router.api_route(
    "/unsubscribe",
    methods=["DELETE", "OPTIONS", "PATCH", "PUT"],
    include_in_schema=False,
)
async def link_other_methods() -> Response:
    """405 naming both methods (Starlette would name only the first route's)."""
    return Response(status_code=405, headers={"Allow": "GET, POST"})


async def _unsubscribe(request: Request, token: str, manager: Any, *, act: bool) -> HTMLResponse:
    from gpuscout.service.digest.tokens import TokenError

    reject_unknown(request, _TOKEN_ONLY)
    try:
        record = await run_in_threadpool(
            manager.unsubscribe if act else manager.check_unsubscribe, token
        )
    except TokenError as exc:
        return _token_error(exc)
    name, email = html.escape(record.name), html.escape(record.email)
    if act:
        return _page(
            "Unsubscribed",
            f"<p>No more {_what(record)}s named <strong>{name}</strong> will be sent to"
            f" {email}.</p>",
        )
    return _page(
        "Unsubscribe",
        f"<p>Stop the {_what(record)} <strong>{name}</strong> to {email}?</p>"
        + _button(request, "Unsubscribe", {"List-Unsubscribe": "One-Click"}),
    )
