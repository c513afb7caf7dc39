"""A page in the site's look around trusted markup: the digest's confirm and unsubscribe
pages, and a page's own errors (an offer no longer listed)."""

from __future__ import annotations

from markupsafe import Markup

from .templating import templates

__all__ = ["message_page"]


def message_page(title: str, body: str, nav: str = "subscribe") -> str:
    """The HTML of a page titled ``title`` (escaped) around ``body`` (trusted markup), the
    navigation's ``nav`` entry current."""
    template = templates().env.get_template("message.html")
    return template.render(title=title, body=Markup(body), nav=nav)
