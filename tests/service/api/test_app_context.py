"""The app context's ranking queue: at most ``api_ranking_threads`` rankings at once, the
others in arrival order."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gpuscout.service.api.app_context import ApiContext
from gpuscout.service.api.metrics import ApiMetrics
from gpuscout.service.api.state import StateHolder
from gpuscout.service.settings import Settings

pytestmark = pytest.mark.anyio


def _context(settings: Settings, threads: int) -> ApiContext:
    settings = settings.model_copy(update={"api_ranking_threads": threads})
    holder = StateHolder(lambda: None, cache_entries=0)  # type: ignore[arg-type, return-value]
    return ApiContext(settings=settings, holder=holder, metrics=ApiMetrics(lambda: None))


async def test_rankings_beyond_the_bound_wait_their_turn(settings: Settings) -> None:
    context = _context(settings, threads=2)
    lock = threading.Lock()
    running = 0
    most = 0
    started: list[int] = []

    def work(n: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            started.append(n)
        time.sleep(0.05)
        with lock:
            running -= 1
        return n * 10

    tasks = []
    for n in range(6):
        tasks.append(asyncio.create_task(context.ranking(work, n)))
        await asyncio.sleep(0.005)  # arrive in order 0, 1, 2, ...
    assert await asyncio.gather(*tasks) == [0, 10, 20, 30, 40, 50]
    assert most == 2
    assert sorted(started) == [0, 1, 2, 3, 4, 5]


async def test_one_thread_runs_rankings_one_at_a_time_in_arrival_order(
    settings: Settings,
) -> None:
    context = _context(settings, threads=1)
    active = threading.Event()
    overlaps = []
    started: list[int] = []

    def work(n: int) -> None:
        overlaps.append(active.is_set())
        started.append(n)
        active.set()
        time.sleep(0.02)
        active.clear()

    tasks = []
    for n in range(4):
        tasks.append(asyncio.create_task(context.ranking(work, n)))
        await asyncio.sleep(0.01)  # the task runs up to its wait for the slot: arrivals in order
    await asyncio.gather(*tasks)
    assert overlaps == [False] * 4
    assert started == [0, 1, 2, 3]
