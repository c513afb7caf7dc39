"""The frame of the stored current offers kept beside the data dir, read back in milliseconds.

Framing 100k stored records (reading them, decoding their JSON, deriving USD figures) takes
seconds and much more memory than the frame; every API replica does it at start and after
each snapshot, and every CLI call on a stored snapshot did. :class:`FileFrameStore` is the
:class:`db.current.FrameStore` that keeps the frame as a zstd-compressed Arrow IPC file in
``<data_dir>/cache/``, named by the digest of

* :func:`db.current.frame_key`: the database, its latest snapshot, the current offers'
  count, each provider's held offers and fetch time, the FX table;
* the columns and types of :data:`pricing.frame.OFFER_SCHEMA` (a new column is a new file);
* :func:`service.sample_cache.code_digest`: the package version and the code that frames.

On an SQLite database a warm load need not even import SQLAlchemy: :func:`sqlite_marker`
reads, with the standard library and read-only, the raw rows that say which offers the file
holds (its migration revision, latest snapshot, current offer count, every provider's
status row), and :meth:`FileFrameStore.read_state` answers from the kept frame and the
provider states kept beside it when that marker is the one they were kept under (a state
is kept only after a full load, at the head revision, under the marker read before it).

A file is never trusted blindly: one that cannot be read, lacks a column of
``OFFER_SCHEMA`` (or has it with another type), ``config_id`` or an offer fact
(:data:`pricing.offer_facts.FACT_COLUMNS`) or has another number of rows than the
database holds is removed and the frame built again. Older ``current-*`` files are removed
when a new one is written; a data dir that cannot be written only costs the time.

The snapshot keeps the same frame in the database too (:class:`DatabaseFrameStore`, table
``kept_frame``, under the key without the URL), so a reader whose data dir holds no file (an
API replica on another host) reads it, on its load's own connection, instead of framing.

Processes that start together (the API's workers, a CLI call beside them) would each frame
the same records, on the same cores, each peaking at several times the frame's memory:
:meth:`FileFrameStore.framing` lets one frame while the others wait, then read what it kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

import polars as pl

from gpuscout.adapters.schema import FxTable
from gpuscout.db.head import VERSION_TABLE, read_sqlite
from gpuscout.db.state import CurrentState, stored_state
from gpuscout.pricing.frame import OFFER_SCHEMA, held_lightly
from gpuscout.pricing.offer_facts import FACT_COLUMNS

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

from .sample_cache import (
    CACHE_DIR,
    code_digest,
    providers_from_json,
    providers_json,
    write_atomically,
)

__all__ = ["DatabaseFrameStore", "FileFrameStore", "sqlite_marker"]

log = logging.getLogger(__name__)

_PREFIX = "current-"
_STATE_PREFIX = "state-"
_LOCK = "framing.lock"
#: How long a load waits for another process's framing before framing the records itself
#: (one that hangs, say on a locked database, must not keep the others from starting).
FRAMING_WAIT_S = 60.0


def _schema_text() -> str:
    return ";".join(f"{name}:{dtype!r}" for name, dtype in OFFER_SCHEMA.items())


def _problem(frame: pl.DataFrame, rows: int) -> str | None:
    """Why ``frame`` is not a whole frame of ``rows`` current offers (``None``: it is)."""
    if frame.height != rows:
        return f"{frame.height} rows, the database holds {rows}"
    schema = frame.schema
    for name, dtype in OFFER_SCHEMA.items():
        if name not in schema:
            return f"no column {name}"
        if schema[name] != dtype:
            return f"column {name} is {schema[name]}, not {dtype}"
    for name in ("config_id", *FACT_COLUMNS):
        if name not in schema:
            return f"no column {name}"
    return None


def sqlite_marker(path: Path, fx: FxTable) -> str | None:
    """A digest of the raw rows saying which current offers the SQLite file at ``path``
    holds, read with :mod:`sqlite3` (read-only), and of ``fx``; ``None`` when it cannot be
    read (no such tables yet, a locked or broken file): the full load then says why."""
    rows = read_sqlite(
        path,
        f"SELECT version_num FROM {VERSION_TABLE}",
        "SELECT * FROM snapshot ORDER BY id DESC LIMIT 1",
        "SELECT count(*) FROM current_offer",
        "SELECT * FROM provider_status ORDER BY provider",
    )
    if rows is None:
        return None
    rates = sorted((k, str(v)) for k, v in fx.units_per_usd.items())
    text = repr([str(path.resolve()), rows, fx.as_of, fx.source, rates])
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _digest(*parts: str) -> str:
    h = hashlib.blake2b(digest_size=12)
    for part in (*parts, _schema_text(), code_digest()):
        h.update(part.encode() + b"\n")
    return h.hexdigest()


def _decoded(data: bytes, rows: int) -> tuple[pl.DataFrame | None, str | None]:
    """The frame in Arrow IPC ``data`` if it is whole (``rows`` rows, every column of
    ``OFFER_SCHEMA``), else why not; its empty columns held lightly, as a frame just made
    holds them (:func:`pricing.frame.held_lightly`: IPC brings each back with full
    buffers)."""
    try:
        frame = pl.read_ipc(data)
        problem = _problem(frame, rows)
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        return None, f"unreadable: {exc}"
    return (held_lightly(frame), None) if problem is None else (None, problem)


class DatabaseFrameStore:
    """The frame kept in the database (:mod:`db.kept_frames`), read and written on
    ``connection``: the load's own, so the frame and the key it is kept under come from one
    transaction (a snapshot that commits meanwhile changes neither). Only the snapshot's
    load ``keep``s: reading must not write, and a replica may hold a read-only role."""

    def __init__(self, connection: Connection, keep: bool = False) -> None:
        self.connection = connection
        self.keep = keep

    def get(self, key: str, rows: int) -> pl.DataFrame | None:
        from gpuscout.db.kept_frames import kept_frame

        data = kept_frame(self.connection, _digest(key))
        if data is None:
            return None
        frame, problem = _decoded(data, rows)
        if problem is not None:
            log.warning("frame kept in the database ignored (%s); framing the offers", problem)
        return frame

    def put(self, key: str, frame: pl.DataFrame) -> None:
        """Keep ``frame`` (the snapshot's load only), in a savepoint: a write that fails (a
        database busy with the next snapshot, say) is logged and costs other hosts' readers
        the framing, never the load nor the frame kept beside the data dir."""
        if not self.keep:
            return
        from sqlalchemy.exc import SQLAlchemyError

        from gpuscout.db.current import latest_snapshot
        from gpuscout.db.kept_frames import keep_frame

        latest = latest_snapshot(self.connection)
        if latest is None:
            return
        buffer = io.BytesIO()
        frame.write_ipc(buffer, compression="zstd")  # ~3 MB for 100k offers, not ~67
        data = buffer.getvalue()
        try:
            with self.connection.begin_nested():
                keep_frame(self.connection, _digest(key), latest[0], frame.height, data)
        except SQLAlchemyError as exc:
            log.warning("frame not kept in the database (readers elsewhere frame): %s", exc)


class FileFrameStore:
    """Frames of the current offers as Arrow IPC files in ``<data_dir>/cache/``."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = data_dir / CACHE_DIR
        #: the file of the frame last read or kept (what :meth:`keep_state` points at)
        self.used: Path | None = None

    @contextlib.contextmanager
    def framing(self, wait_s: float = FRAMING_WAIT_S) -> Iterator[bool]:
        """Hold the data dir's framing lock (an exclusive ``flock``, given back when the
        process ends however it ends) while framing the stored records; says whether it is
        held. Waits up to ``wait_s`` for another holder; where there is no lock to take (no
        ``fcntl``, a data dir that cannot be written and holds no lock file, a file system
        without locks) the caller frames without it. A ``flock`` needs no write access:
        a reader whose data dir is read-only waits for the writer that frames into it."""
        try:
            import fcntl
        except ImportError:  # not on Windows: each process frames for itself
            yield False
            return
        lock = self.directory / _LOCK
        handle: IO[bytes]
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle = lock.open("ab")
        except OSError:
            try:  # a data dir mounted read-only (the API's beside the scheduler's) waits too
                handle = lock.open("rb")
            except OSError:
                yield False
                return
        with handle:
            deadline, held = time.monotonic() + wait_s, False
            while not held:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    held = True
                except BlockingIOError:  # another process frames: wait for what it keeps
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(0.02)
                except OSError:  # a file system without locks
                    break
            if not held:
                log.warning("frame cache lock %s not taken; framing without it", handle.name)
            try:
                yield held
            finally:
                if held:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def path(self, key: str) -> Path:
        return self.directory / f"{_PREFIX}{_digest(key)}.arrow"

    def get(self, key: str, rows: int) -> pl.DataFrame | None:
        return self._read(self.path(key), rows)

    def _read(self, path: Path, rows: int) -> pl.DataFrame | None:
        if not path.is_file():
            return None
        try:
            # read into memory, not mapped: a file changed under a mapping would crash us
            frame, problem = _decoded(path.read_bytes(), rows)
        except OSError as exc:
            frame, problem = None, f"unreadable: {exc}"
        if frame is not None:
            self.used = path
            return frame
        log.warning("frame cache %s ignored (%s); framing the stored offers again", path, problem)
        path.unlink(missing_ok=True)
        return None

    def put(self, key: str, frame: pl.DataFrame) -> None:
        path = self.path(key)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # zstd, as the database's copy: 100k offers are ~4 MB, not ~75 (most columns
            # are empty or repeat), and read back a little faster (69 against 80 ms)
            write_atomically(path, lambda p: frame.write_ipc(p, compression="zstd"))
            self.used = path
            for old in self.directory.glob(f"{_PREFIX}*.arrow"):
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("frame cache not written to %s: %s", self.directory, exc)

    def _state_path(self, marker: str) -> Path:
        return self.directory / f"{_STATE_PREFIX}{_digest(marker)}.json"

    def keep_state(self, marker: str, state: CurrentState) -> None:
        """Keep what :meth:`read_state` needs besides the frame (kept by the load that made
        ``state``), under ``marker`` read before that load."""
        if self.used is None:
            return
        text = json.dumps(
            {
                "frame": self.used.name,
                "rows": state.frame.height,
                "providers": providers_json(state),
                "snapshot_id": state.snapshot_id,
                "snapshot_at": state.snapshot_at.isoformat() if state.snapshot_at else None,
            }
        )
        path = self._state_path(marker)
        try:
            write_atomically(path, lambda p: p.write_text(text, "utf-8"))
            for old in self.directory.glob(f"{_STATE_PREFIX}*.json"):
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("state cache not written to %s: %s", self.directory, exc)

    def read_state(
        self, marker: str, fx: FxTable, now: datetime | None = None
    ) -> CurrentState | None:
        """The state kept under ``marker`` with its frame, or ``None``."""
        path = self._state_path(marker)
        if not path.is_file():
            return None
        try:
            kept = json.loads(path.read_text("utf-8"))
            providers = providers_from_json(kept["providers"])
            frame = self._read(self.directory / str(kept["frame"]), int(kept["rows"]))
            at, snapshot_id = kept["snapshot_at"], kept["snapshot_id"]
            snapshot = (int(snapshot_id), datetime.fromisoformat(at)) if at else None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("state cache %s ignored: %s", path, exc)
            return None
        if frame is None:
            return None
        return stored_state(frame, providers, fx, now or datetime.now(UTC), snapshot)
