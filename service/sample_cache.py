"""The offline sample parsed once: its state kept beside the data dir, read back in milliseconds.

Replaying the sample runs every sampled adapter's parse over its recorded responses (about
a third of a second, and the adapters' imports with it). The result depends only on those
files, the code that parses and frames them, and the FX table, so :func:`cached_sample`
keeps it in ``<data_dir>/cache/``: the frame as an Arrow IPC file and each provider's
outcome as JSON, under a name that is the digest of

* the package version and the sample manifest's bytes (a new release or a new sample), and
* the size and modification time of every file under ``adapters/`` and ``pricing/`` and of
  ``db/current.py`` (:func:`db.current.code_digest`: code or data files changed in a
  working copy, no stale frame while developing), and
* the FX table (other rates, other USD figures).

Anything else in the cache directory named ``sample-*`` is an older state and is removed
when a new one is written. A cache that cannot be written (read-only data dir) or read
(a truncated file) is parsed again: the cache only ever saves time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from gpuscout.adapters.run import Origin, RunStatus
from gpuscout.adapters.schema import FxTable
from gpuscout.adapters.skip_summary import SkipSummary
from gpuscout.db.current import CurrentState, ProviderState, code_digest, database_note

__all__ = [
    "CACHE_DIR",
    "cache_key",
    "cached_sample",
    "providers_from_json",
    "providers_json",
    "write_atomically",
]

log = logging.getLogger(__name__)

#: The cache's directory under the data dir.
CACHE_DIR = "cache"


def cache_key(fx: FxTable, manifest: bytes) -> str:
    """The digest naming the sample's state for these inputs (see the module doc)."""
    h = hashlib.blake2b(digest_size=12)
    h.update(code_digest().encode())
    h.update(manifest)
    rates = sorted((k, str(v)) for k, v in fx.units_per_usd.items())
    h.update(json.dumps([fx.as_of, fx.source, rates]).encode())
    return h.hexdigest()


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def providers_json(state: CurrentState) -> str:
    """Each provider's state as JSON text (read back by :func:`providers_from_json`)."""
    return json.dumps(
        [
            {
                "provider": p.provider,
                "last_status": p.last_status.value,
                "offer_count": p.offer_count,
                "fetched_at": p.fetched_at.isoformat() if p.fetched_at else None,
                "last_attempt_at": p.last_attempt_at.isoformat() if p.last_attempt_at else None,
                "error": p.error,
                "origin": p.origin.value,
                "capture_date_known": p.capture_date_known,
                "skipped": None if p.skipped is None else p.skipped.as_dict(),
            }
            for p in state.providers.values()
        ]
    )


def providers_from_json(text: str) -> dict[str, ProviderState]:
    rows: list[dict[str, Any]] = json.loads(text)
    return {
        r["provider"]: ProviderState(
            provider=r["provider"],
            last_status=RunStatus(r["last_status"]),
            offer_count=int(r["offer_count"]),
            fetched_at=_when(r["fetched_at"]),
            last_attempt_at=_when(r["last_attempt_at"]),
            error=r["error"],
            origin=Origin(r["origin"]),
            capture_date_known=bool(r["capture_date_known"]),
            skipped=SkipSummary.from_dict(r["skipped"]) if r.get("skipped") else None,
        )
        for r in rows
    }


def _read(frame_path: Path, providers_path: Path) -> tuple[pl.DataFrame, dict[str, ProviderState]]:
    return pl.read_ipc(frame_path), providers_from_json(providers_path.read_text("utf-8"))


def write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _store(directory: Path, key: str, state: CurrentState) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    frame_path, providers_path = _paths(directory, key)
    # the providers first: a frame file present means both are complete
    write_atomically(providers_path, lambda p: p.write_text(providers_json(state), "utf-8"))
    write_atomically(frame_path, lambda p: state.frame.write_ipc(p))
    for old in directory.glob("sample-*"):
        if old.stem != f"sample-{key}":
            old.unlink(missing_ok=True)


def _paths(directory: Path, key: str) -> tuple[Path, Path]:
    return directory / f"sample-{key}.arrow", directory / f"sample-{key}.json"


def cached_sample(
    data_dir: Path,
    fx: FxTable,
    *,
    manifest: bytes,
    parse: Callable[[], CurrentState],
    now: datetime | None = None,
) -> CurrentState:
    """The sample's state from the cache under ``data_dir``, else ``parse()`` and keep it.

    ``manifest`` is the sample manifest's bytes (part of the key). A cached state's note
    is made from its providers' capture dates, as the parsed state's is: the same note
    whether parsed or read back (a catalog's entry dates the providers it recorded).
    """
    directory = data_dir / CACHE_DIR
    key = cache_key(fx, manifest)
    frame_path, providers_path = _paths(directory, key)
    if frame_path.is_file() and providers_path.is_file():
        try:
            frame, providers = _read(frame_path, providers_path)
        except (OSError, ValueError, KeyError, pl.exceptions.PolarsError) as exc:
            log.warning("sample cache %s unreadable, parsing again: %s", frame_path, exc)
        else:
            loaded_at = now or datetime.now(UTC)
            return CurrentState(
                frame=frame,
                providers=providers,
                source="sample",
                fx=fx,
                loaded_at=loaded_at,
                note=database_note(providers, loaded_at),
                # the cache keeps the frame, not every field: parse again if asked
                count_fields=lambda: parse().field_coverage or {},
            )
    state = parse()
    try:
        _store(directory, key, state)
    except OSError as exc:
        log.warning("sample cache not written to %s: %s", directory, exc)
    return state
