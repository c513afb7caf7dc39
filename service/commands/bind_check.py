"""Whether ``gpuscout serve`` can bind its address, asked before it says where it serves.

uvicorn finds out only after the app is built and the URL announced, and then says
``[Errno -2] Name or service not known`` or ``address already in use`` without the host,
the port or where they were set. :func:`bind_problem` binds a socket the way uvicorn
does (same family choice, ``SO_REUSEADDR``) and closes it at once, so what fails here is
what would fail there, said as one line naming the option or setting and its value.
"""

from __future__ import annotations

import errno
import ipaddress
import re
import socket

__all__ = ["bind_problem"]


def bind_problem(host: str, port: int, *, host_from: str, port_from: str) -> str | None:
    """Why ``host:port`` cannot be bound, naming ``host_from`` / ``port_from`` (``--host``
    or ``GPUSCOUT_API_HOST``, ...); ``None`` when it can."""
    if _looks_numeric(host) and not _is_address(host):  # no name lookup for these
        return f"{host_from}: {host!r} is not an IP address; {_HOST_FORM}"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except socket.gaierror as exc:
        return (
            f"{host_from}: {host!r} is neither an IP address nor a host name this machine"
            f" resolves ({exc.strerror}); {_HOST_FORM}"
        )
    except OSError as exc:
        why = exc.strerror or str(exc)
        if exc.errno == errno.EADDRINUSE:
            return (
                f"{port_from}: port {port} on {host} is already in use ({why}); stop what"
                " listens there or choose another port"
            )
        if exc.errno == errno.EACCES:
            return f"{port_from}: port {port} on {host} may not be bound by this user ({why})"
        if exc.errno == errno.EADDRNOTAVAIL:
            return f"{host_from}: {host} is not an address of this machine ({why})"
        return f"{host_from} {host}, {port_from} {port}: cannot bind ({why})"
    return None


_HOST_FORM = "expected an address of this machine or a host name, e.g. 127.0.0.1, 0.0.0.0 or ::"


def _looks_numeric(host: str) -> bool:
    """Digits and dots (``999.1.1.1``) or a colon (IPv6): an address, never a host name."""
    return ":" in host or re.fullmatch(r"[0-9.]+", host) is not None


def _is_address(host: str) -> bool:
    """An IP address as ``bind`` reads one (also the short IPv4 forms, ``127.1``)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if ":" in host:
            return False
        try:
            socket.inet_aton(host)
        except OSError:
            return False
    return True
