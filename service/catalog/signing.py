"""Ed25519 keys and signatures of a catalog's manifest (``cryptography``).

A publisher signs the canonical bytes of the manifest's body with its private key; a
follower holds the publisher's public key (a setting) and refuses a manifest that does not
verify. Keys are written as PEM (PKCS#8 private, SubjectPublicKeyInfo public) so ``openssl``
reads them too; a key's id is the first 16 hex digits of the SHA-256 of its raw public
bytes, named in the manifest so a follower says which key signed what it refused.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "CatalogKeyError",
    "generate_key",
    "key_id",
    "load_private_key",
    "load_public_key",
    "public_pem",
    "sign",
    "verify",
]


class CatalogKeyError(ValueError):
    """A key file or key text that is not an Ed25519 key of the expected kind."""


def generate_key(private_path: Path) -> tuple[Path, Path]:
    """Write a new Ed25519 key pair: ``private_path`` (mode 0600) and ``<it>.pub`` beside it.

    Refuses to overwrite an existing private key (a publisher's followers trust it).
    """
    public_path = private_path.with_name(private_path.name + ".pub")
    if private_path.exists():
        raise FileExistsError(
            errno.EEXIST, "a key is there already; not overwritten", str(private_path)
        )
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    private_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(private_pem)
    public_path.write_bytes(public_pem(key.public_key()))
    return private_path, public_path


def public_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in the PEM file ``path``."""
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise CatalogKeyError(f"{path}: not a PEM private key without passphrase ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise CatalogKeyError(f"{path}: not an Ed25519 key ({type(key).__name__})")
    return key


def load_public_key(text: str) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM text, a path to a PEM file, or the raw key in base64."""
    data = text.strip()
    if not data.startswith("-----BEGIN") and len(data) != 44 and Path(data).is_file():
        data = Path(data).read_text().strip()
    try:
        if data.startswith("-----BEGIN"):
            key = serialization.load_pem_public_key(data.encode())
        else:
            key = Ed25519PublicKey.from_public_bytes(base64.b64decode(data, validate=True))
    except (ValueError, TypeError) as exc:
        raise CatalogKeyError(
            f"not an Ed25519 public key (PEM, a PEM file or base64): {exc}"
        ) from None
    if not isinstance(key, Ed25519PublicKey):
        raise CatalogKeyError(f"not an Ed25519 public key ({type(key).__name__})")
    return key


def key_id(key: Ed25519PublicKey) -> str:
    """A short id of the public key: 16 hex digits of the SHA-256 of its raw bytes."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign(key: Ed25519PrivateKey, message: bytes) -> str:
    """The signature of ``message``, base64."""
    return base64.b64encode(key.sign(message)).decode()


def verify(key: Ed25519PublicKey, message: bytes, signature: str) -> bool:
    """Whether ``signature`` (base64) is ``key``'s signature of ``message``."""
    try:
        key.verify(base64.b64decode(signature, validate=True), message)
    except (InvalidSignature, ValueError):
        return False
    return True
