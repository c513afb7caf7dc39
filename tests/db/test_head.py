"""``db.head``: the file an SQLite URL names."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.db.head import sqlite_file


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
