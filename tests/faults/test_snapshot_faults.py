"""Fault injection through the real snapshot path: :func:`service.snapshots.take_snapshot`
with the real adapters built from settings (each ``<provider>_base_url`` pointing at the fake
server of :mod:`tests.faults.server`), real httpx, real TCP, a real SQLite database.

For every fault, half of the HTTP adapters get it while the other half answer their
recordings, then the halves swap. Each time: no exception escapes, the healthy providers'
offers are stored, and each faulted provider's run is an error whose text says what went
wrong, shown in the stored run and in its provider status, with its last good offers kept
(stale). Retry waits are 0 (``RetryPolicy``), timeouts a second, deadlines a few.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from gpuscout.adapters import registry
from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.adapters.gpus import catalog
from gpuscout.db.engine import make_engine, sqlite_url
from gpuscout.db.models import SnapshotProvider
from gpuscout.service.settings import Settings
from gpuscout.service.snapshots import SnapshotResult, build_adapters, fetch_adapters, take_snapshot
from tests.db.factories import current

from .providers import PROVIDERS
from .server import FakeServer, Fault, running_server

#: The HTTP adapters a snapshot runs (a retired provider's is not run)
HTTP = sorted(n for n in PROVIDERS if not registry()[n].lifecycle.retired)
HALVES = (HTTP[::2], HTTP[1::2])

#: What each fault must lead to: a transport failure, a deadline, or a body the adapter or
#: the plausibility guard refuses. Any error text is accepted.
FAULTS = list(Fault)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with running_server(PROVIDERS, drip_every_s=0.1) as fake:
        yield fake


def make_settings(server: FakeServer, path: Path, **overrides: Any) -> Settings:
    fields: dict[str, Any] = {
        "database_url": sqlite_url(path / "gpuscout.db"),
        "http_retries": 2,
        # bounds a loaded machine cannot hit by accident (healthy providers parse their
        # recordings on one event loop while other tests run), short enough that a hanging
        # or dripping provider is cut off in seconds
        "http_timeout_s": 1.0,
        "provider_deadline_s": 4.0,
        "snapshot_lease_s": 5,
        "retention_snapshots_days": 0,
        "retention_history_days": 0,
    }
    for name, provider in PROVIDERS.items():
        fields[f"{name}_base_url"] = server.base_url(name)
        fields.update(provider.credentials)
    fields.update(overrides)
    return Settings(**fields)


def snapshot(settings: Settings) -> SnapshotResult:
    """``take_snapshot`` over the real adapters, with retry waits of 0."""
    adapters = build_adapters(settings, HTTP)
    for adapter in adapters:
        adapter.policy = dataclasses.replace(adapter.policy, base_wait_s=0, max_wait_s=0)
        tune = PROVIDERS[adapter.name].tune
        if tune is not None:
            tune(adapter)

    def fetch() -> list[ProviderRun]:
        return asyncio.run(fetch_adapters(adapters, settings))

    return take_snapshot(settings, fetch=fetch)


def stored(settings: Settings) -> tuple[dict[str, int], dict[str, Any], dict[str, tuple[str, str]]]:
    """Current offers per provider, provider states, and the latest snapshot's
    (status, error) per provider, read back from the database."""
    engine = make_engine(settings.database_url)
    try:
        state = current(engine)
        table = SnapshotProvider.__table__
        with engine.connect() as connection:
            latest = connection.execute(sa.select(sa.func.max(table.c.snapshot_id))).scalar_one()
            rows = connection.execute(
                sa.select(table.c.provider, table.c.status, table.c.error).where(
                    table.c.snapshot_id == latest
                )
            ).all()
    finally:
        engine.dispose()
    counts: dict[str, int] = {}
    for provider in state.frame["provider"]:
        counts[provider] = counts.get(provider, 0) + 1
    return counts, state.providers, {r.provider: (r.status, r.error or "") for r in rows}


#: Published catalogs serve many providers' files (CSV, zip) from one tree: their faults (a
#: file missing, a bad row, a catalog not reached) are tested with a replay of the tree in
#: tests/adapters/test_*_catalog.py and tests/service/test_catalog_snapshot.py.
CATALOG_SOURCES = {"gpuhunt_catalog", "skypilot_catalog"}


def test_every_http_adapter_has_a_fake() -> None:
    http = {name for name, cls in registry().items() if cls.base_url}
    assert set(PROVIDERS) == http - CATALOG_SOURCES


def test_the_recordings_are_a_healthy_snapshot(server: FakeServer, tmp_path: Path) -> None:
    settings = make_settings(server, tmp_path)
    result = snapshot(settings)
    runs = {r.provider: r for r in result.runs}
    assert {p: r.status for p, r in runs.items()} == dict.fromkeys(HTTP, RunStatus.OK), {
        p: r.error for p, r in runs.items() if r.error
    }
    assert all(runs[p].offer_count > 0 for p in HTTP), {p: runs[p].offer_count for p in HTTP}
    assert not any(c.guarded for c in result.summary.providers)
    counts, _, _ = stored(settings)
    assert counts == {p: runs[p].offer_count for p in HTTP}
    # every provider's recording gives offers whose GPU models all resolve in the catalog
    engine = make_engine(settings.database_url)
    try:
        frame = current(engine).frame
    finally:
        engine.dispose()
    known = {spec.name for spec in catalog()}
    pairs = set(zip(frame["provider"], frame["gpu_model"], strict=True))
    assert {provider for provider, _ in pairs} == set(HTTP)
    # Shadeform's only recording is its docs' example, which contradicts itself (shade type
    # "A6000", gpu_type "A100", 48 GB): the adapter leaves that GPU unmapped, by design
    assert {(p, m) for p, m in pairs if m not in known} == {("shadeform", None)}


@pytest.mark.parametrize("fault", FAULTS, ids=[f.value for f in FAULTS])
def test_a_fault_fails_only_its_provider_and_keeps_its_last_good_offers(
    server: FakeServer, tmp_path: Path, fault: Fault, caplog: pytest.LogCaptureFixture
) -> None:
    overrides: dict[str, Any] = {}
    if fault is Fault.DRIP:
        # each read is quick and the request bound is long: only the deadline stops it
        overrides["http_timeout_s"] = 5.0
    settings = make_settings(server, tmp_path, **overrides)
    server.faults.clear()
    healthy = snapshot(settings)
    baseline = {r.provider: r.offer_count for r in healthy.runs}
    assert all(r.status is RunStatus.OK for r in healthy.runs)
    caplog.set_level(logging.WARNING)
    try:
        for half in HALVES:
            server.faults.clear()
            server.faults.update(dict.fromkeys(half, fault))
            caplog.clear()
            result = snapshot(settings)  # no exception escapes
            changes = {c.provider: c for c in result.summary.providers}
            counts, states, rows = stored(settings)
            for name in HTTP:
                change = changes[name]
                if name in half:
                    assert change.status is RunStatus.ERROR, (name, fault)
                    assert change.error, (name, fault)
                    assert change.offers_kept == baseline[name], (name, fault)
                    assert counts.get(name) == baseline[name], (name, fault)  # kept
                    assert states[name].stale and states[name].error == change.error
                    assert rows[name] == ("error", change.error)
                else:
                    assert change.status is RunStatus.OK, (name, fault, change.error)
                    assert counts.get(name) == baseline[name], (name, fault)
                    assert rows[name] == ("ok", "")
            unexpected = [r.getMessage() for r in caplog.records if r.exc_info]
            assert unexpected == [], unexpected  # every fault is an expected error
    finally:
        server.faults.clear()
