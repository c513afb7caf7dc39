"""Cross-site form posts refused: a page elsewhere must not sign its visitors' browsers up.

A browser names where a form post comes from: ``Sec-Fetch-Site`` (Fetch Metadata, every
current browser) and ``Origin`` (on every POST). :func:`require_same_origin` refuses a post
whose ``Sec-Fetch-Site`` is anything but ``same-origin`` or ``none`` (typed by the user), or
whose ``Origin`` is neither this host (the ``Host`` header: a proxy may end TLS, so the
scheme is not compared) nor ``public_base_url``'s origin. A request with neither header is
not a browser's, and no page can make one send it. The check needs no JavaScript and no
token in the form (OWASP's "Verifying origin with standard headers" and "Fetch Metadata"
defenses).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import HTTPException, Request, status

from gpuscout.service.api.deps import SettingsDep

__all__ = ["require_same_origin"]

_ALLOWED_SITES = frozenset({"same-origin", "none"})


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


async def require_same_origin(request: Request, settings: SettingsDep) -> None:
    """A route dependency: 403 for a cross-site post of a form that changes state."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.lower() not in _ALLOWED_SITES:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, f"cross-site form post refused (Sec-Fetch-Site: {site})"
        )
    origin = request.headers.get("origin")
    if origin is None:
        return
    host = request.headers.get("host", "").lower()
    public = _origin(settings.public_base_url)
    if urlsplit(origin.lower()).netloc != host and origin.lower() != public:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, "cross-site form post refused (its Origin is not this site)"
        )
