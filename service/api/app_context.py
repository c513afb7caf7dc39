"""Everything one API app holds: settings, the state holder, metrics and the hooks tests inject.

One :class:`ApiContext` per app (in ``app.state.context``); nothing is module-global, so
two apps in one process (tests, ``serve --get``) never share state or counters.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

import anyio
import anyio.to_thread

from gpuscout.adapters.run import ProviderRun

from ..settings import Settings
from .metrics import ApiMetrics
from .serving import Loaded, marker_or_none
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

_T = TypeVar("_T")


@dataclasses.dataclass
class ApiContext:
    settings: Settings
    holder: StateHolder
    metrics: ApiMetrics
    snapshot_runner: SnapshotRunner | None = None
    ready_check: ReadyCheck | None = None
    snapshot_marker: SnapshotMarker | None = None
    history: Any = None  # gpuscout.db.history reader bound to an engine, when there is a database
    load_lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    snapshot_lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    last_marker: Any = None
    background_tasks: set[asyncio.Task[None]] = dataclasses.field(default_factory=set)
    #: Made on first use: an anyio limiter belongs to the event loop that serves the app.
    _ranking_slots: anyio.CapacityLimiter | None = dataclasses.field(default=None, repr=False)

    async def ranking(self, work: Callable[..., _T], *args: Any) -> _T:
        """Run ``work(*args)``, a ranking (CPU-bound, blocking), in a worker thread, at most
        ``settings.api_ranking_threads`` at once; the others wait in arrival order.

        Without the bound each request took one of anyio's 40 threads, so 8 rankings shared
        2 cores at once and the unluckiest waited longest. Twice the cores (the default)
        kept the throughput of no bound with a p99 about a fifth lower (``benchmarks/api.py``,
        new queries at 8 connections); one a core left a core idle now and then, as a
        ranking's Python steps hold the GIL. Cached answers never come here.
        """
        if self._ranking_slots is None:
            self._ranking_slots = anyio.CapacityLimiter(self.settings.api_ranking_threads)
        call = functools.partial(work, *args)
        return await anyio.to_thread.run_sync(call, limiter=self._ranking_slots)

    def refresh_state(self, first_load: Future[Loaded] | None = None) -> ApiState:
        """Reload the current offers and swap them in; blocking (call from a thread).

        The loader reads the FX table again: the scheduler (here or in another process) may
        have downloaded new rates, which the reloaded offers' USD figures then use.
        ``first_load``: a load begun already (before the app was built,
        :func:`~service.api.serving.begin_load`), waited for and swapped in with the marker
        read before it; its failure counts as a failed refresh like any other.
        """
        try:
            if first_load is None:
                marker = self._marker()
                state = self.holder.refresh()
            else:
                loaded = first_load.result()
                marker = loaded.marker
                state = self.holder.refresh(loaded.current)
        except Exception:
            self.metrics.state_refreshes.labels("error").inc()
            raise
        self.last_marker = marker
        self.metrics.state_refreshes.labels("ok").inc()
        return state

    def _marker(self) -> Any:
        return marker_or_none(self.snapshot_marker)

    def refresh_if_changed(self) -> bool:
        """Reload only when the snapshot marker moved (what replicas poll); blocking."""
        if self.snapshot_marker is None:
            return False
        if self.holder.state is not None and self._marker() == self.last_marker:
            return False
        self.refresh_state()
        return True
