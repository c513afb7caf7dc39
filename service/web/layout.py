"""A page in the site's look around trusted markup, for pages rendered outside a router of
:mod:`service.web` (the digest's confirm and unsubscribe pages)."""

from __future__ import annotations

from markupsafe import Markup

from .templating import templates

__all__ = ["message_page"]


def message_page(title: str, body: str) -> str:
    """The HTML of a page titled ``title`` (escaped) around ``body`` (trusted markup)."""
    template = templates().env.get_template("message.html")
    return template.render(title=title, body=Markup(body), nav="subscribe")
