"""``publish_catalog``: files, hashes, atomic versions, kept versions, withheld sources."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path

import pytest

from gpuscout.adapters import source_terms
from gpuscout.adapters.source_terms import Permission, SourceTerms
from gpuscout.service.catalog.manifest import read_manifest
from gpuscout.service.catalog.offers_file import offers_from_parquet
from gpuscout.service.catalog.publish import NothingToPublish, publish_catalog
from gpuscout.service.catalog.signing import CatalogKeyError, load_public_key

from .conftest import PROVIDERS, PUBLISHED_AT, Collector, settings_of


def _manifest_of(collector: Collector, directory: Path):  # type: ignore[no-untyped-def]
    key = load_public_key(str(collector.public_key))
    return read_manifest((directory / "manifest.json").read_bytes(), key, where="test")


def test_every_provider_file_matches_its_manifest_entry(collector: Collector) -> None:
    manifest = _manifest_of(collector, collector.catalog)
    assert sorted(p.provider for p in manifest.providers) == sorted(PROVIDERS)
    assert manifest.published_at == PUBLISHED_AT and manifest.snapshot_id == 1
    for entry in manifest.providers:
        data = (collector.catalog / entry.file).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry.sha256 and len(data) == entry.bytes
        offers = offers_from_parquet(data)
        assert len(offers) == entry.rows > 0
        assert {o.provider for o in offers} == {entry.provider}
        assert entry.origin == "sample" and "terms" not in entry.terms.split(":")[0]
    vastai = next(p for p in manifest.providers if p.provider == "vastai")
    assert "republishing: no" in vastai.terms


def test_latest_points_at_the_version_the_manifest_names(collector: Collector) -> None:
    manifest = _manifest_of(collector, collector.catalog)
    assert (collector.catalog / "latest").resolve() == (collector.catalog / manifest.version)
    copy = (collector.catalog / manifest.version / "manifest.json").read_bytes()
    assert copy == (collector.catalog / "manifest.json").read_bytes()


def test_older_versions_are_kept_n_deep(collector: Collector, catalog_copy: Path) -> None:
    settings = settings_of(collector.settings.data_dir, publish_keep_versions=2)
    removed = []
    for hour in range(1, 4):
        result = publish_catalog(
            settings,
            catalog_copy,
            key_file=collector.key,
            now=lambda hour=hour: PUBLISHED_AT + timedelta(hours=hour),  # type: ignore[misc]
        )
        removed.extend(result.removed)
    versions = sorted(p.name for p in catalog_copy.iterdir() if p.is_dir() and p.name[0] == "2")
    assert len(versions) == 2 and len(removed) == 2
    assert (
        json.loads((catalog_copy / "manifest.json").read_bytes())["signed"]["version"]
        == (versions[-1])
    )
    assert not [p for p in catalog_copy.iterdir() if p.name.startswith(".")]  # no leftovers


def test_nothing_stored_is_nothing_to_publish(collector: Collector, tmp_path: Path) -> None:
    with pytest.raises(NothingToPublish, match="no snapshot"):
        publish_catalog(settings_of(tmp_path), tmp_path / "c", key_file=collector.key)
    assert not (tmp_path / "c").exists()


def test_a_missing_key_says_how_to_make_one(collector: Collector, tmp_path: Path) -> None:
    with pytest.raises(CatalogKeyError, match="gpuscout keygen"):
        publish_catalog(collector.settings, tmp_path / "c", key_file=tmp_path / "none.pem")


@pytest.fixture
def aws_allows_republishing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terms table in which AWS's terms say yes to republishing (the shipped table has
    read no such clause), so a public catalog has something to publish."""
    table = dict(source_terms.terms_table())
    table["aws"] = SourceTerms("aws", republishing=Permission.YES, source="test")
    monkeypatch.setattr(source_terms, "terms_table", lambda: table)


@pytest.mark.usefixtures("aws_allows_republishing")
def test_public_publishes_only_sources_whose_terms_say_yes(
    collector: Collector, tmp_path: Path
) -> None:
    settings = settings_of(collector.settings.data_dir, publication="public")
    result = publish_catalog(settings, tmp_path / "c", key_file=collector.key)
    manifest = result.manifest
    assert [p.provider for p in manifest.providers] == ["aws"]
    reasons = {w.provider: w.reason for w in manifest.withheld}
    assert set(reasons) == set(PROVIDERS) - {"aws"}
    assert "forbid republishing" in reasons["vastai"]
    assert "pricing-comparison service" in reasons["vastai"]
    assert "not been read" in reasons["lambda"]
    assert not list((tmp_path / "c" / manifest.version).glob("vastai*"))


def test_a_catalog_published_from_either_database_follows_field_for_field(
    db_url: str, collector: Collector, tmp_path: Path
) -> None:
    """Published from SQLite or PostgreSQL, followed into SQLite: the same offers."""
    from gpuscout.adapters.sample import replay_sample
    from gpuscout.db.current_offers import held_offers
    from gpuscout.db.engine import make_engine
    from gpuscout.service.catalog.follow import follow_catalog
    from gpuscout.service.fx import fx_table
    from gpuscout.service.snapshots import take_snapshot

    source = settings_of(tmp_path / "source", database_url=db_url)
    take_snapshot(source, fetch=lambda: replay_sample(["vastai", "aws"]))
    publish_catalog(source, tmp_path / "c", key_file=collector.key)
    follower = settings_of(
        tmp_path / "follower",
        catalog_url=str(tmp_path / "c"),
        catalog_public_key=str(collector.public_key),
    )
    assert follow_catalog(follower).error is None

    def offers(settings):  # type: ignore[no-untyped-def]
        engine = make_engine(settings.database_url)
        try:
            return {h.provider: h.offers for h in held_offers(engine, fx_table(settings))[1]}
        finally:
            engine.dispose()

    assert offers(follower) == offers(source) != {}


def test_the_scheduler_publishes_after_each_snapshot(collector: Collector, tmp_path: Path) -> None:
    from gpuscout.adapters.sample import replay_sample
    from gpuscout.service.scheduler import run_snapshot_job

    settings = settings_of(
        tmp_path / "data", publish_dir=tmp_path / "c", publish_key_file=collector.key
    )
    assert run_snapshot_job(settings, fetch=lambda: replay_sample(["aws"])) is not None
    manifest = _manifest_of(collector, tmp_path / "c")
    assert [p.provider for p in manifest.providers] == ["aws"]
