"""Fixtures of the alert tests: the digest's real SMTP server (aiosmtpd) and settings, a
real HTTP server on 127.0.0.1 receiving webhook calls, and a helper making current states.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from gpuscout.adapters.schema import Offer, default_fx
from gpuscout.db.current import CurrentState
from gpuscout.pricing import offers_to_frame
from tests.db.factories import T0, offer
from tests.service.digest.conftest import RecordingHandler, settings, smtp_server  # noqa: F401

__all__ = ["RecordingHandler", "WebhookServer", "state"]


@dataclass
class WebhookServer:
    """Records every POST (headers, body); answers ``status`` (200 unless set)."""

    port: int
    calls: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    status: int = 200

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


@pytest.fixture
def webhook_server() -> Iterator[WebhookServer]:
    record = WebhookServer(port=0)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            record.calls.append((dict(self.headers.items()), self.rfile.read(length)))
            self.send_response(record.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    record.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield record
    finally:
        server.shutdown()
        server.server_close()


def state(*prices: str, available: bool | None = True, gpu_count: int = 8) -> CurrentState:
    """A current state of one 8x H100 offer per price (USD per hour for the instance is
    the price times ``gpu_count``: the prices are per GPU-hour)."""
    offers: list[Offer] = [
        offer(
            "alpha",
            f"o{i}",
            str(Decimal(p) * gpu_count),
            gpu_count=gpu_count,
            available_now=available,
        )
        for i, p in enumerate(prices)
    ]
    fx = default_fx()
    return CurrentState(
        frame=offers_to_frame(offers, fx), providers={}, source="database", fx=fx, loaded_at=T0
    )
