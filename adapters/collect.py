"""Run adapters: fetch all enabled providers concurrently, or replay recorded responses.

A provider's failure is data, not an exception: every run ends with one
:class:`ProviderRun` per provider, ``ok``, ``error`` (with the reason) or ``skipped``
(missing credentials). One provider failing never fails the others.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from .base import Adapter, AdapterError, MissingCredentials, SkippedRecord
from .schema import Offer

__all__ = ["ProviderRun", "RunStatus", "collect", "parse_payloads", "run_provider"]


class RunStatus(enum.StrEnum):
    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"


@dataclasses.dataclass(slots=True)
class ProviderRun:
    """The outcome of one provider in one snapshot."""

    provider: str
    status: RunStatus
    started_at: datetime
    duration_s: float
    offers: list[Offer] = dataclasses.field(default_factory=list)
    skipped: list[SkippedRecord] = dataclasses.field(default_factory=list)
    error: str | None = None

    @property
    def offer_count(self) -> int:
        return len(self.offers)


def parse_payloads(
    adapter: Adapter, payloads: Sequence[Any], *, fetched_at: datetime
) -> ProviderRun:
    """Parse already-fetched payloads into a run (used by fetch and by sample replay)."""
    started = time.perf_counter()
    try:
        result = adapter.parse(payloads, fetched_at=fetched_at)
    except AdapterError as exc:
        return ProviderRun(
            adapter.name,
            RunStatus.ERROR,
            fetched_at,
            time.perf_counter() - started,
            error=getattr(exc, "reason", str(exc)),
        )
    return ProviderRun(
        adapter.name,
        RunStatus.OK,
        fetched_at,
        time.perf_counter() - started,
        offers=result.offers,
        skipped=result.skipped,
    )


async def run_provider(
    adapter: Adapter,
    client: httpx.AsyncClient,
    *,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> ProviderRun:
    """Fetch and parse one provider; every failure is reported in the run, never raised."""
    started_at = now()
    started = time.perf_counter()
    try:
        payloads = await adapter.fetch(client)
    except MissingCredentials as exc:
        return ProviderRun(
            adapter.name,
            RunStatus.SKIPPED,
            started_at,
            time.perf_counter() - started,
            error=str(exc),
        )
    except AdapterError as exc:
        return ProviderRun(
            adapter.name,
            RunStatus.ERROR,
            started_at,
            time.perf_counter() - started,
            error=getattr(exc, "reason", str(exc)),
        )
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        # An adapter bug or an unexpected payload must not take the snapshot down.
        return ProviderRun(
            adapter.name,
            RunStatus.ERROR,
            started_at,
            time.perf_counter() - started,
            error=f"{type(exc).__name__}: {exc}",
        )
    run = parse_payloads(adapter, payloads, fetched_at=started_at)
    run.duration_s = time.perf_counter() - started
    return run


async def collect(
    adapters: Iterable[Adapter],
    client: httpx.AsyncClient,
    *,
    on_done: Callable[[ProviderRun], None] | None = None,
) -> list[ProviderRun]:
    """Run every adapter concurrently: the total time is that of the slowest provider."""

    async def one(adapter: Adapter) -> ProviderRun:
        run = await run_provider(adapter, client)
        if on_done is not None:
            on_done(run)
        return run

    return list(await asyncio.gather(*(one(a) for a in adapters)))
