from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.util.exc import CommandError
from sqlalchemy.exc import OperationalError

from gpuscout.db import migrate
from gpuscout.db.engine import make_engine, sqlite_url
from gpuscout.db.migrate import (
    HEAD_REVISION,
    at_head,
    current_revision,
    head_revision,
    stored_revisions,
    target_metadata,
    upgrade,
    upgrade_if_behind,
)

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


def test_the_written_head_is_alembics_head() -> None:
    """A new migration moves ``HEAD_REVISION`` too (a start at head reads that constant)."""
    assert head_revision() == HEAD_REVISION


def test_stored_revisions_none_before_the_first_migration_then_the_head(db_url: str) -> None:
    assert stored_revisions(db_url) is None
    assert not at_head(db_url)
    upgrade(db_url)
    assert stored_revisions(db_url) == (HEAD_REVISION,)
    assert at_head(db_url)


def test_a_database_at_head_is_not_migrated_again(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrade(db_url)

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a database at head went through Alembic again")

    monkeypatch.setattr(migrate, "upgrade", refuse)
    assert upgrade_if_behind(db_url) is False


def test_a_database_one_behind_is_migrated_to_head(db_url: str) -> None:
    upgrade(db_url, "0006")
    assert not at_head(db_url)
    assert upgrade_if_behind(db_url) is True
    assert current_revision(db_url) == HEAD_REVISION
    assert "origin" in {c["name"] for c in _columns(db_url, "price_history")}  # 0007's column


def test_a_new_database_is_migrated_to_head(db_url: str) -> None:
    assert upgrade_if_behind(db_url) is True
    assert current_revision(db_url) == HEAD_REVISION


def _columns(url: str, table: str) -> list[dict[str, object]]:
    engine = make_engine(url)
    try:
        return list(sa.inspect(engine).get_columns(table))  # type: ignore[arg-type]
    finally:
        engine.dispose()


def test_a_database_another_gpuscout_migrated_further_goes_to_alembic(db_url: str) -> None:
    """Not at head is not only behind: Alembic says it does not know the revision."""
    upgrade(db_url)
    engine = make_engine(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    finally:
        engine.dispose()
    with pytest.raises(CommandError, match="9999"):
        upgrade_if_behind(db_url)


def test_an_unreachable_database_is_sqlalchemys_error_as_with_alembic() -> None:
    with socket.socket() as sock:  # a local port nothing listens on: no network
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql+psycopg://nobody@127.0.0.1:{port}/nothing?connect_timeout=5"
    with pytest.raises(OperationalError):
        upgrade_if_behind(url)


def test_a_start_at_head_imports_no_alembic(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "gpuscout.db")
    upgrade(url)
    code = (
        "import sys\nfrom gpuscout.db.migrate import upgrade_if_behind\n"
        f"assert upgrade_if_behind({url!r}) is False\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
