"""The ``gpuscout`` command line: one typer app, each command group in ``service/commands``.

Command modules are imported when their command runs (or ``--help`` lists them), never at
package import: :data:`COMMANDS` maps each top-level command to the module that registers
it, and :class:`RootGroup` imports only that module. ``gpuscout offers`` so never pays for
the database, the web framework or the mail code (``python -X importtime`` shows it); a
test checks the map against what each module registers.

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

from .commands.errors import TYPED_ARGS, one_line, refuse_non_finite

__all__ = ["COMMANDS", "COMMAND_MODULES", "RootGroup", "app", "command_from", "main"]

#: Top-level command -> the module under ``service.commands`` that registers it (each
#: module exposes ``register(app)``), in the order ``--help`` lists them.
COMMANDS: dict[str, str] = {
    "offers": "pricing",
    "offer": "offer",
    "estimate": "pricing",
    "gpus": "gpus",
    "models": "models",
    "providers": "providers",
    "parse": "providers",
    "snapshot": "providers",
    "history": "db",
    "db": "db",
    "scheduler": "db",
    "serve": "serve",
    "subscribe": "digest",
    "digest": "digest",
    "fx": "fx",
    "alerts": "alerts",
    "publish": "catalog",
    "follow": "catalog",
    "keygen": "catalog",
    "mcp": "agent",
}

#: Modules under ``service.commands`` that each expose ``register(app)``.
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))


def command_from(module: str, name: str) -> Any:
    """The click command ``name`` as the module ``service.commands.<module>`` registers it."""
    sub = typer.Typer(add_completion=False)
    importlib.import_module(f"gpuscout.service.commands.{module}").register(sub)
    group = typer.main.get_group(sub)
    return group.commands.get(name)


class RootGroup(TyperGroup):
    """The root command: commands load on first use, float options refuse NaN/Infinity,
    and the errors bad input or a broken environment cause are one line
    (:func:`~service.commands.errors.one_line`)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(n for n in super().list_commands(ctx) if n not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in COMMANDS:
            command = command_from(COMMANDS[cmd_name], cmd_name)
            if command is not None:
                self.commands[cmd_name] = command
        if command is not None:
            refuse_non_finite(command)
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        TYPED_ARGS.set(tuple(args))  # errors name an option as typed (errors.typed_spelling)
        return super().resolve_command(ctx, args)

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


def _version(shown: bool) -> None:
    if shown:
        from gpuscout import __version__

        typer.echo(f"gpuscout {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Where to rent GPU compute for the least money per unit of real work."""


def main() -> None:
    """Run the CLI (the ``gpuscout`` entry point)."""
    app()


if __name__ == "__main__":
    main()
