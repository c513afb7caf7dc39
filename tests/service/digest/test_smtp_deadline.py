"""An SMTP server that drips its replies cannot hold a mail past the attempt's deadline."""

from __future__ import annotations

import socket
import threading
from datetime import UTC, datetime

import pytest

from gpuscout.pricing import Requirement
from gpuscout.pricing.job import Job
from gpuscout.service.digest.build import SubscriptionView, build_confirmation
from gpuscout.service.digest.mail import (
    SmtpConfig,
    SmtpSendError,
    build_confirmation_message,
    parse_sender,
    send_message,
)


def test_a_dripping_smtp_server_is_cut_at_the_deadline() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    sent: list[int] = [0]
    greeting = b"220 " + b"x" * 10_000 + b"\r\n"

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            for byte in greeting:
                if stop.wait(0.05):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                sent[0] += 1

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    view = SubscriptionView(
        id=1, name="n", email="ada@example.com", requirement=Requirement(), job=Job.for_hours(1)
    )
    message = build_confirmation_message(
        build_confirmation(view, confirm_url="https://gpuscout.test/c?token=t"),
        sender=parse_sender("gpuscout <digest@gpuscout.test>"),
        to_email="ada@example.com",
        message_id="<m@gpuscout.test>",
        date=datetime(2025, 3, 10, tzinfo=UTC),
    )
    config = SmtpConfig(
        host="127.0.0.1",
        port=listener.getsockname()[1],
        security="none",
        timeout_s=0.5,  # each read returns well within it: only the deadline (1.5 s) cuts
        attempts=1,
    )
    try:
        with pytest.raises(SmtpSendError):
            send_message(message, config, sleep=lambda _s: None)
        assert 0 < sent[0] < len(greeting)  # the greeting was still dripping
    finally:
        stop.set()
        listener.close()
        thread.join(5)
