"""Run adapters: fetch all enabled providers concurrently, or replay recorded responses.

Runs stream: :func:`stream_runs` hands each provider's run over as soon as it is final
(:class:`~adapters.precedence.Precedence`: a provider's own answer at once, one a catalog
covers once every run is in), so a snapshot stores the first answers while the slow
providers are still fetching, and holds one run at a time, not the market.
:func:`collect` gathers the same runs into a list, in the adapters' order.

A provider's failure is data, not an exception: every run ends with one
:class:`ProviderRun` per provider, ``ok``, ``error`` (with the reason) or ``skipped``
(missing credentials). One provider failing never fails the others.

:func:`provider_error` is the one place that turns an exception from one provider's fetch
or parse into that provider's error: an :class:`~adapters.base.AdapterError` keeps its
reason; anything else (an adapter bug, a payload that breaks an assumption, such as a
``decimal.InvalidOperation`` from a number given as text) becomes ``<Type>: <message>``,
logged with its traceback. Only cancellation, ``KeyboardInterrupt`` and ``SystemExit``
(``BaseException`` outside ``Exception``) pass through. A fetch also has a wall-clock
deadline (``deadline_s``): a server that drips a byte every few seconds beats every
per-read timeout, not the deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from .base import Adapter, AdapterError, MissingCredentials
from .precedence import Precedence, in_run_order
from .run import Origin, ProviderRun, RunStatus

__all__ = [
    "Origin",
    "ProviderRun",
    "RunStatus",
    "collect",
    "deadline_error",
    "parse_payloads",
    "provider_error",
    "run_provider",
    "stream_runs",
]

log = logging.getLogger("gpuscout.adapters")


def provider_error(provider: str, exc: Exception, *, step: str) -> str:
    """The error text of ``provider``'s run for ``exc``, raised in its ``step`` (fetch or
    parse).

    An :class:`~adapters.base.AdapterError` is an expected failure: its reason, no
    traceback. Any other exception is a bug or a payload nobody foresaw: logged with its
    traceback (to be fixed), and reported as ``<Type>: <message>`` so that the run says what
    broke.
    """
    if isinstance(exc, AdapterError):
        return getattr(exc, "reason", None) or str(exc)
    log.error("%s: unexpected %s in %s", provider, type(exc).__name__, step, exc_info=exc)
    return f"{type(exc).__name__} in {step}: {exc}"


def deadline_error(deadline_s: float) -> str:
    """The error of a fetch that had not finished when its deadline passed."""
    return f"deadline: no complete answer within {deadline_s:g} s (provider_deadline_s)"


def _error_run(
    provider: str, started_at: datetime, started: float, error: str, status: RunStatus
) -> ProviderRun:
    return ProviderRun(provider, status, started_at, time.perf_counter() - started, error=error)


def parse_payloads(
    adapter: Adapter, payloads: Sequence[Any], *, fetched_at: datetime
) -> ProviderRun:
    """Parse already-fetched payloads into a run (used by fetch and by sample replay)."""
    started = time.perf_counter()
    try:
        result = adapter.parse(payloads, fetched_at=fetched_at)
    except Exception as exc:  # one provider's failure is its run's error
        error = provider_error(adapter.name, exc, step="parse")
        return _error_run(adapter.name, fetched_at, started, error, RunStatus.ERROR)
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
    deadline_s: float | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> ProviderRun:
    """Fetch and parse one provider; every failure is reported in the run, never raised.

    ``deadline_s`` bounds the whole fetch (every request, retry and wait of it); ``None``
    sets no bound.
    """
    started_at = now()
    started = time.perf_counter()
    deadline = asyncio.timeout(deadline_s)
    try:
        async with deadline:
            payloads = await adapter.fetch(client)
    except MissingCredentials as exc:
        return _error_run(adapter.name, started_at, started, str(exc), RunStatus.SKIPPED)
    except Exception as exc:  # one provider's failure is its run's error
        # a TimeoutError is the deadline's expiry, or a TimeoutError of the adapter's own
        error = (
            deadline_error(deadline_s)
            if isinstance(exc, TimeoutError) and deadline_s is not None and deadline.expired()
            else provider_error(adapter.name, exc, step="fetch")
        )
        return _error_run(adapter.name, started_at, started, error, RunStatus.ERROR)
    run = parse_payloads(adapter, payloads, fetched_at=started_at)
    run.duration_s = time.perf_counter() - started
    return run


async def stream_runs(
    adapters: Iterable[Adapter],
    client: httpx.AsyncClient,
    *,
    deadline_s: float | None = None,
    on_done: Callable[[ProviderRun], None] | None = None,
) -> AsyncGenerator[ProviderRun, None]:
    """Run every adapter concurrently and yield one run per provider as each becomes final,
    each provider's offers from its best source (:class:`adapters.precedence.Precedence`:
    a published catalog's offers go to the providers they name, once every run is in).

    ``on_done`` sees each raw run as it ends (a progress display). Each fetch is bounded by
    ``deadline_s``. Closing the iterator early (``aclose``) cancels the fetches still going
    and waits for them to end. A run is let go of once yielded: a task keeps no result (it
    puts its run on a queue; :func:`run_provider` reports every failure in the run, so a
    task ends with its run put, or cancelled).
    """
    ended: asyncio.Queue[ProviderRun] = asyncio.Queue()

    async def one(adapter: Adapter) -> None:
        run = await run_provider(adapter, client, deadline_s=deadline_s)
        if on_done is not None:
            try:
                on_done(run)
            except Exception:  # a progress display must not lose the run
                log.exception("%s: on_done callback failed", adapter.name)
        ended.put_nowait(run)

    tasks = [asyncio.create_task(one(a)) for a in adapters]
    precedence = Precedence()
    try:
        for _ in range(len(tasks)):
            final = precedence.add(await ended.get())
            while final:
                yield final.pop(0)
        final = precedence.finish()
        while final:
            yield final.pop(0)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def collect(
    adapters: Iterable[Adapter],
    client: httpx.AsyncClient,
    *,
    deadline_s: float | None = None,
    on_done: Callable[[ProviderRun], None] | None = None,
) -> list[ProviderRun]:
    """Run every adapter concurrently: the total time is that of the slowest provider, at
    most ``deadline_s`` (per provider) plus its parse. The runs of :func:`stream_runs`, one
    per provider, in the adapters' order (a provider only a catalog names after them)."""
    adapters = list(adapters)
    stream = stream_runs(adapters, client, deadline_s=deadline_s, on_done=on_done)
    async with contextlib.aclosing(stream) as runs:
        final = [run async for run in runs]
    return in_run_order(final, [a.name for a in adapters])
