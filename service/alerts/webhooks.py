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

Every call has a total deadline (``alert_webhook_deadline_s``, over every attempt and wait
of one delivery, :func:`egress.deadline`), however slowly the receiver answers; the reply's
body is never read (its status is the answer), so no reply, however large or compressed,
costs memory. Redirects are not followed.

Whatever the environment, every address a webhook's host resolves to must be public
(:mod:`service.alerts.egress`): loopback, private, link-local, CGNAT, multicast, reserved,
and those hidden in IPv6 forms (mapped, compatible, NAT64, 6to4, Teredo) are refused, when the
alert is created and at each connection, which goes to the address checked (pinned).
``alert_webhook_allow_private`` lifts this for development (a receiver on the same machine).
In production a webhook URL must also be ``https``.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .egress import Resolve, WebhookUrlRefused, deadline, public_addresses, system_resolve

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
    "webhook_client",
]

SIGNATURE_HEADER = "X-Gpuscout-Signature"
TIMESTAMP_HEADER = "X-Gpuscout-Timestamp"
DELIVERY_HEADER = "X-Gpuscout-Delivery"
#: The first wait between two calls of one delivery, in seconds; it doubles each time.
BACKOFF_FIRST_S = 1.0


class WebhookError(RuntimeError):
    """A delivery that did not succeed after its attempts; ``retryable``: a later run may."""

    def __init__(self, message: str, *, attempts: int, retryable: bool) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.retryable = retryable


def check_webhook_url(
    url: str, *, production: bool, allow_private: bool = False, resolve: Resolve = system_resolve
) -> str:
    """``url`` if it may be called, else :class:`WebhookUrlRefused` saying why.

    An ``http(s)`` URL with a host, no user info, at most 2048 characters, whose host
    resolves only to public addresses unless ``allow_private``; in production ``https``.
    """
    if len(url) > 2048 or any(c in url for c in "\r\n\t "):
        raise WebhookUrlRefused("webhook URL: at most 2048 characters, no whitespace")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise WebhookUrlRefused(f"webhook URL must be http(s)://host/...: {url!r}")
    if parts.username or parts.password:
        raise WebhookUrlRefused("webhook URL must not carry a user name or password")
    if production and parts.scheme != "https":
        raise WebhookUrlRefused("webhook URL must be https in production")
    if not allow_private:
        public_addresses(parts.hostname, resolve=resolve)
    return url


def webhook_client(
    *, timeout_s: float, allow_private: bool = False, resolve: Resolve = system_resolve
) -> httpx.Client:
    """The client webhook calls go through: no redirects, connections pinned to the public
    addresses checked at connect time (:class:`egress.PinnedBackend`)."""
    import httpcore
    import httpx

    from .egress import PinnedBackend

    transport = httpx.HTTPTransport()
    # httpx's transport takes no network backend: its pool is rebuilt with the pinned one.
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(),
        network_backend=PinnedBackend(allow_private=allow_private, resolve=resolve),
    )
    return httpx.Client(
        transport=transport,
        timeout=timeout_s,
        follow_redirects=False,
        headers={"User-Agent": "gpuscout-alerts/0.1"},
    )


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
    deadline_s: float = 30.0,
    check: Callable[[str], object] = lambda url: url,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> int:
    """POST ``body`` to ``url``, signed; the attempts it took, or :class:`WebhookError`.

    ``check`` runs before every attempt (DNS may have changed). All attempts and waits end
    within ``deadline_s``: a wait that would pass it is not made. The reply's body is not read.
    """
    import httpx

    error = "not attempted"
    retryable = True
    ends = monotonic() + deadline_s
    attempt = 0
    with deadline(deadline_s, clock=monotonic):
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                wait = BACKOFF_FIRST_S * 2 ** (attempt - 2)
                if monotonic() + wait >= ends:
                    attempt -= 1
                    error += f"; no time left for another attempt within {deadline_s:g} s"
                    break
                sleep(wait)
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
                with client.stream("POST", url, content=body, headers=headers) as response:
                    status = response.status_code  # the body is not read: closed unread
            except WebhookUrlRefused as exc:  # the pinned connection's check
                raise WebhookError(str(exc), attempts=attempt, retryable=False) from None
            except httpx.HTTPError as exc:
                error, retryable = f"{type(exc).__name__}: {exc}", True
                continue
            except (httpx.InvalidURL, ValueError, OSError) as exc:  # no later run can differ
                raise WebhookError(
                    f"webhook call impossible: {type(exc).__name__}: {exc}",
                    attempts=attempt,
                    retryable=False,
                ) from None
            if 200 <= status < 300:
                return attempt
            error = f"HTTP {status}"
            retryable = _retryable(status)
            if not retryable:
                break
    raise WebhookError(
        f"webhook failed after {attempt} attempt(s): {error}", attempts=attempt, retryable=retryable
    )
