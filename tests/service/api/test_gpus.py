from __future__ import annotations

import httpx
import pytest

from gpuscout.adapters.gpus import catalog

from .conftest import error_locs

pytestmark = pytest.mark.anyio


async def test_catalog(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/gpus")).json()
    assert body["count"] == len(catalog())
    names = {g["name"] for g in body["gpus"]}
    assert "H100-SXM5-80GB" in names


async def test_family_filter(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/gpus?q=h100")).json()
    assert body["count"] >= 2 and all(g["family"] == "H100" for g in body["gpus"])


async def test_one_model(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/gpus/h100-sxm5-80gb")
    assert r.status_code == 200
    assert r.json()["tflops"]["bf16"] == pytest.approx(989.5)


async def test_unknown_model_is_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/gpus/H9000")
    assert r.status_code == 404 and "H9000" in r.json()["detail"]


async def test_unknown_parameter(client: httpx.AsyncClient) -> None:
    assert error_locs(await client.get("/v1/gpus?vendor=amd")) == [["query", "vendor"]]
    assert error_locs(await client.get("/v1/gpus/L4?x=1")) == [["query", "x"]]
