"""Bad and abusive input: NaN/Infinity bodies, oversized bodies, long lists, huge inputs.

Each is refused with a 4xx naming what was wrong; none makes the app answer 500, none is
echoed back whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpuscout.service.api import create_app
from gpuscout.service.api.input_limits import (
    MAX_ERROR_CHARS,
    MAX_MESSAGE_CHARS,
    json_safe,
    safe_errors,
)
from gpuscout.service.settings import Settings

from .conftest import ADMIN_TOKEN, FakeSource

pytestmark = pytest.mark.anyio

#: Non-finite numbers as Python's JSON reader accepts them (``1e400`` reads as Infinity).
NON_FINITE = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400")
JSON = {"content-type": "application/json"}


@pytest.mark.parametrize("number", NON_FINITE)
async def test_non_finite_top_level_number_is_422(client: httpx.AsyncClient, number: str) -> None:
    r = await client.post(
        "/v1/estimate", content=f'{{"model_params": {number}, "tokens": 1e9}}', headers=JSON
    )
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]
    assert error["loc"] == ["body", "model_params"] and error["type"] == "finite_number"
    assert error["input"] in ("NaN", "Infinity", "-Infinity")  # strict JSON: a string


@pytest.mark.parametrize("number", NON_FINITE)
@pytest.mark.parametrize(
    "nested",
    [
        '"requirement": {{"min_ram_gb": {n}}}',
        '"requirement": {{"max_usd_per_gpu_hour": {n}}}',
        '"requirement": {{"min_reliability": {n}}}',
        '"mfu": {n}',
        '"fabric_gbps_per_gpu": {n}, "gpu_model": "H100-SXM5-80GB", "job_gpus": 8',
    ],
)
async def test_non_finite_nested_number_is_422(
    client: httpx.AsyncClient, number: str, nested: str
) -> None:
    body = '{"model_params": 1e9, "tokens": 1e10, ' + nested.format(n=number) + "}"
    r = await client.post("/v1/estimate", content=body, headers=JSON)
    assert r.status_code == 422, r.text
    assert any(e["type"] == "finite_number" for e in r.json()["errors"]), r.text


def test_requirement_and_job_refuse_non_finite_numbers() -> None:
    from pydantic import ValidationError

    from gpuscout.pricing.job import Job
    from gpuscout.pricing.requirement import Requirement

    for value in (float("nan"), float("inf")):
        with pytest.raises(ValidationError, match="finite"):
            Requirement(min_ram_gb=value)
        with pytest.raises(ValidationError, match="finite"):
            Job(hours=value)
        with pytest.raises(ValidationError, match="finite"):
            Job(params=1e9, tokens=value)


def test_safe_errors_are_strict_json_and_short() -> None:
    errors = safe_errors(
        [
            {"type": "finite_number", "loc": ("body", "x"), "msg": "m", "input": float("nan")},
            {"type": "t", "loc": ("body",), "msg": "m" * 10_000, "input": ["g"] * 10_000},
            {"type": "t", "loc": ("body", 0), "msg": "m", "input": {"a": float("-inf")}},
        ]
    )
    text = json.dumps(errors, allow_nan=False)  # raises on NaN/Infinity
    assert len(text) < 4 * (MAX_ERROR_CHARS + MAX_MESSAGE_CHARS) * len(errors)
    assert errors[0]["input"] == "NaN" and errors[2]["input"] == {"a": "-Infinity"}
    assert len(errors[1]["msg"]) < MAX_MESSAGE_CHARS + 50 and "cut" in errors[1]["msg"]
    assert isinstance(errors[1]["input"], str) and "cut" in errors[1]["input"]
    assert json_safe((1.0, float("inf"))) == [1.0, "Infinity"]


def _app(tmp_path: Path, source: FakeSource, **limits: int) -> object:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        **limits,  # type: ignore[arg-type]
    )
    return create_app(settings, offers_loader=source)


@pytest.fixture
async def big_body_client(tmp_path: Path, source: FakeSource) -> AsyncIterator[httpx.AsyncClient]:
    """Bodies up to 20 MB pass the size limit, so the list and echo limits are what acts."""
    app = _app(tmp_path, source, api_max_body_bytes=20_000_000, api_max_list_items=100)
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        yield c


async def test_body_over_the_limit_is_413_from_content_length(client: httpx.AsyncClient) -> None:
    body = json.dumps({"model_params": 1e9, "tokens": 1e9, "gpu_model": "x" * 100_000}).encode()
    r = await client.post("/v1/estimate", content=body, headers=JSON)
    assert r.status_code == 413, r.text
    detail = r.json()["detail"]
    assert "65536 bytes" in detail and "api_max_body_bytes" in detail
    assert len(r.content) < 500


async def test_streamed_body_over_the_limit_is_413(client: httpx.AsyncClient) -> None:
    """A chunked body (no Content-Length) is cut off once it passes the limit."""
    sent = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal sent
        yield b'{"model_params": 1e9, "tokens": 1e9, "gpu_model": "'
        for _ in range(1000):  # 16 MB if read to the end
            sent += 16_384
            yield b"x" * 16_384
        yield b'"}'

    r = await client.post("/v1/estimate", content=chunks(), headers=JSON)
    assert r.status_code == 413, r.text
    assert "more than 65536 bytes" in r.json()["detail"]
    assert sent < 1000 * 16_384  # not read to its end


async def test_body_at_the_limit_is_read(client: httpx.AsyncClient) -> None:
    body = json.dumps({"model_params": 1e9, "tokens": 1e10}).encode()
    body = body[:-1] + b" " * (65536 - len(body)) + b"}"
    assert len(body) == 65536
    r = await client.post("/v1/estimate", content=body, headers=JSON)
    assert r.status_code == 200, r.text


async def test_long_body_list_is_422_before_any_name_is_looked_up(
    big_body_client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuscout.pricing.requirement

    looked_up = []
    real = gpuscout.pricing.requirement.gpus_named
    monkeypatch.setattr(
        gpuscout.pricing.requirement, "gpus_named", lambda q: looked_up.append(q) or real(q)
    )
    body = {"model_params": 1e9, "tokens": 1e10, "requirement": {"gpus": ["H100"] * 10_000}}
    r = await big_body_client.post("/v1/estimate", json=body)
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]
    assert error["loc"] == ["body", "requirement", "gpus"]
    assert "10000 values" in error["msg"] and "at most 100" in error["msg"]
    assert looked_up == []
    assert len(r.content) < 500


@pytest.mark.parametrize("field", ["gpus", "regions", "providers", "countries", "terms"])
async def test_long_query_list_is_422_naming_the_parameter(
    client: httpx.AsyncClient, field: str
) -> None:
    repeated = "&".join(f"{field}=a{i}" for i in range(101))
    comma = f"{field}=" + ",".join(f"a{i}" for i in range(101))
    for query in (repeated, comma):
        r = await client.get(f"/v1/offers?{query}")
        assert r.status_code == 422, r.text
        (error,) = r.json()["errors"]
        assert error["loc"] == ["query", field]
        assert "101 values" in error["msg"] and "at most 100" in error["msg"]


async def test_list_at_the_limit_is_accepted(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/offers?" + "&".join(["gpus=H100"] * 100))
    assert r.status_code == 200, r.text


async def test_huge_input_is_not_echoed(big_body_client: httpx.AsyncClient) -> None:
    """A 5 MB string where a GPU model goes: the 422 says so in a few hundred bytes."""
    body = {"model_params": 1e9, "tokens": 1e10, "gpu_model": "x" * 5_000_000, "job_gpus": 1}
    r = await big_body_client.post("/v1/estimate", json=body)
    assert r.status_code == 422, r.text
    assert len(r.content) < 1000
    (error,) = r.json()["errors"]
    assert error["loc"] == ["body", "gpu_model"] and "5000000 characters, cut" in error["input"]


async def test_many_unknown_names_are_not_echoed(big_body_client: httpx.AsyncClient) -> None:
    """100 unknown GPU names (the list limit): the message that lists them is cut."""
    names = [f"no-such-gpu-{i:03d}-" + "y" * 40 for i in range(100)]
    r = await big_body_client.post(
        "/v1/estimate", json={"model_params": 1e9, "tokens": 1e10, "requirement": {"gpus": names}}
    )
    assert r.status_code == 422, r.text
    assert len(r.content) < 2000


async def _post_paths(client: httpx.AsyncClient) -> list[str]:
    """Every POST operation of the API (its OpenAPI document) and the pages' forms."""
    schema: dict[str, Any] = (await client.get("/openapi.json")).json()
    paths = [path for path, ops in schema["paths"].items() if "post" in ops]
    return sorted({re.sub(r"\{[^}]+\}", "1", path) for path in paths} | {"/subscribe", "/alert"})


@pytest.mark.parametrize("depth", [33, 5_000])
async def test_a_deeply_nested_body_is_4xx_on_every_post_route(
    tmp_path: Path, source: FakeSource, depth: int
) -> None:
    app = _app(tmp_path, source)
    body = b"[" * depth + b"]" * depth
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        paths = await _post_paths(c)
        assert {"/v1/snapshots", "/v1/alerts", "/v1/estimate"} <= set(paths)
        for path in paths:
            r = await c.post(path, content=body, headers=JSON)
            assert r.status_code == 400, (path, r.status_code, r.text)
            assert "api_max_json_depth" in r.text
        # a body at the limit is read (and judged on its merits, not its depth)
        fine = b"[" * 32 + b"]" * 32
        r = await c.post("/v1/estimate", content=fine, headers=JSON)
        assert r.status_code == 422, r.text


def test_parse_refuses_a_deeply_nested_file(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gpuscout.service.cli import app as cli

    nested = tmp_path / "nodes.json"
    nested.write_bytes(b'{"nodes": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    result = CliRunner().invoke(cli, ["parse", "lium", str(nested)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "nests deeper than 64 levels" in result.output
