"""Job locks: when several processes run a scheduler against one database, only one runs
each job at a time.

* PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) on a connection of
  its own, held while the job runs; if the process dies the server drops the session and
  with it the lock. The lock id is derived from the job name, database and schema, so two
  deployments in one server (or two test schemas) do not block each other.
* SQLite: a lease row in ``job_lock``, taken in a ``BEGIN IMMEDIATE`` transaction; a lease
  left by a killed process expires after ``lease_s``. With ``renew_every_s`` the holder
  extends its lease that often while it holds it, so the lease can be short (a minute): a
  long job keeps it, a killed one frees it within ``lease_s``.

Both are *try* locks: a second runner does not wait, it is told ``False`` and skips.
"""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .engine import write_connection
from .models import JobLock
from .records import hash64

__all__ = ["job_lock", "periodic"]

log = logging.getLogger("gpuscout.db")

_lock = cast(sa.Table, JobLock.__table__)


@contextmanager
def periodic(every_s: float, call: Callable[[], None], *, name: str) -> Iterator[None]:
    """Run ``call`` every ``every_s`` seconds in a daemon thread while the block runs.

    A failing call is logged and tried again at the next tick (a SQLite write may wait
    for another writer past its busy timeout). The thread stops when the block ends.
    """
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            try:
                call()
            except Exception:
                log.warning("%s failed; trying again in %g s", name, every_s, exc_info=True)

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=max(every_s, 5.0))


def _pg_key(connection: Connection, name: str) -> int:
    where = connection.execute(sa.text("SELECT current_database() || '.' || current_schema()"))
    return hash64(f"gpuscout:{name}:{where.scalar_one()}")


@contextmanager
def _pg_lock(engine: Engine, name: str) -> Iterator[bool]:
    with engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        key = _pg_key(connection, name)
        got = connection.execute(
            sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}
        ).scalar_one()
        try:
            yield bool(got)
        finally:
            if got:
                connection.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})


def _renew(engine: Engine, name: str, holder: str, lease_s: float) -> None:
    """Extend ``holder``'s lease of ``name`` to ``lease_s`` from now."""
    with write_connection(engine) as connection:
        connection.execute(
            sa.update(_lock)
            .where(_lock.c.name == name, _lock.c.holder == holder)
            .values(expires_at=datetime.now(UTC) + timedelta(seconds=lease_s))
        )


def _take_lease(engine: Engine, name: str, holder: str, lease_s: float) -> bool:
    """Take the lease of ``name`` for ``holder`` if it is free or expired; whether it was
    taken. A database another writer keeps locked past the busy timeout (a snapshot
    storing its runs holds SQLite's write lock until its last provider answers) is a lock
    held too: not taken."""
    now = datetime.now(UTC)
    try:
        with write_connection(engine) as connection:
            row = connection.execute(
                sa.select(_lock.c.holder, _lock.c.expires_at).where(_lock.c.name == name)
            ).first()
            if row is not None and row.expires_at > now:
                return False
            values = {
                "holder": holder,
                "acquired_at": now,
                "expires_at": now + timedelta(seconds=lease_s),
            }
            if row is None:
                connection.execute(sa.insert(_lock).values(name=name, **values))
            else:
                connection.execute(sa.update(_lock).where(_lock.c.name == name).values(values))
    except sa.exc.OperationalError as exc:
        if "database is locked" not in str(exc.orig):
            raise
        log.info("lease %s: the database stayed locked by another writer; not taken", name)
        return False
    return True


@contextmanager
def _lease_lock(
    engine: Engine, name: str, lease_s: float, renew_every_s: float | None
) -> Iterator[bool]:
    holder = uuid.uuid4().hex
    got = _take_lease(engine, name, holder, lease_s)
    try:
        if got and renew_every_s is not None:
            renew = functools.partial(_renew, engine, name, holder, lease_s)
            with periodic(renew_every_s, renew, name=f"lease {name}"):
                yield got
        else:
            yield got
    finally:
        if got:
            with write_connection(engine) as connection:
                connection.execute(
                    sa.delete(_lock).where(_lock.c.name == name, _lock.c.holder == holder)
                )


@contextmanager
def job_lock(
    engine: Engine, name: str, *, lease_s: float = 3600.0, renew_every_s: float | None = None
) -> Iterator[bool]:
    """Try to take the lock ``name``; yields whether this process holds it.

    ``lease_s`` bounds how long a SQLite lease outlives a killed holder; with
    ``renew_every_s`` (less than ``lease_s``) a holder renews it that often, so a live
    holder never loses it. PostgreSQL's advisory lock needs neither: it lives as long as the
    holder's session.
    """
    if engine.dialect.name == "postgresql":
        with _pg_lock(engine, name) as got:
            yield got
    else:
        with _lease_lock(engine, name, lease_s, renew_every_s) as got:
            yield got
