"""A catalog's manifest: what it holds, from when and whom, and under which terms; signed.

``manifest.json`` is one JSON object ``{"signed": {...}, "signature": {...}}``: the body and
its Ed25519 signature over the body's canonical bytes (:func:`canonical`: keys sorted, no
spaces, UTF-8). The signature travels inside the one file so that replacing the manifest
is one atomic rename: a reader never pairs a new manifest with an old detached signature.

The body names its schema version (:data:`SCHEMA_VERSION`), the snapshot it was published
from and, per provider, the file, its row count and SHA-256, when its offers were captured,
where they come from (a live fetch or the sample) and the source's terms as gpuscout read
them. A reader refuses a schema version it does not know before anything else.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .signing import key_id, sign, verify

__all__ = [
    "MANIFEST_NAME",
    "SCHEMA_VERSION",
    "CatalogError",
    "Manifest",
    "ProviderFile",
    "Withheld",
    "canonical",
    "read_manifest",
    "signed_manifest",
]

#: The manifest's schema version this gpuscout writes and reads.
SCHEMA_VERSION = 1
#: The manifest's file name, at the catalog's root.
MANIFEST_NAME = "manifest.json"


class CatalogError(Exception):
    """A catalog that cannot be followed: unreadable, unsigned, tampered with, of an unknown
    schema, stale or partial. The message names what was wrong and where."""


class ProviderFile(BaseModel):
    """One provider's offers in the catalog."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str
    file: str = Field(description="path of its Parquet file, relative to the catalog's root")
    rows: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)
    captured_at: datetime | None = Field(description="when its offers were fetched")
    origin: Literal["live", "sample"]
    capture_date_known: bool = True
    source: str = Field(description="where the collector got them (the provider's API, ...)")
    terms: str = Field(description="the source's terms as read, and what they allow")


class Withheld(BaseModel):
    """A source the collector holds but did not publish, and why (its terms)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str
    reason: str


class Manifest(BaseModel):
    """The signed body of ``manifest.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int
    version: str = Field(description="the directory of this version's files")
    published_at: datetime
    snapshot_id: int | None
    snapshot_at: datetime | None
    publication: Literal["personal", "public"]
    providers: tuple[ProviderFile, ...]
    withheld: tuple[Withheld, ...] = ()


def canonical(body: dict[str, Any]) -> bytes:
    """The bytes a manifest's signature covers."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def signed_manifest(manifest: Manifest, key: Ed25519PrivateKey) -> bytes:
    """``manifest.json``'s bytes: the body and its signature by ``key``."""
    body = manifest.model_dump(mode="json")
    signature = {"key_id": key_id(key.public_key()), "ed25519": sign(key, canonical(body))}
    return json.dumps({"signed": body, "signature": signature}, indent=1).encode() + b"\n"


def read_manifest(data: bytes, public_key: Ed25519PublicKey, *, where: str) -> Manifest:
    """The manifest in ``data``, checked: its schema version first, then its signature by
    ``public_key``, then its fields. Raises :class:`CatalogError` naming the problem."""
    try:
        outer = json.loads(data)
        body = outer["signed"]
        signature = outer["signature"]
        version = body["schema_version"]
    except (ValueError, KeyError, TypeError) as exc:
        what = f"{type(exc).__name__}: {exc}"
        raise CatalogError(f"{where}: not a catalog manifest ({what})") from None
    if version != SCHEMA_VERSION:
        raise CatalogError(
            f"{where}: unknown catalog schema version {version!r}; this gpuscout reads"
            f" version {SCHEMA_VERSION} (upgrade it to follow this catalog)"
        )
    expected = key_id(public_key)
    signed_by = signature.get("key_id") if isinstance(signature, dict) else None
    value = signature.get("ed25519") if isinstance(signature, dict) else None
    if not isinstance(value, str) or not verify(public_key, canonical(body), value):
        by = f"signed by key {signed_by}" if signed_by != expected else "signed by the key"
        raise CatalogError(
            f"{where}: the manifest's signature does not verify against catalog_public_key"
            f" (key {expected}; manifest {by}): tampered with or signed by another key"
        )
    try:
        return Manifest.model_validate(body)
    except ValidationError as exc:
        raise CatalogError(f"{where}: a malformed manifest: {exc.errors()[0]}") from None
