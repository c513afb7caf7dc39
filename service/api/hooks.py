"""The default hooks of an app: the database of the settings, else the offline sample.

:func:`default_hooks` returns the hooks :func:`~service.api.app.create_app` uses when the
caller injects none. The engine is built here, when the app is built, never at import.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from starlette.concurrency import run_in_threadpool

from gpuscout.adapters.run import ProviderRun

from ..current import load_current
from ..settings import Settings

if TYPE_CHECKING:
    from ..snapshots import Fetch

__all__ = ["default_hooks"]

log = logging.getLogger("gpuscout.api")


def default_hooks(settings: Settings, *, fetch: Fetch | None = None) -> dict[str, Any]:
    """Loader, readiness check, snapshot marker, snapshot runner and history engine.

    The snapshot runner is :func:`service.snapshots.take_snapshot` (job lock, migrations,
    retention) in a worker thread; ``fetch`` replaces its live fetch (tests).
    """
    from gpuscout.db.current import latest_snapshot
    from gpuscout.db.engine import make_engine

    engine = make_engine(settings.database_url)

    def ready_check() -> None:
        with engine.connect() as connection:
            connection.execute(sa.text("SELECT 1"))

    def snapshot_marker() -> Any:
        with engine.connect() as connection:
            return latest_snapshot(connection)

    async def snapshot_runner(*, on_start: Callable[[], None]) -> list[ProviderRun]:
        from ..snapshots import take_snapshot  # migrations, adapters: not needed to serve

        result = await run_in_threadpool(
            take_snapshot, settings, fetch=fetch, engine=engine, on_start=on_start
        )
        return list(result.runs)

    return {
        "offers_loader": lambda: load_current(settings=settings),
        "ready_check": ready_check,
        "snapshot_marker": snapshot_marker,
        "snapshot_runner": snapshot_runner,
        "history": engine,
    }
