"""Alembic environment: the database comes from the caller (``Config.attributes``) or from
the settings (``GPUSCOUT_DATABASE_URL``); engines are built by :func:`db.engine.make_engine`
so SQLite gets WAL, foreign keys and transactional DDL."""

from __future__ import annotations

import hashlib

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from gpuscout.db import alerts as _alerts  # noqa: F401  (registers its tables on Base)
from gpuscout.db import subscriptions as _subscriptions  # noqa: F401  (registers its tables on Base)
from gpuscout.db.engine import make_engine
from gpuscout.db.migrate import target_metadata as all_tables

config = context.config
target_metadata = all_tables()

#: Advisory lock id serialising migrations on PostgreSQL (per database and schema).
_LOCK_NAME = "gpuscout:migrations"


def _url() -> object:
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    if url:
        return url
    from gpuscout.service.settings import get_settings  # only when no caller gave a database

    return get_settings().database_url


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def _lock_key(connection: Connection) -> int:
    schema = connection.execute(text("SELECT current_database() || '.' || current_schema()"))
    digest = hashlib.blake2b(f"{_LOCK_NAME}:{schema.scalar_one()}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


def _run(connection: Connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:k)"), {"k": _lock_key(connection)}
            )
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(url=str(_url()), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url())  # type: ignore[arg-type]
    try:
        with engine.connect() as connection:
            _run(connection)
            connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
