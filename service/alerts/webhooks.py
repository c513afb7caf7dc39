"""Webhook calls of an alert firing: signed, retried with backoff, refused to private hosts.

Each call is a ``POST`` of a JSON body with three headers:

* ``X-Gpuscout-Timestamp``: Unix seconds when the call was signed;
* ``X-Gpuscout-Signature``: ``sha256=`` and the hex HMAC-SHA256, keyed with the webhook's
  secret (returned once, when the alert is created), of ``<timestamp>.`` followed by the
  body bytes. A receiver recomputes it, compares in constant time, and refuses old
  timestamps (replays);
* ``X-Gpuscout-Delivery``: the delivery's id, the same on every retry of one delivery, so a
  receiver can drop a copy it has seen (after a crash between sending and recording it, a
  delivery is sent again: at least once, see :mod:`service.digest.delivery`).

A 2xx answer is success. Connection errors, timeouts, 408, 429 and 5xx are retried within
the call (``alert_webhook_attempts`` in all, backoff doubling from one second); any other
answer (redirects included: they are not followed, a redirect could lead to a private
address) fails at once. A delivery that failed is retried by later runs with the digest's
backoff; after ``alert_webhook_max_failures`` failed deliveries in a row the webhook is
disabled (:func:`db.alerts.note_webhook_result`).

In production (``environment`` not ``development``) a webhook URL must be ``https`` and
every address its host resolves to must be public: loopback, private (RFC 1918, ULA),
link-local, CGNAT, multicast, reserved and unspecified ranges are refused, when the alert is
created and again before each call (DNS can change in between).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:  # the API checks webhook URLs when an alert is made; only sending posts
    import httpx

__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "WebhookError",
    "WebhookUrlRefused",
    "check_webhook_url",
    "post_webhook",
    "sign",
]

SIGNATURE_HEADER = "X-Gpuscout-Signature"
TIMESTAMP_HEADER = "X-Gpuscout-Timestamp"
DELIVERY_HEADER = "X-Gpuscout-Delivery"
#: The first wait between two calls of one delivery, in seconds; it doubles each time.
BACKOFF_FIRST_S = 1.0

Resolve = Callable[[str], list[str]]


class WebhookUrlRefused(ValueError):
    """A webhook URL that may not be called (scheme, host, or a non-public address)."""


class WebhookError(RuntimeError):
    """A delivery that did not succeed after its attempts; ``retryable``: a later run may."""

    def __init__(self, message: str, *, attempts: int, retryable: bool) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.retryable = retryable


def _resolve(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise WebhookUrlRefused(f"webhook host {host!r} does not resolve: {exc}") from None
    return sorted({str(info[4][0]) for info in infos})


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_webhook_url(url: str, *, production: bool, resolve: Resolve = _resolve) -> str:
    """``url`` if it may be called, else :class:`WebhookUrlRefused` saying why.

    Always: an ``http(s)`` URL with a host, no user info, at most 2048 characters. In
    production also ``https`` and only public addresses (see the module docstring).
    """
    if len(url) > 2048 or any(c in url for c in "\r\n\t "):
        raise WebhookUrlRefused("webhook URL: at most 2048 characters, no whitespace")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise WebhookUrlRefused(f"webhook URL must be http(s)://host/...: {url!r}")
    if parts.username or parts.password:
        raise WebhookUrlRefused("webhook URL must not carry a user name or password")
    if production:
        if parts.scheme != "https":
            raise WebhookUrlRefused("webhook URL must be https in production")
        addresses = _resolve_literal(parts.hostname) or resolve(parts.hostname)
        private = [a for a in addresses if not _public(a)]
        if private or not addresses:
            raise WebhookUrlRefused(
                f"webhook host {parts.hostname!r} resolves to a non-public address"
                f" ({', '.join(private) or 'none'}): refused in production"
            )
    return url


def _resolve_literal(host: str) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        return []


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for ``body`` sent at ``timestamp``.

    >>> sign("k", 1700000000, b"{}")[:15]
    'sha256=c6ef4734'
    """
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


def _retryable(status: int) -> bool:
    return status in (408, 429) or status >= 500


def post_webhook(
    client: httpx.Client,
    url: str,
    *,
    secret: str,
    body: bytes,
    delivery_id: str,
    attempts: int,
    check: Callable[[str], object] = lambda url: url,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """POST ``body`` to ``url``, signed; the attempts it took, or :class:`WebhookError`.

    ``check`` runs before every attempt (the production URL check: DNS may have changed).
    """
    import httpx

    error = "not attempted"
    retryable = True
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            sleep(BACKOFF_FIRST_S * 2 ** (attempt - 2))
        try:
            check(url)
        except WebhookUrlRefused as exc:
            raise WebhookError(str(exc), attempts=attempt, retryable=False) from None
        timestamp = int(clock())
        headers = {
            "Content-Type": "application/json",
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: sign(secret, timestamp, body),
            DELIVERY_HEADER: delivery_id,
        }
        try:
            response = client.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            error, retryable = f"{type(exc).__name__}: {exc}", True
            continue
        if 200 <= response.status_code < 300:
            return attempt
        error = f"HTTP {response.status_code}"
        retryable = _retryable(response.status_code)
        if not retryable:
            break
    raise WebhookError(
        f"webhook failed after {attempt} attempt(s): {error}", attempts=attempt, retryable=retryable
    )
