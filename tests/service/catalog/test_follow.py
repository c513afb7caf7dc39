"""Following a catalog: same offers, ETag polling, and last-good offers kept, named, when
the catalog is tampered with, signed by another key, of an unknown schema, stale, rolled
back or partial."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from gpuscout.db.current import load_current_offers
from gpuscout.db.current_offers import held_offers
from gpuscout.db.engine import make_engine
from gpuscout.service.catalog.follow import follow_catalog
from gpuscout.service.catalog.manifest import CatalogError, canonical
from gpuscout.service.catalog.publish import publish_catalog
from gpuscout.service.catalog.signing import key_id, sign
from gpuscout.service.fx import fx_table
from gpuscout.service.settings import Settings

from .conftest import PROVIDERS, PUBLISHED_AT, Collector

Follower = Callable[..., Settings]
SOON = PUBLISHED_AT + timedelta(minutes=5)


def _follow(settings: Settings, *, at=SOON):  # type: ignore[no-untyped-def]
    return follow_catalog(settings, now=lambda: at)


def _offers(settings: Settings) -> dict[str, list[object]]:
    engine = make_engine(settings.database_url)
    try:
        _, held = held_offers(engine, fx_table(settings))
    finally:
        engine.dispose()
    return {h.provider: h.offers for h in held if h.offers}


def _states(settings: Settings):  # type: ignore[no-untyped-def]
    engine = make_engine(settings.database_url)
    try:
        return load_current_offers(engine, fx=fx_table(settings)).providers
    finally:
        engine.dispose()


def _resign(catalog: Path, edit: Callable[[dict], None], key: Ed25519PrivateKey) -> None:  # type: ignore[type-arg]
    outer = json.loads((catalog / "manifest.json").read_bytes())
    edit(outer["signed"])
    outer["signature"] = {
        "key_id": key_id(key.public_key()),
        "ed25519": sign(key, canonical(outer["signed"])),
    }
    (catalog / "manifest.json").write_text(json.dumps(outer))


def test_a_follower_holds_the_collectors_offers_field_for_field(
    collector: Collector, follower: Follower
) -> None:
    settings = follower()
    result = _follow(settings)
    assert not result.unchanged and result.error is None
    assert _offers(settings) == _offers(collector.settings)
    states = _states(settings)
    assert sorted(states) == sorted(PROVIDERS)
    assert all(s.origin.value == "sample" and s.error is None for s in states.values())


def test_an_unchanged_catalog_is_not_stored_again(follower: Follower) -> None:
    settings = follower()
    _follow(settings)
    assert _follow(settings).unchanged


def _tamper_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_one_tampered_file_keeps_that_providers_last_good_offers_named(
    collector: Collector, follower: Follower, catalog_copy: Path
) -> None:
    settings = follower()
    _follow(settings)
    before = _offers(settings)
    new = publish_catalog(
        collector.settings, catalog_copy, key_file=collector.key, now=lambda: SOON
    )
    _tamper_byte(catalog_copy / f"{new.manifest.version}/aws.parquet")
    result = _follow(settings, at=SOON + timedelta(minutes=1))
    assert result.error is not None and "aws" in result.error
    states = _states(settings)
    assert states["aws"].stale and "SHA-256 does not match" in (states["aws"].error or "")
    assert states["vastai"].error is None and not states["vastai"].stale
    assert _offers(settings) == before  # aws's last-good offers, the others unchanged
    # the catalog read only in part is read again at the next poll
    assert not _follow(settings, at=SOON + timedelta(minutes=2)).unchanged


@pytest.mark.parametrize("how", ["byte", "field", "other key"])
def test_a_refused_manifest_keeps_every_last_good_offer_named(
    how: str, collector: Collector, follower: Follower, catalog_copy: Path
) -> None:
    settings = follower()
    _follow(settings)
    before = _offers(settings)
    publish_catalog(collector.settings, catalog_copy, key_file=collector.key, now=lambda: SOON)
    manifest = catalog_copy / "manifest.json"
    if how == "byte":
        text = manifest.read_text()
        manifest.write_text(text.replace('"rows": ', '"rows": 1', 1))
    elif how == "field":
        outer = json.loads(manifest.read_bytes())
        outer["signed"]["providers"][0]["rows"] += 1
        manifest.write_text(json.dumps(outer))
    else:
        _resign(catalog_copy, lambda body: None, Ed25519PrivateKey.generate())
    result = _follow(settings, at=SOON + timedelta(minutes=1))
    assert result.error is not None and "signature does not verify" in result.error
    states = _states(settings)
    assert all(s.stale and "signature does not verify" in (s.error or "") for s in states.values())
    assert _offers(settings) == before


def test_an_unknown_schema_version_is_a_clear_error(
    collector: Collector, follower: Follower, catalog_copy: Path
) -> None:
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    key = load_pem_private_key(collector.key.read_bytes(), None)
    assert isinstance(key, Ed25519PrivateKey)
    _resign(catalog_copy, lambda body: body.update(schema_version=99), key)
    with pytest.raises(CatalogError, match="unknown catalog schema version 99"):
        _follow(follower())  # nothing held yet: nothing stored, the error raised


def test_a_stale_catalog_is_refused_and_named(follower: Follower) -> None:
    settings = follower(catalog_max_age_hours=1)
    _follow(settings)
    later = follower(catalog_max_age_hours=1)
    (later.data_dir / "catalog-follow.json").unlink()  # poll it again, a day later
    result = _follow(later, at=PUBLISHED_AT + timedelta(days=1))
    assert result.error is not None and "stale: published 24.0 h ago" in result.error
    assert all(s.stale for s in _states(later).values())


def test_a_rolled_back_catalog_is_refused(
    collector: Collector, follower: Follower, catalog_copy: Path
) -> None:
    settings = follower()
    publish_catalog(collector.settings, catalog_copy, key_file=collector.key, now=lambda: SOON)
    _follow(settings, at=SOON)
    older = sorted(p.name for p in catalog_copy.iterdir() if p.name.startswith("2"))[0]
    (catalog_copy / "manifest.json").write_bytes(
        (catalog_copy / older / "manifest.json").read_bytes()
    )
    result = _follow(settings, at=SOON)
    assert result.error is not None and "older than the one followed" in result.error


def test_a_provider_the_catalog_no_longer_lists_keeps_its_offers_named(
    collector: Collector, follower: Follower, catalog_copy: Path
) -> None:
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    settings = follower()
    _follow(settings)
    key = load_pem_private_key(collector.key.read_bytes(), None)
    assert isinstance(key, Ed25519PrivateKey)

    def drop_lambda(body: dict) -> None:  # type: ignore[type-arg]
        body["providers"] = [p for p in body["providers"] if p["provider"] != "lambda"]
        body["published_at"] = SOON.isoformat()

    _resign(catalog_copy, drop_lambda, key)
    result = _follow(settings, at=SOON)
    assert result.error is not None and "lambda" in result.error
    states = _states(settings)
    assert states["lambda"].stale and "not in the catalog" in (states["lambda"].error or "")
    assert states["lambda"].offer_count > 0
