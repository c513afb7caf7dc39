"""The engine factory: nothing is connected or built at import time.

SQLite gets the settings an embedded, multi-process database needs: WAL (readers never wait
for the writer), foreign keys on, a busy timeout, ``synchronous=NORMAL`` (safe in WAL against
a crashed or killed process) and real transactions: pysqlite's own transaction handling is
switched off and SQLAlchemy's ``begin`` emits ``BEGIN`` itself, so DDL is transactional
too. A writer that will read and then write asks for ``BEGIN IMMEDIATE`` with
:func:`write_connection` (a deferred transaction upgraded to a writer could fail at once
with "database is locked" instead of waiting).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool

__all__ = [
    "SQLITE_BUSY_TIMEOUT_S",
    "SUPPORTED_BACKENDS",
    "Target",
    "driver_cursor",
    "driver_rows",
    "make_engine",
    "placeholders",
    "select_rows",
    "sqlite_url",
    "transaction",
    "write_connection",
]

#: The databases gpuscout runs on (SQLAlchemy backend names).
SUPPORTED_BACKENDS = frozenset({"sqlite", "postgresql"})
#: How long a SQLite connection waits for another process's write lock.
SQLITE_BUSY_TIMEOUT_S = 30.0

_IMMEDIATE = "gpuscout_sqlite_immediate"


def sqlite_url(path: Path | str) -> str:
    """The SQLAlchemy URL of a SQLite file."""
    return f"sqlite:///{Path(path)}"


def make_engine(url: str | URL, **kwargs: Any) -> Engine:
    """An engine for ``url`` (``sqlite:///file`` or ``postgresql+psycopg://...``).

    A SQLite file's parent directory is created. Extra keyword arguments go to
    :func:`sqlalchemy.create_engine`. Raises ``ValueError`` for any other database: the
    writes go through the SQLite and PostgreSQL drivers directly (COPY, ``executemany``).
    """
    url = make_url(url)
    backend = url.get_backend_name()
    if backend not in SUPPORTED_BACKENDS:
        raise ValueError(
            f"unsupported database {backend!r} in the database URL: gpuscout stores its data "
            "in SQLite (sqlite:///path) or PostgreSQL (postgresql+psycopg://user@host/db)"
        )
    if backend == "postgresql":
        kwargs.setdefault("pool_pre_ping", True)
        return sa.create_engine(url, **kwargs)

    database = url.database or ""
    in_memory = database in ("", ":memory:") or database.startswith("file::memory:")
    connect_args = dict(kwargs.pop("connect_args", {}))
    connect_args.setdefault("timeout", SQLITE_BUSY_TIMEOUT_S)
    connect_args.setdefault("check_same_thread", False)
    if in_memory:
        kwargs.setdefault("poolclass", StaticPool)
    else:
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(url, connect_args=connect_args, **kwargs)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        try:
            if not in_memory:
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
            # 64 MB page cache (allocated only as used): a 100k-offer snapshot's indexes
            # then stay in memory instead of spilling to the WAL mid-transaction
            cursor.execute("PRAGMA cache_size=-65536")
        finally:
            cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        immediate = connection.get_execution_options().get(_IMMEDIATE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


@contextmanager
def write_connection(engine: Engine) -> Iterator[Connection]:
    """A connection inside one write transaction, committed on success, rolled back on error.

    On SQLite the transaction is ``BEGIN IMMEDIATE``: it takes the write lock up front (waiting
    up to the busy timeout) so that a read-then-write cannot fail half-way on a lock upgrade.
    """
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            connection = connection.execution_options(**{_IMMEDIATE: True})
        with connection.begin():
            yield connection


#: What the write functions of ``db`` accept: an engine (they open and commit their own
#: transaction), a connection (they join its transaction, or open and commit one) or an
#: ORM session (they join its transaction; the caller commits).
Target = Engine | Connection | Session


@contextmanager
def transaction(target: Target) -> Iterator[Connection]:
    """A connection in a transaction for ``target`` (see :data:`Target`)."""
    if isinstance(target, Engine):
        with write_connection(target) as connection:
            yield connection
    elif isinstance(target, Connection):
        if target.in_transaction():
            yield target
        else:
            with target.begin():
                yield target
    else:
        yield target.connection()


def placeholders(connection: Connection, count: int) -> str:
    """``count`` bound-parameter marks in the driver's style, comma-separated."""
    mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    return ", ".join([mark] * count)


def driver_rows(connection: Connection, statement: str, params: tuple[Any, ...]) -> list[Any]:
    """Rows of a plain SQL query (``?`` placeholders) as the driver's sequences: no row
    objects and no type processing, for bulk reads that convert their columns themselves.

    On SQLite the rows come as one JSON array made by SQLite (:func:`_sqlite_rows`): the
    sqlite3 module lets go of the GIL around every row it steps to and takes it back after,
    and beside a thread running Python each taking waits up to the interpreter's switch
    interval (5 ms): the driver's ``fetchall`` of 100k current offers, 0.16 s alone, took
    ~109 s beside a busy thread (``benchmarks/bulk_read.py``), as the API's imports at a
    start with nothing kept, or its requests while the scheduler in the same process takes
    a snapshot, are busy; one step reads them in 0.49 s either way. Its columns must be
    text, integers or null there (every caller's are): SQLite's JSON writes a real with 15
    digits and refuses a blob."""
    if connection.dialect.paramstyle != "qmark":
        statement = statement.replace("?", "%s")
    with driver_cursor(connection) as cursor:
        if connection.dialect.name == "sqlite":
            return _sqlite_rows(cursor, statement, params)
        cursor.execute(statement, params)
        return cursor.fetchall()


def select_rows(
    connection: Connection,
    query: sa.Select[*tuple[Any, ...]],
    params: Mapping[str, Any] | None = None,
) -> list[tuple[Any, ...]]:
    """The rows of ``query`` as tuples, each value converted by its column's type as
    ``connection.execute(query, params).all()`` converts it (a stored time as an aware
    datetime, exact decimal text as a ``Decimal``).

    On SQLite they are read in one step, for the reason :func:`driver_rows` gives: SQLite
    makes them one JSON array (``json_group_array`` over the query as a subquery, in its
    order), parsed once; an offer's price history (``/v1/history/offers/{key}``) or the
    daily price index (``/v1/history/index``, the ``/index`` page), read row by row beside a
    thread running Python, took up to ~50 times as long (``benchmarks/bulk_read.py``). A
    real is carried exactly, not as the 15 digits SQLite's JSON writes: a column of a
    numeric type sends each real as three integers (:func:`_real_parts`); a blob is
    SQLite's error (JSON holds none; no query here reads one)."""
    if connection.dialect.name != "sqlite":
        return [tuple(row) for row in connection.execute(query, params)]
    import orjson

    dialect = connection.dialect
    slots: list[sa.ColumnElement[Any]] = []
    #: per column: where its slots begin, whether it sends reals in parts, its name and
    #: the conversion its type makes of the driver's value (once, not per row)
    columns: list[tuple[int, bool, str, Any]] = []
    for column in query.subquery().c:
        real = _numeric(column.type, dialect)
        process = column.type.dialect_impl(dialect).result_processor(dialect, None)
        columns.append((len(slots), real, column.name, process))
        slots += _real_parts(column) if real else [column]
    together = sa.select(sa.func.json_group_array(sa.func.json_array(*slots)))
    out = []
    for row in orjson.loads(connection.execute(together, params).scalar_one()):
        values = []
        for at, real, name, process in columns:
            value = _real_value(row[at : at + _PARTS], name) if real else row[at]
            values.append(value if process is None or value is None else process(value))
        out.append(tuple(values))
    return out


#: 2**62: a real's fraction goes to SQLite's 64-bit integers in two steps of 62 bits.
_SCALE = 1 << 62
#: Slots a numeric column takes in a row read by :func:`select_rows`.
_PARTS = 5


def _numeric(type_: sa.types.TypeEngine[Any], dialect: sa.Dialect) -> bool:
    """Whether SQLite stores the values of ``type_`` as reals (its own or, for a decorated
    type, what it stores on this dialect: exact decimals are text there)."""
    impl = type_.dialect_impl(dialect)
    if isinstance(impl, sa.TypeDecorator):
        impl = impl.load_dialect_impl(dialect)
    return isinstance(impl, (sa.Float, sa.Numeric))


def _real_parts(x: sa.ColumnElement[Any]) -> list[sa.ColumnElement[Any]]:
    """``x`` when it is not a real, else null, then its whole part ``i`` and two 62-bit
    parts ``j``, ``k`` of its fraction (null when not a real), and whether they are all of
    it: ``x == i + j / 2**62 + k / 2**124`` exactly. SQLite's arithmetic on reals is
    IEEE's: taking the whole part off a real, and scaling by a power of two, are exact,
    and ``CAST(... AS INTEGER)`` cuts toward zero, so the parts hold every bit of any real
    of magnitude under 2**63 whose lowest bit is not under 2**-124 (a price of any size
    or precision; anything else is refused by :func:`_real_value`, not rounded)."""
    real = sa.func.typeof(x) == "real"
    scale: sa.ColumnElement[int] = sa.literal_column(str(_SCALE))  # a power of two: exact
    whole = sa.cast(x, sa.Integer)
    first = (x - whole) * scale
    high = sa.cast(first, sa.Integer)
    second = (first - high) * scale
    low = sa.cast(second, sa.Integer)
    return [
        sa.case((real, sa.null()), else_=x),
        sa.case((real, whole)),
        sa.case((real, high)),
        sa.case((real, low)),
        sa.case((real, second - low == 0)),
    ]


def _real_value(parts: list[Any], column: str) -> Any:
    """A value of a numeric column from its :func:`_real_parts`: the real they add up to
    (one correctly rounded division of integers, so the very real stored), else the value
    as it came (null, or an integer SQLite holds as such)."""
    value, whole, high, low, exact = parts
    if whole is None:
        return value
    if not exact:
        raise TypeError(f"a real in column {column!r} cannot be read exactly in parts")
    return (whole * _SCALE * _SCALE + high * _SCALE + low) / (_SCALE * _SCALE)


@contextmanager
def driver_cursor(connection: Connection) -> Iterator[Any]:
    """A cursor of the driver's own under ``connection`` (its transaction), closed after."""
    driver = connection.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    try:
        yield cursor
    finally:
        cursor.close()


def _sqlite_rows(cursor: Any, statement: str, params: tuple[Any, ...]) -> list[Any]:
    """:func:`driver_rows` on SQLite: the statement's rows as one ``json_group_array`` of
    ``json_array`` values, in its order (an aggregate reads its subquery's rows in the
    subquery's order), parsed by orjson; a real among them is refused, not rounded."""
    import orjson

    cursor.execute(f"SELECT * FROM ({statement}) LIMIT 0", params)
    names = ", ".join('"' + column[0].replace('"', '""') + '"' for column in cursor.description)
    cursor.execute(f"SELECT json_group_array(json_array({names})) FROM ({statement})", params)
    rows: list[Any] = orjson.loads(cursor.fetchone()[0])
    if rows and any(isinstance(value, float) for value in rows[0]):
        raise TypeError(f"driver_rows reads text, integers and null on SQLite: {statement}")
    return rows
