"""``gpuscout publish``: the current snapshot as a catalog of static files.

A catalog directory holds one directory per version (``<version>/<provider>.parquet`` and a
copy of its manifest), ``manifest.json`` at the root naming the newest version, and
``latest``, a symbolic link to that version's directory, for people and ``rsync``.

Writes are atomic: a version's files are written and flushed to disk in a hidden directory
renamed into place whole; then ``manifest.json`` is replaced by one rename (its signature
inside it, :mod:`.manifest`). A reader therefore sees the previous catalog or the new one,
never half of one; a reader that fetched the previous manifest still finds its files,
because the ``publish_keep_versions`` newest versions are kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import Engine

from gpuscout.adapters import registry
from gpuscout.adapters.source_terms import terms_of
from gpuscout.db.current_offers import HeldProvider, held_offers
from gpuscout.db.engine import make_engine
from gpuscout.db.migrate import upgrade_if_behind

from ..fx import fx_table
from ..publication import withheld
from ..settings import Settings
from .manifest import MANIFEST_NAME, SCHEMA_VERSION, Manifest, ProviderFile, Withheld
from .manifest import signed_manifest as sign_manifest
from .offers_file import offers_to_parquet
from .signing import CatalogKeyError, load_private_key

__all__ = [
    "LATEST",
    "NothingToPublish",
    "PublishResult",
    "key_path",
    "publish_catalog",
    "write_catalog",
]

#: The symbolic link to the newest version's directory.
LATEST = "latest"
#: A version's directory name: the UTC publication time, sortable.
_VERSION = re.compile(r"^\d{8}T\d{12}Z$")


class NothingToPublish(Exception):
    """No snapshot is stored: there is no catalog to write."""


@dataclasses.dataclass(frozen=True, slots=True)
class PublishResult:
    directory: Path
    manifest: Manifest
    removed: tuple[str, ...]
    """older versions removed (beyond ``publish_keep_versions``)"""

    @property
    def offer_count(self) -> int:
        return sum(p.rows for p in self.manifest.providers)

    @property
    def total_bytes(self) -> int:
        return sum(p.bytes for p in self.manifest.providers)


def key_path(settings: Settings) -> Path:
    """The signing key's file: ``publish_key_file``, else ``data_dir/catalog-key.pem``."""
    return settings.publish_key_file or settings.data_dir / "catalog-key.pem"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _source(held: HeldProvider) -> str:
    cls = registry().get(held.provider)
    title = cls.title if cls is not None else held.provider
    if held.origin.value == "sample":
        return f"{title}: gpuscout's offline sample (recorded responses), not a live fetch"
    return f"{title}: fetched by the publisher's gpuscout"


def publish_catalog(
    settings: Settings,
    directory: Path | None = None,
    *,
    key_file: Path | None = None,
    engine: Engine | None = None,
    now: Callable[[], datetime] = _utc_now,
) -> PublishResult:
    """Write the current snapshot's offers into ``directory`` (default ``publish_dir``) as
    a new catalog version, signed with ``key_file`` (default :func:`key_path`).

    Under ``publication = "public"`` the sources whose terms do not allow republishing are
    left out and listed in the manifest's ``withheld`` with the reason. Raises
    :class:`NothingToPublish` when no snapshot is stored, :class:`CatalogKeyError` for a
    missing or unreadable key.
    """
    directory = directory or settings.publish_dir
    if directory is None:
        raise ValueError("no catalog directory: give DIR or set GPUSCOUT_PUBLISH_DIR")
    key_file = key_file or key_path(settings)
    if not key_file.is_file():
        raise CatalogKeyError(f"no signing key at {key_file}: make one with `gpuscout keygen`")
    key = load_private_key(key_file)
    own = engine is None
    engine = engine or make_engine(settings.database_url)
    try:
        upgrade_if_behind(engine)  # a database never migrated holds no snapshot: say so
        latest, held = held_offers(engine, fx_table(settings))
    finally:
        if own:
            engine.dispose()
    if latest is None:
        raise NothingToPublish("no snapshot is stored: take one first (`gpuscout snapshot`)")
    holding = [h for h in held if h.offers]
    out = withheld(settings, (h.provider for h in holding))
    published_at = now()
    version = published_at.strftime("%Y%m%dT%H%M%S%fZ")
    files: dict[str, bytes] = {}
    entries = []
    for h in holding:
        if h.provider in out:
            continue
        data = offers_to_parquet(h.offers)
        name = f"{version}/{h.provider}.parquet"
        files[name] = data
        entries.append(
            ProviderFile(
                provider=h.provider,
                file=name,
                rows=len(h.offers),
                sha256=hashlib.sha256(data).hexdigest(),
                bytes=len(data),
                captured_at=h.fetched_at,
                origin=h.origin.value,
                capture_date_known=h.capture_date_known,
                source=_source(h),
                terms=terms_of(h.provider).summary(),
            )
        )
    manifest = Manifest(
        schema_version=SCHEMA_VERSION,
        version=version,
        published_at=published_at,
        snapshot_id=latest[0],
        snapshot_at=latest[1],
        publication=settings.publication,
        providers=tuple(entries),
        withheld=tuple(Withheld(provider=p, reason=r) for p, r in out.items()),
    )
    removed = write_catalog(
        directory, version, files, sign_manifest(manifest, key), settings.publish_keep_versions
    )
    return PublishResult(directory, manifest, removed)


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_catalog(
    directory: Path, version: str, files: Mapping[str, bytes], manifest: bytes, keep: int
) -> tuple[str, ...]:
    """Write one catalog version atomically and make it the newest; keep the ``keep``
    newest versions. ``files`` are keyed by their path under ``directory``
    (``<version>/<name>``). Returns the versions removed."""
    directory.mkdir(parents=True, exist_ok=True)
    staging = directory / f".{version}.tmp"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    for name, data in files.items():
        head, _, leaf = name.partition("/")
        if head != version or not leaf or "/" in leaf or leaf.startswith("."):
            raise ValueError(f"catalog file {name!r} is not <version>/<name>")
        _write_synced(staging / leaf, data)
    _write_synced(staging / MANIFEST_NAME, manifest)
    _sync_dir(staging)
    final = directory / version
    if final.exists():  # the same version again (a mirror re-following it): replace it
        shutil.rmtree(final)
    os.rename(staging, final)
    _sync_dir(directory)
    pending = directory / f".{MANIFEST_NAME}.tmp"
    _write_synced(pending, manifest)
    os.replace(pending, directory / MANIFEST_NAME)
    link = directory / f".{LATEST}.tmp"
    if link.is_symlink() or link.exists():
        link.unlink()
    os.symlink(version, link)
    os.replace(link, directory / LATEST)
    _sync_dir(directory)
    return _prune(directory, keep, version)


def _prune(directory: Path, keep: int, newest: str) -> tuple[str, ...]:
    versions = sorted(
        (p.name for p in directory.iterdir() if p.is_dir() and _VERSION.match(p.name)),
        reverse=True,
    )
    old = [v for v in versions[keep:] if v != newest]
    for name in old:
        shutil.rmtree(directory / name, ignore_errors=True)
    return tuple(old)
