"""Fixtures of the digest tests: a real SMTP server (aiosmtpd on 127.0.0.1, a free port,
SMTPUTF8 offered), a fresh migrated database per test, and settings pointing at both."""

from __future__ import annotations

import asyncio
import email
import socket
import threading
import warnings
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from gpuscout.service.settings import Settings

TOKEN_SECRET = "test-token-secret-0123456789abcdef"


class RecordingHandler:
    """Stores every accepted message; answers ``refuse_reply`` (451 unless set) to the next
    ``refuse`` DATA commands and 550 to RCPT for the addresses in ``unknown``. The next
    ``hold`` DATA commands wait (``held`` is set) until ``release`` is set: a server slow to
    answer one message while it serves others."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.refuse = 0
        self.refused = 0
        self.refuse_reply = "451 4.3.0 Try again later"
        self.unknown: set[str] = set()
        self.hold = 0
        self.held = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: Any
    ) -> str:
        if address in self.unknown:
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self.lock:
            wait, self.hold = self.hold > 0, max(0, self.hold - 1)
        if wait:
            self.held.set()
            while not self.release.is_set():  # the server's event loop serves others meanwhile
                await asyncio.sleep(0.02)
        with self.lock:
            if self.refuse:
                self.refuse -= 1
                self.refused += 1
                return self.refuse_reply
            message = email.message_from_bytes(envelope.content, policy=policy.default)
            assert isinstance(message, EmailMessage)
            self.messages.append(message)
            self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 2.0.0 OK"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def smtp_server() -> Iterator[tuple[RecordingHandler, int]]:
    with warnings.catch_warnings():
        # aiosmtpd (and its use of asyncio) may warn on import or start-up; not our code
        warnings.simplefilter("ignore")
        from aiosmtpd.controller import Controller

        handler = RecordingHandler()
        controller = Controller(
            handler, hostname="127.0.0.1", port=_free_port(), enable_SMTPUTF8=True
        )
        controller.start()
    try:
        yield handler, controller.port
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            controller.stop()


# ``engine`` and ``db_url`` come from tests/conftest.py: SQLite always, PostgreSQL too when
# GPUSCOUT_TEST_POSTGRES_URL is set, so delivery (claims, SKIP LOCKED) runs on both.


@pytest.fixture
def settings(tmp_path: Path, smtp_server: tuple[RecordingHandler, int], db_url: str) -> Settings:
    _handler, port = smtp_server
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        environment="development",
        data_dir=tmp_path,
        database_url=db_url,
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_security="none",
        smtp_attempts=3,
        smtp_timeout_s=5,
        mail_from="gpuscout digest <digest@gpuscout.test>",
        public_base_url="https://gpuscout.test",
        token_secret=TOKEN_SECRET,
        digest_weekday=1,
        digest_hour=8,
        alert_webhook_allow_private=True,  # the webhook receivers listen on 127.0.0.1
    )
