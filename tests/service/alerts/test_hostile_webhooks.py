"""Hostile webhook receivers on 127.0.0.1: internal addresses in every spelling, DNS
rebinding, a receiver that drips its answer, replies of a gigabyte and a gzip bomb."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from apscheduler.schedulers.background import BackgroundScheduler

from gpuscout.service.alerts.egress import refusal
from gpuscout.service.alerts.webhooks import (
    WebhookError,
    WebhookUrlRefused,
    check_webhook_url,
    post_webhook,
    webhook_client,
)
from gpuscout.service.scheduler import build_scheduler, queue_alerts_job
from gpuscout.service.settings import Settings
from tests.peak_rss import run_measured

from .conftest import WebhookServer

#: Internal targets in the spellings an attacker tries; each must be refused by default.
INTERNAL_URLS = [
    "http://127.0.0.1/",
    "http://127.1/",
    "http://127.000.000.1/",
    "http://2130706433/",  # decimal
    "http://0x7f000001/",  # hex
    "http://0x7f.0.0.1/",
    "http://0177.0.0.1/",  # octal
    "http://017700000001/",
    "http://0/",
    "http://0.0.0.0:8000/",
    "http://localhost/",
    "http://localhost:5432/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://0xa9fea9fe/",  # the metadata address in hex
    "http://2852039166/",  # ... and in decimal
    "http://100.64.0.1/",  # CGNAT
    "http://198.18.0.1/",  # benchmarking
    "http://192.0.0.8/",  # IETF protocol assignments
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://[::1]/",
    "http://[::]/",
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[::127.0.0.1]/",  # IPv4-compatible
    "http://[::a9fe:a9fe]/",
    "http://[64:ff9b::7f00:1]/",  # NAT64 of 127.0.0.1
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of the metadata address
    "http://[64:ff9b::c0a8:101]/",  # NAT64 of 192.168.1.1
    "http://[64:ff9b:1::808:808]/",  # NAT64 local use
    "http://[2002:7f00:1::1]/",  # 6to4 of 127.0.0.1
    "http://[2002:a9fe:a9fe::1]/",  # 6to4 of the metadata address
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",  # Teredo of 127.0.0.1
    "http://[fd00::1]/",
    "http://[fe80::1]/",
    "http://[ff02::1]/",
]


@pytest.mark.parametrize("url", INTERNAL_URLS)
def test_internal_targets_are_refused_by_default(url: str) -> None:
    with pytest.raises(WebhookUrlRefused, match="non-public|does not resolve"):
        check_webhook_url(url, production=False)


@pytest.mark.parametrize("addresses", [["127.0.0.1"], ["93.184.216.34", "10.0.0.5"], ["::1"]])
def test_a_name_resolving_to_an_internal_address_is_refused(addresses: list[str]) -> None:
    with pytest.raises(WebhookUrlRefused, match="non-public"):
        check_webhook_url(
            "https://hooks.example.com/x", production=True, resolve=lambda _h: addresses
        )


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::5db8:d822"]
)
def test_public_addresses_pass(address: str) -> None:
    assert refusal(address) is None


def _drip_server(
    reply: bytes, *, every_s: float, stop: threading.Event
) -> Iterator[tuple[int, list[int]]]:
    """A receiver that reads the request, then sends ``reply`` one byte per ``every_s``
    until ``stop``; yields its port and the bytes sent per connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    sent: list[int] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                sent.append(0)
                for byte in reply:
                    if stop.wait(every_s):
                        break
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        break
                    sent[-1] += 1

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], sent
    finally:
        stop.set()
        listener.close()
        thread.join(5)


DRIP = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 1000


def test_a_dripping_receiver_is_cut_at_the_total_deadline() -> None:
    stop = threading.Event()
    server = _drip_server(DRIP, every_s=0.05, stop=stop)
    port, sent = next(server)
    with (
        webhook_client(timeout_s=5, allow_private=True) as client,
        pytest.raises(WebhookError, match="within 0.5 s") as caught,
    ):
        post_webhook(
            client,
            f"http://127.0.0.1:{port}/hook",
            secret="k",
            body=b"{}",
            delivery_id="d1",
            attempts=3,
            deadline_s=0.5,
            sleep=lambda _s: None,
        )
    # every read was well within the per-read timeout, yet the call ended: the answer was
    # not finished and no further attempt started past the deadline
    assert sent and sent[0] < len(DRIP)
    assert caught.value.retryable
    server.close()


def test_the_next_snapshot_runs_while_the_alerts_hang_on_a_receiver(tmp_path: Path) -> None:
    stop = threading.Event()
    server = _drip_server(DRIP, every_s=1.0, stop=stop)
    port, sent = next(server)
    alerts_in_call = threading.Event()
    alerts_done = threading.Event()
    snapshots: list[datetime] = []
    three_snapshots = threading.Event()

    def alerts() -> None:
        alerts_in_call.set()
        with (
            webhook_client(timeout_s=5, allow_private=True) as client,
            contextlib.suppress(WebhookError),
        ):
            post_webhook(
                client,
                f"http://127.0.0.1:{port}/hook",
                secret="k",
                body=b"{}",
                delivery_id="d1",
                attempts=1,
                deadline_s=120,  # far longer than the test: the receiver holds it
            )
        alerts_done.set()

    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        snapshot_interval_minutes=0.005,  # every 0.3 s
        snapshot_jitter_s=0,
        fx_update_hours=0,
    )
    scheduler = BackgroundScheduler(timezone=UTC)

    def snapshot() -> None:
        snapshots.append(datetime.now(UTC))
        if len(snapshots) == 1:
            queue_alerts_job(scheduler, alerts)
        if len(snapshots) >= 3 and alerts_in_call.is_set():
            three_snapshots.set()

    build_scheduler(settings, job=snapshot, scheduler=scheduler, digests=False)
    scheduler.start()
    try:
        assert three_snapshots.wait(30), snapshots
        assert not alerts_done.is_set()  # the alerts are still stuck on the receiver
        assert sent  # ... which it holds
    finally:
        stop.set()
        scheduler.shutdown(wait=False)
        server.close()


_CHILD = """
import sys
from gpuscout.service.alerts.webhooks import post_webhook, webhook_client
with webhook_client(timeout_s=10, allow_private=True) as client:
    attempts = post_webhook(
        client, sys.argv[1], secret="k", body=b"{}", delivery_id="d", attempts=1, deadline_s=60
    )
print("attempts", attempts)
"""


def _huge_server(headers: bytes, chunk: bytes, chunks: int) -> Iterator[int]:
    """A receiver answering 200 with ``headers`` and ``chunks`` x ``chunk`` of body."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\n" + headers + b"\r\n")
                for _ in range(chunks):
                    conn.sendall(chunk)
            except OSError:
                pass  # the client hung up: it did not want the body

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        thread.join(30)


def gzip_bomb(megabytes: int) -> bytes:
    """A valid gzip body of ``megabytes`` MB of zeros, about a thousandth of that size:
    one fully flushed deflate segment of a megabyte, repeated (a full flush resets the
    window, so segments stand alone), then the final block and the gzip trailer."""
    block = bytes(1 << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    segment = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(block, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    size = (megabytes << 20) & 0xFFFFFFFF
    return header + segment * megabytes + final + struct.pack("<II", crc, size)


@pytest.mark.parametrize("kind", ["plain 1 GB", "gzip bomb"])
def test_a_huge_reply_leaves_the_process_small(kind: str) -> None:
    if kind == "plain 1 GB":
        gigabyte = 1 << 30
        server = _huge_server(f"Content-Length: {gigabyte}\r\n".encode(), bytes(1 << 20), 1024)
    else:
        bomb = gzip_bomb(1024)  # 1 GB of zeros in about 1 MB
        headers = f"Content-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n".encode()
        server = _huge_server(headers, bomb, 1)
    port = next(server)
    child = run_measured(_CHILD, f"http://127.0.0.1:{port}/hook")
    server.close()
    assert child.exit_code == 0, child.stderr
    assert "attempts 1" in child.stdout  # a 2xx status is the answer; the body is left unread
    assert child.peak_rss_mb < 500, f"{kind}: peak RSS {child.peak_rss_mb:.0f} MB"


def test_a_name_is_resolved_once_and_the_connection_pinned(
    webhook_server: WebhookServer,
) -> None:
    """DNS rebinding: the name is public when the alert is checked, private when called.
    The connection's own lookup refuses it; a permitted name connects to the address its
    one lookup gave, the Host header still naming it."""
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    lookups: list[str] = []

    def rebinding(host: str) -> list[str]:
        lookups.append(host)
        return next(answers)

    url = f"http://hooks.example.com:{webhook_server.port}/hook"
    assert check_webhook_url(url, production=False, resolve=rebinding) == url
    with (
        webhook_client(timeout_s=5, resolve=rebinding) as client,
        pytest.raises(WebhookError, match="non-public") as caught,
    ):
        post_webhook(client, url, secret="k", body=b"{}", delivery_id="d", attempts=3)
    assert not caught.value.retryable and webhook_server.calls == []

    lookups.clear()
    with webhook_client(timeout_s=5, allow_private=True, resolve=lambda h: ["127.0.0.1"]) as c:
        assert post_webhook(c, url, secret="k", body=b"{}", delivery_id="d", attempts=1) == 1
    headers, _body = webhook_server.calls[-1]
    assert headers["Host"] == f"hooks.example.com:{webhook_server.port}"
