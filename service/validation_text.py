"""How a pydantic validation error's message reads to people, the same on every surface.

Its own small module so that the command line says it as the API and the pages do without
importing the API (``service.api`` builds FastAPI on import: a second of a CLI call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["error_message"]


def error_message(error: Mapping[str, Any]) -> str:
    """A validation error's message as people read it: a validator's ValueError without
    pydantic's ``"Value error, "`` before it, which says nothing (the API's problems, the
    pages' forms, the command line's errors)."""
    return str(error.get("msg", "")).removeprefix("Value error, ")
