"""The in-memory current offers: one immutable :class:`ApiState`, swapped whole.

A request reads ``holder.state`` once and works on that object only, so it never sees half
of one snapshot and half of the next. A refresh loads a complete new
:class:`~db.current.CurrentState` off to the side (the offers framed, each provider's
outcome) and then replaces the reference in one assignment.

Each state carries its own :class:`~service.api.offers_cache.ResultCache` of finished
answers, so a cached answer can never outlive the snapshot it was computed from.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable
from datetime import UTC, datetime

import polars as pl

from db.current import CurrentState

from .offers_cache import ResultCache

__all__ = [
    "ApiState",
    "OffersLoader",
    "StateHolder",
    "build_state",
]

#: Loads the current state (the database, else the sample); blocking, run in a thread.
OffersLoader = Callable[[], CurrentState]


@dataclasses.dataclass(frozen=True)
class ApiState:
    """The current state and what the API keeps per snapshot: the ETag base and the cache."""

    current: CurrentState
    tag: str  # identifies the snapshot; the base of every ETag
    cache: ResultCache = dataclasses.field(compare=False)

    @property
    def frame(self) -> pl.DataFrame:
        """The offers to rank (:data:`pricing.frame.OFFER_SCHEMA` and ``config_id``)."""
        return self.current.frame

    @staticmethod
    def age_s(when: datetime, now: datetime | None = None) -> float:
        return max(0.0, ((now or datetime.now(UTC)) - when).total_seconds())


def snapshot_tag(current: CurrentState) -> str:
    """A short digest naming this snapshot; equal on every replica that loaded it.

    It covers the FX table too: new rates change every USD figure of an answer.
    """
    h = hashlib.blake2b(digest_size=8)
    snap = current.snapshot_at.isoformat() if current.snapshot_at else "-"
    fx = current.fx
    h.update(f"{current.source}|{snap}|{current.frame.height}|{fx.as_of}|{fx.source}".encode())
    for p in current.providers.values():
        when = p.fetched_at.isoformat() if p.fetched_at else "-"
        h.update(f"|{p.provider}:{p.outcome}:{p.offer_count}:{when}".encode())
    return h.hexdigest()


def build_state(current: CurrentState, *, cache_entries: int) -> ApiState:
    return ApiState(
        current=current,
        tag=snapshot_tag(current),
        cache=ResultCache(cache_entries),
    )


class StateHolder:
    """Holds the current :class:`ApiState`; :meth:`refresh` swaps in a new one atomically."""

    def __init__(self, loader: OffersLoader, *, cache_entries: int) -> None:
        self.loader = loader
        self.cache_entries = cache_entries
        self._state: ApiState | None = None
        self._refresh_lock = threading.Lock()

    @property
    def state(self) -> ApiState | None:
        return self._state

    def set(self, state: ApiState) -> None:
        self._state = state  # one reference assignment: readers see old or new, never half

    def refresh(self) -> ApiState:
        """Load the current state and swap it in (blocking: call from a thread)."""
        with self._refresh_lock:
            state = build_state(self.loader(), cache_entries=self.cache_entries)
            self.set(state)
            return state
