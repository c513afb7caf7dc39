"""Security headers on every answer: what a browser may load, frame and send along.

A pure ASGI middleware adds, unless the route set its own:

* ``Content-Security-Policy`` on HTML pages (:data:`PAGE_POLICY`): scripts, styles and
  images from this site only, no inline script or style, no plugins, forms post here only,
  and ``frame-ancestors 'none'`` (no other site may frame a page: clickjacking). The pages
  hold no inline script or style (``service/web/static``); ``/docs`` sets its own policy
  naming the hash of Swagger UI's one inline script (:mod:`service.web.docs_page`);
* ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin`` everywhere (a
  link's token in a page's URL is not sent to another site);
* ``Strict-Transport-Security`` when the request came over TLS: its scheme is ``https``, or
  a trusted proxy (``trusted_proxies``) says ``X-Forwarded-Proto: https``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HSTS", "PAGE_POLICY", "SecurityHeaders"]

PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
#: One year, subdomains included (the HSTS preload list's minimum).
HSTS = "max-age=31536000; includeSubDomains"


class SecurityHeaders:
    """Pure ASGI middleware adding the headers of the module docstring."""

    def __init__(self, app: ASGIApp, trusted_proxies: Sequence[str] = ()) -> None:
        self.app = app
        self.proxies = [ipaddress.ip_network(p, strict=False) for p in trusted_proxies]

    def _over_tls(self, scope: Scope) -> bool:
        if scope.get("scheme") == "https":
            return True
        headers = dict(scope.get("headers") or ())
        if headers.get(b"x-forwarded-proto", b"").lower() != b"https":
            return False
        peer = (scope.get("client") or ("", 0))[0]
        try:
            ip = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(ip in network for network in self.proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tls = self._over_tls(scope)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if headers.get("content-type", "").startswith("text/html"):
                    headers.setdefault("Content-Security-Policy", PAGE_POLICY)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("Referrer-Policy", "same-origin")
                if tls:
                    headers.setdefault("Strict-Transport-Security", HSTS)
            await send(message)

        await self.app(scope, receive, send_with_headers)
