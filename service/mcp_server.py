"""The Model Context Protocol server: the product's questions as tools an AI agent calls.

Every tool answers through the REST API itself (one request through the app, in process,
or to a gpuscout elsewhere over HTTP), so an agent and ``/v1/...`` get the same answer from
one code path: the same ranking, the same validation errors (a tool error naming the bad
parameter), the same provenance (``source``, price ages, stale or failed providers). Tool
inputs are the API's own models: ``find_offers`` takes :data:`OffersQuery` (the
requirement, the job, the order), ``estimate_training_run`` the body of ``/v1/estimate``.

Two transports, both from the official ``mcp`` SDK: stdio (``gpuscout mcp``, for an agent
that starts the server as a subprocess) and streamable HTTP at ``/mcp`` under ``gpuscout
serve`` (stateless and answering JSON, so any of several API workers can take any call).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import httpx
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, Field

from gpuscout.adapters.schema import RentalTerm

from .api.mcp_route import MCP_PATH
from .api.offers_query import OffersQuery
from .api.routers.estimate import EstimateRequest

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.types import ASGIApp

__all__ = ["MCP_PATH", "build_server", "in_process_client", "remote_client", "streamable_http"]


INSTRUCTIONS = (
    "gpuscout ranks GPU rental offers from many providers by what a unit of real work costs"
    " (USD per effective TFLOP-hour, or the whole job's cost over the cheapest rental term)."
    " Start with find_offers (a requirement such as gpus=['H100'], min_gpus=8, and a job"
    " such as hours=100); every answer names its data source and the age of its prices."
    " Use offer_detail with an offer's id for every published field, offer_history for its"
    " stored prices, price_index for a GPU model's daily prices, providers for where prices"
    " come from and how fresh they are, gpus for the GPU catalog's figures."
)


class ApiError(ToolError):
    """The API refused the question (4xx) or could not answer it (5xx): its own words."""


async def _answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON of an API answer, or a tool error quoting the API's problem detail."""
    if response.status_code >= 400:
        try:
            problem = response.json()
        except ValueError:
            problem = {}
        detail = problem.get("detail") if isinstance(problem, dict) else None
        errors = problem.get("errors") if isinstance(problem, dict) else None
        if isinstance(errors, list) and errors:
            detail = "; ".join(
                f"{'.'.join(str(p) for p in e.get('loc', [])[1:]) or 'input'}: {e.get('msg')}"
                for e in errors
                if isinstance(e, dict)
            )
        raise ApiError(f"HTTP {response.status_code}: {detail or response.reason_phrase}")
    data = response.json()
    return data if isinstance(data, dict) else {"items": data}


def _query_params(query: BaseModel) -> dict[str, Any]:
    """A validated query as the query string ``/v1/offers`` reads (lists repeat a name)."""
    return query.model_dump(mode="json", exclude_defaults=True)


class IndexQuestion(BaseModel):
    """The daily price index of one GPU model, family or vendor."""

    gpus: str = Field(description="a GPU model, family or vendor (H100, H100 SXM, 4090)")
    term: RentalTerm = Field(default=RentalTerm.ON_DEMAND, description="the rental term")
    days: int = Field(default=30, ge=1, le=366, description="UTC days up to today")


def build_server(api: httpx.AsyncClient) -> MCPServer[Any]:
    """The MCP server whose tools ask ``api`` (a client of gpuscout's REST API)."""
    from gpuscout import __version__

    server: MCPServer[Any] = MCPServer(
        name="gpuscout", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    async def find_offers(query: BaseModel) -> dict[str, Any]:
        """The cheapest GPU rental offers qualifying for a requirement and a job.

        Same parameters and answer as GET /v1/offers: ranked by USD per effective
        TFLOP-hour (or `sort`), each offer with its id, price breakdown, chosen term, price
        age and links; the answer names its source and stale or failed providers. With
        `serve` (a model of GET /v1/models), ranked by USD per million tokens of serving it
        instead (`scenario`, `tokens_per_day`, ...)."""
        return await _answer(await api.get("/v1/offers", params=_query_params(query)))

    # the API's own model as the tool's input (built at import, so set here, not in a hint)
    find_offers.__annotations__["query"] = OffersQuery
    server.add_tool(find_offers, structured_output=False)

    async def estimate_training_run(request: BaseModel) -> dict[str, Any]:
        """What a training run costs: its GPU-hours, wall clock and price on the cheapest
        offer that can run it (same body and answer as POST /v1/estimate)."""
        body = request.model_dump(mode="json", exclude_none=True)
        return await _answer(await api.post("/v1/estimate", json=body))

    estimate_training_run.__annotations__["request"] = EstimateRequest
    server.add_tool(estimate_training_run, structured_output=False)

    @server.tool(structured_output=False)
    async def offer_detail(offer_id: str) -> dict[str, Any]:
        """Every published field of one current offer, by the `id` find_offers gives, with
        the renter's checklist (GET /v1/offers/{id})."""
        return await _answer(await api.get(f"/v1/offers/{_path_part(offer_id)}"))

    @server.tool(structured_output=False)
    async def offer_history(offer_id: str) -> dict[str, Any]:
        """Every stored price of one offer, by its `id` (GET /v1/offers/{id}/history)."""
        return await _answer(await api.get(f"/v1/offers/{_path_part(offer_id)}/history"))

    @server.tool(structured_output=False)
    async def price_index(question: IndexQuestion) -> dict[str, Any]:
        """Median, p10, p90 and minimum USD per GPU-hour per UTC day of a GPU model
        (GET /v1/history/index)."""
        params = question.model_dump(mode="json")
        return await _answer(await api.get("/v1/history/index", params=params))

    @server.tool(structured_output=False)
    async def providers() -> dict[str, Any]:
        """Every provider: where its prices come from, whether it needs an account, how old
        its prices are and whether its latest fetch succeeded (GET /v1/providers)."""
        return await _answer(await api.get("/v1/providers"))

    @server.tool(structured_output=False)
    async def gpus(q: str | None = None) -> dict[str, Any]:
        """The GPU catalog: peak TFLOPs by precision, memory, bandwidth and sources, of every
        model or of those matching a model, family (H100) or vendor (amd) (GET /v1/gpus)."""
        return await _answer(await api.get("/v1/gpus", params={} if q is None else {"q": q}))

    return server


def _path_part(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def in_process_client(app: FastAPI) -> httpx.AsyncClient:
    """A client of ``app`` that sends each request through it in process (no port)."""
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://gpuscout", timeout=60
    )


def remote_client(base_url: str) -> httpx.AsyncClient:
    """A client of the gpuscout at ``base_url`` (another instance, public or a team's)."""
    return httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=60, follow_redirects=False)


def streamable_http(
    app: FastAPI, host: str
) -> tuple[ASGIApp, contextlib.AbstractAsyncContextManager[None]]:
    """The ASGI app answering MCP's streamable HTTP at :data:`MCP_PATH`, its tools asking
    ``app`` in process, and the context its session manager runs in.

    Stateless with JSON answers, so any of several workers can take any call. On a
    loopback ``host`` the SDK refuses other Host and Origin headers (DNS rebinding).
    """
    server = build_server(in_process_client(app))
    security = None
    if host not in ("127.0.0.1", "localhost", "::1"):
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    handler = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=security,
        host=host,
    )
    return handler, server.session_manager.run()
