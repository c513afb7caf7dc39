"""A collector with a snapshot of part of the offline sample, its key and a published
catalog, made once; each test that changes a catalog gets its own copy."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuscout.adapters.sample import replay_sample
from gpuscout.service.catalog.publish import publish_catalog
from gpuscout.service.catalog.signing import generate_key
from gpuscout.service.settings import Settings
from gpuscout.service.snapshots import take_snapshot

#: Providers of the sample the collector snapshots: a marketplace and three clouds.
PROVIDERS = ("vastai", "aws", "lambda", "digitalocean")
#: When the tests' catalogs are published and followed.
PUBLISHED_AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def settings_of(data_dir: Path, **values: object) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir, **values)  # type: ignore[call-arg]


@dataclass(frozen=True)
class Collector:
    settings: Settings
    key: Path
    public_key: Path
    catalog: Path


@pytest.fixture(scope="session")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Collector:
    root = tmp_path_factory.mktemp("collector")
    settings = settings_of(root / "data")
    take_snapshot(settings, fetch=lambda: replay_sample(PROVIDERS))
    key, public = generate_key(root / "key.pem")
    publish_catalog(settings, root / "catalog", key_file=key, now=lambda: PUBLISHED_AT)
    return Collector(settings, key, public, root / "catalog")


@pytest.fixture
def catalog_copy(collector: Collector, tmp_path: Path) -> Path:
    """A copy of the collector's catalog this test may tamper with."""
    copy = tmp_path / "catalog"
    shutil.copytree(collector.catalog, copy, symlinks=True)
    return copy


@pytest.fixture
def follower(collector: Collector, catalog_copy: Path, tmp_path: Path) -> Callable[..., Settings]:
    """Settings of a follower of ``catalog_copy`` (no provider configured), with overrides."""

    def make(**values: object) -> Settings:
        base: dict[str, object] = {
            "catalog_url": str(catalog_copy),
            "catalog_public_key": str(collector.public_key),
        }
        return settings_of(tmp_path / "follower", **(base | values))

    return make
