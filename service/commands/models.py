"""``gpuscout models``: the models ``offers --serve`` prices, as ``GET /v1/models`` lists them."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from gpuscout.pricing.serving_models import serving_models

from .console import wide_console

__all__ = ["models", "register"]


def models(
    max_params_b: Annotated[
        float | None,
        typer.Option("--max-params-b", min=0.0, help="only models of at most this many B params"),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="the API's answer (GET /v1/models)")
    ] = False,
) -> None:
    """List the models gpuscout prices serving for, with their shape and sources."""
    catalog = [m for m in serving_models() if max_params_b is None or m.params_b <= max_params_b]
    if json_output:
        answer = {"count": len(catalog), "models": [m.model_dump() for m in catalog]}
        typer.echo(json.dumps(answer, indent=1))
        return
    table = Table(box=box.SIMPLE_HEAD, title="models (offers --serve NAME)", title_justify="left")
    for header in ("name", "params (B)", "active (B)", "layers", "KV values/token", "context"):
        name = header == "name"  # a model's name is what --serve takes: never folded
        table.add_column(header, overflow="fold", no_wrap=name, justify="left" if name else "right")
    for m in catalog:
        table.add_row(
            m.name,
            f"{m.params_b:g}",
            f"{m.active_params_b:g}",
            str(m.layers),
            f"{m.kv_values_per_token():,}",
            f"{m.context_tokens:,}",
        )
    wide_console().print(table)
    typer.echo("sources: gpuscout models --json (each model's config.json and model card)")


def register(app: typer.Typer) -> None:
    """Add the ``models`` command to the CLI."""
    app.command("models")(models)
