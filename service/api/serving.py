"""The app a ``gpuscout serve`` process serves, its first load begun before the app is built.

A worker's start is Python imports (FastAPI, pydantic, the routers and the pricing engine:
~0.6 s of one core) and its first state (reading and framing 100k stored offers with nothing
kept: ~0.8 s, mostly SQLite and polars, outside the GIL). Begun when the app is built, the
load followed the imports; begun here first, from a module that imports neither FastAPI nor
the app, it overlaps them: :func:`begin_load` reads the snapshot marker, then the offers,
in a thread of its own, and :func:`~service.api.app.create_app` takes that load as its
first state (``first_load``) instead of loading again.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..settings import Settings, get_settings

if TYPE_CHECKING:
    from fastapi import FastAPI

    from db.state import CurrentState

__all__ = ["Loaded", "begin_load", "marker_or_none", "serving", "serving_app"]


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


def serving(settings: Settings) -> FastAPI:
    """The app of ``settings``' database, wired by :func:`~service.api.hooks.default_hooks`,
    with its first load begun before FastAPI and the routes are imported."""
    from .hooks import default_hooks

    hooks = default_hooks(settings)
    first = begin_load(hooks["offers_loader"], hooks["snapshot_marker"])
    from .app import create_app

    return create_app(settings, **hooks, first_load=first)


def serving_app() -> FastAPI:
    """The app a worker of ``gpuscout serve --workers N`` builds (uvicorn's factory): the
    settings from the environment, the offers loading from the start."""
    from ..log_output import show_service_log

    show_service_log()  # each worker is a process of its own
    return serving(get_settings())
