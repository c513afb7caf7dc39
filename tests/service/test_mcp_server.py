"""The MCP server, driven by the official SDK's own client: over streamable HTTP at ``/mcp``
of a live ``serve`` app, over stdio from ``gpuscout mcp`` (in process, and asking another
gpuscout with ``--api``). Each answers the REST API's first offer for the same question."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from gpuscout.service.api import create_app
from gpuscout.service.cli import app as cli_app
from gpuscout.service.mcp_server import _query_params
from gpuscout.service.settings import Settings

TOOLS = {
    "find_offers",
    "estimate_training_run",
    "offer_detail",
    "offer_history",
    "price_index",
    "providers",
    "gpus",
}
QUESTION: dict[str, Any] = {"gpus": ["H100"], "min_gpus": 8, "hours": 100, "limit": 3}


@pytest.fixture
def live_api(tmp_path: Path) -> Iterator[str]:
    """``serve``'s app on a free 127.0.0.1 port, over the offline sample (no database)."""
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    app = create_app(settings)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def rest_first_offer(base: str) -> dict[str, Any]:
    answer = httpx.get(f"{base}/v1/offers", params=QUESTION, timeout=60).json()
    assert answer["offers"], "the sample has 8x H100 offers"
    return dict(answer["offers"][0])


async def ask(server: Any) -> tuple[set[str], dict[str, Any], str]:
    """The tools listed, the answer to :data:`QUESTION`, the error for an unknown GPU."""
    import json

    async with Client(server, read_timeout_seconds=120) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        found = await client.call_tool("find_offers", {"query": QUESTION})
        assert not found.is_error, found.content
        refused = await client.call_tool("find_offers", {"query": {"gpus": ["NOPE-9000"]}})
        assert refused.is_error
    text = found.content[0].text  # type: ignore[union-attr]
    return tools, json.loads(text), refused.content[0].text  # type: ignore[union-attr]


def check(tools: set[str], answer: dict[str, Any], refused: str, first: dict[str, Any]) -> None:
    assert tools == TOOLS
    assert answer["offers"][0] == first  # the same offer, price, term and age
    assert answer["source"] == "sample" and "offline sample" in answer["note"]
    assert "HTTP 422" in refused and "NOPE-9000" in refused


def test_streamable_http_under_serve_answers_as_the_rest_api(live_api: str) -> None:
    check(*asyncio.run(ask(f"{live_api}/mcp")), rest_first_offer(live_api))


def _stdio(tmp_path: Path, *args: str) -> StdioServerParameters:
    code = "from gpuscout.service.cli import main; main()"
    env = {**os.environ, "GPUSCOUT_DATA_DIR": str(tmp_path)}
    return StdioServerParameters(command=sys.executable, args=["-c", code, "mcp", *args], env=env)


def test_stdio_answers_as_the_rest_api(tmp_path: Path, live_api: str) -> None:
    # the subprocess reads the sample as the live server does (no database in either)
    check(*asyncio.run(ask(_stdio(tmp_path / "own"))), rest_first_offer(live_api))


def test_stdio_can_ask_another_gpuscout(tmp_path: Path, live_api: str) -> None:
    check(*asyncio.run(ask(_stdio(tmp_path, "--api", live_api))), rest_first_offer(live_api))


def test_other_tools_answer_through_the_api(live_api: str) -> None:
    import json

    async def run() -> dict[str, Any]:
        async with Client(f"{live_api}/mcp", read_timeout_seconds=120) as client:
            first = json.loads(
                (await client.call_tool("find_offers", {"query": QUESTION})).content[0].text  # type: ignore[union-attr]
            )["offers"][0]
            out = {}
            for name, args in (
                ("offer_detail", {"offer_id": first["id"]}),
                ("providers", {}),
                ("gpus", {"q": "H100"}),
                (
                    "estimate_training_run",
                    {
                        "request": {
                            "gpu_model": "H100 SXM",
                            "job_gpus": 8,
                            "model_params": 7e9,
                            "tokens": 1e11,
                        }
                    },
                ),
            ):
                result = await client.call_tool(name, args)
                assert not result.is_error, (name, result.content)
                out[name] = json.loads(result.content[0].text)  # type: ignore[union-attr]
            out["first"] = first
            return out

    out = asyncio.run(run())
    assert out["offer_detail"]["id"] == out["first"]["id"]
    assert any(p["provider"] == "lambda" for p in out["providers"]["providers"])
    assert "H100-SXM5-80GB" in {g["name"] for g in out["gpus"]["gpus"]}
    assert out["estimate_training_run"]["estimate"]["gpu_hours"] > 0


def test_the_tool_query_is_the_api_query() -> None:
    from gpuscout.service.api.offers_query import OffersQuery, canonical_key

    query = OffersQuery.model_validate(QUESTION)
    assert _query_params(query) == {"gpus": ["H100"], "min_gpus": 8, "hours": 100, "limit": 3}
    assert canonical_key(OffersQuery.model_validate(_query_params(query))) == canonical_key(query)


def test_mcp_refuses_an_api_that_is_not_a_url() -> None:
    result = CliRunner().invoke(cli_app, ["mcp", "--api", "gpuscout.example.org"])
    assert result.exit_code == 2
    assert "is not an http(s) URL" in result.output
