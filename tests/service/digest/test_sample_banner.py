"""A digest built on sample prices says so first: a banner line in the text and HTML parts,
a marked subject, each sample offer marked; and it names the FX table (issue 13). Its price
index says so too when it counts sample prices: "(offline sample, not live)", or "(partly
the offline sample, not live)" once live prices join them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import Engine

from gpuscout.adapters.collect import Origin
from gpuscout.adapters.sample import SAMPLE_NOTE, replay_sample
from gpuscout.db.history import SAMPLE_DAYS_NOTE
from gpuscout.pricing import Job, Requirement
from gpuscout.service.current import load_current
from gpuscout.service.digest.build import SAMPLE_SUBJECT_MARK, Digest, SubscriptionView
from gpuscout.service.digest.compose import DigestComposer
from gpuscout.service.settings import Settings
from gpuscout.service.snapshots import take_snapshot
from tests.service.api.conftest import store_sample_then_live

VIEW = SubscriptionView(1, "any GPU", "s1@example.com", Requirement(min_gpus=1), Job.for_hours(100))


def _index_section(digest: Digest) -> tuple[str, str]:
    """The price index's section of the text part, and of the HTML part."""
    text = digest.text.split("PRICE INDEX", 1)[1].split("\n\n", 1)[0]
    page = digest.html.split(">Price index</h2>", 1)[1].split("</td>", 1)[0]
    return " ".join(text.split()), page


def _settings(tmp_path: Path, db_url: str) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path, database_url=db_url)  # type: ignore[call-arg]


def test_a_digest_after_a_sample_snapshot_says_sample(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, db_url)
    take_snapshot(settings, fetch=replay_sample, engine=engine)
    current = load_current(settings=settings)
    assert current.source == "database" and current.sample
    digest = DigestComposer(settings, current, datetime.now(UTC), engine=engine).digest(VIEW)
    assert digest.subject.startswith(SAMPLE_SUBJECT_MARK)
    banner = digest.text.splitlines()[1]
    assert banner.startswith("SAMPLE PRICES, NOT LIVE: " + SAMPLE_NOTE)
    assert "capture date unknown" in " ".join(digest.text.split())
    assert "Sample prices, not live:" in digest.html and SAMPLE_NOTE in digest.html
    assert "(sample)" in digest.text
    # the sample's CNY sheet prices were converted: the digest names the FX table's date
    assert f"at the FX table of {current.fx.as_of}" in digest.text
    assert f"at the FX table of {current.fx.as_of}" in digest.html


def test_the_index_of_a_stored_sample_says_sample(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, db_url)
    store_sample_then_live(engine, live=())
    current = load_current(settings=settings)
    digest = DigestComposer(settings, current, datetime.now(UTC), engine=engine).digest(VIEW)
    assert digest.subject.startswith(SAMPLE_SUBJECT_MARK)  # the stored offers are the sample's
    text, page = _index_section(digest)
    assert "(offline sample, not live)." in text
    assert SAMPLE_DAYS_NOTE in text  # the index's note: what its days mean
    assert "Offline sample, not live." in page and SAMPLE_DAYS_NOTE in page
    assert "(offline sample, not live)" in page.split('alt="', 1)[1].split('"', 1)[0]


def test_an_index_of_sample_and_live_prices_says_partly_sample(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, db_url)
    store_sample_then_live(engine, live=("lambda",))
    current = load_current(settings=settings)
    lambda_h100 = SubscriptionView(
        2, "lambda", "s2@example.com", Requirement(providers=("lambda",)), Job.for_hours(100)
    )
    digest = DigestComposer(settings, current, datetime.now(UTC), engine=engine).digest(lambda_h100)
    text, page = _index_section(digest)
    # lambda's offers are live now, but the day's index counts the sample's prices too
    assert "(partly the offline sample, not live)." in text
    assert "Partly the offline sample, not live." in page


def test_a_digest_of_live_prices_has_no_banner(engine: Engine, db_url: str, tmp_path: Path) -> None:
    settings = _settings(tmp_path, db_url)
    runs = replay_sample(["lambda"])
    for run in runs:  # the same offers, as a live fetch would give them
        run.origin = Origin.LIVE
        run.capture_date_known = True
    take_snapshot(settings, fetch=lambda: runs, engine=engine)
    current = load_current(settings=settings)
    assert not current.sample
    digest = DigestComposer(settings, current, datetime.now(UTC), engine=engine).digest(VIEW)
    assert not digest.subject.startswith(SAMPLE_SUBJECT_MARK)
    assert "SAMPLE PRICES" not in digest.text and "(sample)" not in digest.text
    assert "Sample prices, not live" not in digest.html
    assert "FX table" not in digest.text  # every Lambda price is in USD
    text, page = _index_section(digest)
    assert text.startswith("The chart") and "not live" not in text and "not live" not in page
