"""Who may make gpuscout send how many confirmation mails: the keys and quotas of the limits.

Every subscription request mails a confirmation link to the address given, so without
limits anyone could flood a stranger's inbox through gpuscout, or make it a spam cannon.
Three sliding-window quotas are checked and used atomically with storing the subscription
(:func:`db.subscriptions.create_subscription`; the counts live in the database, so they hold
across API replicas and concurrent requests):

======================  =============================================  ===============
quota                   key                                            window
======================  =============================================  ===============
per address             :func:`address_limit_key` of the address       24 hours
per client              the request's client address (IPv6: its /64)   1 hour
per network             the client's network (IPv4 /24, IPv6 /48)      1 hour
global                  everything                                     1 hour
======================  =============================================  ===============

The global quota is a ceiling against a spam run from many networks, set well above what
the per-client and per-network quotas let a few clients use, so that one client, or a few
addresses of one network, cannot lock out every other sign-up.

Keys are stored as SHA-256 digests, never as addresses. The client is the peer of the
connection; ``X-Forwarded-For`` is believed only when that peer is one of
``Settings.trusted_proxies`` (:func:`client_address`).
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import unicodedata
from collections.abc import Sequence
from datetime import timedelta

from gpuscout.db.subscriptions import Quota

from ..settings import Settings

__all__ = [
    "ADDRESS_WINDOW",
    "CLIENT_WINDOW",
    "GLOBAL_WINDOW",
    "SubscribeRateLimited",
    "address_limit_key",
    "client_address",
    "subscribe_quotas",
]

ADDRESS_WINDOW = timedelta(days=1)
CLIENT_WINDOW = timedelta(hours=1)
GLOBAL_WINDOW = timedelta(hours=1)

_WINDOW_WORDS = {ADDRESS_WINDOW: "24 hours", CLIENT_WINDOW: "hour"}


class SubscribeRateLimited(Exception):
    """A quota is used up; nothing was stored or sent. ``retry_after_s``: when it frees."""

    def __init__(self, who: str, limit: int, window: timedelta, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        span = _WINDOW_WORDS.get(window, str(window))
        super().__init__(
            f"{who}: already {limit} subscription request(s) in the last {span};"
            f" try again in {retry_after_s} s"
        )


def address_limit_key(email: str) -> str:
    """The inbox an address reaches, for counting: one key for all its spellings.

    * the whole address NFKC-normalized (full-width ``Ａ`` is ``A``, a ligature its letters);
    * the local part case-folded with full Unicode folding (``ÄDA`` and ``äda``, ``STRASSE``
      and ``straße``; SQL ``lower()`` folds ASCII only), though RFC 5321 lets a server tell
      cases apart: no real one does, and the limit must err towards counting together;
    * a ``+tag`` (sub-addressing, RFC 5233) cut off: ``ada+1@`` and ``ada+2@`` reach ``ada@``;
    * the domain lower-cased and, if internationalized, in its IDNA (``xn--``) form.

    Dots are kept (``a.da@`` is ``ada@`` only at some providers). The key is for limits
    only; mail still goes to the address as given.

    >>> address_limit_key("Ada+news@Example.COM") == address_limit_key("ada@example.com")
    True
    """
    text = unicodedata.normalize("NFKC", email.strip())
    local, _, domain = text.rpartition("@")
    local = local.casefold()
    base, plus, _tag = local.partition("+")
    if plus and base:
        local = base
    domain = domain.lower().rstrip(".")
    with contextlib.suppress(UnicodeError):  # then the folded text (already validated)
        domain = domain.encode("idna").decode("ascii")
    return f"{local}@{domain}"


def _digest(kind: str, value: str) -> str:
    return f"{kind}:{hashlib.sha256(value.encode()).hexdigest()}"


def _client_key(client: str) -> str:
    """An IPv4 address as is, an IPv6 one as its /64 (one end user's usual allocation)."""
    try:
        ip = ipaddress.ip_address(client)
    except ValueError:
        return client[:100]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _network_key(client: str) -> str:
    """The network a client address is in: IPv4 /24, IPv6 /48 (one site's allocation)."""
    try:
        ip = ipaddress.ip_address(client)
    except ValueError:
        return client[:100]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = 24 if isinstance(ip, ipaddress.IPv4Address) else 48
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def subscribe_quotas(settings: Settings, email: str, client: str | None) -> list[Quota]:
    """The quotas one subscription request uses (no client: a CLI call, no client quota)."""
    quotas = [
        Quota(
            _digest("address", address_limit_key(email)),
            settings.subscriptions_per_address_per_day,
            ADDRESS_WINDOW,
        ),
        Quota("global", settings.subscriptions_per_hour, GLOBAL_WINDOW),
    ]
    if client:
        quotas.append(
            Quota(
                _digest("client", _client_key(client)),
                settings.subscriptions_per_client_per_hour,
                CLIENT_WINDOW,
            )
        )
        quotas.append(
            Quota(
                _digest("network", _network_key(client)),
                settings.subscriptions_per_network_per_hour,
                CLIENT_WINDOW,
            )
        )
    return quotas


def _trusted(host: str, proxies: Sequence[str]) -> bool:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(ip in ipaddress.ip_network(p, strict=False) for p in proxies)


def client_address(peer: str | None, forwarded_for: str | None, proxies: Sequence[str]) -> str:
    """The client a request comes from, for the per-client limit.

    ``peer`` is the connection's remote address. Only when it is a trusted proxy is
    ``X-Forwarded-For`` read, right to left (each proxy appends the address it saw), skipping
    trusted proxies: the first other entry is the client. Entries further left were written
    by the client itself and are never believed.

    >>> client_address("10.0.0.2", "203.0.113.9, 10.0.0.3", ["10.0.0.0/8"])
    '203.0.113.9'
    >>> client_address("198.51.100.7", "203.0.113.9", ["10.0.0.0/8"])
    '198.51.100.7'
    """
    client = peer or "unknown"
    if not forwarded_for or not _trusted(client, proxies):
        return client
    for hop in reversed([h.strip() for h in forwarded_for.split(",")]):
        if not hop:
            continue
        client = hop
        if not _trusted(hop, proxies):
            break
    return client
