"""Which redirects a provider fetch follows: only to the provider's own hosts.

A provider's answer could redirect the fetch anywhere, an address inside the network the
service runs in included, and what comes back there could end up in an error shown on
``/providers``. So the shared client (:func:`service.snapshots.fetch_adapters`) checks each
hop with :func:`refuse_foreign_redirect`: a redirect is followed only to the same origin
(scheme may go from http to https), or, between DNS names on the default port, to a host
of the same registered domain (``api.example.com`` -> ``cdn.example.com``: the last two
labels; an IP address or a port must match exactly). Anything else fails the provider's
fetch with :class:`ForeignRedirect`, naming both hosts.
"""

from __future__ import annotations

import ipaddress

import httpx

__all__ = ["ForeignRedirect", "own_host", "refuse_foreign_redirect"]


class ForeignRedirect(httpx.HTTPError):
    """A redirect to a host that is not the provider's: not followed."""


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _site(host: str) -> str:
    return ".".join(host.rstrip(".").lower().split(".")[-2:])


def own_host(origin: httpx.URL, target: httpx.URL) -> bool:
    """Whether a redirect from ``origin`` to ``target`` stays with the provider.

    >>> own_host(httpx.URL("https://api.example.com/a"), httpx.URL("https://cdn.example.com/b"))
    True
    >>> own_host(httpx.URL("http://127.0.0.1:8001/a"), httpx.URL("http://127.0.0.1:8002/b"))
    False
    """
    if target.scheme not in ("http", "https") or (
        origin.scheme == "https" and target.scheme != "https"
    ):
        return False
    if origin.host == target.host and origin.port == target.port:
        return True
    if _is_ip(origin.host) or _is_ip(target.host) or origin.port or target.port:
        return False
    return "." in origin.host and _site(origin.host) == _site(target.host)


async def refuse_foreign_redirect(response: httpx.Response) -> None:
    """A response event hook: raise :class:`ForeignRedirect` for a redirect elsewhere."""
    if not response.has_redirect_location:
        return
    target = response.url.join(response.headers["Location"])
    if not own_host(response.url, target):
        refused = ForeignRedirect(
            f"redirect from {response.url.host} to {target.host}"
            f"{f':{target.port}' if target.port else ''} refused: not the provider's host"
        )
        refused.request = response.request
        raise refused
