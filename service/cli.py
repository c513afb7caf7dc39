"""The ``gpuscout`` command line: one typer app, each command group in ``service/commands``.

Command modules are imported when the CLI starts, never at package import, and build their
settings, engines and clients inside the command, so ``import service.cli`` is cheap.
"""

from __future__ import annotations

import importlib

import typer

__all__ = ["app", "main"]

#: Modules under ``service.commands`` that each expose ``register(app)``.
COMMAND_MODULES: tuple[str, ...] = (
    "gpus",
    "providers",
    "pricing",
    "serve",
    "digest",
    "db",
    "fx",
)

app = typer.Typer(
    name="gpuscout",
    help="Where to rent GPU compute for the least money per unit of real work.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"service.commands.{_name}").register(app)


def main() -> None:
    """Run the CLI; a broken configuration is one clear line per problem, not a traceback."""
    from pydantic import ValidationError

    from .fx import FxError

    try:
        app()
    except ValidationError as exc:
        if exc.title != "Settings":
            raise
        for error in exc.errors():
            name = ".".join(str(p) for p in error["loc"])
            where = f"GPUSCOUT_{name.upper()}: " if name else ""
            message = str(error["msg"]).removeprefix("Value error, ")
            typer.echo(f"error: configuration: {where}{message}", err=True)
        raise SystemExit(2) from None
    except FxError as exc:
        typer.echo(f"error: configuration: {exc}", err=True)
        raise SystemExit(2) from None
