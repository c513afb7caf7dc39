"""``/mcp``: the Model Context Protocol's streamable HTTP beside the API, started on first use.

The MCP SDK (and the HTTP client its tools ask the API with) load on the first call to
``/mcp``, not when a worker builds its app: most workers never answer an agent, and their
start stays as light as before. The SDK's session manager then runs in a task of its own
until the app stops (:meth:`McpRoute.aclose`, from the lifespan).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["MCP_PATH", "McpRoute"]

#: Where ``gpuscout serve`` answers MCP's streamable HTTP.
MCP_PATH = "/mcp"


class McpRoute:
    """An ASGI app for ``/mcp`` whose MCP server starts on the first request."""

    def __init__(self, app: Any, host: str) -> None:
        self._app = app
        self._host = host
        self._handler: ASGIApp | None = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (await self._started())(scope, receive, send)

    async def _started(self) -> ASGIApp:
        async with self._lock:
            if self._handler is None:
                ready = asyncio.Event()
                self._task = asyncio.get_running_loop().create_task(self._run(ready))
                waiter = asyncio.ensure_future(ready.wait())
                await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
                if not ready.is_set():  # the SDK failed to start: say why, on this request
                    waiter.cancel()
                    self._task.result()
        assert self._handler is not None
        return self._handler

    async def _run(self, ready: asyncio.Event) -> None:
        from ..mcp_server import streamable_http

        handler, running = streamable_http(self._app, self._host)
        async with running:
            self._handler = handler
            ready.set()
            await self._stop.wait()

    async def aclose(self) -> None:
        """Stop the SDK's session manager, if the first call started it."""
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
