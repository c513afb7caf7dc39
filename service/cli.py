"""The ``gpuscout`` command line: one typer app, each command group in ``service/commands``.

Command modules are imported when the CLI starts, never at package import, and build their
settings, engines and clients inside the command, so ``import service.cli`` is cheap.

Every command runs through :class:`RootGroup`: an invalid setting, a broken database URL
or database, an unwritable path or an out-of-range number is one ``error:`` line and a
non-zero exit, never a traceback (the mapping is :mod:`service.commands.errors`).
"""

from __future__ import annotations

import errno
import importlib
from typing import Any

import typer
from typer.core import TyperGroup

from .commands.errors import one_line, refuse_non_finite

__all__ = ["RootGroup", "app", "main"]

#: Modules under ``service.commands`` that each expose ``register(app)``.
COMMAND_MODULES: tuple[str, ...] = (
    "gpus",
    "providers",
    "pricing",
    "serve",
    "digest",
    "db",
    "fx",
    "alerts",
)


class RootGroup(TyperGroup):
    """The root command: float options refuse NaN/Infinity, and the errors bad input or a
    broken environment cause are one line (:func:`~service.commands.errors.one_line`)."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            refuse_non_finite(command)
        return command

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):  # typer's own: usage errors
            raise
        except Exception as exc:
            if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
                raise  # click's own handling: a closed pipe is not an error to report
            said = one_line(exc)
            if said is None:
                raise
            message, code = said
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(code) from None


app = typer.Typer(
    name="gpuscout",
    cls=RootGroup,
    help="Where to rent GPU compute for the least money per unit of real work.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"service.commands.{_name}").register(app)


def main() -> None:
    """Run the CLI (the ``gpuscout`` entry point)."""
    app()
