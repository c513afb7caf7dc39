"""Apps for API tests: a fake offers source instead of the network or a database."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import time_machine
from fastapi import FastAPI

from gpuscout.adapters.collect import RunStatus
from gpuscout.adapters.schema import (
    Fabric,
    GpuFormFactor,
    Offer,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    default_fx,
)
from gpuscout.db.current import CurrentState, ProviderState, state_from_offers
from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings

ADMIN_TOKEN = "test-admin-token-0123456789"
#: The API tests' clock: every test of this directory (and of the web pages) runs at this
#: moment, so an answer's ages and freshness are the same whenever the suite runs.
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
FETCHED_AT = NOW - timedelta(hours=2)
CENT = Decimal("0.01")


def offer(**overrides: Any) -> Offer:
    data: dict[str, Any] = {
        "provider": "acme",
        "offer_id": "8x-h100",
        "region": "us-east-1",
        "country": "US",
        "fetched_at": FETCHED_AT,
        "gpu_model": "H100-SXM5-80GB",
        "gpu_count": 8,
        "gpu_memory_gb": 80.0,
        "gpu_form_factor": GpuFormFactor.SXM,
        "vcpus": 192.0,
        "ram_gb": 2048.0,
        "fabric": Fabric.INFINIBAND,
        "fabric_gbps": 3200.0,
        "price_amount": Decimal("16"),
        "price_currency": "USD",
        "price_unit": PriceUnit.HOUR,
        "price_basis": PriceBasis.INSTANCE,
        "term": RentalTerm.ON_DEMAND,
    }
    data.update(overrides)
    return Offer(**data)


def sample_offers() -> list[Offer]:
    return [
        offer(),
        offer(term=RentalTerm.COMMIT_1MO, price_amount=Decimal("9000"), price_unit=PriceUnit.MONTH),
        offer(provider="bolt", offer_id="1x-h100", gpu_count=1, price_amount=Decimal("2.5")),
        offer(
            provider="bolt",
            offer_id="1x-a100",
            gpu_model="A100-SXM4-80GB",
            gpu_count=1,
            price_amount=Decimal("1.2"),
            region="eu-west-1",
            country="IE",
        ),
        offer(
            provider="cirrus",
            offer_id="4090",
            gpu_model="RTX-4090",
            gpu_count=1,
            gpu_memory_gb=24.0,
            gpu_form_factor=GpuFormFactor.PCIE,
            fabric=None,
            fabric_gbps=None,
            price_amount=Decimal("0.3"),
            term=RentalTerm.INTERRUPTIBLE,
        ),
    ]


def database_state(
    offers: list[Offer], *providers: ProviderState, snapshot_at: datetime | None = None
) -> CurrentState:
    """A state as the database gives it: ``providers`` as given, the others ``ok``."""
    return state_from_offers(
        offers, fx=default_fx(), source="database", providers=providers, snapshot_at=snapshot_at
    )


def stale(provider: str, offers: list[Offer]) -> ProviderState:
    """``provider``'s latest fetch was skipped: its earlier ``offers`` are held."""
    held = [o for o in offers if o.provider == provider]
    fetched_at = max(o.fetched_at for o in held)
    return ProviderState(provider, RunStatus.SKIPPED, len(held), fetched_at, error="no key")


def failed(provider: str) -> ProviderState:
    """``provider``'s latest fetch failed and none succeeded before."""
    return ProviderState(provider, RunStatus.ERROR, 0, error="HTTP 503")


@dataclasses.dataclass
class FakeSource:
    """What the app's loader returns; tests change it and watch the app refresh."""

    current: CurrentState
    loads: int = 0

    def __call__(self) -> CurrentState:
        self.loads += 1
        return self.current


@pytest.fixture(autouse=True)
def clock() -> Iterator[None]:
    """The clock at :data:`NOW`, ticking from there (timeouts and leases still run)."""
    with time_machine.travel(NOW, tick=True):
        yield


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        cors_origins=["https://example.org"],
    )


@pytest.fixture
def source() -> FakeSource:
    offers = sample_offers()
    return FakeSource(
        database_state(offers, stale("bolt", offers), failed("gcp"), snapshot_at=FETCHED_AT)
    )


@pytest.fixture
def app(settings: Settings, source: FakeSource) -> FastAPI:
    return create_app(settings, offers_loader=source)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


@contextlib.asynccontextmanager
async def started(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``app`` with its start-up run (the lifespan: the first load), as a
    server runs it before the first request."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            yield c


def error_locs(response: httpx.Response) -> list[list[str]]:
    assert response.status_code == 422, response.text
    return [e["loc"] for e in response.json()["errors"]]


@contextlib.asynccontextmanager
async def mail_app(
    tmp_path: Path, smtp_port: int, *, peer: str = "127.0.0.1", **overrides: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Settings]]:
    """The app on a fresh SQLite file, mailing through the SMTP server on ``smtp_port``;
    requests come from ``peer``."""
    from gpuscout.db.engine import make_engine, sqlite_url
    from gpuscout.db.migrate import upgrade

    url = sqlite_url(tmp_path / "api.db")
    upgrade(url)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        database_url=url,
        smtp_host="127.0.0.1",
        smtp_port=smtp_port,
        smtp_security="none",
        mail_from="gpuscout <digest@gpuscout.test>",
        public_base_url="https://gpuscout.test",
        token_secret="api-test-secret-0123456789",  # type: ignore[arg-type]
        **overrides,
    )
    engine = make_engine(url)
    app = create_app(
        settings, offers_loader=FakeSource(database_state(sample_offers())), history=engine
    )
    transport = httpx.ASGITransport(app=app, client=(peer, 40000))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://gpuscout") as c:
            yield c, settings
    finally:
        engine.dispose()


def store_sample_then_live(engine: Any, live: tuple[str, ...] = ("lambda",)) -> None:
    """What a database holds after ``gpuscout snapshot --sample`` (of aws and lambda) and a
    later live fetch of ``live`` only: aws's held offers the sample's, ``live``'s fetched
    (the same offers, as a live fetch would give them, a cent dearer: a changed price opens
    a live history row). ``live=()``: the sample alone."""
    from gpuscout.adapters.collect import Origin
    from gpuscout.adapters.sample import replay_sample
    from gpuscout.db.snapshots import store_snapshot

    at = datetime.now(UTC) - timedelta(minutes=2)
    store_snapshot(engine, replay_sample(["aws", "lambda"]), started_at=at, finished_at=at)
    if not live:
        return
    runs = replay_sample(list(live))
    for run in runs:
        run.origin = Origin.LIVE
        run.capture_date_known = True
        run.offers = [
            o.model_copy(update={"fetched_at": at, "price_amount": o.price_amount + CENT})
            for o in run.offers
        ]
    at += timedelta(minutes=1)
    store_snapshot(engine, runs, started_at=at, finished_at=at)


@contextlib.asynccontextmanager
async def database_client(tmp_path: Path, db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The app wired to the database at ``db_url`` as ``gpuscout serve`` wires it."""
    settings = Settings(_env_file=None, data_dir=tmp_path, database_url=db_url)  # type: ignore[call-arg]
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client
    finally:
        app.state.context.history.dispose()  # type: ignore[attr-defined]
