"""What may be published: with ``publication = "public"``, only sources whose terms say yes
to republishing (:mod:`adapters.source_terms`).

A site that republishes prices (the catalog, the index page and ``/v1/history/index``,
digests, alerts) must keep out every source whose terms forbid it, and every source whose
terms have not been read: unknown is not allowed. ``personal`` (the default) publishes
every source: an instance for its own users republishes nothing. Each place that applies
this says so, naming what it withheld and why (:func:`withheld`).
"""

from __future__ import annotations

from collections.abc import Iterable

from gpuscout.adapters.source_terms import Permission, terms_of

from .settings import Settings

__all__ = ["published", "withheld", "withheld_note"]


def _reason(provider: str) -> str | None:
    terms = terms_of(provider)
    if terms.republishing is Permission.YES:
        return None
    if terms.republishing is Permission.NO:
        clause = f': "{terms.republishing_clause}"' if terms.republishing_clause else ""
        return f"its terms forbid republishing{clause}"
    return "its terms have not been read (republishing unknown)"


def withheld(settings: Settings, providers: Iterable[str]) -> dict[str, str]:
    """Of ``providers``, those kept out of what is published, each with its reason (none
    under ``personal``)."""
    if settings.publication != "public":
        return {}
    reasons = {name: _reason(name) for name in sorted(set(providers))}
    return {name: reason for name, reason in reasons.items() if reason is not None}


def published(settings: Settings, providers: Iterable[str]) -> list[str]:
    """Of ``providers``, those that may be published (all under ``personal``)."""
    names = sorted(set(providers))
    out = withheld(settings, names)
    return [name for name in names if name not in out]


def withheld_note(out: dict[str, str]) -> str | None:
    """One sentence naming what was withheld and why, for a page or an answer."""
    if not out:
        return None
    listed = "; ".join(f"{name}: {reason}" for name, reason in out.items())
    return f"publication is public: withheld by their terms: {listed}"
