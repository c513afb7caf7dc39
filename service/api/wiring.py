"""The default hooks of an app: the database of the settings, else the offline sample.

:func:`default_wiring` returns the hooks :func:`~service.api.app.create_app` uses when the
caller injects none. The engine is built here, when the app is built, never at import.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import httpx
import sqlalchemy as sa
from starlette.concurrency import run_in_threadpool

from adapters.collect import ProviderRun, collect

from ..current import load_current
from ..fx import fx_table
from ..settings import Settings

__all__ = ["default_wiring"]

log = logging.getLogger("gpuscout.api")

USER_AGENT = "gpuscout/0.1 (+price comparison)"


def default_wiring(settings: Settings) -> dict[str, Any]:
    """Loader, readiness check, snapshot marker, snapshot runner and history engine."""
    from db.current import latest_snapshot
    from db.engine import make_engine
    from db.snapshots import store_snapshot

    from ..commands.providers import build_adapters

    engine = make_engine(settings.database_url)

    def ready_check() -> None:
        with engine.connect() as connection:
            connection.execute(sa.text("SELECT 1"))

    def snapshot_marker() -> Any:
        with engine.connect() as connection:
            return latest_snapshot(connection)

    async def snapshot_runner() -> list[ProviderRun]:
        started_at = datetime.now(UTC)
        adapters = build_adapters(settings)
        async with httpx.AsyncClient(
            headers={"User-Agent": USER_AGENT},
            timeout=settings.http_timeout_s,
            follow_redirects=True,
        ) as client:
            runs = await collect(adapters, client)
        finished_at = datetime.now(UTC)
        fx = fx_table(settings)
        await run_in_threadpool(
            lambda: store_snapshot(
                engine, runs, started_at=started_at, finished_at=finished_at, fx=fx
            )
        )
        return runs

    return {
        "offers_loader": lambda: load_current(settings=settings),
        "ready_check": ready_check,
        "snapshot_marker": snapshot_marker,
        "snapshot_runner": snapshot_runner,
        "history": engine,
    }
