"""Alembic, configured in code: no ``alembic.ini``, so migrations run from any working
directory and from an installed package.

``upgrade(url)`` is what ``gpuscout db upgrade`` and the service's start-up call. On
PostgreSQL the migration transaction holds an advisory lock, so several processes starting
at once apply the migrations once.

``upgrade_if_behind(url)`` is what ``gpuscout serve`` calls: a database already at
:data:`HEAD_REVISION` (every start but the first after a release) is one query on
``alembic_version``, without importing Alembic or running ``env.py`` (about a third of a
second of a restart).
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import MetaData
from sqlalchemy.engine import URL, Connection, Engine

from .engine import make_engine
from .head import HEAD_REVISION, VERSION_TABLE

if TYPE_CHECKING:  # Alembic is imported where a migration or its scripts are needed
    from alembic.config import Config

__all__ = [
    "HEAD_REVISION",
    "MIGRATIONS_DIR",
    "MODEL_MODULES",
    "VERSION_TABLE",
    "alembic_config",
    "at_head",
    "check_head",
    "current_revision",
    "head_revision",
    "stored_revisions",
    "target_metadata",
    "upgrade",
    "upgrade_if_behind",
]

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

#: Every module that defines tables on ``db.models.Base``: a new one is added here, so that
#: autogenerate (and the test comparing models with migrations) sees all tables.
MODEL_MODULES: tuple[str, ...] = (
    "gpuscout.db.models",
    "gpuscout.db.subscriptions",
    "gpuscout.db.alerts",
)


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
    from alembic.config import Config

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
    from alembic import command

    with _RUNNING:
        if isinstance(url, Engine):
            with url.connect() as connection:
                command.upgrade(alembic_config(connection=connection), revision)
                connection.commit()
            return
        command.upgrade(alembic_config(url), revision)


def stored_revisions(url: str | URL | Engine) -> tuple[str, ...] | None:
    """The revisions ``alembic_version`` records, sorted (one at a time here: the migrations
    are one line), or ``None`` when the database has no such table (never migrated).

    One query and no Alembic import; an unreachable database raises SQLAlchemy's error on
    connecting, as :func:`upgrade` would.
    """
    engine = url if isinstance(url, Engine) else make_engine(url)
    try:
        with engine.connect() as connection:
            if not sa.inspect(connection).has_table(VERSION_TABLE):
                return None
            rows = connection.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}"))
            return tuple(sorted(str(r) for r in rows.scalars()))
    finally:
        if engine is not url:
            engine.dispose()


def at_head(url: str | URL | Engine) -> bool:
    """Whether the database is at :data:`HEAD_REVISION` and nothing else (a database a newer
    gpuscout migrated, or one never migrated, is not)."""
    return stored_revisions(url) == (HEAD_REVISION,)


def upgrade_embedded(url: str) -> str | None:
    """Upgrade an SQLite file database that a former gpuscout migrated and this one is
    ahead of; the revision it was at (``None``: nothing done). The embedded database is
    its user's own, so the command line brings it along; any other database (PostgreSQL,
    shared by replicas) is left for ``gpuscout db upgrade``, and one never migrated or
    migrated by a newer gpuscout is left for :func:`check_head` to name."""
    from .head import no_sqlite_file, sqlite_file

    if sqlite_file(url) is None or no_sqlite_file(url):
        return None
    revisions = stored_revisions(url)
    if revisions is None or len(revisions) != 1 or revisions[0] >= HEAD_REVISION:
        return None  # revisions are numbered in order: "0009" < "0012"
    upgrade(url)
    return revisions[0]


def check_head(engine: Engine) -> None:
    """Raise alembic's ``CommandError`` saying to run ``gpuscout db upgrade`` unless the
    database is at :data:`HEAD_REVISION`: reading must not write, so a reader refuses a
    database at another revision instead of meeting a missing column."""
    revisions = stored_revisions(engine)
    if revisions != (HEAD_REVISION,):
        from alembic.util.exc import CommandError

        at = ", ".join(revisions) if revisions else None
        raise CommandError(
            f"the database is at revision {at}, this gpuscout reads {HEAD_REVISION}: run "
            "`gpuscout db upgrade` (or `gpuscout snapshot`, which migrates first)"
        )


def upgrade_if_behind(url: str | URL | Engine) -> bool:
    """:func:`upgrade` unless the database is already at head; whether it ran.

    A database at another revision (behind, never migrated, or ahead: Alembic then says it
    does not know that revision) goes through Alembic exactly as with :func:`upgrade`.
    """
    if at_head(url):
        return False
    upgrade(url)
    return True


def head_revision() -> str | None:
    """The newest revision the package ships, as Alembic finds it in the scripts."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(url: str | URL | Engine) -> str | None:
    """The revision the database is at (``None``: never migrated)."""
    from alembic.runtime.migration import MigrationContext

    engine = url if isinstance(url, Engine) else make_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        if engine is not url:
            engine.dispose()
