"""``db.engine.driver_rows``: bulk reads as the driver's rows, in one step on SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from db.engine import driver_rows, make_engine, sqlite_url

_ROWS = [
    (3, "c", '{"name":"line\\nbreak, \\"quoted\\", ümlaut"}', None),
    (1, "a", "plain", 2**63 - 1),
    (2, "b", None, -(2**63)),
]


@pytest.fixture
def engine(tmp_path: Path) -> sa.Engine:
    engine = make_engine(sqlite_url(tmp_path / "rows.db"))
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE t (k INTEGER, name TEXT, body TEXT, n INTEGER)"))
        for row in _ROWS:
            connection.execute(
                sa.text("INSERT INTO t VALUES (:k, :name, :body, :n)"),
                dict(zip(("k", "name", "body", "n"), row, strict=True)),
            )
    return engine


def test_sqlite_rows_are_the_drivers_in_the_statements_order(engine: sa.Engine) -> None:
    """Read as one JSON array made by SQLite (the sqlite3 module's step per row gives up
    the GIL each time, and beside a busy thread waits to take it back): the same values as
    the driver's own rows, text with newlines, quotes and any letter, 64-bit integers and
    nulls included, in the statement's order, with its parameters; none is none."""
    statement = "SELECT k, name, body, n FROM t WHERE k >= ? ORDER BY name DESC"
    with engine.connect() as connection:
        rows = driver_rows(connection, statement, (1,))
        own = connection.connection.driver_connection.execute(statement, (1,)).fetchall()
        assert [tuple(r) for r in rows] == own == sorted(_ROWS, key=lambda r: r[1], reverse=True)
        assert driver_rows(connection, statement, (9,)) == []


def test_a_real_column_is_refused_on_sqlite_not_rounded(engine: sa.Engine) -> None:
    """SQLite's JSON writes a real with 15 significant digits: a column of reals is an
    error naming the statement, never a silently rounded figure."""
    with engine.connect() as connection, pytest.raises(TypeError, match="integers and null"):
        driver_rows(connection, "SELECT k, 0.1 + 0.2 AS x FROM t", ())
