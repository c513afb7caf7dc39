"""Where the service's own log lines go when it runs as a server: standard error, at INFO.

``gpuscout serve`` and ``gpuscout scheduler`` log through the ``gpuscout.*`` loggers (the
scheduler's one line per snapshot, the API's refresh failures, the FX job). Nothing else
configures them: uvicorn sets up its own loggers only, so without :func:`service_log`
an INFO line (every snapshot's outcome) is dropped and a WARNING reaches standard error only
through :data:`logging.lastResort`, unformatted. The lines look like uvicorn's
(``INFO:     ...``), with the logger's name, so one log reads as one.

The handler writes to whatever ``sys.stderr`` is when a line is written (as
:data:`logging.lastResort` does), so a command run in-process by a test leaves no handler
bound to a stream that is closed by then.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import TextIO

__all__ = ["SERVICE_LOGGER", "service_log", "show_service_log"]

#: The logger every service module logs under (``gpuscout.scheduler``, ``gpuscout.api``...).
SERVICE_LOGGER = "gpuscout"


class _StderrHandler(logging.StreamHandler):
    """A stream handler on the current ``sys.stderr``."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        """The stream is always the current standard error (``StreamHandler`` sets one)."""


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        prefix = f"{record.levelname}:".ljust(9)
        return f"{prefix} {record.name}: {super().format(record)}"


def show_service_log(level: int = logging.INFO) -> logging.Handler:
    """Send the ``gpuscout.*`` lines at ``level`` and above to standard error, for the rest
    of the process (a worker process of ``serve``); once (a second call returns the handler
    installed by the first)."""
    logger = logging.getLogger(SERVICE_LOGGER)
    for handler in logger.handlers:
        if isinstance(handler, _StderrHandler):
            return handler
    handler = _StderrHandler()
    handler.setFormatter(_Formatter("%(message)s"))
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > level:
        logger.setLevel(level)
    return handler


@contextlib.contextmanager
def service_log(level: int = logging.INFO) -> Iterator[logging.Handler]:
    """:func:`show_service_log` while the block runs (``serve`` serving, ``scheduler``
    scheduling), then the logger as it was: a command run in-process (a test's) leaves no
    handler behind to write into other commands' output."""
    logger = logging.getLogger(SERVICE_LOGGER)
    handlers, was = list(logger.handlers), logger.level
    handler = show_service_log(level)
    try:
        yield handler
    finally:
        if handler not in handlers:
            logger.removeHandler(handler)
        logger.setLevel(was)
