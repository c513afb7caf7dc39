"""The frame of the stored current offers kept beside the data dir, read back in milliseconds.

Framing 100k stored records (reading them, decoding their JSON, deriving USD figures) takes
seconds and much more memory than the frame; every API replica does it at start and after
each snapshot, and every CLI call on a stored snapshot did. :class:`FileFrameStore` is the
:class:`db.current.FrameStore` that keeps the frame as an Arrow IPC file in
``<data_dir>/cache/``, named by the digest of

* :func:`db.current.frame_key`: the database, its latest snapshot, the current offers'
  count, each provider's held offers and fetch time, the FX table;
* the columns and types of :data:`pricing.frame.OFFER_SCHEMA` (a new column is a new file);
* :func:`service.sample_cache.code_digest`: the package version and the code that frames.

A file is never trusted blindly: one that cannot be read, lacks a column of
``OFFER_SCHEMA`` (or has it with another type) or has another number of rows than the
database holds is removed and the frame built again. Older ``current-*`` files are removed
when a new one is written; a data dir that cannot be written only costs the time.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import polars as pl

from pricing.frame import OFFER_SCHEMA

from .sample_cache import CACHE_DIR, code_digest, write_atomically

__all__ = ["FileFrameStore"]

log = logging.getLogger(__name__)

_PREFIX = "current-"


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
    return None if "config_id" in schema else "no column config_id"


class FileFrameStore:
    """Frames of the current offers as Arrow IPC files in ``<data_dir>/cache/``."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = data_dir / CACHE_DIR

    def path(self, key: str) -> Path:
        h = hashlib.blake2b(digest_size=12)
        for part in (key, _schema_text(), code_digest()):
            h.update(part.encode() + b"\n")
        return self.directory / f"{_PREFIX}{h.hexdigest()}.arrow"

    def get(self, key: str, rows: int) -> pl.DataFrame | None:
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            # read into memory, not mapped: a file changed under a mapping would crash us
            frame = pl.read_ipc(path.read_bytes())
            problem = _problem(frame, rows)
        except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
            problem = f"unreadable: {exc}"
        if problem is None:
            return frame
        log.warning("frame cache %s ignored (%s); framing the stored offers again", path, problem)
        path.unlink(missing_ok=True)
        return None

    def put(self, key: str, frame: pl.DataFrame) -> None:
        path = self.path(key)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            write_atomically(path, lambda p: frame.write_ipc(p))
            for old in self.directory.glob(f"{_PREFIX}*.arrow"):
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("frame cache not written to %s: %s", self.directory, exc)
