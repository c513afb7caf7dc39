"""The manifest's signature, schema version and keys."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from gpuscout.service.catalog.manifest import (
    SCHEMA_VERSION,
    CatalogError,
    Manifest,
    canonical,
    read_manifest,
    signed_manifest,
)
from gpuscout.service.catalog.signing import (
    CatalogKeyError,
    generate_key,
    key_id,
    load_private_key,
    load_public_key,
    public_pem,
    sign,
)

AT = datetime(2026, 12, 1, tzinfo=UTC)


def _manifest() -> Manifest:
    return Manifest(
        schema_version=SCHEMA_VERSION,
        version="20261201T000000000000Z",
        published_at=AT,
        snapshot_id=1,
        snapshot_at=AT,
        publication="personal",
        providers=(),
    )


def test_a_signed_manifest_reads_back_with_its_key() -> None:
    key = Ed25519PrivateKey.generate()
    data = signed_manifest(_manifest(), key)
    assert read_manifest(data, key.public_key(), where="here") == _manifest()
    assert json.loads(data)["signature"]["key_id"] == key_id(key.public_key())


def test_another_key_is_refused_and_both_keys_named() -> None:
    ours, theirs = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    data = signed_manifest(_manifest(), theirs)
    with pytest.raises(CatalogError, match="signature does not verify") as caught:
        read_manifest(data, ours.public_key(), where="catalog x")
    assert key_id(ours.public_key()) in str(caught.value)
    assert key_id(theirs.public_key()) in str(caught.value)


def test_a_changed_field_breaks_the_signature() -> None:
    key = Ed25519PrivateKey.generate()
    outer = json.loads(signed_manifest(_manifest(), key))
    outer["signed"]["snapshot_id"] = 2
    with pytest.raises(CatalogError, match="tampered with"):
        read_manifest(json.dumps(outer).encode(), key.public_key(), where="x")


def test_an_unknown_schema_version_is_refused_before_anything_else() -> None:
    key = Ed25519PrivateKey.generate()
    body = {"schema_version": SCHEMA_VERSION + 1, "anything": "new"}
    signature = {"key_id": key_id(key.public_key()), "ed25519": sign(key, canonical(body))}
    data = json.dumps({"signed": body, "signature": signature}).encode()
    with pytest.raises(CatalogError, match=f"unknown catalog schema version {SCHEMA_VERSION + 1}"):
        read_manifest(data, Ed25519PrivateKey.generate().public_key(), where="x")


def test_not_a_manifest_is_named() -> None:
    key = Ed25519PrivateKey.generate()
    with pytest.raises(CatalogError, match="not a catalog manifest"):
        read_manifest(b"<html>", key.public_key(), where="x")


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(
    tmp_path: Path,
) -> None:
    private, public = generate_key(tmp_path / "k.pem")
    assert private.stat().st_mode & 0o777 == 0o600
    key = load_private_key(private)
    pem = public.read_text()
    assert key_id(load_public_key(pem)) == key_id(key.public_key())
    assert key_id(load_public_key(str(public))) == key_id(key.public_key())
    assert public_pem(key.public_key()).decode() == pem
    with pytest.raises(FileExistsError):
        generate_key(private)


def test_a_public_key_that_is_not_one_is_named() -> None:
    with pytest.raises(CatalogKeyError, match="not an Ed25519 public key"):
        load_public_key("not a key")
