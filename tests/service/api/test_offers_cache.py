from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from service.api.offers_cache import etag_matches

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
async def test_if_none_match_is_304_from_either_lookup(
    client: httpx.AsyncClient, app: FastAPI, header: str
) -> None:
    first = await client.get("/v1/offers?gpus=H100")
    etag = first.headers["etag"]
    value = header.format(etag=etag, strong=etag.removeprefix("W/"))
    cache = app.state.context.holder.state.cache
    # the exact query string again: the fast path's lookup, before routing
    fast = await client.get("/v1/offers?gpus=H100", headers={"If-None-Match": value})
    # the same query spelled otherwise: the router's lookup by canonical key
    routed = await client.get("/v1/offers?limit=20&gpus=H100", headers={"If-None-Match": value})
    # a new snapshot, same query: the router's miss answers 304 before ranking
    app.state.context.refresh_state()
    assert app.state.context.holder.state.cache is not cache
    reloaded = await client.get("/v1/offers?gpus=H100", headers={"If-None-Match": value})
    for r in (fast, routed, reloaded):
        assert r.status_code == 304 and r.content == b""
        assert r.headers["etag"] == etag and r.headers["cache-control"].startswith("public")
    assert not app.state.context.holder.state.cache  # the 304 ranked nothing


@pytest.mark.anyio
async def test_a_mismatching_if_none_match_gets_the_body_from_either_lookup(
    client: httpx.AsyncClient,
) -> None:
    first = await client.get("/v1/offers?gpus=H100")
    for query in ("gpus=H100", "limit=20&gpus=H100"):
        r = await client.get(f"/v1/offers?{query}", headers={"If-None-Match": '"nope", W/"x"'})
        assert r.status_code == 200 and r.content == first.content
        assert r.headers["etag"] == first.headers["etag"]
