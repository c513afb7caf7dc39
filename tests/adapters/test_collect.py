"""Running adapters: concurrency, and every failure reported per provider, never raised."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

import httpx

from adapters.base import Adapter, MissingCredentials, ParseResult, ProviderError
from adapters.collect import RunStatus, collect


class Fake(Adapter):
    title = "Fake"
    source_url = "https://example.test"

    def __init__(self, name: str, delay: float = 0.0, fail: Exception | None = None) -> None:
        super().__init__()
        self.name = name  # type: ignore[misc]
        self.delay = delay
        self.fail = fail

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        await asyncio.sleep(self.delay)
        if self.fail is not None:
            raise self.fail
        return [{"price": "1.25"}]

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult()
        for p in payloads:
            result.add(
                None,
                provider=self.name,
                offer_id="x",
                fetched_at=fetched_at,
                gpu_count=1,
                price_amount=Decimal(p["price"]),
                price_currency="USD",
                price_unit="hour",
                price_basis="instance",
                term="on_demand",
            )
        return result


def run(adapters: list[Adapter]) -> tuple[list[Any], float]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await collect(adapters, client)

    start = time.perf_counter()
    runs = asyncio.run(go())
    return runs, time.perf_counter() - start


def test_providers_run_concurrently() -> None:
    runs, elapsed = run([Fake(f"p{i}", delay=0.3) for i in range(5)])
    assert [r.status for r in runs] == [RunStatus.OK] * 5
    assert elapsed < 1.0  # 5 x 0.3 s in sequence would be 1.5 s


def test_failures_are_reported_not_raised() -> None:
    runs, _ = run(
        [
            Fake("ok"),
            Fake("down", fail=ProviderError("down", "HTTP 503 after 4 attempts")),
            Fake("nokey", fail=MissingCredentials("nokey", ["nokey_api_key"])),
            Fake("buggy", fail=KeyError("offers")),
        ]
    )
    by = {r.provider: r for r in runs}
    assert by["ok"].status is RunStatus.OK and by["ok"].offer_count == 1
    assert by["down"].status is RunStatus.ERROR
    assert by["down"].error == "HTTP 503 after 4 attempts"
    assert by["nokey"].status is RunStatus.SKIPPED
    assert "GPUSCOUT_NOKEY_API_KEY" in (by["nokey"].error or "")
    assert by["buggy"].status is RunStatus.ERROR
    assert "KeyError" in (by["buggy"].error or "")
