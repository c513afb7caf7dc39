"""``GET /v1/offers?serve=...`` and ``gpuscout offers --serve ...``: the same rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from gpuscout.service.api.app import create_app
from gpuscout.service.cli import app as cli
from gpuscout.service.current import load_current
from gpuscout.service.settings import Settings

pytestmark = pytest.mark.anyio


def _client(tmp_path: Path) -> httpx.AsyncClient:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    api = create_app(settings, offers_loader=lambda: load_current(sample=True))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://t")


def _cli_answer(*args: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(cli, ["offers", "--sample", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


async def test_the_api_and_the_cli_give_the_same_rows(tmp_path: Path) -> None:
    async with _client(tmp_path) as client:
        response = await client.get(
            "/v1/offers", params={"serve": "llama-3.1-70b", "precision": "fp8", "limit": 10}
        )
    assert response.status_code == 200, response.text
    api = response.json()
    cli_answer = _cli_answer("--serve", "llama-3.1-70b", "--precision", "fp8", "--limit", "10")
    assert api["offers"] == cli_answer["offers"]
    assert api["left_out"] == cli_answer["left_out"]
    assert api["offers"], "the sample holds offers that serve a 70B model at FP8"
    assert (api["model"]["name"], api["precision"], api["scenario"]) == (
        "llama-3.1-70b",
        "fp8",
        "offline",
    )
    for offer in api["offers"]:
        assert offer["usd_per_m_tokens"] > 0
        assert offer["replicas"] >= 1 and offer["batch"] >= 1
        assert offer["throughput_source"].startswith(("measured: MLPerf", "predicted: roofline"))
    costs = [o["usd_per_m_tokens"] for o in api["offers"]]
    assert costs == sorted(costs)


async def test_a_single_24gb_gpu_is_refused_405b_with_the_memory_it_needs(
    tmp_path: Path,
) -> None:
    async with _client(tmp_path) as client:
        response = await client.get(
            "/v1/offers",
            params={"serve": "llama-3.1-405b", "precision": "fp8", "gpus": "RTX-4090"},
        )
    answer = response.json()
    assert response.status_code == 200 and answer["offers"] == []
    (left,) = answer["left_out"]
    assert left["reason"] == "does_not_fit"
    assert "needs 451 GB of GPU memory" in left["example"]


async def test_serving_parameters_are_checked(tmp_path: Path) -> None:
    async with _client(tmp_path) as client:
        unknown = await client.get("/v1/offers", params={"serve": "llama-9"})
        negative = await client.get(
            "/v1/offers", params={"serve": "llama-3.1-8b", "tokens_per_day": "-1"}
        )
        models = await client.get("/v1/models")
        one = await client.get("/v1/models/llama-3.1-70b")
        missing = await client.get("/v1/models/llama-9")
    assert unknown.status_code == 422 and "llama-3.1-70b" in unknown.text
    assert negative.status_code == 422 and "tokens_per_day" in negative.text
    assert models.status_code == 200 and models.json()["count"] >= 16
    assert one.json()["layers"] == 80
    assert missing.status_code == 404


@pytest.mark.parametrize("width", [80, 160])
def test_the_cli_table_states_what_it_rests_on(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    result = CliRunner().invoke(
        cli, ["offers", "--sample", "--serve", "llama-3.1-70b", "--precision", "fp8"]
    )
    assert result.exit_code == 0, result.output
    assert "Llama 3.1 70B Instruct at FP8, offline" in result.output
    assert "$/Mtok" in result.output and "repl." in result.output
    assert ("batch" in result.stdout) is (width >= 150)  # the narrow table keeps the choice
    assert re.search(r"^\[1\] (measured|predicted): ", result.output, re.M)
    table = result.stdout.split("\n")
    assert max(len(line) for line in table) <= width
    refused = CliRunner().invoke(cli, ["offers", "--sample", "--precision", "fp4"])
    assert refused.exit_code == 2 and "with --serve" in refused.output
    models = CliRunner().invoke(cli, ["models", "--json"])
    assert models.exit_code == 0 and '"gpt-oss-120b"' in models.output


async def test_the_explorers_serve_mode_gives_the_api_rows(tmp_path: Path) -> None:
    params = {"serve": "llama-3.1-70b", "precision": "fp8", "limit": 5}
    async with _client(tmp_path) as client:
        api = (await client.get("/v1/offers", params=params)).json()
        page = await client.get("/", params=params)
        bad = await client.get("/", params={"serve": "llama-3.1-70b", "tokens_per_day": "-3"})
    assert page.status_code == 200, page.text
    assert "Serving Llama 3.1 70B Instruct" in page.text
    for offer in api["offers"]:
        assert f'<td data-label="#">{offer["rank"]}</td>' in page.text
        assert (offer["instance_name"] or offer["offer_id"]) in page.text
    assert page.text.count('<td data-label="#">') == len(api["offers"])
    assert bad.status_code == 422 and "tokens_per_day" in bad.text
