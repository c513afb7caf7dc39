"""What the CLI's saved-search commands (``subscribe``, ``alerts create``) stored."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from gpuscout.db.engine import make_engine


def stored_requirements(url: str) -> list[dict[str, Any]]:
    """The requirement of every stored subscription (an alert's included), as JSON."""
    engine = make_engine(url)
    try:
        with engine.connect() as c:
            rows = c.execute(sa.text("select requirement from subscription")).scalars()
            return [json.loads(r) for r in rows]
    finally:
        engine.dispose()
