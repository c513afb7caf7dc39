"""The current offers' frame kept in the database itself, for readers on any host.

The snapshot that stores the current offers frames them once (:func:`service.current.keep_stored`)
and keeps that frame beside its data dir; a reader on another host (an API replica with its
own disk, beside a shared PostgreSQL) has no such file and would frame the stored records
itself, seconds of CPU for 100k offers. So the snapshot also keeps the frame here, as bytes
(Arrow IPC, compressed: ~3 MB for 100k offers), in one ``kept_frame`` row under the key its
caller gives (what the frame was built from, :func:`db.current.frame_key` without the URL).
Keeping one replaces the others: only the frame of the current offers is ever of use.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .models import KeptFrame

__all__ = ["keep_frame", "kept_frame"]

_kept = cast(sa.Table, KeptFrame.__table__)


def kept_frame(connection: Connection, key: str) -> bytes | None:
    """The bytes kept under ``key``, or ``None``."""
    statement = sa.select(_kept.c.frame).where(_kept.c.key == key)
    data = connection.execute(statement).scalar_one_or_none()
    return None if data is None else bytes(data)


def keep_frame(connection: Connection, key: str, snapshot_id: int, rows: int, data: bytes) -> None:
    """Keep ``data`` (a frame of ``rows`` rows framed after ``snapshot_id``) under ``key``,
    in place of every frame kept before; the caller commits."""
    connection.execute(sa.delete(_kept))
    connection.execute(
        sa.insert(_kept).values(
            key=key, snapshot_id=snapshot_id, row_count=rows, kept_at=datetime.now(UTC), frame=data
        )
    )
