"""A real server for the web pages: uvicorn on 127.0.0.1 (an ephemeral port) in a thread,
the app wired as ``gpuscout serve`` wires it, on a SQLite file holding two snapshots."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
import uvicorn

from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.db.engine import make_engine, sqlite_url
from gpuscout.db.migrate import upgrade
from gpuscout.db.snapshots import store_snapshot
from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings
from tests.service.api.conftest import (  # clock: the API tests' frozen start, here too
    FakeSource,
    clock,  # noqa: F401
    database_state,
    failed,
    offer,
    sample_offers,
    stale,
)
from tests.service.digest.conftest import RecordingHandler, smtp_server  # noqa: F401

#: The acme 8x H100 offer was 16 USD/h three days ago, 14 USD/h since yesterday.
PRICES = (("16", 3), ("14", 1))
#: Its latest fetch failed.
STALE = "cirrus"


@dataclasses.dataclass
class LiveServer:
    base_url: str
    mail: RecordingHandler
    settings: Settings


def store_history(url: str) -> None:
    engine = make_engine(url)
    now = datetime.now(UTC).replace(microsecond=0)
    try:
        for price, days_ago in PRICES:
            at = now - timedelta(days=days_ago)
            offers = [
                o if o.key != offer().key else offer(price_amount=Decimal(price))
                for o in sample_offers()
            ]
            offers = [o.model_copy(update={"fetched_at": at}) for o in offers]
            if days_ago == 1:  # an offer whose GPU the catalog lacks: in the coverage note
                offers.append(
                    offer(
                        provider="bolt", offer_id="x1", gpu_model=None, gpu_raw_name="Z9"
                    ).model_copy(update={"fetched_at": at})
                )
            runs = [
                ProviderRun(p, RunStatus.OK, at, 0.1, offers=[o for o in offers if o.provider == p])
                for p in sorted({o.provider for o in offers})
                if not (p == STALE and days_ago == 1)
            ]
            if days_ago == 1:  # its latest fetch failed: its earlier offers are held, stale
                runs.append(ProviderRun(STALE, RunStatus.ERROR, at, 0.1, error="HTTP 503"))
            store_snapshot(engine, runs, started_at=at, finished_at=at)
    finally:
        engine.dispose()


@pytest.fixture
def live_server(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],  # noqa: F811
) -> Iterator[LiveServer]:
    url = sqlite_url(tmp_path / "web.db")
    upgrade(url)
    store_history(url)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    handler, smtp_port = smtp_server
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        database_url=url,
        smtp_host="127.0.0.1",
        smtp_port=smtp_port,
        smtp_security="none",
        mail_from="gpuscout <digest@gpuscout.test>",
        public_base_url=base,
        token_secret="web-test-secret-0123456789",  # type: ignore[arg-type]
    )
    app = create_app(settings)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield LiveServer(base, handler, settings)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The app in-process on the API tests' offers: bolt stale, gcp failed, no database."""
    offers = sample_offers()
    source = FakeSource(database_state(offers, stale("bolt", offers), failed("gcp")))
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    app = create_app(settings, offers_loader=source)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c
