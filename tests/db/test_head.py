"""``db.head``: the head revision, and an SQLite file's check against it with the standard
library (what a ``gpuscout serve`` restart reads before it starts its workers)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gpuscout.db.head import HEAD_REVISION, sqlite_at_head, sqlite_file
from gpuscout.db.migrate import upgrade


def test_a_migrated_file_is_at_head_and_anything_else_is_not(tmp_path: Path) -> None:
    path = tmp_path / "gpuscout.db"
    assert not sqlite_at_head(path)  # no file
    path.write_bytes(b"not a database, just some bytes of the wrong shape" * 40)
    assert not sqlite_at_head(path)  # a broken file: Alembic says why
    path.unlink()
    sqlite3.connect(path).close()
    assert not sqlite_at_head(path)  # no alembic_version yet
    upgrade(f"sqlite:///{path}")
    assert sqlite_at_head(path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0001'")
    assert not sqlite_at_head(path)  # behind: migrated on start
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = ?", (HEAD_REVISION,))
        connection.execute("INSERT INTO alembic_version VALUES ('9999')")
    assert not sqlite_at_head(path)  # not head alone


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///data/gpuscout.db", Path("data/gpuscout.db")),
        ("sqlite+pysqlite:////abs/g.db?timeout=5", Path("/abs/g.db")),
        ("sqlite:///:memory:", None),
        ("sqlite://", None),
        ("postgresql+psycopg://postgres@127.0.0.1/test", None),
    ],
)
def test_the_file_an_sqlite_url_names(url: str, path: Path | None) -> None:
    assert sqlite_file(url) == path
