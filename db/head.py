"""The schema's head revision, and whether an SQLite file is at it, without SQLAlchemy.

``gpuscout serve`` migrates before it starts: every start but the first after a release
finds the database at :data:`HEAD_REVISION` already. For the embedded SQLite file that is
one read-only query with the standard library (:func:`sqlite_at_head`), so a process that
then only starts and watches the API's workers imports no SQLAlchemy (~0.2 s, and ~0.2 s
more for an engine and its inspection, before the first worker even starts).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["HEAD_REVISION", "VERSION_TABLE", "read_sqlite", "sqlite_at_head", "sqlite_file"]

#: The newest revision under ``migrations/versions``, what a database at head records in
#: :data:`VERSION_TABLE`. Written out so that a start at head imports no Alembic; a test
#: checks it against Alembic's own head, so a new migration cannot leave it behind.
HEAD_REVISION = "0009"
#: Alembic's table of the revisions a database is at (its default name, as ``env.py`` uses).
VERSION_TABLE = "alembic_version"


def sqlite_file(url: str) -> Path | None:
    """The file an SQLite URL names: ``sqlite:///path`` and ``sqlite+pysqlite:///path``,
    with or without a query; ``None`` for an in-memory database or any other URL."""
    scheme, sep, rest = url.partition(":///")
    if not sep or scheme.split("+")[0] != "sqlite":
        return None
    path = rest.split("?", 1)[0]
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return Path(path)


def read_sqlite(path: Path, *statements: str) -> list[list[tuple[object, ...]]] | None:
    """The rows of each of ``statements`` on the SQLite file at ``path``, read with the
    standard library, read-only, in one read transaction (every row of one moment);
    ``None`` when it cannot be read (no such file or table, a locked or broken file)."""
    if not path.is_file():
        return None
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, ValueError):
        return None
    try:
        connection.execute("BEGIN")
        return [connection.execute(sql).fetchall() for sql in statements]
    except sqlite3.Error:
        return None
    finally:
        connection.close()


def sqlite_at_head(path: Path) -> bool:
    """Whether the SQLite file at ``path`` records :data:`HEAD_REVISION` and nothing else,
    read-only. ``False`` when it cannot tell (no such file or table, a locked or broken
    file): the caller then asks Alembic, which migrates or says why not."""
    read = read_sqlite(path, f"SELECT version_num FROM {VERSION_TABLE}")
    return read is not None and sorted(str(row[0]) for row in read[0]) == [HEAD_REVISION]
