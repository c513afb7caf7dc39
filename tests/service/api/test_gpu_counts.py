"""``GET /v1/offers?gpus=NAME:COUNT``: the API's ``gpus`` reads dstack's spelling."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.anyio


async def _models_and_counts(client: httpx.AsyncClient, gpus: str) -> set[tuple[str, int]]:
    r = await client.get("/v1/offers", params={"gpus": gpus})
    assert r.status_code == 200, r.text
    return {(o["hardware"]["gpu_model"], o["hardware"]["gpu_count"]) for o in r.json()["offers"]}


@pytest.mark.parametrize(
    ("gpus", "found"),
    [
        # the sample: acme 8x H100, bolt 1x H100 and 1x A100, cirrus 1x RTX 4090
        ("H100", {("H100-SXM5-80GB", 8), ("H100-SXM5-80GB", 1)}),
        ("H100:8", {("H100-SXM5-80GB", 8)}),
        ("H100:1", {("H100-SXM5-80GB", 1)}),
        ("H100:1..8", {("H100-SXM5-80GB", 8), ("H100-SXM5-80GB", 1)}),
        ("H100:2..4", set()),
        ("H100:8,A100:1", {("H100-SXM5-80GB", 8), ("A100-SXM4-80GB", 1)}),
        ("4090:1", {("RTX-4090", 1)}),
    ],
)
async def test_a_count_selects_offers_with_that_many_gpus(
    client: httpx.AsyncClient, gpus: str, found: set[tuple[str, int]]
) -> None:
    assert await _models_and_counts(client, gpus) == found


async def test_repeated_parameters_carry_their_own_counts(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/offers?gpus=H100:8&gpus=A100:1")
    assert r.status_code == 200, r.text
    models = {(o["hardware"]["gpu_model"], o["hardware"]["gpu_count"]) for o in r.json()["offers"]}
    assert models == {("H100-SXM5-80GB", 8), ("A100-SXM4-80GB", 1)}


@pytest.mark.parametrize(
    ("gpus", "said"),
    [
        ("H100:x", "bad GPU count 'x' in 'H100:x'"),
        ("H100:0", "an offer has at least 1 GPU"),
        ("H100:8..2", "the range is empty"),
        ("H1000:8", "unknown GPU model, family or vendor: 'H1000'"),
    ],
)
async def test_a_bad_count_is_422_naming_it(
    client: httpx.AsyncClient, gpus: str, said: str
) -> None:
    r = await client.get("/v1/offers", params={"gpus": gpus})
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]
    assert error["loc"] == ["query", "gpus"]
    assert said in error["msg"]
