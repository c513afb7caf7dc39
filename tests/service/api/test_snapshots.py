from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.db.engine import make_engine
from gpuscout.db.locks import job_lock
from gpuscout.db.migrate import upgrade
from gpuscout.db.models import PriceHistory, Snapshot
from gpuscout.db.snapshots import store_snapshot
from gpuscout.service.api import create_app
from gpuscout.service.api.hooks import default_hooks
from gpuscout.service.settings import Settings
from gpuscout.service.snapshots import SNAPSHOT_LOCK

from .conftest import ADMIN_TOKEN, FakeSource, database_state, failed, offer

pytestmark = pytest.mark.anyio

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def _app(settings: Settings, source: FakeSource, runs: list[ProviderRun]) -> object:
    async def runner(*, on_start: Callable[[], None]) -> list[ProviderRun]:
        on_start()
        # "store" the snapshot: the loader now sees the new offers
        source.current = database_state([o for r in runs for o in r.offers], failed("gcp"))
        return runs

    return create_app(settings, offers_loader=source, snapshot_runner=runner)


def _runs() -> list[ProviderRun]:
    now = datetime.now(UTC)
    return [
        ProviderRun("newco", RunStatus.OK, now, 0.1, offers=[offer(provider="newco")]),
        ProviderRun("gcp", RunStatus.ERROR, now, 0.2, error="HTTP 503"),
    ]


async def test_admin_token_required(settings: Settings, source: FakeSource) -> None:
    app = _app(settings, source, _runs())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:  # type: ignore[arg-type]
        none = await c.post("/v1/snapshots")
        assert none.status_code == 401 and none.headers["www-authenticate"] == "Bearer"
        wrong = await c.post("/v1/snapshots", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 403
        basic = await c.post("/v1/snapshots", headers={"Authorization": "Basic eDp5"})
        assert basic.status_code == 401


async def test_snapshot_refreshes_offers_and_counts_outcomes(
    settings: Settings, source: FakeSource
) -> None:
    app = _app(settings, source, _runs())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:  # type: ignore[arg-type]
        before = await c.get("/v1/offers")
        assert {o["provider"] for o in before.json()["offers"]} == {"acme", "bolt", "cirrus"}
        r = await c.post("/v1/snapshots?wait=true", headers=AUTH)
        assert r.status_code == 200, r.text
        assert {x["provider"]: x["outcome"] for x in r.json()["runs"]} == {
            "newco": "ok",
            "gcp": "error",
        }
        after = await c.get("/v1/offers")
        assert [o["provider"] for o in after.json()["offers"]] == ["newco"]
        assert after.headers["etag"] != before.headers["etag"]
        metrics = (await c.get("/metrics")).text
        assert (
            'gpuscout_snapshot_provider_runs_total{outcome="error",provider="gcp"} 1.0' in metrics
        )


async def test_background_snapshot(settings: Settings, source: FakeSource) -> None:
    app = _app(settings, source, _runs())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:  # type: ignore[arg-type]
        r = await c.post("/v1/snapshots", headers=AUTH)
        assert r.status_code == 202 and r.json()["status"] == "started"
        for _ in range(100):
            if not app.state.context.snapshot_lock.locked():  # type: ignore[attr-defined]
                break
            await asyncio.sleep(0.02)
        after = await c.get("/v1/offers")
        assert [o["provider"] for o in after.json()["offers"]] == ["newco"]


async def test_snapshot_takes_the_job_lock_and_prunes(db_url: str, tmp_path: Path) -> None:
    """The app's own runner (no fake): 409 while another runner holds the snapshot lock,
    whether the request waits or not; then a stored snapshot prunes by the retention."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        database_url=db_url,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        retention_snapshots_days=1,
        retention_history_days=1,
    )
    upgrade(db_url)
    engine = make_engine(db_url)
    for days, price in ((30, "1"), (20, "2")):  # two old snapshots; the first price closed
        when = datetime.now(UTC) - timedelta(days=days)
        stored = offer(fetched_at=when, price_amount=Decimal(price))
        old = ProviderRun("acme", RunStatus.OK, when, 0.1, offers=[stored])
        store_snapshot(engine, [old], started_at=when, finished_at=when)
    fetched: list[int] = []

    def fetch() -> list[ProviderRun]:
        fetched.append(1)
        now = datetime.now(UTC)
        return [ProviderRun("newco", RunStatus.OK, now, 0.1, [offer(provider="newco")])]

    def count(*where: sa.ColumnElement[bool], table: object = Snapshot.__table__) -> int:
        with engine.connect() as c:
            query = sa.select(sa.func.count()).select_from(table).where(*where)  # type: ignore[arg-type]
            return int(c.execute(query).scalar_one())

    app = create_app(settings, **default_hooks(settings, fetch=fetch))
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            with job_lock(engine, SNAPSHOT_LOCK) as held:
                assert held
                for path in ("/v1/snapshots?wait=true", "/v1/snapshots"):
                    r = await c.post(path, headers=AUTH)
                    assert r.status_code == 409, (path, r.text)
                    assert "another runner is taking a snapshot now" in r.json()["detail"]
            assert fetched == [] and count() == 2
            closed = PriceHistory.valid_to.is_not(None)
            assert count(closed, table=PriceHistory.__table__) == 1

            r = await c.post("/v1/snapshots?wait=true", headers=AUTH)
            assert r.status_code == 200, r.text
            assert [x["provider"] for x in r.json()["runs"]] == ["newco"]
            assert fetched == [1] and count() == 1  # the two old snapshots were pruned
            assert count(closed, table=PriceHistory.__table__) == 0
            offers = (await c.get("/v1/offers")).json()["offers"]
            assert {o["provider"] for o in offers} == {"acme", "newco"}
    finally:
        app.state.context.history.dispose()  # type: ignore[attr-defined]
        engine.dispose()


async def test_without_runner_is_503(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/snapshots", headers=AUTH)
    assert r.status_code == 503


def test_no_default_admin_token_works(tmp_path: Path) -> None:
    for weak in ("changeme", "changethis", "x", "x" * 31):
        with pytest.raises(ValueError, match="admin_token"):
            Settings(_env_file=None, admin_token=weak)  # type: ignore[call-arg, arg-type]
    assert Settings(_env_file=None).admin_token is None  # type: ignore[call-arg]
    assert Settings(_env_file=None, admin_token="x" * 32).admin_token is not None  # type: ignore[call-arg, arg-type]


@pytest.mark.anyio
async def test_admin_endpoints_are_off_without_a_token(tmp_path: Path) -> None:
    app = create_app(Settings(_env_file=None, data_dir=tmp_path))  # type: ignore[call-arg]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        for token in ("changeme", "", "x"):
            r = await client.post("/v1/snapshots", headers={"Authorization": f"Bearer {token}"})
            assert r.status_code in (401, 403), r.text
        r = await client.post("/v1/snapshots", headers={"Authorization": "Bearer changeme"})
        assert "GPUSCOUT_ADMIN_TOKEN" in r.text
