"""Dependencies of the API, as ``Annotated`` aliases the routers declare in signatures.

Nothing here is global: each app keeps its settings, state holder and metrics in
``app.state`` (see :func:`service.api.app.create_app`), and these functions read them from
the request.
"""

from __future__ import annotations

import logging
import secrets
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from ..settings import Settings
from .app_context import ApiContext
from .state import ApiState

__all__ = [
    "DATABASE_UNAVAILABLE",
    "OFFERS_UNAVAILABLE",
    "AdminDep",
    "ContextDep",
    "NoQueryDep",
    "SavedSearchProvidersDep",
    "SettingsDep",
    "StateDep",
    "reject_unknown",
]

log = logging.getLogger("gpuscout.api")

#: What a client is told when the database fails. The driver's own message names the
#: driver, host and port (sometimes a user): it goes to the server log only.
DATABASE_UNAVAILABLE = "the database is unavailable; try again later"
#: ... and when the current offers cannot be loaded (database down, or holding garbage).
OFFERS_UNAVAILABLE = "the current offers could not be loaded; try again later"


async def get_context(request: Request) -> ApiContext:
    context: ApiContext = request.app.state.context
    return context


ContextDep = Annotated[ApiContext, Depends(get_context)]


async def get_settings(context: ContextDep) -> Settings:
    return context.settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


async def current_state(context: ContextDep) -> ApiState:
    """The state to answer from; loaded on first use if the lifespan has not done it."""
    state = context.holder.state
    if state is not None:
        return state
    async with context.load_lock:
        state = context.holder.state
        if state is None:
            try:
                state = await run_in_threadpool(context.refresh_state)
            except Exception as exc:  # the database is down or holds garbage: say so
                log.exception("loading the current offers failed")
                raise HTTPException(
                    status.HTTP_503_SERVICE_UNAVAILABLE, OFFERS_UNAVAILABLE
                ) from exc
    return state


StateDep = Annotated[ApiState, Depends(current_state)]


async def saved_search_providers(context: ContextDep) -> frozenset[str] | None:
    """The provider names a saved search (a digest's or an alert's) may give: the state's
    :attr:`~service.api.state.ApiState.known_providers`, the state loaded on first use as
    for any answer; ``None`` when the offers cannot be loaded (where ``/v1/offers`` answers
    503), and then the names are not checked.

    Without the offers only the adapters' names are known, not the sellers behind a price
    sheet or an aggregator, which the data alone tells apart from a typo; and a saved
    search is run against later snapshots, not this one. Refusing a name then would refuse
    a search for a reason that is not in it, so it is stored as given.
    """
    try:
        state = await current_state(context)
    except HTTPException:
        return None
    return state.known_providers


#: :func:`saved_search_providers`: ``None`` means "not checked".
SavedSearchProvidersDep = Annotated[frozenset[str] | None, Depends(saved_search_providers)]


def reject_unknown(request: Request, allowed: frozenset[str]) -> None:
    """Unknown query parameters are an error (422 naming them), never silently ignored."""
    unknown = [k for k in request.query_params if k not in allowed]
    if unknown:
        raise RequestValidationError(
            [
                {
                    "type": "extra_forbidden",
                    "loc": ("query", k),
                    "msg": f"unknown query parameter {k!r}",
                    "input": request.query_params.get(k),
                }
                for k in dict.fromkeys(unknown)
            ]
        )


async def no_query(request: Request) -> None:
    reject_unknown(request, frozenset())


NoQueryDep = Depends(no_query)

_bearer = HTTPBearer(auto_error=False, description="the admin token from settings")


async def require_admin(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """401 without a Bearer token, 403 with a wrong one or when no admin token is set."""
    if settings.admin_token is None:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "the admin endpoints are off: set GPUSCOUT_ADMIN_TOKEN (at least 32 characters)",
        )
    if credentials is None or not credentials.credentials:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "admin token required (Authorization: Bearer ...)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    expected = settings.admin_token.get_secret_value().encode()
    if not secrets.compare_digest(credentials.credentials.encode(), expected):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "wrong admin token")


AdminDep = Depends(require_admin)
