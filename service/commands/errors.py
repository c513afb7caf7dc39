"""What goes wrong at the command line, said in one line instead of a traceback.

The CLI's root group (:mod:`service.cli`) runs every command through :func:`one_line`, so
no command needs its own ``try`` for these: an invalid setting, an unusable database URL,
an unreachable or read-only database, a path that cannot be written, a number out of
range. Each becomes ``error: <what>: <why>`` on stderr and a non-zero exit
(:data:`EXIT_INPUT` for bad input or configuration, :data:`EXIT_ENVIRONMENT` for a file or
the database). Any other exception is a bug and keeps its traceback.

Options refuse NaN and Infinity (``nan``, ``inf``, ``1e400`` read as floats) when they are
parsed (:func:`refuse_non_finite`): no command has a use for them.

An error names an option as the user typed it (``--gpu``, not ``--gpus``): the root group
keeps the command's arguments (:data:`TYPED_ARGS`) and :func:`typed_spelling` picks, among
an option's spellings, the one they hold.
"""

from __future__ import annotations

import errno
import math
import re
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import typer

from ..validation_text import error_message

__all__ = [
    "EXIT_ENVIRONMENT",
    "EXIT_INPUT",
    "TYPED_ARGS",
    "one_line",
    "refuse_non_finite",
    "typed_spelling",
    "validation_message",
]

#: Exit status for an invalid option value or setting (as click's usage errors).
EXIT_INPUT = 2
#: Exit status for a file or database the command cannot use.
EXIT_ENVIRONMENT = 1
#: A message longer than this is cut (a driver's message can run to several lines).
MAX_MESSAGE_CHARS = 300


#: The arguments of the command being run, as typed (set by :mod:`service.cli`'s root group).
TYPED_ARGS: ContextVar[tuple[str, ...]] = ContextVar("typed_args", default=())


def typed_spelling(names: Sequence[str]) -> str:
    """Of an option's ``names`` (its own first, then the other spellings it accepts), the
    last one the command's arguments give (``--gpu H100`` or ``--gpu=H100``), else its own."""
    typed = [a.split("=", 1)[0] for a in TYPED_ARGS.get() if a.startswith("--")]
    given = [name for name in typed if name in names]
    return given[-1] if given else names[0]


def _flat(text: str) -> str:
    """One line: the first non-empty line of ``text``, cut to :data:`MAX_MESSAGE_CHARS`."""
    line = next((s.strip() for s in str(text).splitlines() if s.strip()), "")
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 3] + "..."


def validation_message(exc: Any, names: Mapping[str, str] | None = None) -> str:
    """A pydantic error in one line: ``field: reason; ...`` (model-level reasons name their
    field themselves); ``names`` renames fields (``{"gpus": "--job-gpus"}``), a nested one
    by its dotted path (``{"condition.metric": "--metric"}``)."""
    parts = []
    for error in exc.errors(include_url=False):
        loc = [str(p) for p in error["loc"]]
        dotted = ".".join(loc)
        if names and dotted in names:
            loc = [names[dotted]]
        elif loc and names:
            loc[0] = names.get(loc[0], loc[0])
        message = _flat(error_message(error))
        parts.append(f"{'.'.join(loc)}: {message}" if loc else message)
    return "; ".join(parts)


def _validation(exc: Any) -> tuple[str, int]:
    if exc.title == "Settings":
        names = {n: f"GPUSCOUT_{n.upper()}" for e in exc.errors() for n in map(str, e["loc"])}
        return f"configuration: {validation_message(exc, names)}", EXIT_INPUT
    return f"invalid {exc.title}: {validation_message(exc)}", EXIT_INPUT


#: The field pydantic-settings names when it cannot decode a variable's value.
_UNDECODED_FIELD = re.compile(r'error parsing value for field "(\w+)"')


def _undecoded(exc: Exception) -> str | None:
    """pydantic-settings' own error for a value it could not decode (JSON, for a complex
    setting not read through ``NoDecode``), said with the variable it came from."""
    found = _UNDECODED_FIELD.search(str(exc))
    if found is None:
        return None
    cause = exc.__cause__
    why = f"not valid JSON ({_flat(str(cause))})" if cause is not None else _flat(str(exc))
    return f"configuration: GPUSCOUT_{found.group(1).upper()}: {why}; a JSON value is expected"


def _data_dir_problem(exc: OSError) -> str | None:
    """``GPUSCOUT_DATA_DIR: ...`` when ``exc`` is the data dir failing to be created: the
    path it names is the configured data dir (or a parent of it) and the data dir is no
    directory. A data dir that exists is not the problem, whatever failed inside it."""
    if exc.filename is None:
        return None
    from pydantic import ValidationError

    from ..settings import get_settings

    try:
        data_dir = get_settings().data_dir.expanduser()
    except (ValidationError, ValueError):  # the settings are broken: nothing to name here
        return None
    failed = Path(exc.filename)
    if data_dir.is_dir() or not (failed == data_dir or failed in data_dir.parents):
        return None
    if data_dir.exists():
        return f"GPUSCOUT_DATA_DIR: {data_dir} is a file, not a directory"
    blocking = next((p for p in data_dir.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        return f"GPUSCOUT_DATA_DIR: {data_dir} cannot be created: {blocking} is a file"
    return f"GPUSCOUT_DATA_DIR: {data_dir} cannot be created: {_flat(exc.strerror or str(exc))}"


def _database(exc: Any) -> str:
    """The driver's own first line (not SQLAlchemy's wrapper with the SQL and a link)."""
    orig = getattr(exc, "orig", None)
    return f"database: {_flat(str(orig) if orig is not None else str(exc))}"


def one_line(exc: BaseException) -> tuple[str, int] | None:
    """``(message, exit status)`` for an exception bad input or a broken environment
    causes; ``None`` for any other (a bug: let its traceback show)."""
    from alembic.util.exc import CommandError
    from pydantic import ValidationError
    from pydantic_settings import SettingsError
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

    from ..fx import FxError

    if isinstance(exc, ValidationError):
        return _validation(exc)
    if isinstance(exc, SettingsError) and (undecoded := _undecoded(exc)) is not None:
        return undecoded, EXIT_INPUT
    if isinstance(exc, FxError):
        return f"configuration: {_flat(str(exc))}", EXIT_INPUT
    if isinstance(exc, (ArgumentError, NoSuchModuleError)):
        return f"database URL: {_flat(str(exc))}", EXIT_INPUT
    if isinstance(exc, SQLAlchemyError):
        return _database(exc), EXIT_ENVIRONMENT
    if isinstance(exc, CommandError):  # alembic: e.g. a database migrated by a newer version
        return f"database migrations: {_flat(str(exc))}", EXIT_ENVIRONMENT
    if isinstance(exc, OSError) and (data_dir := _data_dir_problem(exc)) is not None:
        return data_dir, EXIT_INPUT
    if isinstance(exc, OSError) and exc.errno != errno.EPIPE:
        where = exc.filename if exc.filename is not None else "file"
        return f"{where}: {_flat(exc.strerror or str(exc))}", EXIT_ENVIRONMENT
    if isinstance(exc, OverflowError):
        return f"number out of range: {_flat(str(exc))}", EXIT_INPUT
    if isinstance(exc, ValueError):
        return f"invalid value: {_flat(str(exc))}", EXIT_INPUT
    return None


def _is_finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_is_finite(v) for v in value)
    return True


def _finite(callback: Callable[..., Any] | None) -> Callable[..., Any]:
    def check(ctx: typer.Context, param: Any, value: Any) -> Any:
        if not _is_finite(value):
            raise typer.BadParameter(f"{value!r} is not a finite number", ctx=ctx, param=param)
        return value if callback is None else callback(ctx, param, value)

    check.refuses_non_finite = True  # type: ignore[attr-defined]
    return check


def refuse_non_finite(command: Any) -> None:
    """Every parameter of ``command`` (and of its subcommands) refuses NaN and Infinity,
    checked after typer has converted the value and before the command's own callback."""
    for param in command.params:
        if not getattr(param.callback, "refuses_non_finite", False):
            param.callback = _finite(param.callback)
    for sub in getattr(command, "commands", {}).values():
        refuse_non_finite(sub)
