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

from collections.abc import Iterator
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
    "make_engine",
    "placeholders",
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
