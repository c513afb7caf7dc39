"""Hostile providers on 127.0.0.1: a redirect to an internal address, an error page holding
secret text, an answer far larger than any price list. What is stored and shown must not
quote them, and the process must stay small."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpuscout.db.current import load_current_offers
from gpuscout.db.engine import make_engine
from gpuscout.service.fx import fx_table
from gpuscout.service.settings import Settings
from gpuscout.service.snapshots import fetch_providers, take_snapshot
from tests.peak_rss import run_measured

SECRET = "INTERNAL-ONLY-7f3a9c-database-password"


def _serve(answer: Callable[[http.server.BaseHTTPRequestHandler], None]) -> Iterator[int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer(self)

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def _reply(status: int, body: str, **headers: str) -> Callable[[Any], None]:
    def answer(handler: Any) -> None:
        data = body.encode()
        handler.send_response(status)
        for name, value in {"Content-Type": "text/plain", **headers}.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    return answer


@pytest.fixture
def internal() -> Iterator[int]:
    """An internal service: its answer is a secret."""
    yield from _serve(_reply(200, f'{{"nodes": [], "secret": "{SECRET}"}}'))


def _settings(tmp_path: Path, base_url: str) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        lium_base_url=base_url,
        http_retries=1,
        fx_update_hours=0,
    )


def _stored_error(settings: Settings) -> str:
    take_snapshot(settings, fetch=lambda: fetch_providers(settings, ["lium"]))
    engine = make_engine(settings.database_url)
    try:
        state = load_current_offers(engine, fx=fx_table(settings), now=datetime.now(UTC))
    finally:
        engine.dispose()
    error = state.providers["lium"].error
    assert error is not None
    return error


def test_a_redirect_to_an_internal_address_is_not_followed(tmp_path: Path, internal: int) -> None:
    target = f"http://127.0.0.1:{internal}/secret"
    for port in _serve(_reply(302, "", Location=target)):
        error = _stored_error(_settings(tmp_path, f"http://127.0.0.1:{port}"))
    assert "redirect from 127.0.0.1 to 127.0.0.1:" in error and "refused" in error
    assert SECRET not in error


@pytest.mark.parametrize(
    ("status", "content_type"), [(500, "text/html"), (403, "text/plain"), (200, "text/html")]
)
def test_an_answer_is_never_quoted_in_a_stored_error(
    tmp_path: Path, status: int, content_type: str
) -> None:
    page = f"<html>{SECRET}</html>"
    for port in _serve(_reply(status, page, **{"Content-Type": content_type})):
        error = _stored_error(_settings(tmp_path, f"http://127.0.0.1:{port}"))
    assert SECRET not in error
    assert f"HTTP {status}" in error or "not JSON" in error


_CHILD = """
import asyncio, sys
import httpx
from gpuscout.adapters.base import ProviderError, RetryPolicy, request

async def main():
    async with httpx.AsyncClient() as client:
        try:
            await request(client, "GET", sys.argv[1], provider="ex",
                          policy=RetryPolicy(attempts=1, timeout_s=120))
        except ProviderError as exc:
            print(exc)

asyncio.run(main())
"""


def test_an_oversized_answer_fails_the_fetch_and_leaves_the_process_small() -> None:
    megabytes = 300
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            try:
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {megabytes << 20}\r\n\r\n".encode()
                )
                for _ in range(megabytes):
                    conn.sendall(b" " * (1 << 20))
            except OSError:
                pass  # the client stopped reading at its cap

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    child = run_measured(_CHILD, f"http://127.0.0.1:{listener.getsockname()[1]}/prices")
    listener.close()
    thread.join(30)
    assert child.exit_code == 0, child.stderr
    assert "larger than 64 MB (decompressed): not read further" in child.stdout
    assert child.peak_rss_mb < 500, f"peak RSS {child.peak_rss_mb:.0f} MB"
