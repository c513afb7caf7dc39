from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from db.engine import make_engine
from db.migrate import current_revision, head_revision, target_metadata, upgrade

TABLES = {
    "alembic_version",
    "current_offer",
    "job_lock",
    "price_history",
    "provider_status",
    "snapshot",
    "snapshot_provider",
    "snapshot_run",
}


def test_upgrade_on_an_empty_database_creates_the_schema(db_url: str) -> None:
    assert current_revision(db_url) is None
    upgrade(db_url)
    assert current_revision(db_url) == head_revision() is not None
    engine = make_engine(db_url)
    try:
        assert set(sa.inspect(engine).get_table_names()) >= TABLES
    finally:
        engine.dispose()
    upgrade(db_url)  # a second run is a no-op
    assert current_revision(db_url) == head_revision()


def test_models_match_the_migrations(db_url: str) -> None:
    upgrade(db_url)
    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, target_metadata()) == []
    finally:
        engine.dispose()


def test_sqlite_engine_settings(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/deep/er/x.db")  # parents are created
    try:
        with engine.connect() as c:
            assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    finally:
        engine.dispose()


def test_an_unsupported_database_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"unsupported database 'mysql'.*SQLite.*PostgreSQL"):
        make_engine("mysql+pymysql://user@host/db")
