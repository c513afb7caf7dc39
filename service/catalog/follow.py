"""Following another gpuscout's published catalog: the source ``catalog``.

:class:`CatalogSource` reads a catalog by URL (``http(s)://.../``, polled with
``If-None-Match``) or local path: it checks the manifest's schema version and signature
against the configured public key, then each provider's file against the manifest's size
and SHA-256, and turns each provider's offers into a :class:`~adapters.run.ProviderRun`
(its origin and capture time as the publisher recorded them). A follower needs no
provider account.

:func:`follow_catalog` stores what it read as a snapshot (:func:`service.snapshots.take_snapshot`,
the one way to store one). Nothing it cannot check is stored: a refused manifest (bad
signature, unknown schema, stale, older than the one followed) makes every provider the
follower holds an error run with the reason, so their last-good offers stay, named stale
with that error in ``/v1/providers``; a refused file (tampered, truncated, unreadable)
does the same for its provider alone, and a provider the follower holds that the catalog
no longer lists (a partial catalog) is named so. The manifest's ETag and version are
remembered in ``data_dir/catalog-follow.json`` only once everything was taken, so a
catalog left partly unread is read again at the next poll.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urljoin

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy.engine import Engine

from gpuscout.adapters.run import Origin, ProviderRun, RunStatus
from gpuscout.adapters.schema import FxTable
from gpuscout.db.current_offers import held_providers
from gpuscout.db.engine import make_engine
from gpuscout.db.migrate import upgrade

from ..fx import fx_table
from ..settings import Settings
from .manifest import MANIFEST_NAME, CatalogError, Manifest, ProviderFile, read_manifest
from .offers_file import OffersFileError, offers_from_parquet
from .signing import load_public_key

__all__ = [
    "STATE_FILE",
    "CatalogSource",
    "FollowResult",
    "Polled",
    "follow_catalog",
]

log = logging.getLogger("gpuscout.catalog")

#: Where a follower remembers the manifest it took last (in ``data_dir``).
STATE_FILE = "catalog-follow.json"
#: A file path a manifest may name: ``<version>/<name>.parquet``, nothing above the root.
_FILE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_-][A-Za-z0-9_.-]*\.parquet$")


@dataclasses.dataclass(frozen=True, slots=True)
class Polled:
    """A manifest read: its bytes and validator, or ``None`` bytes when unchanged (304)."""

    data: bytes | None
    etag: str | None


class CatalogSource:
    """One published catalog, by URL or local path, checked against ``public_key``."""

    def __init__(
        self,
        location: str,
        public_key: Ed25519PublicKey,
        *,
        client: httpx.Client | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.location = location
        self.public_key = public_key
        self.remote = location.startswith(("http://", "https://"))
        if self.remote:
            base = location if location.endswith("/") else location + "/"
            self.base = base.removesuffix(MANIFEST_NAME + "/")
            self._own_client = client is None
            self.client = client or httpx.Client(timeout=timeout_s, follow_redirects=True)
        else:
            path = Path(location)
            self.root = path.parent if path.name == MANIFEST_NAME else path

    def close(self) -> None:
        """Close the HTTP client this source made (one given to it stays open)."""
        if self.remote and self._own_client:
            self.client.close()

    def _url(self, name: str) -> str:
        return urljoin(self.base, name)

    def poll(self, etag: str | None = None) -> Polled:
        """The manifest's bytes, or ``Polled(None, etag)`` when it has not changed since
        ``etag`` (an HTTP 304; for a local path, the same content digest)."""
        if not self.remote:
            data = self._read_local(MANIFEST_NAME)
            digest = f'"{hashlib.sha256(data).hexdigest()}"'
            return Polled(None if digest == etag else data, digest)
        headers = {"If-None-Match": etag} if etag else {}
        response = self._get(MANIFEST_NAME, headers)
        if response.status_code == 304:
            return Polled(None, etag)
        return Polled(response.content, response.headers.get("ETag"))

    def manifest(self, data: bytes) -> Manifest:
        return read_manifest(data, self.public_key, where=f"catalog {self.location}")

    def file(self, entry: ProviderFile) -> bytes:
        """A provider's file, checked against the manifest's size and SHA-256."""
        if not _FILE.match(entry.file):
            raise CatalogError(f"{entry.file!r} is not a catalog file path")
        data = self._read_local(entry.file) if not self.remote else self._get(entry.file).content
        if len(data) != entry.bytes or hashlib.sha256(data).hexdigest() != entry.sha256:
            raise CatalogError(
                f"{entry.file}: {len(data)} bytes whose SHA-256 does not match the manifest's"
                f" ({entry.bytes} bytes): tampered with, truncated or replaced"
            )
        return data

    def _read_local(self, name: str) -> bytes:
        try:
            return (self.root / name).read_bytes()
        except OSError as exc:
            raise CatalogError(f"catalog {self.location}: {name}: {exc.strerror}") from None

    def _get(self, name: str, headers: dict[str, str] | None = None) -> httpx.Response:
        url = self._url(name)
        try:
            response = self.client.get(url, headers=headers)
        except httpx.HTTPError as exc:
            raise CatalogError(f"{url}: {type(exc).__name__}: {exc}") from None
        if response.status_code not in (200, 304):
            raise CatalogError(f"{url}: HTTP {response.status_code}")
        return response

    def runs(self, manifest: Manifest, fx: FxTable) -> list[ProviderRun]:
        """Each provider's run: its offers, or an error run naming why its file was refused."""
        runs = []
        for entry in manifest.providers:
            started = entry.captured_at or manifest.published_at
            began = time.perf_counter()
            try:
                offers = offers_from_parquet(self.file(entry), fx=fx)
                if len(offers) != entry.rows:
                    raise CatalogError(f"{entry.file}: {len(offers)} rows, manifest {entry.rows}")
                wrong = {o.provider for o in offers} - {entry.provider}
                if wrong:
                    raise CatalogError(f"{entry.file}: offers of {', '.join(sorted(wrong))}")
            except (CatalogError, OffersFileError) as exc:
                runs.append(_error_run(entry.provider, f"catalog {self.location}: {exc}"))
                continue
            runs.append(
                ProviderRun(
                    entry.provider,
                    RunStatus.OK,
                    started,
                    time.perf_counter() - began,
                    offers=offers,
                    origin=Origin(entry.origin),
                    capture_date_known=entry.capture_date_known,
                )
            )
        return runs


def _error_run(provider: str, error: str) -> ProviderRun:
    return ProviderRun(provider, RunStatus.ERROR, datetime.now(UTC), 0.0, error=error)


@dataclasses.dataclass(frozen=True, slots=True)
class FollowResult:
    """One poll: ``unchanged`` (304), or the runs stored (``error`` when some or all of
    the catalog was refused, and why)."""

    unchanged: bool
    runs: tuple[ProviderRun, ...] = ()
    error: str | None = None
    manifest: Manifest | None = None

    @property
    def offer_count(self) -> int:
        return sum(run.offer_count for run in self.runs)


def _state_path(settings: Settings) -> Path:
    return settings.data_dir / STATE_FILE


def _read_state(settings: Settings) -> dict[str, str]:
    try:
        state = json.loads(_state_path(settings).read_text())
    except (OSError, ValueError):
        return {}
    same = isinstance(state, dict) and state.get("catalog_url") == settings.catalog_url
    return state if same else {}


def _write_state(settings: Settings, etag: str | None, manifest: Manifest) -> None:
    path = _state_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "catalog_url": settings.catalog_url,
        "etag": etag,
        "version": manifest.version,
        "published_at": manifest.published_at.isoformat(),
    }
    pending = path.with_suffix(".tmp")
    pending.write_text(json.dumps(state, indent=1))
    pending.replace(path)


def source_of(settings: Settings, client: httpx.Client | None = None) -> CatalogSource:
    """The catalog ``catalog_url`` names, checked with ``catalog_public_key``."""
    if not settings.catalog_url or not settings.catalog_public_key:
        raise ValueError("no catalog to follow: set GPUSCOUT_CATALOG_URL and its public key")
    key = load_public_key(settings.catalog_public_key)
    return CatalogSource(
        settings.catalog_url, key, client=client, timeout_s=settings.http_timeout_s
    )


def _utc_now() -> datetime:
    return datetime.now(UTC)


def follow_catalog(
    settings: Settings,
    *,
    engine: Engine | None = None,
    client: httpx.Client | None = None,
    now: Callable[[], datetime] = _utc_now,
) -> FollowResult:
    """Poll the followed catalog once and store what it holds as a snapshot.

    Returns ``unchanged`` without storing anything when the manifest has not changed.
    A catalog refused whole stores an error run for each provider held (their last-good
    offers kept); with none held yet, raises :class:`CatalogError`.
    """
    source = source_of(settings, client)
    own = engine is None
    engine = engine or make_engine(settings.database_url)
    try:
        return _follow(settings, source, engine, now)
    finally:
        source.close()
        if own:
            engine.dispose()


def _follow(
    settings: Settings, source: CatalogSource, engine: Engine, now: Callable[[], datetime]
) -> FollowResult:
    from ..snapshots import take_snapshot

    upgrade(engine)
    state = _read_state(settings)
    fx = fx_table(settings)
    error: str | None = None
    manifest: Manifest | None = None
    polled = Polled(None, None)
    try:
        polled = source.poll(state.get("etag"))
        if polled.data is None:
            return FollowResult(unchanged=True)
        manifest = source.manifest(polled.data)
        _check_age(settings, manifest, state, now())
    except CatalogError as exc:
        error = str(exc)
    held = held_providers(engine)

    def fetch() -> Sequence[ProviderRun]:
        if manifest is None or error is not None:
            return [_error_run(name, error or "") for name in sorted(held)]
        runs = source.runs(manifest, fx)
        listed = {entry.provider for entry in manifest.providers}
        gone = {w.provider: w.reason for w in manifest.withheld}
        for name in sorted(set(held) - listed):
            why = gone.get(name, "not in the catalog (a partial catalog?)")
            runs.append(_error_run(name, f"catalog {source.location}: {name}: {why}"))
        return runs

    if error is not None and not held:
        raise CatalogError(error)
    result = take_snapshot(settings, fetch=fetch, engine=engine, now=now)
    failed = [r for r in result.runs if r.status is RunStatus.ERROR]
    if error is None and manifest is not None and not failed:
        _write_state(settings, polled.etag, manifest)
    if error is None and failed:
        error = "; ".join(f"{r.provider}: {r.error}" for r in failed[:3])
    if error is not None:
        log.warning("%s", error)
    return FollowResult(False, result.runs, error, manifest)


def _check_age(
    settings: Settings, manifest: Manifest, state: dict[str, str], now: datetime
) -> None:
    """Refuse a stale catalog, and one older than the catalog followed last (a rollback)."""
    age = now - manifest.published_at
    if age > timedelta(hours=settings.catalog_max_age_hours):
        hours = age.total_seconds() / 3600
        raise CatalogError(
            f"catalog {settings.catalog_url}: stale: published {hours:.1f} h ago"
            f" ({manifest.published_at.isoformat()}), more than catalog_max_age_hours"
            f" = {settings.catalog_max_age_hours:g}"
        )
    followed = state.get("published_at")
    if followed and manifest.published_at < datetime.fromisoformat(followed):
        raise CatalogError(
            f"catalog {settings.catalog_url}: version {manifest.version} is older than the"
            f" one followed ({state.get('version')}): refused (a rolled-back catalog)"
        )
