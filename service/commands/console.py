"""The consoles the commands print to: stdout at the terminal's width, stderr."""

from __future__ import annotations

import os

from rich.console import Console

__all__ = ["wide_console"]


def wide_console() -> Console:
    """The terminal's console; where output goes to a file or pipe, ``COLUMNS`` wide if
    that is set, else 160 columns."""
    console = Console()
    return console if console.is_terminal or os.environ.get("COLUMNS") else Console(width=160)
