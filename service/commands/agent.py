"""``gpuscout mcp``: the Model Context Protocol server over stdio, for an AI agent that
starts gpuscout as a subprocess (Claude Desktop, an IDE, an agent framework).

Its tools answer through the REST API in this process (the configured database, else the
offline sample), or through another gpuscout's API with ``--api URL``: a team's collector
or a public instance, so an agent needs no provider account and no database.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from ..settings import get_settings

__all__ = ["register"]


async def _serve_stdio(api_url: str | None) -> None:
    import logging

    from ..mcp_server import build_server, in_process_client, remote_client

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per tool call is noise

    if api_url is not None:
        async with remote_client(api_url) as client:
            await build_server(client).run_stdio_async()
        return
    from ..api import create_app

    settings = get_settings().model_copy(update={"mcp_http": False})
    app = create_app(settings)
    async with app.router.lifespan_context(app), in_process_client(app) as client:
        await build_server(client).run_stdio_async()


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        api: Annotated[
            str | None,
            typer.Option(
                metavar="URL",
                help="ask the gpuscout API at URL (e.g. https://gpuscout.example.org)"
                " instead of this machine's database or sample",
            ),
        ] = None,
    ) -> None:
        """Answer AI agents over the Model Context Protocol (stdio).

        Tools: find offers, estimate a training run, an offer's detail and history, the
        price index, providers and their freshness, GPUs."""
        if api is not None and not api.startswith(("http://", "https://")):
            raise typer.BadParameter(f"{api!r} is not an http(s) URL", param_hint="--api")
        if api is None:  # this machine's database: one clear line now, not an agent's puzzle
            from ..fx import fx_table
            from .serve import migrate

            settings = get_settings()
            fx_table(settings)
            problem = migrate(settings)
            if problem is not None:
                typer.secho(f"database not usable: {problem}", err=True, fg="red")
                raise typer.Exit(1)
        asyncio.run(_serve_stdio(api))
