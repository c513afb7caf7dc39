"""The app a ``gpuscout serve`` process serves, its first load begun before the app is built.

A worker's start is Python imports (FastAPI, pydantic, the routers and the pricing engine:
~0.6 s of one core) and its first state (reading and framing 100k stored offers with nothing
kept: ~0.8 s, mostly SQLite and polars, outside the GIL). Begun when the app is built, the
load followed the imports; begun here first, from a module that imports neither FastAPI nor
the app, it overlaps them: :func:`begin_load` reads the snapshot marker, then the offers,
in a thread of its own, and :func:`~service.api.app.create_app` takes that load as its
first state (``first_load``) instead of loading again. Python's garbage collector is paused
through the start and resumed on what it made, frozen (:func:`pause_collector`).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import gc
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..settings import Settings, get_settings

if TYPE_CHECKING:
    from fastapi import FastAPI

    from gpuscout.db.state import CurrentState

__all__ = [
    "Loaded",
    "begin_load",
    "collect_again",
    "marker_or_none",
    "pause_collector",
    "serving",
    "serving_app",
]


@dataclasses.dataclass(frozen=True)
class Loaded:
    """The current offers and the snapshot marker read before them: a snapshot stored while
    they loaded moves the marker past this one, so the next poll loads again."""

    marker: Any
    current: CurrentState


def marker_or_none(snapshot_marker: Callable[[], Any] | None) -> Any:
    """The snapshot marker, or ``None`` when there is none or it cannot be read (no tables
    yet, the database down: not a reason to serve nothing; the next poll reads it again)."""
    if snapshot_marker is None:
        return None
    try:
        return snapshot_marker()
    except Exception:
        return None


def begin_load(
    loader: Callable[[], CurrentState], snapshot_marker: Callable[[], Any] | None
) -> concurrent.futures.Future[Loaded]:
    """Read the marker, then load the current offers, in a thread started now; the future
    holds what was loaded or the exception (the app's start-up waits for it and says what
    failed)."""
    future: concurrent.futures.Future[Loaded] = concurrent.futures.Future()

    def load() -> None:
        try:
            marker = marker_or_none(snapshot_marker)
            future.set_result(Loaded(marker, loader()))
        except BaseException as exc:  # handed to the start-up, which logs it
            future.set_exception(exc)

    threading.Thread(target=load, name="gpuscout-first-load", daemon=True).start()
    return future


def pause_collector() -> bool:
    """Pause Python's cyclic garbage collector for a process's start; whether it ran.

    A worker's start makes ~200k objects that live as long as the process (modules, routes,
    models, the first state), and the collector, run every few hundred allocations, reads
    the older ones again at each of its fuller passes: ~70 ms of the ~0.6 s the imports take.
    The start makes almost no cyclic garbage, so pausing it loses nothing;
    :func:`collect_again` resumes it."""
    running = gc.isenabled()
    gc.disable()
    return running


def collect_again() -> None:
    """Resume the collector paused by :func:`pause_collector` once the first state is in,
    everything the start made moved out of its reach first (``gc.freeze``): a full pass over
    a started worker's objects takes 30-40 ms, the pause of a request it falls in; frozen,
    it reads only what was made since. Frozen objects are still freed when their last
    reference goes (a replaced state's frame is: tests/service/api/test_serving.py); only a
    reference cycle among them would stay."""
    gc.freeze()
    gc.enable()


def serving(settings: Settings) -> FastAPI:
    """The app of ``settings``' database, wired by :func:`~service.api.hooks.default_hooks`,
    with its first load begun before FastAPI and the routes are imported, and the garbage
    collector paused until the first state is in (:func:`pause_collector`)."""
    paused = pause_collector()
    from .hooks import default_hooks

    hooks = default_hooks(settings)
    first = begin_load(hooks["offers_loader"], hooks["snapshot_marker"])
    from .app import create_app

    started = collect_again if paused else None
    return create_app(settings, **hooks, first_load=first, after_start=started)


def serving_app() -> FastAPI:
    """The app a worker of ``gpuscout serve --workers N`` builds (uvicorn's factory): the
    settings from the environment, the offers loading from the start."""
    from ..log_output import show_service_log

    show_service_log()  # each worker is a process of its own
    return serving(get_settings())
