"""Where a webhook call may go: public addresses only, resolved once and pinned.

A webhook URL is chosen by whoever creates an alert, so a call could be aimed at the
service's own network (the database port, a cloud metadata endpoint at 169.254.169.254, an
admin page on 127.0.0.1). :func:`refusal` says why an address is not public, looking through
every IPv6 form that carries an IPv4 address (mapped ``::ffff:a.b.c.d``, compatible
``::a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``, Teredo) and the ranges
``ipaddress`` counts as global but no webhook lives at (``0.0.0.0/8``, ``100.64.0.0/10``,
``198.18.0.0/15``, multicast, NAT64's local-use ``64:ff9b:1::/48``). Host names and the
shorthand IPv4 spellings (``2130706433``, ``0x7f.1``, ``0177.0.0.1``) are resolved the way the
connection would resolve them (``socket.getaddrinfo``, inet_aton rules).

:class:`PinnedBackend` is the network backend of the webhook client: it resolves a host
once, refuses the connection unless every address is public, and connects to the checked
address (TLS still names the host: SNI and the certificate check use the URL's name), so a
name cannot be checked at one DNS answer and called at another (DNS rebinding). Its streams
also stop at the call's total deadline (:func:`deadline`), however slowly a peer drips bytes.
"""

from __future__ import annotations

import contextlib
import contextvars
import ipaddress
import math
import socket
import ssl
import time
import typing
from collections.abc import Callable, Iterable, Iterator

import httpcore

__all__ = [
    "PinnedBackend",
    "Resolve",
    "WebhookUrlRefused",
    "deadline",
    "public_addresses",
    "refusal",
    "system_resolve",
]

Resolve = Callable[[str], list[str]]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Ranges refused although ``ipaddress`` may count them global.
_REFUSED_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",  # "this network"; 0.0.0.0 reaches the local host
        "100.64.0.0/10",  # carrier-grade NAT (RFC 6598)
        "198.18.0.0/15",  # benchmarking (RFC 2544)
        "192.0.0.0/24",  # IETF protocol assignments
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, broadcast
        "64:ff9b:1::/48",  # NAT64 local use (RFC 8215)
        "::/96",  # IPv4-compatible (deprecated, RFC 4291) and the unspecified address
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "ff00::/8",  # multicast
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052 well-known prefix


class WebhookUrlRefused(ValueError):
    """A webhook URL that may not be called (scheme, host, or a non-public address)."""


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries (mapped, NAT64, 6to4, Teredo), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def refusal(address: str) -> str | None:
    """Why ``address`` (an IP literal, IPv6 scope allowed) is not public; ``None`` if it is.

    >>> refusal("93.184.216.34") is None
    True
    >>> refusal("64:ff9b::7f00:1")
    'carries 127.0.0.1: loopback'
    """
    ip: Address = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            why = refusal(str(inner))
            return None if why is None else f"carries {inner}: {why}"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_multicast:
        return "multicast"
    if any(ip in network for network in _REFUSED_NETWORKS):
        return "special-purpose range"
    if ip.is_private:
        return "private"
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    return None


def system_resolve(host: str) -> list[str]:
    """Every address ``host`` resolves to, as the connection would resolve it."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise WebhookUrlRefused(f"webhook host {host!r} does not resolve: {exc}") from None
    return sorted({str(info[4][0]) for info in infos})


def _literal(host: str) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        return []


def public_addresses(host: str, *, resolve: Resolve = system_resolve) -> list[str]:
    """The addresses of ``host``, all public, or :class:`WebhookUrlRefused` naming the first
    that is not (a name with one private address among public ones is refused whole)."""
    addresses = _literal(host) or resolve(host)
    if not addresses:
        raise WebhookUrlRefused(f"webhook host {host!r} resolves to no address")
    for address in addresses:
        why = refusal(address)
        if why is not None:
            raise WebhookUrlRefused(
                f"webhook host {host!r} resolves to a non-public address ({address}, {why})"
            )
    return addresses


_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar(
    "webhook_deadline", default=math.inf
)


@contextlib.contextmanager
def deadline(seconds: float, *, clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """Bound every connect, read and write of the webhook client in this block to end
    within ``seconds`` from now in all (not per read: a peer dripping a byte at a time
    cannot stretch the call)."""
    token = _DEADLINE.set(clock() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _remaining(timeout: float | None, what: str) -> float:
    left = _DEADLINE.get() - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout(f"webhook call past its total deadline ({what})")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every read and write ends by the call's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _remaining(timeout, "reading"))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _remaining(timeout, "writing"))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(ssl_context, server_hostname, _remaining(timeout, "TLS"))
        return _DeadlineStream(inner)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class PinnedBackend(httpcore.SyncBackend):
    """Connect only to public addresses (unless ``allow_private``), resolved once here."""

    def __init__(self, *, allow_private: bool = False, resolve: Resolve = system_resolve):
        self.allow_private = allow_private
        self.resolve = resolve

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        if self.allow_private:
            addresses = _literal(host) or self.resolve(host)
        else:
            addresses = public_addresses(host, resolve=self.resolve)
        stream = super().connect_tcp(
            addresses[0],  # the checked address, not a second lookup of the name
            port,
            timeout=_remaining(timeout, "connecting"),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _DeadlineStream(stream)
