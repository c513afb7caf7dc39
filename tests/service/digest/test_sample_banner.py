"""A digest built on sample prices says so first: a banner line in the text and HTML parts,
a marked subject, each sample offer marked; and it names the FX table (issue 13)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import Engine

from adapters.collect import Origin
from adapters.sample import SAMPLE_NOTE, replay_sample
from pricing import Job, Requirement
from service.current import load_current
from service.digest.build import SAMPLE_SUBJECT_MARK, SubscriptionView
from service.digest.compose import DigestComposer
from service.settings import Settings
from service.snapshots import take_snapshot

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
VIEW = SubscriptionView(1, "any GPU", "s1@example.com", Requirement(min_gpus=1), Job.for_hours(100))


def _settings(tmp_path: Path, db_url: str) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path, database_url=db_url)  # type: ignore[call-arg]


def test_a_digest_after_a_sample_snapshot_says_sample(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, db_url)
    take_snapshot(settings, fetch=replay_sample, engine=engine)
    current = load_current(settings=settings)
    assert current.source == "database" and current.sample
    digest = DigestComposer(settings, current, NOW, engine=engine).digest(VIEW)
    assert digest.subject.startswith(SAMPLE_SUBJECT_MARK)
    banner = digest.text.splitlines()[1]
    assert banner.startswith("SAMPLE PRICES, NOT LIVE: " + SAMPLE_NOTE)
    assert "capture date unknown" in " ".join(digest.text.split())
    assert "Sample prices, not live:" in digest.html and SAMPLE_NOTE in digest.html
    assert "(sample)" in digest.text
    # the sample's CNY sheet prices were converted: the digest names the FX table's date
    assert f"at the FX table of {current.fx.as_of}" in digest.text
    assert f"at the FX table of {current.fx.as_of}" in digest.html


def test_a_digest_of_live_prices_has_no_banner(engine: Engine, db_url: str, tmp_path: Path) -> None:
    settings = _settings(tmp_path, db_url)
    runs = replay_sample(["lambda"])
    for run in runs:  # the same offers, as a live fetch would give them
        run.origin = Origin.LIVE
        run.capture_date_known = True
    take_snapshot(settings, fetch=lambda: runs, engine=engine)
    current = load_current(settings=settings)
    assert not current.sample
    digest = DigestComposer(settings, current, NOW, engine=engine).digest(VIEW)
    assert not digest.subject.startswith(SAMPLE_SUBJECT_MARK)
    assert "SAMPLE PRICES" not in digest.text and "(sample)" not in digest.text
    assert "Sample prices, not live" not in digest.html
    assert "FX table" not in digest.text  # every Lambda price is in USD
