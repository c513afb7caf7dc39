"""``gpuscout fx``: the FX table non-USD prices are converted with; update it from the ECB."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from gpuscout.adapters.schema import default_fx

from ..settings import get_settings

__all__ = ["register"]

err = Console(stderr=True)
#: Currencies ``fx show`` lists first (those of the shipped price sheets and clouds).
SHOWN = ("EUR", "CNY", "GBP", "JPY", "INR", "KRW", "SGD")


def register(app: typer.Typer) -> None:
    fx_app = typer.Typer(help="FX rates used to compare prices in USD.", no_args_is_help=True)
    app.add_typer(fx_app, name="fx")

    @fx_app.command("show")
    def show() -> None:
        """The FX table in use: its date and source, and a few rates per USD."""
        from ..fx import fx_file, fx_table

        settings = get_settings()
        table = fx_table(settings)
        path = fx_file(settings)
        typer.echo(f"as of {table.as_of}: {table.source}")
        typer.echo(f"file: {path if path else 'shipped with gpuscout (adapters/fx_rates.toml)'}")
        for code in SHOWN:
            rate = table.units_per_usd.get(code)
            if rate is not None:
                typer.echo(f"  1 USD = {rate:.4f} {code}")
        if path is not None:
            shipped = default_fx()
            typer.echo(f"(shipped table: as of {shipped.as_of})")

    @fx_app.command("update")
    def update(
        out: Annotated[
            Path | None,
            typer.Option(
                "--out",
                dir_okay=False,
                help="file to write (default: fx_rates_file setting, else data_dir/fx_rates.toml)",
            ),
        ] = None,
    ) -> None:
        """Download the ECB's latest euro reference rates and use them from now on."""
        import httpx

        from ..fx import FxError, fx_target, update_fx_file

        settings = get_settings()
        path = out or fx_target(settings)
        try:
            with httpx.Client(timeout=settings.http_timeout_s, follow_redirects=True) as client:
                table = update_fx_file(path, client)
        except FxError as exc:
            err.print(f"[red]error:[/] {exc}; {path} left as it was", highlight=False)
            raise typer.Exit(1) from None
        cny = table.units_per_usd.get("CNY")
        extra = f", 1 USD = {cny:.4f} CNY" if cny is not None else ""
        typer.echo(f"wrote {path}: ECB rates as of {table.as_of}{extra}")
        if out is not None and settings.fx_rates_file != out:
            typer.echo(f"set GPUSCOUT_FX_RATES_FILE={out} to use it")
