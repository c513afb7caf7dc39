"""The in-memory current offers: one immutable :class:`ApiState`, swapped whole.

A request reads ``holder.state`` once and works on that object only, so it never sees half
of one snapshot and half of the next. A refresh loads a complete new
:class:`~db.current.CurrentState` off to the side (the offers framed, each provider's
outcome) and then replaces the reference in one assignment.

Each state carries its own :class:`~service.api.offers_cache.ResultCache` of finished
answers, so a cached answer can never outlive the snapshot it was computed from, and what
every answer about it shares, found once per state rather than once per query: the offers
no ranking can rank (:attr:`ApiState.unrankable`, what the coverage note filters), the
warnings about the data (:attr:`ApiState.warnings`) and each offer's checklist summary
(:attr:`ApiState.checklist`) and the provider names a query may give
(:attr:`ApiState.known_providers`). :meth:`StateHolder.refresh` finds them before it swaps the
state in, so no request pays for them.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import threading
from collections.abc import Callable
from datetime import UTC, datetime

import polars as pl

from gpuscout.adapters import provider_names
from gpuscout.adapters.sample import SAMPLE_NOTE
from gpuscout.db.current import CurrentState
from gpuscout.db.memory import release_memory
from gpuscout.pricing.coverage import Unrankable
from gpuscout.pricing.names import known_providers
from gpuscout.pricing.offer_checklist import counts_frame

from .offers_cache import ResultCache, time_bucket

__all__ = [
    "COUNT_COLUMNS",
    "ApiState",
    "OffersLoader",
    "StateHolder",
    "build_state",
]

#: The checklist summary an answer row carries (:meth:`pricing.offer_checklist.Checklist.
#: counts`), in its order.
COUNT_COLUMNS: tuple[str, ...] = ("met", "not_met", "unknown", "items", "summary")

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
        """The offers to rank (:data:`pricing.frame.OFFER_SCHEMA`, ``config_id`` and the
        offer facts): every row number of an answer (:data:`pricing.frame.OFFER_ROW`) is a
        row of this frame."""
        return self.current.frame

    @functools.cached_property
    def unrankable(self) -> Unrankable:
        """The offers whose GPU no ranking can rank (:func:`pricing.coverage.left_out`)."""
        return Unrankable(self.frame)

    @functools.cached_property
    def checklist(self) -> pl.DataFrame:
        """Per offer row of :attr:`frame`, its checklist summary (:data:`COUNT_COLUMNS`):
        an offer's checklist does not depend on the query, so it is counted once per
        snapshot (~80 ms for 100k offers), and a page fetches its rows by position."""
        return counts_frame(self.frame).select(COUNT_COLUMNS)

    def checklist_of(self, rows: pl.Series) -> pl.DataFrame:
        """The checklist summary of the offers at ``rows`` of :attr:`frame`, in order: read
        off :attr:`checklist` once the state has it (the API warms it), else counted for
        these rows alone (a state built for one answer, as the CLI's, need not count
        every offer's: ~80 ms at 100k offers)."""
        if "checklist" in self.__dict__:
            return self.checklist[rows]
        return counts_frame(self.frame[rows]).select(COUNT_COLUMNS)

    @functools.cached_property
    def known_providers(self) -> frozenset[str]:
        """The names ``providers`` and ``exclude_providers`` may give: the registered
        adapters' and every provider and seller of the offers
        (:func:`pricing.names.known_providers`)."""
        return known_providers(self.frame, provider_names())

    @functools.cached_property
    def warnings(self) -> tuple[str, ...]:
        """What every answer on this state warns about its data: sample prices, stale or
        failed providers, records skipped (not ranked), converted currencies (a pass over
        every offer's currency)."""
        cur = self.current
        out = []
        if cur.sample:
            out.append(cur.note or SAMPLE_NOTE)
        if cur.stale_providers:
            out.append(
                "stale providers (latest fetch failed or was skipped; their older offers are"
                " included): " + ", ".join(cur.stale_providers)
            )
        # failed_providers names the stale ones too; this warning is about those with no
        # offers at all (as the web banner says it)
        if cur.catalog_providers:
            out.append(
                "prices from published catalogs (gpuhunt, SkyPilot), not the providers' own"
                " APIs; /v1/providers gives their age: " + ", ".join(cur.catalog_providers)
            )
        failed = [name for name in cur.failed_providers if name not in cur.stale_providers]
        if failed:
            out.append(
                "failed providers (no offers from them; cheaper offers may be missing): "
                + ", ".join(failed)
            )
        if cur.skipped_note:
            out.append(cur.skipped_note)
        if cur.fx_note:
            out.append(cur.fx_note)
        return tuple(out)

    def warm(self) -> ApiState:
        """Find what the state keeps per snapshot now (blocking), not on a first request."""
        _ = self.unrankable, self.warnings, self.checklist, self.known_providers
        return self

    def answer_time(self, now: datetime | None = None) -> datetime:
        """The instant an answer on this state ages prices against and calls
        ``generated_at``: ``now``'s cache window, never before this snapshot
        (:func:`~service.api.offers_cache.time_bucket`)."""
        return time_bucket(now, not_before=self.current.snapshot_at)

    @staticmethod
    def age_s(when: datetime, now: datetime | None = None) -> float:
        return max(0.0, ((now or datetime.now(UTC)) - when).total_seconds())


def snapshot_tag(current: CurrentState) -> str:
    """A short digest naming this snapshot; equal on every replica that loaded it.

    It covers the FX table too: new rates change every USD figure of an answer; and each
    provider's latest attempt (status, time, error), so a snapshot that changed only what
    the answers say about the providers (another failure of the same providers, over
    sample offers) is a new tag as well.
    """
    h = hashlib.blake2b(digest_size=8)
    snap = current.snapshot_at.isoformat() if current.snapshot_at else "-"
    fx = current.fx
    h.update(f"{current.source}|{snap}|{current.frame.height}|{fx.as_of}|{fx.source}".encode())
    for p in current.providers.values():
        when = p.fetched_at.isoformat() if p.fetched_at else "-"
        tried = p.last_attempt_at.isoformat() if p.last_attempt_at else "-"
        h.update(f"|{p.provider}:{p.outcome}:{p.offer_count}:{when}:{tried}".encode())
        h.update(f":{p.last_status}:{p.error or ''}".encode())
    return h.hexdigest()


def build_state(
    current: CurrentState, *, cache_entries: int, cache_bytes: int | None = None
) -> ApiState:
    """The API's state of ``current``."""
    return ApiState(
        current=current, tag=snapshot_tag(current), cache=ResultCache(cache_entries, cache_bytes)
    )


class StateHolder:
    """Holds the current :class:`ApiState`; :meth:`refresh` swaps in a new one atomically."""

    def __init__(
        self, loader: OffersLoader, *, cache_entries: int, cache_bytes: int | None = None
    ) -> None:
        self.loader = loader
        self.cache_entries = cache_entries
        self.cache_bytes = cache_bytes
        self._state: ApiState | None = None
        self._refresh_lock = threading.Lock()

    @property
    def state(self) -> ApiState | None:
        return self._state

    def set(self, state: ApiState) -> None:
        self._state = state  # one reference assignment: readers see old or new, never half

    def refresh(self) -> ApiState:
        """Load the current state and swap it in (blocking: call from a thread).

        Requests in flight keep the state they read; once the load's own garbage is freed
        the heap it grew is given back (:func:`db.memory.release_memory`)."""
        with self._refresh_lock:
            state = build_state(
                self.loader(),
                cache_entries=self.cache_entries,
                cache_bytes=self.cache_bytes,
            ).warm()
            self.set(state)
        release_memory()
        return state
