"""Alembic, configured in code: no ``alembic.ini``, so migrations run from any working
directory and from an installed package.

``upgrade(url)`` is what ``gpuscout db upgrade`` and the service's start-up call. On
PostgreSQL the migration transaction holds an advisory lock, so several processes starting
at once apply the migrations once.
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData
from sqlalchemy.engine import URL, Connection, Engine

from .engine import make_engine

__all__ = [
    "MIGRATIONS_DIR",
    "MODEL_MODULES",
    "alembic_config",
    "current_revision",
    "head_revision",
    "target_metadata",
    "upgrade",
]

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

#: Every module that defines tables on ``db.models.Base``: a new one is added here, so that
#: autogenerate (and the test comparing models with migrations) sees all tables.
MODEL_MODULES: tuple[str, ...] = ("db.models", "db.subscriptions", "db.alerts")


def target_metadata() -> MetaData:
    """The metadata of all tables, every model module imported."""
    for name in MODEL_MODULES:
        importlib.import_module(name)
    from .models import Base

    return Base.metadata


def alembic_config(url: str | URL | None = None, *, connection: Connection | None = None) -> Config:
    """An Alembic config pointing at the packaged migrations.

    The database is ``connection`` if given, else ``url``, else the settings'
    ``database_url`` (read by ``env.py``). They travel in ``Config.attributes``, not in the
    ini options, so a ``%`` in a password needs no escaping.
    """
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        config.attributes["url"] = url
    if connection is not None:
        config.attributes["connection"] = connection
    return config


#: Alembic's ``context`` and ``op`` are process-wide proxies: one migration run at a time.
_RUNNING = threading.Lock()


def upgrade(url: str | URL | Engine | None = None, revision: str = "head") -> None:
    """Apply the migrations up to ``revision`` (the latest by default); a no-op at head.

    Safe from several threads (serialised here) and processes (an advisory lock on
    PostgreSQL, the write lock on SQLite).
    """
    with _RUNNING:
        if isinstance(url, Engine):
            with url.connect() as connection:
                command.upgrade(alembic_config(connection=connection), revision)
                connection.commit()
            return
        command.upgrade(alembic_config(url), revision)


def head_revision() -> str | None:
    """The newest revision the package ships."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(url: str | URL | Engine) -> str | None:
    """The revision the database is at (``None``: never migrated)."""
    engine = url if isinstance(url, Engine) else make_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        if engine is not url:
            engine.dispose()
