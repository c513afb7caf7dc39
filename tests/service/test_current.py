"""``service.current.load_current``: the database when it holds offers, else the sample."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from gpuscout.db.snapshots import store_snapshot
from gpuscout.service.current import load_current
from gpuscout.service.settings import Settings
from tests.db.factories import T0, at, failed, offer, ok


def test_falls_back_to_the_sample_when_nothing_is_stored(db_url: str, tmp_path: Path) -> None:
    current = load_current(settings=Settings(data_dir=tmp_path, database_url=db_url))
    assert current.source == "sample"  # not even migrated yet


def test_reads_the_database_and_lists_stale_providers(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, database_url=db_url)
    store_snapshot(engine, [], started_at=T0, finished_at=T0)
    assert load_current(settings=settings).source == "sample"  # migrated, but empty
    runs = [ok("alpha", [offer("alpha")]), ok("beta", [offer("beta")])]
    store_snapshot(engine, runs, started_at=T0, finished_at=T0)
    store_snapshot(engine, [failed("alpha", at(2))], started_at=at(2), finished_at=at(2))
    current = load_current(settings=settings)
    assert current.source == "database"
    assert sorted(current.frame["provider"]) == ["alpha", "beta"]
    assert current.stale_providers == ["alpha"] and current.failed_providers == ["alpha"]
    assert current.snapshot_at == at(2)
    assert current.note is not None and "alpha" in current.note
    assert load_current(sample=True, settings=settings).source == "sample"


def test_a_database_behind_the_migrations_says_to_upgrade(db_url: str, tmp_path: Path) -> None:
    """Read before ``db upgrade``, a database of an older revision is one clear error."""
    from alembic.util.exc import CommandError

    from gpuscout.db.migrate import upgrade

    upgrade(db_url, "0004")
    settings = Settings(data_dir=tmp_path, database_url=db_url)
    with pytest.raises(CommandError, match="revision 0004.*gpuscout db upgrade"):
        load_current(settings=settings)


def test_field_coverage_of_stored_offers_is_that_of_the_offers(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    """Counted from the stored records (``None`` fields left out), when first asked."""
    from gpuscout.adapters.field_coverage import count_offers

    offers = [
        offer("alpha", "o1", cuda_version="12.4", os_images=("Ubuntu 22.04",)),
        offer("alpha", "o2", psu_watts=3000.0),
        offer("beta", "o1"),
    ]
    runs = [ok("alpha", offers[:2]), ok("beta", offers[2:])]
    store_snapshot(engine, runs, started_at=T0, finished_at=T0)
    current = load_current(settings=Settings(data_dir=tmp_path, database_url=db_url))
    assert current.source == "database"
    coverage = current.field_coverage
    assert coverage is not None
    assert coverage == count_offers(offers)
    alpha = coverage["alpha"]
    assert (alpha.offers, alpha.filled["cuda_version"], alpha.filled["psu_watts"]) == (2, 1, 1)
    assert alpha.filled["fetched_at"] == 2  # a column of its own, not in the record
    assert coverage["beta"].field_share("cuda_version") == 0.0


def test_the_sample_shown_for_a_database_without_offers_tells_its_failed_attempts(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    """Every live fetch failed or was skipped (no network): the sample is shown, but each
    attempted provider's outcome is its latest attempt's, never the sample's own "ok"."""
    from gpuscout.adapters.run import Origin
    from gpuscout.db.current import Outcome
    from tests.db.factories import skipped

    error = "network error on https://pricing.example/offers: [Errno -2] Name not known"
    runs = [failed("aws", error=error), skipped("lambda"), failed("crusoe"), skipped("mithril")]
    store_snapshot(engine, runs, started_at=T0, finished_at=at(0.1))
    settings = Settings(data_dir=tmp_path, database_url=db_url)
    sample = load_current(sample=True, settings=settings)
    assert sample.providers["aws"].outcome is Outcome.OK  # the sample as recorded, asked for
    for current in (load_current(settings=settings), load_current(settings=settings)):
        assert current.source == "sample" and current.sample  # the offers are the sample's
        assert current.snapshot_at == at(0.1)  # the failed snapshot is the latest one
        aws = current.providers["aws"]
        assert aws.outcome is Outcome.STALE and aws.error == error
        assert (
            aws.origin is Origin.SAMPLE and aws.offer_count == sample.providers["aws"].offer_count
        )
        assert aws.last_attempt_at == T0
        lam = current.providers["lambda"]
        assert lam.outcome is Outcome.STALE and lam.error == "credential not set"
        assert current.providers["crusoe"].outcome is Outcome.FAILED  # the sample holds none
        assert current.providers["crusoe"].error == "HTTP 503"
        assert current.providers["mithril"].outcome is Outcome.SKIPPED
        assert current.providers["azure"] == sample.providers["azure"]  # never attempted
        assert current.failed_providers == ["aws", "crusoe"]
        assert current.stale_providers == ["aws", "lambda"]
        assert current.note is not None and current.note.startswith(sample.note or "-")
        assert "failing now: aws" in current.note
        assert current.frame.height == sample.frame.height


def test_a_live_answer_of_no_offers_leaves_out_that_providers_sample(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    from gpuscout.db.current import Outcome

    store_snapshot(engine, [ok("vultr", []), failed("aws")], started_at=T0, finished_at=T0)
    settings = Settings(data_dir=tmp_path, database_url=db_url)
    sample = load_current(sample=True, settings=settings)
    assert sample.providers["vultr"].offer_count > 0
    current = load_current(settings=settings)
    vultr = current.providers["vultr"]
    assert vultr.outcome is Outcome.OK and vultr.offer_count == 0 and not vultr.sample
    assert "vultr" not in current.frame["provider"].to_list()
    assert "vultr" not in current.sample_providers
    assert current.frame.height == sample.frame.height - sample.providers["vultr"].offer_count
    coverage = current.field_coverage
    assert coverage is not None and "vultr" not in coverage and "aws" in coverage


def test_only_an_embedded_database_behind_is_upgraded_by_the_command_line(db_url: str) -> None:
    """``gpuscout offers`` brings an SQLite file a former gpuscout migrated to this one's
    schema (its user's own); a PostgreSQL database, shared by replicas, is left for ``gpuscout
    db upgrade``, and one at head is not touched."""
    from gpuscout.db.head import HEAD_REVISION
    from gpuscout.db.migrate import stored_revisions, upgrade, upgrade_embedded

    upgrade(db_url, "0009")
    was = upgrade_embedded(db_url)
    if db_url.startswith("sqlite"):
        assert was == "0009" and stored_revisions(db_url) == (HEAD_REVISION,)
        assert upgrade_embedded(db_url) is None  # at head: nothing to do
    else:
        assert was is None and stored_revisions(db_url) == ("0009",)
