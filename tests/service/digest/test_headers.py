"""No text a subscriber (or a provider, or an operator) typed can add a mail header.

On CPython 3.11.7 and 3.12.1 the email package decodes an RFC 2047 encoded word while it
parses a header value and writes the decoded CR LF back out raw when it folds the header:
each payload below puts a real ``Reply-To:`` or ``Bcc:`` line into a message built the naive
way on those versions. Every test parses the *bytes* gpuscout produces, as the SMTP server
and the reader do, and checks the header names are exactly the ones gpuscout set.
"""

from __future__ import annotations

import base64
import email
from email import policy
from email.message import EmailMessage

import pytest
from pydantic import ValidationError
from sqlalchemy.engine import Engine

from gpuscout.service.digest.build import (
    DigestLinks,
    SubscriptionView,
    build_confirmation,
    build_digest,
)
from gpuscout.service.digest.mail import (
    HeaderInjectionError,
    InvalidAddressError,
    build_confirmation_message,
    build_digest_message,
    header_text,
    normalize_address,
    parse_sender,
    verified,
)
from gpuscout.service.digest.schedule import run_digests, smtp_transport
from gpuscout.service.digest.subscriptions import SubscriptionManager, SubscriptionRequest
from gpuscout.service.settings import Settings

from .conftest import RecordingHandler
from .helpers import JOB, NOW, REQUIREMENT, current_from_db, link_in, offer, token_of

PAYLOAD = "=?utf-8?b?eA0KUmVwbHktVG86IGFAZXZpbC5leGFtcGxl?="  # "x\r\nReply-To: a@evil.example"


def _b(text: str, charset: str = "utf-8") -> str:
    return f"=?{charset}?b?{base64.b64encode(text.encode()).decode()}?="


NAMES = {
    "b-crlf": PAYLOAD,
    "b-lf": _b("x\nReply-To: a@evil.example"),
    "b-upper": "=?UTF-8?B?eA0KUmVwbHktVG86IGFAZXZpbC5leGFtcGxl?=",
    "q-crlf": "=?utf-8?q?x=0D=0AReply-To:=20a@evil.example?=",
    "q-lf": "=?utf-8?q?x=0ABcc:_eve@evil.example?=",
    "q-split": "=?utf-8?q?x=0D?= =?utf-8?q?=0AReply-To:_a@evil.example?=",
    "q-latin1": "=?iso-8859-1?q?x=0D=0AReply-To:_a@evil.example?=",
    "raw-crlf": "x\r\nReply-To: a@evil.example",
    "raw-lf": "x\nBcc: eve@evil.example",
    "long-b": _b("x" * 40 + "\r\nReply-To: a@evil.example"),
    "long-repeated": (PAYLOAD + " ") * 3,
    "long-unicode": "Zoë Ünïcødé 名前 " * 6,
}

CONFIRMATION_HEADERS = [
    "from",
    "to",
    "subject",
    "date",
    "message-id",
    "auto-submitted",
    "mime-version",
    "content-type",
]
DIGEST_HEADERS = [
    *CONFIRMATION_HEADERS[:6],
    "list-unsubscribe",
    "list-unsubscribe-post",
    "precedence",
    "mime-version",
    "content-type",
]
LINKS = DigestLinks(
    unsubscribe_url="https://gpuscout.test/v1/subscriptions/unsubscribe?token=t",
    home_url="https://gpuscout.test",
)


def _written(message: EmailMessage) -> EmailMessage:
    parsed = email.message_from_bytes(message.as_bytes(), policy=policy.default)
    assert isinstance(parsed, EmailMessage)
    return parsed


def _header_names(message: EmailMessage) -> list[str]:
    return [name.lower() for name in _written(message).keys()]  # noqa: SIM118


def _view(name: str) -> SubscriptionView:
    return SubscriptionView(
        id=7, name=name, email="ada@example.com", requirement=REQUIREMENT, job=JOB
    )


@pytest.mark.parametrize("name", list(NAMES.values()), ids=list(NAMES))
def test_no_name_adds_a_header_to_the_confirmation(name: str) -> None:
    sender = parse_sender("gpuscout <digest@gpuscout.test>")
    message = build_confirmation_message(
        build_confirmation(_view(name), confirm_url="https://gpuscout.test/c?token=t"),
        sender=sender,
        to_email="ada@example.com",
        message_id="<m1@gpuscout.test>",
        date=NOW,
    )
    assert _header_names(message) == CONFIRMATION_HEADERS
    subject = str(_written(message)["Subject"]).strip()  # a long word may fold at once
    assert "\r" not in subject and "\n" not in subject and subject.startswith("Confirm")
    assert subject == "Confirm your gpuscout digest"  # no text the requester chose


def test_list_unsubscribe_is_plain_ascii_per_rfc_8058() -> None:
    long_url = "https://gpuscout.test/v1/subscriptions/unsubscribe?token=" + "a1B-_" * 60
    offers = [offer("acme", "a1", "16.00", NOW)]
    digest = build_digest(
        _view("Ünïcode name"),
        offers,
        changes=None,
        price_index=[],
        stale_providers=[],
        links=LINKS,
        now=NOW,
    )
    message = build_digest_message(
        digest,
        sender=parse_sender("gpuscout <digest@gpuscout.test>"),
        to_email="ada@example.com",
        message_id="<m3@gpuscout.test>",
        unsubscribe_url=long_url,
        date=NOW,
    )
    raw = message.as_bytes()
    head = raw.split(b"\n\n", 1)[0]
    lines = [line for line in head.splitlines() if line.lower().startswith(b"list-unsubscribe")]
    assert lines == [
        f"List-Unsubscribe: <{long_url}>".encode(),
        b"List-Unsubscribe-Post: List-Unsubscribe=One-Click",
    ]
    assert b"=?" not in b"".join(lines) and head.isascii()
    assert "Ünïcode" not in str(_written(message)["Subject"])


@pytest.mark.parametrize("name", list(NAMES.values()), ids=list(NAMES))
def test_no_name_adds_a_header_to_the_digest(name: str) -> None:
    offers = [offer("acme", "a1", "16.00", NOW), offer("bolt", PAYLOAD, "17.00", NOW)]
    digest = build_digest(
        _view(name), offers, changes=None, price_index=[], stale_providers=[], links=LINKS, now=NOW
    )
    message = build_digest_message(
        digest,
        sender=parse_sender("gpuscout <digest@gpuscout.test>"),
        to_email="ada@example.com",
        message_id="<m2@gpuscout.test>",
        unsubscribe_url=LINKS.unsubscribe_url,
        date=NOW,
    )
    assert _header_names(message) == DIGEST_HEADERS
    assert "gpuscout 2025-W11" in str(_written(message)["Subject"])


def test_the_payload_is_shown_not_decoded() -> None:
    assert header_text(PAYLOAD) == "= ?utf-8?b?eA0KUmVwbHktVG86IGFAZXZpbC5leGFtcGxl?="
    with pytest.raises(HeaderInjectionError):
        header_text("x\r\nBcc: eve@example.com")


def test_the_senders_display_name_cannot_add_a_header() -> None:
    sender = parse_sender(f"{PAYLOAD} <digest@gpuscout.test>")
    message = build_confirmation_message(
        build_confirmation(_view("ok"), confirm_url="https://gpuscout.test/c?token=t"),
        sender=sender,
        to_email="ada@example.com",
        message_id="<m3@gpuscout.test>",
        date=NOW,
    )
    assert _header_names(message) == CONFIRMATION_HEADERS


@pytest.mark.parametrize(
    "address",
    [f"{PAYLOAD}@example.com", "=?utf-8?q?x?=@example.com", "a=?b@example.com"],
)
def test_an_address_holding_an_encoded_word_is_refused(address: str) -> None:
    with pytest.raises(InvalidAddressError, match=r"'=\?'"):
        normalize_address(address)
    with pytest.raises(ValidationError):
        SubscriptionRequest(email=address, name="ok")


def test_verified_refuses_a_message_whose_bytes_hold_a_header_it_was_not_given() -> None:
    """The last line of defence, should a raw value ever reach a header: on 3.11.7/3.12.1
    the generator writes the extra line (caught by parsing the bytes back), on newer
    Pythons it refuses to (``HeaderWriteError``); both are HeaderInjectionError."""
    message = EmailMessage()
    message["To"] = "ada@example.com"
    message["Subject"] = f"hello {PAYLOAD}"  # raw, as the code before #14 did
    message.set_content("hi")
    with pytest.raises(HeaderInjectionError):
        verified(message)
    clean = EmailMessage()
    clean["To"] = "ada@example.com"
    clean["Subject"] = header_text(f"hello {PAYLOAD}")
    clean.set_content("hi")
    assert verified(clean) is clean


def test_through_a_real_smtp_server_no_mail_carries_an_extra_header(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    """The subscription API's path: subscribe with the payload as the name, confirm, digest;
    the server receives exactly the headers set."""
    from .helpers import seed_history

    handler, _ = smtp_server
    seed_history(engine)
    manager = SubscriptionManager(settings, engine, smtp_transport(settings), clock=lambda: NOW)
    for i, name in enumerate(v for k, v in NAMES.items() if not k.startswith("raw")):
        manager.subscribe(
            SubscriptionRequest(
                email=f"ada{i}@example.com", name=name[:100], requirement=REQUIREMENT, job=JOB
            )
        )
    confirmations = list(handler.messages)
    for message in confirmations:
        assert [n.lower() for n in message.keys()] == CONFIRMATION_HEADERS  # noqa: SIM118
        manager.confirm(token_of(link_in(message, "/v1/subscriptions/confirm")))
    report = run_digests(settings, engine, now=NOW, current=current_from_db(engine))
    assert report.sent == len(confirmations) and report.failed == 0
    for message in handler.messages[len(confirmations) :]:
        assert [n.lower() for n in message.keys()] == DIGEST_HEADERS  # noqa: SIM118
        assert message["Reply-To"] is None and message["Bcc"] is None
