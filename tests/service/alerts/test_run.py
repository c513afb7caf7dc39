"""The scheduler's hook: every snapshot it stores is followed by an alerts run, and a
failing alerts run never fails the snapshot."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy.engine import Engine

from gpuscout.db.alerts import active_alerts, firings
from gpuscout.service.scheduler import run_snapshot_job
from gpuscout.service.settings import Settings
from tests.db.factories import offer, ok

from .conftest import RecordingHandler
from .test_flow import _alert_mails, _create


def test_a_snapshot_is_followed_by_an_alerts_run(
    settings: Settings,
    engine: Engine,
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    handler, _ = smtp_server
    alert_id = _create(settings, engine, handler)
    now = datetime.now(UTC)
    price = str(Decimal("2.10") * 8)
    runs = [ok("alpha", [offer("alpha", "o1", price, gpu_count=8, fetched_at=now)], now)]
    assert run_snapshot_job(settings, fetch=lambda: runs, engine=engine) is not None
    assert [f.seq for f in firings(engine, alert_id)] == [1]
    assert len(_alert_mails(handler)) == 1


def test_a_failing_alerts_run_does_not_fail_the_snapshot(
    settings: Settings,
    engine: Engine,
    smtp_server: tuple[RecordingHandler, int],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    handler, _ = smtp_server
    _create(settings, engine, handler)
    assert active_alerts(engine)

    def broken(*_args: object, **_kw: object) -> None:
        raise RuntimeError("evaluation blew up")

    monkeypatch.setattr("gpuscout.service.alerts.run.evaluate_alerts", broken)
    now = datetime.now(UTC)
    runs = [ok("alpha", [offer("alpha", "o1", "16.8", gpu_count=8, fetched_at=now)], now)]
    with caplog.at_level(logging.ERROR, logger="gpuscout.scheduler"):
        assert run_snapshot_job(settings, fetch=lambda: runs, engine=engine) is not None
    assert "alerts run failed" in caplog.text
