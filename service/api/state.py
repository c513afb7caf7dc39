"""The in-memory current offers: one immutable :class:`ApiState`, swapped whole.

A request reads ``holder.state`` once and works on that object only, so it never sees half
of one snapshot and half of the next. A refresh builds a complete new state off to the side
(load, frame, per-provider status) and then replaces the reference in one assignment.

Each state carries its own :class:`~service.api.offers_cache.ResultCache` of finished
answers, so a cached answer can never outlive the snapshot it was computed from.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import polars as pl

from adapters.schema import Offer

from ..current import CurrentOffers
from .offers_cache import ResultCache

__all__ = [
    "ApiState",
    "FrameBuilder",
    "OffersLoader",
    "ProviderStatus",
    "StateHolder",
    "build_state",
]

#: Loads the current offers (the database, else the sample); blocking, run in a thread.
OffersLoader = Callable[[], CurrentOffers]
#: Turns offers into the frame the pricing engine ranks.
FrameBuilder = Callable[[list[Offer]], pl.DataFrame]


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderStatus:
    """One provider in the current snapshot."""

    provider: str
    outcome: str  # ok | stale | failed | skipped
    offer_count: int
    last_fetch_at: datetime | None
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class ApiState:
    """Everything a read request needs, computed once per snapshot."""

    current: CurrentOffers
    frame: pl.DataFrame
    providers: tuple[ProviderStatus, ...]
    loaded_at: datetime
    tag: str  # identifies the snapshot; the base of every ETag
    cache: ResultCache = dataclasses.field(compare=False)

    @staticmethod
    def age_s(when: datetime, now: datetime | None = None) -> float:
        return max(0.0, ((now or datetime.now(UTC)) - when).total_seconds())


def provider_statuses(current: CurrentOffers) -> tuple[ProviderStatus, ...]:
    """Per provider: outcome, offers held and when its prices were fetched.

    Uses ``current.provider_status`` when the loader gives one (the database does), else
    derives it from the offers and the stale/failed lists (the sample).
    """
    given = getattr(current, "provider_status", None)
    if given:
        return tuple(
            ProviderStatus(
                provider=str(_pick(s, "provider")),
                outcome=str(_pick(s, "outcome", "status") or "ok"),
                offer_count=int(_pick(s, "offer_count") or 0),
                last_fetch_at=_pick(s, "last_fetch_at", "fetched_at", "finished_at"),
                error=_pick(s, "error"),
            )
            for s in (given.values() if isinstance(given, dict) else given)
        )
    counts: dict[str, int] = collections.Counter(o.provider for o in current.offers)
    latest: dict[str, datetime] = {}
    for o in current.offers:
        if o.provider not in latest or o.fetched_at > latest[o.provider]:
            latest[o.provider] = o.fetched_at
    stale, failed = set(current.stale_providers), set(current.failed_providers)
    out = []
    for name in sorted(set(counts) | stale | failed):
        outcome = "failed" if name in failed else "stale" if name in stale else "ok"
        out.append(ProviderStatus(name, outcome, counts.get(name, 0), latest.get(name)))
    return tuple(out)


def _pick(obj: Any, *names: str) -> Any:
    for name in names:
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if value is not None:
            return getattr(value, "value", value)
    return None


def snapshot_tag(current: CurrentOffers, providers: tuple[ProviderStatus, ...]) -> str:
    """A short digest naming this snapshot; equal on every replica that loaded it."""
    h = hashlib.blake2b(digest_size=8)
    snap = current.snapshot_at.isoformat() if current.snapshot_at else "-"
    h.update(f"{current.source}|{snap}|{len(current.offers)}".encode())
    for p in providers:
        when = p.last_fetch_at.isoformat() if p.last_fetch_at else "-"
        h.update(f"|{p.provider}:{p.outcome}:{p.offer_count}:{when}".encode())
    return h.hexdigest()


def build_state(
    current: CurrentOffers, frame_builder: FrameBuilder, *, cache_entries: int
) -> ApiState:
    providers = provider_statuses(current)
    frame = frame_builder(current.offers)
    tag = snapshot_tag(current, providers)
    # The frame holds everything a request needs. Dropping the Offer objects keeps
    # hundreds of thousands of Python objects out of the heap the garbage collector scans.
    current = dataclasses.replace(current, offers=[])
    return ApiState(
        current=current,
        frame=frame,
        providers=providers,
        loaded_at=datetime.now(UTC),
        tag=tag,
        cache=ResultCache(cache_entries),
    )


class StateHolder:
    """Holds the current :class:`ApiState`; :meth:`refresh` swaps in a new one atomically."""

    def __init__(
        self, loader: OffersLoader, frame_builder: FrameBuilder, *, cache_entries: int
    ) -> None:
        self.loader = loader
        self.frame_builder = frame_builder
        self.cache_entries = cache_entries
        self._state: ApiState | None = None
        self._refresh_lock = threading.Lock()

    @property
    def state(self) -> ApiState | None:
        return self._state

    def set(self, state: ApiState) -> None:
        self._state = state  # one reference assignment: readers see old or new, never half

    def refresh(self) -> ApiState:
        """Load the current offers and swap them in (blocking: call from a thread)."""
        with self._refresh_lock:
            state = build_state(self.loader(), self.frame_builder, cache_entries=self.cache_entries)
            self.set(state)
            return state
