"""The FastAPI app factory: :func:`create_app` wires settings, state, metrics and routers.

Nothing is built at import time. Tests inject ``offers_loader`` (and the other hooks) so the
app never needs the network or a database; ``gpuscout serve`` uses the defaults: the
database named in settings, else the offline sample.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Depends, FastAPI, Request, Response, status
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.responses import HTMLResponse
from markupsafe import escape
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from .. import web
from ..settings import Settings, get_settings
from ..web.layout import message_page
from . import routers
from .app_context import ApiContext, ReadyCheck, SnapshotMarker, SnapshotRunner
from .deps import DATABASE_UNAVAILABLE
from .input_limits import BodySizeLimit, limit_body_lists, validation_error_response
from .mcp_route import MCP_PATH, McpRoute
from .metrics import ApiMetrics, MetricsMiddleware
from .offers_cache import GZIP_LEVEL, GZIP_MIN_BYTES
from .openapi_names import HeadAsGet, operation_id, tidy_openapi
from .problems import ProblemError, problem_response
from .security_headers import SecurityHeaders
from .state import OffersLoader, StateHolder

__all__ = ["API_VERSION", "create_app", "serving_app"]

log = logging.getLogger("gpuscout.api")

API_VERSION = "1"
#: One module per resource under ``service/api/routers``, in the order of the docs.
ROUTERS: tuple[str, ...] = (
    "offers",
    "estimate",
    "gpus",
    "models",
    "providers",
    "history",
    "snapshots",
    "health",
    "metrics",
    "subscriptions",
    "alerts",
    "catalog",
)


def create_app(
    settings: Settings | None = None,
    *,
    offers_loader: OffersLoader | None = None,
    snapshot_runner: SnapshotRunner | None = None,
    ready_check: ReadyCheck | None = None,
    snapshot_marker: SnapshotMarker | None = None,
    history: Any = None,
) -> FastAPI:
    """Build one API app.

    Without ``offers_loader`` the app is wired to the database of ``settings`` (migrated,
    read through :func:`service.current.load_current`, polled for new snapshots), falling
    back to the offline sample; every hook given here overrides that wiring. The loader
    returns a :class:`db.current.CurrentState`, framed and priced with its FX table; the
    app's lifespan loads it (in a worker thread) before the app takes requests.
    """
    settings = settings or get_settings()
    hooks: dict[str, Any] = {}
    if offers_loader is None:
        from .hooks import default_hooks

        hooks = default_hooks(settings)
    loader = offers_loader or hooks["offers_loader"]
    holder = StateHolder(
        loader,
        cache_entries=settings.api_cache_entries,
        cache_bytes=int(settings.api_cache_mb * 1_000_000),
    )
    context = ApiContext(
        settings=settings,
        holder=holder,
        metrics=ApiMetrics(lambda: holder.state),
        snapshot_runner=snapshot_runner or hooks.get("snapshot_runner"),
        ready_check=ready_check or hooks.get("ready_check"),
        snapshot_marker=snapshot_marker or hooks.get("snapshot_marker"),
        history=history if history is not None else hooks.get("history"),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await run_in_threadpool(context.refresh_state)
        except Exception:
            log.exception("could not load the current offers; /readyz will say so")
        poller = asyncio.get_running_loop().create_task(_poll(context))
        try:
            yield
        finally:
            if agents is not None:
                await agents.aclose()
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
            for task in list(context.background_tasks):
                task.cancel()

    app = FastAPI(
        title="gpuscout",
        version=f"{API_VERSION}.0",
        summary="GPU rental offers ranked by cost per effective TFLOP-hour.",
        lifespan=lifespan,
        dependencies=[Depends(limit_body_lists)],
        docs_url=None,  # served with local assets by gpuscout.service.web (no CDN)
        redoc_url=None,
        generate_unique_id_function=operation_id,
    )
    app.state.context = context
    app.add_exception_handler(StarletteHTTPException, _http_problem)
    app.add_exception_handler(RequestValidationError, validation_error_response)
    app.add_exception_handler(ProblemError, _own_problem)
    app.add_exception_handler(SQLAlchemyError, _database_unavailable)
    for module in ROUTERS:
        app.include_router(importlib.import_module(f"{routers.__name__}.{module}").router)
    web.mount(app)
    tidy_openapi(app)
    agents = None
    if settings.mcp_http:  # AI agents: MCP at /mcp, the SDK loaded on the first call
        agents = McpRoute(app, settings.api_host)
        app.router.routes.append(
            Route(MCP_PATH, endpoint=agents, methods=["GET", "POST", "DELETE"])
        )

    app.add_middleware(
        BodySizeLimit, max_bytes=settings.api_max_body_bytes, max_depth=settings.api_max_json_depth
    )
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES, compresslevel=GZIP_LEVEL)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "If-None-Match"],
            expose_headers=["ETag", "Deprecation", "Warning"],
        )
    app.add_middleware(MetricsMiddleware, metrics=context.metrics)
    app.add_middleware(HeadAsGet)
    app.add_middleware(SecurityHeaders, trusted_proxies=settings.trusted_proxies)
    return app


async def _http_problem(request: Request, exc: Exception) -> Response:
    """Every HTTP error (404, 405, 409, 503...) as a problem; a body that is not even JSON
    (bad bytes) is invalid input: 422 like any other."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        return await validation_error_response(
            request,
            RequestValidationError(
                [{"type": "json_invalid", "loc": ("body",), "msg": "body is not valid JSON"}]
            ),
        )
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == status.HTTP_404_NOT_FOUND and detail == "Not Found":
        if _wants_a_page(request):
            return _page_not_found(request.url.path)
        detail = f"no resource at {request.url.path}; the API is described at /openapi.json"
    elif exc.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        allowed = (exc.headers or {}).get("Allow", "")
        if "GET" in allowed.split(", ") and "HEAD" not in allowed:
            allowed = f"{allowed}, HEAD"
            exc.headers = {**(exc.headers or {}), "Allow": allowed}
        detail = f"{request.method} is not allowed here; allowed: {allowed or 'none'}"
    return problem_response(request.scope, exc.status_code, detail, headers=exc.headers)


def _wants_a_page(request: Request) -> bool:
    """A browser asking for a page (``Accept`` names HTML), outside the API's ``/v1/``."""
    accept = request.headers.get("accept", "")
    return "text/html" in accept and not request.url.path.startswith("/v1/")


def _page_not_found(path: str) -> Response:
    """The site's 404 page: a mistyped or old link gets the site's look and a way on, where
    an API client gets the problem (``application/problem+json``)."""
    body = (
        f"<p>There is no page at <code>{escape(path)}</code>.</p>"
        '<p><a href="/">See the current offers</a>, the <a href="/gpus">GPU catalog</a> or '
        'the <a href="/docs">API</a>.</p>'
    )
    return HTMLResponse(
        message_page("Page not found", body, nav="none"), status_code=status.HTTP_404_NOT_FOUND
    )


async def _own_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ProblemError)
    return problem_response(
        request.scope, exc.status, exc.detail, slug=exc.slug, headers=exc.headers
    )


async def _database_unavailable(request: Request, exc: Exception) -> Response:
    """Any database error a route meets is a 503 without its details (logged here)."""
    log.error("database error on %s %s: %s", request.method, request.url.path, exc)
    return problem_response(
        request.scope,
        status.HTTP_503_SERVICE_UNAVAILABLE,
        DATABASE_UNAVAILABLE,
        headers={"Retry-After": "30"},
    )


async def _poll(context: ApiContext) -> None:
    """Every ``api_refresh_s``: reload the offers when another process stored a snapshot."""
    if context.snapshot_marker is None:
        return
    while True:
        await asyncio.sleep(context.settings.api_refresh_s)
        try:
            await run_in_threadpool(context.refresh_if_changed)
        except Exception:
            log.exception("refreshing the current offers failed; keeping the previous ones")


def serving_app() -> FastAPI:
    """The app each worker of ``gpuscout serve --workers N`` builds (uvicorn's factory):
    the settings from the environment; each worker is a process of its own."""
    from ..log_output import show_service_log

    show_service_log()
    return create_app(get_settings())
