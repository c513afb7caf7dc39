"""``db.engine.driver_rows`` and ``select_rows``: bulk reads in one step on SQLite."""

from __future__ import annotations

import math
import random
import struct
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa

from gpuscout.db.engine import driver_rows, make_engine, select_rows, sqlite_url
from gpuscout.db.types import ExactDecimal, UtcDateTime

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


_metadata = sa.MetaData()
_prices = sa.Table(
    "prices",
    _metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String),
    sa.Column("at", UtcDateTime),
    sa.Column("amount", ExactDecimal),
    sa.Column("x", sa.Float),
)


def _reals() -> list[float]:
    """Reals a price column holds, and harder ones: every bit of the fraction used, whole
    parts up to 2**62, negatives, the smallest bits a fraction of 2**-124 keeps, and
    ones SQLite's own text for a real (JSON's 15 digits, even ``quote``) does not give
    back exactly."""
    rng = random.Random(17)
    out = [0.1 + 0.2, 1 / 3, -2.75, 0.0, 2.0**-70, 2.0**-124, 2.0**62, -(2.0**62), 1e15 + 0.5]
    out += [rng.uniform(0, 1000) for _ in range(400)] + [rng.uniform(-5, 5) for _ in range(100)]
    out += [math.ldexp(rng.random(), rng.randint(-60, 62)) for _ in range(200)]
    return out


@pytest.fixture
def prices(tmp_path: Path) -> sa.Engine:
    engine = make_engine(sqlite_url(tmp_path / "prices.db"))
    _metadata.create_all(engine)
    at = datetime(2026, 12, 6, 12, 30, 15, 123456, tzinfo=UTC)
    rows = [
        {"id": i, "name": f"offer {i}\n\"ü\"", "at": at + timedelta(minutes=i),
         "amount": Decimal(f"{i}.{i:04d}"), "x": x}
        for i, x in enumerate(_reals())
    ]  # fmt: skip
    rows.append({"id": len(rows), "name": None, "at": None, "amount": None, "x": None})
    with engine.begin() as connection:
        connection.execute(sa.insert(_prices), rows)
    return engine


def test_select_rows_are_what_sqlalchemy_reads_every_real_to_the_bit(prices: sa.Engine) -> None:
    """Times as aware datetimes, exact decimals, text, nulls and every real exactly as
    SQLAlchemy's own row-by-row read gives them (bit for bit), in the query's order."""
    query = sa.select(_prices).order_by(_prices.c.id.desc())
    with prices.connect() as connection:
        rows = select_rows(connection, query)
        own = [tuple(r) for r in connection.execute(query)]
    assert rows == own and len(rows) == len(_reals()) + 1
    bits = [struct.pack("<d", r[4]) for r in rows if r[4] is not None]
    assert bits == [struct.pack("<d", r[4]) for r in own if r[4] is not None]
    assert isinstance(rows[1][3], Decimal) and rows[1][2].tzinfo is UTC


def test_select_rows_take_parameters_and_expanding_lists(prices: sa.Engine) -> None:
    wanted = sa.select(_prices.c.id, _prices.c.x).where(
        _prices.c.id.in_(sa.bindparam("ids", expanding=True)), _prices.c.x > sa.bindparam("low")
    )
    with prices.connect() as connection:
        rows = select_rows(connection, wanted.order_by(_prices.c.id), {"ids": [1, 2, 4], "low": 0})
        own = connection.execute(wanted.order_by(_prices.c.id), {"ids": [1, 2, 4], "low": 0})
        assert rows == [tuple(r) for r in own] and [r[0] for r in rows] == [1, 4]
        nothing = sa.select(_prices.c.x).where(_prices.c.id < 0)
        assert select_rows(connection, nothing) == []


@pytest.mark.parametrize("x", [1e-300, -(2.0**-125) * 3, 1e19, -1e300])
def test_a_real_the_parts_cannot_hold_is_refused_not_rounded(tmp_path: Path, x: float) -> None:
    """Below 2**-124 (its lowest bit) or from 2**63 up, a real is an error naming its
    column, never a rounded figure."""
    engine = make_engine(sqlite_url(tmp_path / "odd.db"))
    _metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(sa.insert(_prices), [{"id": 1, "x": x}])
        with pytest.raises(TypeError, match="column 'x'"):
            select_rows(connection, sa.select(_prices.c.x))
