"""Shared fixtures: a fresh database per test, on SQLite always and on PostgreSQL when
``GPUSCOUT_TEST_POSTGRES_URL`` is set (e.g. ``postgresql+psycopg://postgres@127.0.0.1:5432/test``).

On PostgreSQL each test gets a schema of its own (``search_path`` set in the URL), dropped
afterwards, so tests never see each other's rows and can run in parallel (xdist).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.pool import NullPool

from gpuscout.db.engine import make_engine, sqlite_url
from gpuscout.db.migrate import upgrade

POSTGRES_URL_ENV = "GPUSCOUT_TEST_POSTGRES_URL"
POSTGRES_SKIP = (
    f"{POSTGRES_URL_ENV} is unset: PostgreSQL tests SKIPPED "
    "(set it, e.g. postgresql+psycopg://postgres@127.0.0.1:5432/test)"
)


@pytest.fixture(autouse=True, scope="session")
def _own_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Settings read by the code under test never see the developer's data directory (its
    database, an FX table written by ``gpuscout fx update``): a fresh one for the session."""
    old = os.environ.get("GPUSCOUT_DATA_DIR")
    os.environ["GPUSCOUT_DATA_DIR"] = str(tmp_path_factory.mktemp("data-dir"))
    yield
    if old is None:
        os.environ.pop("GPUSCOUT_DATA_DIR", None)
    else:
        os.environ["GPUSCOUT_DATA_DIR"] = old


@pytest.fixture(autouse=True, scope="session")
def _no_first_fetch() -> Iterator[None]:
    """``gpuscout offers`` with nothing stored answers from the sample without trying the
    network first (``fetch_when_empty``): tests never reach out. The first fetch is tested
    against local replays (tests/service/test_first_snapshot.py)."""
    old = os.environ.get("GPUSCOUT_FETCH_WHEN_EMPTY")
    os.environ["GPUSCOUT_FETCH_WHEN_EMPTY"] = "false"
    yield
    if old is None:
        os.environ.pop("GPUSCOUT_FETCH_WHEN_EMPTY", None)
    else:
        os.environ["GPUSCOUT_FETCH_WHEN_EMPTY"] = old


def pytest_report_header(config: pytest.Config) -> str:
    url = os.environ.get(POSTGRES_URL_ENV)
    return f"postgres: {url}" if url else f"postgres: {POSTGRES_SKIP}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """The URL of a fresh, empty PostgreSQL schema (skipped loudly without the variable)."""
    base = os.environ.get(POSTGRES_URL_ENV)
    if not base:
        pytest.skip(POSTGRES_SKIP)
    schema = f"test_{uuid.uuid4().hex[:16]}"
    admin = sa.create_engine(base, poolclass=NullPool)
    with admin.begin() as connection:
        connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh, empty database: a SQLite file, or a PostgreSQL schema."""
    if request.param == "sqlite":
        return sqlite_url(tmp_path_factory.mktemp("db") / "gpuscout.db")
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An engine on a fresh database with the migrations applied."""
    upgrade(db_url)
    engine = make_engine(db_url)
    try:
        yield engine
    finally:
        engine.dispose()
