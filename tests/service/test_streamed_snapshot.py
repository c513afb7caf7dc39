"""A snapshot streams: each provider's run is stored as it comes and let go of, the fetch
runs in a worker thread handing runs over as they are final, and a failure on either side
rolls the store back and leaves no fetch thread behind. Run on both databases."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncGenerator, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import Engine

from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.adapters.schema import Offer
from gpuscout.db.snapshots import store_snapshot
from gpuscout.service import snapshots
from gpuscout.service.settings import Settings
from gpuscout.service.snapshots import fetch_providers, take_snapshot
from tests.adapters.test_collect import Fake as OneOffer
from tests.db.factories import at, counts, current, offer, ok


def settings_for(db_url: str, tmp_path: Path, **extra: object) -> Settings:
    return Settings(data_dir=tmp_path, database_url=db_url, **extra)  # type: ignore[arg-type]


class Offers(list[Offer]):
    """A list of offers that can be weakly referenced (a plain list cannot)."""


def new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads alive now that were not ``before`` (the fetch's event loop runs on one)."""
    return [t for t in threading.enumerate() if t not in before]


def test_each_run_is_stored_and_let_go_before_the_next_is_made(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    events: list[str] = []
    first: list[weakref.ref[Offers]] = []

    def fetch() -> Iterator[ProviderRun]:
        offers = Offers([offer("alpha", f"a{i}", fetched_at=at(1)) for i in range(50)])
        first.append(weakref.ref(offers))
        run = ProviderRun("alpha", RunStatus.OK, at(1), 0.5, offers=offers)
        del offers
        assert first[0]() is run.offers  # the run holds the very list watched
        events.append("alpha")
        yield run
        del run
        events.append("beta")
        yield ok("beta", [offer("beta")], at(1))
        # the store took alpha, stored it, and let it go: nothing holds its offers now
        events.append(f"alpha's offers held: {first[0]() is not None}")
        events.append("gamma")
        yield ok("gamma", [offer("gamma")], at(1))
        events.append("end")

    clock = iter(at(1, days=1) + timedelta(minutes=m) for m in range(100))

    def now() -> datetime:
        when = next(clock)
        events.append(f"now {when:%H:%M}")
        return when

    result = take_snapshot(settings_for(db_url, tmp_path), fetch=fetch, engine=engine, now=now)
    assert "alpha's offers held: False" in events
    # the snapshot finished when its last run was stored, not when the fetch began
    assert f"now {result.summary.finished_at:%H:%M}" in events[events.index("end") :]
    assert result.summary.offer_count == 52 and counts(engine)[0] == 1
    # the result keeps the runs without their offers, and how many each had
    assert [(r.provider, r.offers, r.offer_count) for r in result.runs] == [
        ("alpha", [], 50),
        ("beta", [], 1),
        ("gamma", [], 1),
    ]


class Fake(OneOffer):
    """A provider answering one offer once ``release`` is set (at once without one)."""

    def __init__(self, name: str, release: threading.Event | None = None) -> None:
        super().__init__(name)
        self.release = release
        self.ended = False

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        try:
            while self.release is not None and not self.release.is_set():
                await asyncio.sleep(0.01)
            return [{"price": "1.25"}]
        finally:
            self.ended = True  # answered, failed or cancelled (its deadline)


def test_fetch_providers_hands_over_a_fast_run_while_a_slow_one_is_fetching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before_threads = set(threading.enumerate())
    release = threading.Event()
    slow, fast = Fake("slow", release), Fake("fast")
    monkeypatch.setattr(snapshots, "build_adapters", lambda settings, names: [slow, fast])
    settings = Settings(data_dir=tmp_path, provider_deadline_s=60)
    runs = fetch_providers(settings)
    try:
        got = next(runs)
        assert got.provider == "fast" and got.status is RunStatus.OK
        assert not slow.ended  # its run is still to come: fast's was not held for it
        release.set()
        assert [(r.provider, r.status) for r in runs] == [("slow", RunStatus.OK)]
    finally:
        release.set()
        runs.close()
    assert new_threads(before_threads) == []


def test_closing_the_stream_cancels_a_provider_still_fetching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store stopped reading (it failed, or was interrupted): the provider still
    answering is cancelled, not waited for, and the fetch's thread ends."""
    before_threads = set(threading.enumerate())
    slow, fast = Fake("slow", threading.Event()), Fake("fast")  # slow: never released
    monkeypatch.setattr(snapshots, "build_adapters", lambda settings, names: [slow, fast])
    runs = fetch_providers(Settings(data_dir=tmp_path, provider_deadline_s=60))
    assert next(runs).provider == "fast"
    assert not slow.ended
    runs.close()
    assert slow.ended  # its fetch ended: cancelled, for its release never came
    assert new_threads(before_threads) == []


def _store_alpha(engine: Engine) -> tuple[tuple[int, int, int], list[tuple[str, str]]]:
    """A first snapshot of alpha; the database's rows and current offers after it."""
    store_snapshot(engine, [ok("alpha", [offer()], at(0))], started_at=at(0), finished_at=at(0))
    return counts(engine), _offers(engine)


def _offers(engine: Engine) -> list[tuple[str, str]]:
    frame = current(engine).frame
    return sorted(zip(frame["provider"].to_list(), frame["offer_id"].to_list(), strict=True))


def test_a_fetch_failing_mid_stream_stores_nothing_and_leaves_no_thread(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    before = _store_alpha(engine)
    before_threads = set(threading.enumerate())

    async def fetch(adapters: object, settings: object) -> AsyncGenerator[ProviderRun, None]:
        yield ok("beta", [offer("beta")], at(1))
        raise RuntimeError("the fetch broke")

    settings = settings_for(db_url, tmp_path)
    with pytest.raises(RuntimeError, match="the fetch broke"):
        take_snapshot(
            settings, fetch=lambda: fetch_providers(settings, ["lium"], fetch=fetch), engine=engine
        )
    assert new_threads(before_threads) == []
    assert (counts(engine), _offers(engine)) == before  # beta, stored first, rolled back


def test_a_store_failing_mid_stream_cancels_the_fetch_and_leaves_no_thread(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    before = _store_alpha(engine)
    before_threads = set(threading.enumerate())
    ended: list[str] = []

    async def fetch(adapters: object, settings: object) -> AsyncGenerator[ProviderRun, None]:
        try:
            yield ok("beta", [offer("beta")], at(1))
            yield ok("beta", [offer("beta", "o2")], at(1))  # twice: the store refuses it
            # a provider that does not answer (60 s: a guard against a hang, not a check)
            await asyncio.wait_for(asyncio.Event().wait(), 60)
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise
        finally:
            ended.append("closed")

    settings = settings_for(db_url, tmp_path)
    with pytest.raises(ValueError, match="two runs in one snapshot"):
        take_snapshot(
            settings, fetch=lambda: fetch_providers(settings, ["lium"], fetch=fetch), engine=engine
        )
    assert new_threads(before_threads) == []
    assert ended == ["closed"]  # closed where it stood (its yield) before the thread ended
    assert (counts(engine), _offers(engine)) == before


def test_a_disabled_provider_a_catalog_names_is_stored_as_disabled_once(tmp_path: Path) -> None:
    """Its covered run is left out of the stream: the disabled run that follows stands (a
    provider twice in a stream is refused by the store)."""

    async def fetch(adapters: object, settings: object) -> AsyncGenerator[ProviderRun, None]:
        yield ok("alpha", [offer()], at(1))
        yield ok("vastai", [offer("vastai", via_catalog="gpuhunt v3")], at(1))

    settings = Settings(data_dir=tmp_path, providers_disabled=["vastai"])
    got = [(r.provider, r.status, r.error) for r in fetch_providers(settings, fetch=fetch)]
    assert got == [
        ("alpha", RunStatus.OK, None),
        ("vastai", RunStatus.SKIPPED, snapshots.DISABLED),
    ]
