"""The schema's head revision, and the file an SQLite URL names, without SQLAlchemy."""

from __future__ import annotations

from pathlib import Path

__all__ = ["HEAD_REVISION", "VERSION_TABLE", "no_sqlite_file", "sqlite_file"]

#: The newest revision under ``migrations/versions``, what a database at head records in
#: :data:`VERSION_TABLE`. Written out so that a start at head imports no Alembic; a test
#: checks it against Alembic's own head, so a new migration cannot leave it behind.
HEAD_REVISION = "0012"
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


def no_sqlite_file(url: str) -> bool:
    """The URL names an SQLite file that does not exist (and could be created) or is empty:
    it holds no offers, and is not opened (nor created) to say so. Any other database is
    for the database to say."""
    file = sqlite_file(url)
    if file is None:
        return False
    if file.exists():
        return file.is_file() and file.stat().st_size == 0
    # SQLite would create it: where it cannot (a parent is a file), the database says so
    parent = next((p for p in file.parents if p.exists()), None)
    return parent is not None and parent.is_dir()
