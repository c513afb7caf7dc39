"""Everything one API app holds: settings, the state holder, metrics and the hooks tests inject.

One :class:`ApiContext` per app (in ``app.state.context``); nothing is module-global, so
two apps in one process (tests, ``serve --get``) never share state or counters.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from adapters.run import ProviderRun

from ..settings import Settings
from .metrics import ApiMetrics
from .state import ApiState, StateHolder

__all__ = ["ApiContext", "ReadyCheck", "SnapshotRunner"]


class SnapshotRunner(Protocol):
    """Takes one snapshot (fetch every provider, store it); returns each provider's run.

    Calls ``on_start`` once it holds the snapshot lock, before fetching; raises
    :class:`service.snapshots.SnapshotLocked` when another runner holds it.
    """

    def __call__(self, *, on_start: Callable[[], None]) -> Awaitable[list[ProviderRun]]: ...


#: Raises if the database is unreachable; ``None`` when the app has no database.
ReadyCheck = Callable[[], None]
#: A cheap value that changes when a new snapshot is stored (``None``: unknown).
SnapshotMarker = Callable[[], Any]


@dataclasses.dataclass
class ApiContext:
    settings: Settings
    holder: StateHolder
    metrics: ApiMetrics
    snapshot_runner: SnapshotRunner | None = None
    ready_check: ReadyCheck | None = None
    snapshot_marker: SnapshotMarker | None = None
    history: Any = None  # db.history reader bound to an engine, when there is a database
    load_lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    snapshot_lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    last_marker: Any = None
    background_tasks: set[asyncio.Task[None]] = dataclasses.field(default_factory=set)

    def refresh_state(self) -> ApiState:
        """Reload the current offers and swap them in; blocking (call from a thread).

        The loader reads the FX table again: the scheduler (here or in another process) may
        have downloaded new rates, which the reloaded offers' USD figures then use.
        """
        marker = self._marker()
        try:
            state = self.holder.refresh()
        except Exception:
            self.metrics.state_refreshes.labels("error").inc()
            raise
        self.last_marker = marker
        self.metrics.state_refreshes.labels("ok").inc()
        return state

    def _marker(self) -> Any:
        if self.snapshot_marker is None:
            return None
        try:
            return self.snapshot_marker()
        except Exception:  # no tables yet, database down: not a reason to serve nothing
            return None

    def refresh_if_changed(self) -> bool:
        """Reload only when the snapshot marker moved (what replicas poll); blocking."""
        if self.snapshot_marker is None:
            return False
        if self.holder.state is not None and self._marker() == self.last_marker:
            return False
        self.refresh_state()
        return True
