"""Mail assembly and the SMTP path.

Messages are :class:`email.message.EmailMessage` with the default policy. That policy refuses
a raw CR or LF in a header value, but it *decodes* RFC 2047 encoded words while parsing a
value, and some releases (CPython 3.11.7 and 3.12.1 among them; newer ones refuse with
``verify_generated_headers``) fold the decoded text back out as is:
``=?utf-8?b?eA0KUmVwbHktVG86IGFAZXZpbC5leGFtcGxl?=`` in a subject, a display name or even an
address's local part writes a real ``Reply-To:`` line. So no text reaches a header raw, on
any Python:

* :func:`header_text` refuses control characters and breaks the encoded-word opener ``=?``
  (``= ?``) in every unstructured value (the subject, the sender's display name);
* :func:`normalize_address` refuses an address holding ``=?`` (valid atext, never needed);
* the subscriber's name never goes into an address header (``To`` is the bare address);
* :func:`verified` serializes each finished message and parses the bytes back: a header
  the generator wrote that we did not set is :class:`HeaderInjectionError`, not a mail.

A digest is ``multipart/alternative``: ``text/plain``, then ``multipart/related`` holding the
``text/html`` and the chart (``image/png``, referenced from the HTML as ``cid:``). It carries
``List-Unsubscribe`` (the one-click URL) and ``List-Unsubscribe-Post:
List-Unsubscribe=One-Click`` (RFC 8058), and a ``Message-ID`` chosen by the caller *before*
sending, so that a resend after a crash reuses it (see :mod:`.delivery`).

Sending retries transient failures (4xx replies, dropped or refused connections) with
exponential backoff (tenacity); a permanent failure (5xx) is raised at once. Either way the
caller gets :class:`SmtpSendError`, saying how many attempts were made and whether the
server refused *this message* for good (:func:`is_permanent_refusal`: a 5xx to its
recipient or its data), which no later attempt can change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import smtplib
import socket
import ssl
import threading
import time
from collections.abc import Callable
from datetime import datetime
from email import errors, policy
from email.headerregistry import Address
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from email.utils import format_datetime, make_msgid, parseaddr
from typing import TYPE_CHECKING, Any

from email_validator import EmailNotValidError, validate_email
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from ..settings import Settings

if TYPE_CHECKING:  # the mails' templates (Jinja2) load where they are built, not here
    from .build import Confirmation, Digest

__all__ = [
    "HeaderInjectionError",
    "InvalidAddressError",
    "SmtpConfig",
    "SmtpSendError",
    "build_confirmation_message",
    "build_digest_message",
    "build_list_message",
    "header_text",
    "is_permanent_refusal",
    "is_transient",
    "new_message_id",
    "normalize_address",
    "parse_sender",
    "safe_header",
    "send_message",
    "verified",
]

log = logging.getLogger("gpuscout.digest.mail")

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: The opener of an RFC 2047 encoded word (``=?charset?B|Q?text?=``).
_ENCODED_WORD = "=?"


class HeaderInjectionError(ValueError):
    """A value meant for a mail header holds a line break or another control character."""


class InvalidAddressError(ValueError):
    """Not a valid email address (checked by email-validator, without DNS lookups)."""


class SmtpSendError(RuntimeError):
    """The message could not be handed to the SMTP server."""

    def __init__(
        self, message: str, *, attempts: int, transient: bool, permanent: bool = False
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.transient = transient
        self.permanent = permanent
        """the server refused this message for good (5xx to RCPT or DATA): do not retry"""
        self.record: Any = None  # what was stored before the send failed, if anything


def safe_header(value: str, *, field: str = "header") -> str:
    """``value`` unchanged if it has no control characters (CR, LF, NUL, ...), else an error."""
    if _CONTROL.search(value):
        raise HeaderInjectionError(f"{field}: control characters are not allowed")
    return value


def header_text(value: str, *, field: str = "header") -> str:
    """``value`` for an unstructured header (Subject, a display name): control characters
    refused (:func:`safe_header`), and every ``=?`` written ``= ?``, so no decoder (the email
    package's own while folding, or the reader's) turns typed text into other characters.

    >>> header_text("=?utf-8?b?eA0KUmVwbHktVG86IGFAZXZpbC5leGFtcGxl?=")
    '= ?utf-8?b?eA0KUmVwbHktVG86IGFAZXZpbC5leGFtcGxl?='
    """
    return safe_header(value, field=field).replace(_ENCODED_WORD, "= ?")


def verified(message: EmailMessage) -> EmailMessage:
    """``message`` if its serialized form parses back to exactly the headers it was given.

    The last line of defence against header injection whatever the Python version: the
    generator's output is what the SMTP server and the reader see, so that is what is
    checked. Newer Pythons refuse such a header themselves (``HeaderWriteError``, a
    ``MessageError``); both become :class:`HeaderInjectionError`.
    """
    try:
        raw = message.as_bytes()
    except errors.MessageError as exc:
        raise HeaderInjectionError(f"a header could not be written safely: {exc}") from None
    parsed = BytesHeaderParser(policy=policy.default).parsebytes(raw)
    given = [name.lower() for name in message.keys()]  # noqa: SIM118 - the header names
    written = [name.lower() for name in parsed.keys()]  # noqa: SIM118
    if written != given:
        extra = sorted(set(written) - set(given))
        raise HeaderInjectionError(
            "a header value wrote header(s) of its own: " + (", ".join(extra) or "reordered")
        )
    return message


def normalize_address(email: str, *, local_domains: bool = False) -> str:
    """The normalized form of ``email``; :class:`InvalidAddressError` if it is not one.

    Syntax only (``check_deliverability=False``): no DNS lookups, so this is fast and works
    offline. Line breaks and other control characters are refused before parsing.
    ``local_domains`` admits special-use domains (``localhost``, ``.test``): for our own
    sender address behind a local relay, never for subscribers.
    """
    if not isinstance(email, str) or _CONTROL.search(email) or len(email) > 320:
        raise InvalidAddressError("not a valid email address")
    if _ENCODED_WORD in email:
        raise InvalidAddressError("not a valid email address: '=?' is not allowed in it")
    try:
        result = validate_email(
            email.strip(),
            check_deliverability=False,
            globally_deliverable=not local_domains,
            test_environment=local_domains,
        )
    except EmailNotValidError as exc:
        raise InvalidAddressError(f"not a valid email address: {exc}") from None
    return str(result.normalized)


def parse_sender(value: str) -> Address:
    """``mail_from`` (``Name <addr>`` or ``addr``) as a header address, validated."""
    safe_header(value, field="mail_from")
    display_name, addr = parseaddr(value)
    display_name = header_text(display_name, field="mail_from")
    if not addr:
        raise InvalidAddressError(f"mail_from is not an address: {value!r}")
    username, _, domain = addr.rpartition("@")
    if domain.lower() != "localhost":  # a local relay's default; anything else is checked
        addr = normalize_address(addr, local_domains=True)
        username, domain = addr.rsplit("@", 1)
    elif not username or _CONTROL.search(addr) or any(c in addr for c in ' <>,;"()'):
        raise InvalidAddressError(f"mail_from is not an address: {value!r}")
    return Address(display_name=display_name, username=username, domain=domain)


#: The default policy, folding only past RFC 5322's 998-character line limit: the default
#: 78 makes a long one-click URL an RFC 2047 encoded word in ``List-Unsubscribe``, which
#: RFC 2369 and 8058 do not allow (mailbox providers then hide the unsubscribe button).
MAIL_POLICY = policy.default.clone(max_line_length=998)


def new_message_id(sender: Address) -> str:
    """A fresh, globally unique ``<...@domain>`` Message-ID in the sender's domain."""
    return make_msgid(idstring="gpuscout", domain=sender.domain)


def _base(
    *, sender: Address, to_email: str, subject: str, message_id: str, date: datetime
) -> EmailMessage:
    to = normalize_address(to_email)
    username, domain = to.rsplit("@", 1)
    message = EmailMessage(policy=MAIL_POLICY)
    message["From"] = sender
    message["To"] = Address(username=username, domain=domain)
    message["Subject"] = header_text(subject, field="subject")
    message["Date"] = format_datetime(date)
    message["Message-ID"] = safe_header(message_id, field="message_id")
    message["Auto-Submitted"] = "auto-generated"
    return message


def build_list_message(
    *,
    subject: str,
    text: str,
    html: str,
    sender: Address,
    to_email: str,
    message_id: str,
    unsubscribe_url: str,
    date: datetime,
    inline_png: tuple[bytes, str] | None = None,
) -> EmailMessage:
    """A text + HTML list mail with the one-click unsubscribe headers (RFC 8058): a price
    alert, or the digest with its chart (``inline_png``: the PNG and its Content-ID, shown
    inline by the HTML part)."""
    message = _base(
        sender=sender, to_email=to_email, subject=subject, message_id=message_id, date=date
    )
    safe_header(unsubscribe_url, field="unsubscribe_url")
    if not unsubscribe_url.startswith(("https://", "http://")) or ">" in unsubscribe_url:
        raise ValueError("unsubscribe_url must be an http(s) URL")
    message["List-Unsubscribe"] = f"<{unsubscribe_url}>"
    message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message["Precedence"] = "bulk"
    message.set_content(text, subtype="plain", charset="utf-8")
    message.add_alternative(html, subtype="html", charset="utf-8")
    if inline_png is not None:
        png, cid = inline_png
        parts = message.get_payload()
        assert isinstance(parts, list)
        html_part = parts[1]
        assert isinstance(html_part, EmailMessage)
        html_part.add_related(
            png,
            maintype="image",
            subtype="png",
            cid=f"<{safe_header(cid, field='chart_cid')}>",
            filename="price-index.png",
            disposition="inline",
        )
    return verified(message)


def build_digest_message(
    digest: Digest,
    *,
    sender: Address,
    to_email: str,
    message_id: str,
    unsubscribe_url: str,
    date: datetime,
) -> EmailMessage:
    """The digest as one MIME message (see the module docstring for its structure)."""
    return build_list_message(
        subject=digest.subject,
        text=digest.text,
        html=digest.html,
        sender=sender,
        to_email=to_email,
        message_id=message_id,
        unsubscribe_url=unsubscribe_url,
        date=date,
        inline_png=(digest.chart_png, digest.chart_cid),
    )


def build_confirmation_message(
    confirmation: Confirmation,
    *,
    sender: Address,
    to_email: str,
    message_id: str,
    date: datetime,
) -> EmailMessage:
    """The double opt-in mail: text and HTML alternatives, no list headers."""
    message = _base(
        sender=sender,
        to_email=to_email,
        subject=confirmation.subject,
        message_id=message_id,
        date=date,
    )
    message.set_content(confirmation.text, subtype="plain", charset="utf-8")
    message.add_alternative(confirmation.html, subtype="html", charset="utf-8")
    return verified(message)


# --- SMTP -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class SmtpConfig:
    host: str
    port: int
    security: str = "none"  # none | starttls | ssl
    user: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    ca_file: str | None = None
    """PEM CA bundle for the server's certificate; None = the system's trusted CAs"""
    timeout_s: float = 30.0
    attempts: int = 4
    backoff_s: float = 2.0
    """first wait between attempts; doubles each time, at most 60 s"""

    @classmethod
    def from_settings(cls, settings: Settings) -> SmtpConfig:
        password = settings.smtp_password
        return cls(
            host=settings.smtp_host,
            port=settings.smtp_port,
            security=settings.smtp_security,
            user=settings.smtp_user,
            password=None if password is None else password.get_secret_value(),
            ca_file=None if settings.smtp_ca_file is None else str(settings.smtp_ca_file),
            timeout_s=settings.smtp_timeout_s,
            attempts=settings.smtp_attempts,
        )


def is_transient(exc: BaseException) -> bool:
    """A failure worth retrying: a 4xx reply, or the connection failed or dropped.

    A certificate the client cannot verify is configuration, not bad luck: not retried.
    """
    if isinstance(exc, ssl.SSLCertVerificationError):
        return False
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(400 <= code < 500 for code, _ in exc.recipients.values())
    if isinstance(exc, smtplib.SMTPResponseException):
        return 400 <= exc.smtp_code < 500
    return isinstance(exc, (smtplib.SMTPServerDisconnected, OSError))


def is_permanent_refusal(exc: BaseException) -> bool:
    """The server refused *this message* for good: every recipient 5xx, or a 5xx to DATA.

    A 5xx to the session instead (HELO, AUTH, MAIL FROM, the greeting) is a configuration
    problem that every message meets and that an operator fixes: not this message's fault,
    so not permanent for it. ``SMTPSenderRefused`` and ``SMTPAuthenticationError`` are
    ``SMTPResponseException`` too and stay retryable.
    """
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return bool(exc.recipients) and all(
            500 <= code < 600 for code, _ in exc.recipients.values()
        )
    return isinstance(exc, smtplib.SMTPDataError) and 500 <= exc.smtp_code < 600


def _send_once(message: EmailMessage, config: SmtpConfig, envelope_from: str, to: str) -> None:
    context = ssl.create_default_context(cafile=config.ca_file)
    client: smtplib.SMTP
    if config.security == "ssl":
        client = smtplib.SMTP_SSL(timeout=config.timeout_s, context=context)
    else:
        client = smtplib.SMTP(timeout=config.timeout_s)
    # made unconnected so the deadline covers the greeting too; smtplib names the server
    # for TLS (SNI, certificate) by ``_host``, which only its constructor sets
    client._host = config.host  # type: ignore[attr-defined]
    # smtplib's timeout bounds each read: a server dripping its replies could hold one
    # message for ever; past the whole attempt's deadline its socket is shut, the attempt
    # fails (transient) and the retries' backoff applies
    cut = threading.Timer(SMTP_DEADLINE_TIMEOUTS * config.timeout_s, _shut, args=(client,))
    cut.daemon = True
    cut.start()
    try:
        with client:
            client.connect(config.host, config.port)  # the greeting is read within it too
            client.ehlo()
            if config.security == "starttls":
                client.starttls(context=context)
                client.ehlo()
            if config.user:
                client.login(config.user, config.password or "")
            client.send_message(message, from_addr=envelope_from, to_addrs=[to])
    finally:
        cut.cancel()


#: One SMTP attempt's total deadline, in per-read timeouts (``smtp_timeout_s``).
SMTP_DEADLINE_TIMEOUTS = 3


def _shut(client: smtplib.SMTP) -> None:
    """Shut the socket of an attempt past its deadline: its blocked read returns at once."""
    sock = client.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def send_message(
    message: EmailMessage,
    config: SmtpConfig,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Hand ``message`` to the SMTP server; returns the number of attempts it took.

    The envelope is taken from the ``From`` and ``To`` headers (one recipient). Transient
    failures are retried ``config.attempts`` times in all, with exponential backoff.
    """
    sender = message["From"].addresses[0].addr_spec
    to = message["To"].addresses[0].addr_spec

    def _log_retry(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "SMTP attempt %d for %s failed (%s); retrying in %.1f s",
            state.attempt_number,
            message["Message-ID"],
            exc,
            wait,
        )

    retrying = Retrying(
        stop=stop_after_attempt(config.attempts),
        wait=wait_exponential(multiplier=config.backoff_s, min=config.backoff_s, max=60),
        retry=retry_if_exception(is_transient),
        before_sleep=_log_retry,
        sleep=sleep,
        reraise=True,
    )
    attempts = 0
    try:
        for attempt in retrying:
            with attempt:
                attempts = attempt.retry_state.attempt_number
                _send_once(message, config, sender, to)
    except (smtplib.SMTPException, OSError) as exc:
        raise SmtpSendError(
            f"SMTP failed after {attempts} attempt(s): {exc}",
            attempts=attempts,
            transient=is_transient(exc),
            permanent=is_permanent_refusal(exc),
        ) from exc
    return attempts
