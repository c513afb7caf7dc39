"""SMTP over TLS: STARTTLS and implicit TLS against a real aiosmtpd server whose certificate
comes from a throwaway CA (trustme), with AUTH, which the server only offers over TLS."""

from __future__ import annotations

import socket
import ssl
import warnings
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
import trustme

from gpuscout.service.digest.mail import SmtpConfig, SmtpSendError, send_message
from gpuscout.service.settings import Settings

from .conftest import RecordingHandler

USER, PASSWORD = "digest", "s3cret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
    from aiosmtpd.smtp import AuthResult, LoginPassword

    ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=ok, handled=False)  # handled=False: the server answers 535


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def _server_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return context


@pytest.fixture(params=["starttls", "ssl"])
def tls_server(
    request: pytest.FixtureRequest, ca: trustme.CA
) -> Iterator[tuple[RecordingHandler, int, str]]:
    """An SMTP server speaking STARTTLS (required) or implicit TLS, AUTH over TLS only."""
    security = request.param
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from aiosmtpd.controller import Controller

        handler = RecordingHandler()
        # aiosmtpd counts only STARTTLS as TLS for ``auth_require_tls``; on implicit TLS
        # every byte is encrypted anyway.
        tls: dict[str, Any] = (
            {"tls_context": _server_context(ca), "require_starttls": True}
            if security == "starttls"
            else {"ssl_context": _server_context(ca), "auth_require_tls": False}
        )
        controller = Controller(
            handler,
            hostname="127.0.0.1",
            port=_free_port(),
            authenticator=_authenticate,
            **tls,
        )
        controller.start()
    try:
        yield handler, controller.port, security
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            controller.stop()


def _message() -> EmailMessage:
    message = EmailMessage()
    message["From"] = "gpuscout <digest@gpuscout.test>"
    message["To"] = "ada@example.com"
    message["Subject"] = "tls"
    message["Message-ID"] = "<tls-test@gpuscout.test>"
    message.set_content("over TLS")
    return message


def test_sends_over_tls_with_auth(
    tls_server: tuple[RecordingHandler, int, str], ca_file: str
) -> None:
    handler, port, security = tls_server
    config = SmtpConfig(
        "127.0.0.1", port, security, USER, PASSWORD, ca_file=ca_file, timeout_s=5, attempts=1
    )
    assert send_message(_message(), config) == 1
    [received] = handler.messages
    assert received["Subject"] == "tls"


def test_wrong_password_is_refused(
    tls_server: tuple[RecordingHandler, int, str], ca_file: str
) -> None:
    handler, port, security = tls_server
    config = SmtpConfig(
        "127.0.0.1", port, security, USER, "wrong", ca_file=ca_file, timeout_s=5, attempts=1
    )
    with pytest.raises(SmtpSendError, match="Authentication"):
        send_message(_message(), config)
    assert handler.messages == []


def test_an_untrusted_certificate_fails_at_once_and_sends_nothing(
    tls_server: tuple[RecordingHandler, int, str],
) -> None:
    """Without the CA the certificate cannot be verified: a configuration error, not
    retried (four attempts would change nothing), and nothing goes out in clear text."""
    handler, port, security = tls_server
    config = SmtpConfig("127.0.0.1", port, security, USER, PASSWORD, timeout_s=5, attempts=4)
    sleeps: list[float] = []
    with pytest.raises(SmtpSendError, match="CERTIFICATE_VERIFY_FAILED") as caught:
        send_message(_message(), config, sleep=sleeps.append)
    assert caught.value.attempts == 1 and not caught.value.transient and sleeps == []
    assert handler.messages == []


def test_ca_file_setting_must_exist(tmp_path: Path) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="smtp_ca_file"):
        Settings(_env_file=None, smtp_ca_file=tmp_path / "missing.pem")  # type: ignore[call-arg]
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    settings = Settings(_env_file=None, smtp_ca_file=ca)  # type: ignore[call-arg]
    assert SmtpConfig.from_settings(settings).ca_file == str(ca)
