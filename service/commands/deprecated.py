"""The CLI's former option names, still taken: hidden from ``--help``, with a one-line note.

One vocabulary renamed options to the API's names: ``history --gpu`` is
``--gpus``, ``estimate --gpu``/``--count`` are ``--gpu-model``/``--job-gpus``,
``subscribe --gpus`` (a job GPU count) is ``--job-gpus``. Scripts written against the old
names keep working; each use says, on stderr, which name to use instead. (Spellings that
are plain alternatives, such as ``--gpu`` for ``offers --gpus``, are the documented
:data:`.offer_options.ALIASES`, not deprecations.) Kept free of heavy imports: command
modules import it at registration.
"""

from __future__ import annotations

from typing import Any, NoReturn

import typer

from .errors import EXIT_INPUT

__all__ = ["deprecated_option", "note_deprecated", "refuse", "resolve_deprecated"]


def refuse(message: str) -> NoReturn:
    """``error: <message>`` on stderr, exit :data:`.errors.EXIT_INPUT`."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_INPUT)


def deprecated_option(old: str, new: str, **constraints: Any) -> Any:
    """A hidden option ``old``, the former name of ``new`` (see :func:`resolve_deprecated`).
    ``constraints``: typer's bounds (``min``, ``max``), as the new option's."""
    return typer.Option(old, hidden=True, help=f"deprecated: use {new}", **constraints)


def note_deprecated(old: str, new: str) -> None:
    """The one-line note of a deprecated spelling, on stderr."""
    typer.echo(f"note: {old} is deprecated; use {new}", err=True)


def resolve_deprecated(new_value: Any, old_value: Any, old: str, new: str) -> Any:
    """The value of option ``new``, given by its name or by its former name ``old``; both
    at once is a usage error."""
    if old_value is None:
        return new_value
    if new_value is not None:
        refuse(f"{old} is the deprecated name of {new}; give {new} only")
    note_deprecated(old, new)
    return old_value
