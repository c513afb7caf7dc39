from __future__ import annotations

import gzip
from datetime import UTC, datetime

import httpx
import pytest
from fastapi import FastAPI

from gpuscout.service.api import create_app
from gpuscout.service.api.offers_cache import (
    CachedPage,
    ResultCache,
    etag_matches,
    time_bucket,
)
from gpuscout.service.settings import Settings

from .conftest import FakeSource, database_state, sample_offers

ETAG = 'W/"abc-123"'


@pytest.mark.parametrize(
    ("header", "matches"),
    [
        ('W/"abc-123"', True),  # the weak tag as sent
        ('"abc-123"', True),  # its strong form: If-None-Match compares weakly
        ('"other", W/"abc-123"', True),  # a list
        ('"other",W/"x" , "abc-123"', True),  # a list without or with extra spaces
        ("*", True),
        ('"other"', False),
        ('W/"abc-12"', False),
        ("", False),
        (None, False),
    ],
)
def test_etag_matches(header: str | None, matches: bool) -> None:
    assert etag_matches(header, ETAG) is matches


@pytest.mark.anyio
@pytest.mark.parametrize(
    "header",
    ["{etag}", "{strong}", '"nope", {etag}', '"nope",{strong}', "*"],
    ids=["weak", "strong", "list-weak", "list-strong", "star"],
)
async def test_if_none_match_is_304_from_the_cache_or_before_ranking(
    client: httpx.AsyncClient, app: FastAPI, header: str
) -> None:
    first = await client.get("/v1/offers?gpus=H100")
    etag = first.headers["etag"]
    value = header.format(etag=etag, strong=etag.removeprefix("W/"))
    state = app.state.context.holder.state
    cache = state.cache
    # the same query again: the cache's answer
    fast = await client.get("/v1/offers?gpus=H100", headers={"If-None-Match": value})
    # the same query spelled otherwise: the same canonical key
    routed = await client.get("/v1/offers?limit=20&gpus=H100", headers={"If-None-Match": value})
    # a new snapshot, same query: the miss answers 304 before ranking
    app.state.context.refresh_state()
    assert app.state.context.holder.state.cache is not cache
    reloaded = await client.get("/v1/offers?gpus=H100", headers={"If-None-Match": value})
    for r in (fast, routed, reloaded):
        assert r.status_code == 304 and r.content == b""
        assert r.headers["etag"] == etag and r.headers["cache-control"].startswith("public")
    assert not app.state.context.holder.state.cache  # the 304 ranked nothing


@pytest.mark.anyio
async def test_a_mismatching_if_none_match_gets_the_body(
    client: httpx.AsyncClient,
) -> None:
    first = await client.get("/v1/offers?gpus=H100")
    for query in ("gpus=H100", "limit=20&gpus=H100"):
        r = await client.get(f"/v1/offers?{query}", headers={"If-None-Match": '"nope", W/"x"'})
        assert r.status_code == 200 and r.content == first.content
        assert r.headers["etag"] == first.headers["etag"]


async def _raw(client: httpx.AsyncClient, path: str, encoding: str) -> httpx.Response:
    """The response with its body as sent (httpx would decode gzip in ``content``)."""
    async with client.stream("GET", path, headers={"Accept-Encoding": encoding}) as r:
        r._content = b"".join([chunk async for chunk in r.aiter_raw()])
    return r


@pytest.mark.anyio
async def test_gzip_clients_get_the_answer_compressed_with_the_same_etag(
    client: httpx.AsyncClient,
) -> None:
    """A miss and a hit, under either spelling of the query, compress the same answer;
    the weak ETag names the answer, not its encoding."""
    plain = await _raw(client, "/v1/offers?limit=50", "identity")
    assert "content-encoding" not in plain.headers
    paths = ("/v1/offers?precision=bf16&limit=50", "/v1/offers?limit=50&precision=bf16")
    for path in (*paths, "/v1/offers?limit=50"):
        r = await _raw(client, path, "br;q=1.0, gzip;q=0.8")
        assert r.status_code == 200
        assert r.headers["content-encoding"] == "gzip"
        assert "Accept-Encoding" in r.headers["vary"]
        assert r.headers["etag"] == plain.headers["etag"]
        assert int(r.headers["content-length"]) == len(r.content)
        assert gzip.decompress(r.content) == plain.content


@pytest.mark.anyio
@pytest.mark.parametrize("encoding", ["identity", "br", "*;q=0"])
async def test_clients_that_do_not_take_gzip_get_the_plain_answer(
    client: httpx.AsyncClient, encoding: str
) -> None:
    first = await _raw(client, "/v1/offers?limit=50", "identity")
    for _ in range(2):  # a miss, then a hit
        r = await _raw(client, "/v1/offers?limit=50", encoding)
        assert "content-encoding" not in r.headers and r.content == first.content


@pytest.mark.anyio
async def test_what_every_query_shares_is_found_once_per_snapshot(
    client: httpx.AsyncClient, app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offers no ranking can rank and the data's warnings are the state's, not each
    query's: new queries reuse them; a new snapshot finds them again, before serving."""

    import gpuscout.pricing.coverage

    found: list[int] = []
    real = gpuscout.pricing.coverage.Unrankable.__init__

    def counting(self: gpuscout.pricing.coverage.Unrankable, frame: object) -> None:
        found.append(1)
        real(self, frame)  # type: ignore[arg-type]

    await client.get("/v1/offers?limit=1")  # the app loads its first state
    monkeypatch.setattr(gpuscout.pricing.coverage.Unrankable, "__init__", counting)
    state = app.state.context.holder.state
    assert state is not None
    queries = ("gpus=H100", "gpus=A100", "min_gpus=8&hours=10", "gpus=h-100&job_gpus=16&hours=5")
    for query in queries:
        r = await client.get(f"/v1/offers?{query}")
        assert r.status_code == 200
        assert r.json()["warnings"][: len(state.warnings)] == list(state.warnings)
    assert found == []  # found when the state was built, reused by every query
    app.state.context.refresh_state()
    assert found == [1]
    await client.get("/v1/offers?gpus=B200")
    assert found == [1]


@pytest.mark.anyio
async def test_requests_are_answered_from_the_old_state_while_a_refresh_loads(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    """A refresh loads the next state off to the side: requests meanwhile get the current
    one at once (never a wait, never half of each), then the next one once it is swapped."""
    import asyncio
    import threading

    from tests.service.api.conftest import database_state, offer

    before = await client.get("/v1/offers")
    context = app.state.context
    release, loading = threading.Event(), threading.Event()
    old_loader = context.holder.loader

    def slow_loader() -> object:
        loading.set()
        release.wait(10)
        return database_state([offer(provider="newco", offer_id="x", price_amount=1)])

    context.holder.loader = slow_loader
    refresh = asyncio.get_running_loop().run_in_executor(None, context.refresh_state)
    try:
        assert await asyncio.get_running_loop().run_in_executor(None, loading.wait, 10)
        for query in ("", "?gpus=A100"):  # cached, and a new query ranked on the old state
            during = await asyncio.wait_for(client.get(f"/v1/offers{query}"), 5)
            assert during.status_code == 200
            assert "newco" not in {o["provider"] for o in during.json()["offers"]}
        assert (await client.get("/v1/offers")).content == before.content
    finally:
        release.set()
        await refresh
        context.holder.loader = old_loader
    after = await client.get("/v1/offers")
    assert [o["provider"] for o in after.json()["offers"]] == ["newco"]


def test_the_answer_instant_is_its_window_never_before_its_snapshot() -> None:
    at = datetime(2026, 12, 1, 12, 3, 20, tzinfo=UTC)
    window = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert time_bucket(at) == window
    assert time_bucket(at, not_before=datetime(2026, 12, 1, 11, 0, tzinfo=UTC)) == window
    snapshot = datetime(2026, 12, 1, 12, 2, 5, tzinfo=UTC)
    assert time_bucket(at, not_before=snapshot) == snapshot


@pytest.mark.anyio
async def test_an_answer_is_never_generated_before_its_snapshot(
    settings: Settings, source: FakeSource
) -> None:
    """A snapshot stored inside the current 5-minute window: the answer was said to be
    generated at the window's start, before the snapshot it was built on."""
    snapshot_at = datetime.now(UTC).replace(microsecond=0)
    source.current = database_state(sample_offers(), snapshot_at=snapshot_at)
    app = create_app(settings, offers_loader=source)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        for path in ("/v1/offers?limit=5", "/v1/offers?limit=5"):  # the router, the fast path
            page = (await c.get(path)).json()
            generated = datetime.fromisoformat(page["generated_at"])
            assert generated >= datetime.fromisoformat(page["snapshot_at"]) == snapshot_at
            assert all(o["price_age_hours"] >= 0 for o in page["offers"])


def _page(size: int) -> CachedPage:
    return CachedPage(b"x" * size, "tag")


def test_the_answer_cache_is_bounded_by_bytes_as_well_as_entries() -> None:
    """The least recently used answers go once the held bytes pass the budget; a page over
    the whole budget is not kept; the entry bound still holds."""
    cache = ResultCache(max_entries=10, max_bytes=1000)
    a, b, c = _page(400), _page(400), _page(400)
    cache.put("a", a)
    cache.put("b", b)
    assert cache.bytes == 800 and len(cache) == 2
    assert cache.get("a") is a  # a is now more recent than b
    cache.put("c", c)  # 1,200 bytes: the least recent go until it fits
    assert cache.get("b") is None
    assert cache.get("a") is a and cache.get("c") is c and cache.bytes == 800
    cache.put("huge", _page(1001))
    assert cache.get("huge") is None and cache.bytes == 800
    cache.put("c", b)  # a key filed again releases its old page
    assert cache.bytes == 800 and cache.get("c") is b
    few = ResultCache(max_entries=2, max_bytes=None)
    for key in "xyz":
        few.put(key, _page(10))
    assert len(few) == 2 and few.get("x") is None
