"""What may be published: with ``publication = "public"``, only sources whose terms say yes
to republishing (:mod:`adapters.source_terms`).

A site that republishes prices (the catalog, the index page and ``/v1/history/index``,
digests, alerts) must keep out every source whose terms forbid it, and every source whose
terms have not been read: unknown is not allowed. ``personal`` (the default) publishes
every source: an instance for its own users republishes nothing. Each place that applies
this says so, naming what it withheld and why (:func:`withheld`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpuscout.adapters.source_terms import Permission, terms_of

from .settings import Settings

if TYPE_CHECKING:
    from gpuscout.db.current import CurrentState
    from gpuscout.db.history import PriceChange, WeekOverWeek

__all__ = [
    "publishable_changes",
    "publishable_state",
    "published",
    "withheld",
    "withheld_everywhere",
    "withheld_note",
]


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


def withheld_everywhere(settings: Settings, more: Iterable[str] = ()) -> dict[str, str]:
    """:func:`withheld` over every registered provider and ``more`` (a state's names)."""
    from gpuscout.adapters import provider_names

    return withheld(settings, [*provider_names(), *more])


def withheld_note(out: dict[str, str]) -> str | None:
    """One sentence naming what was withheld and why, grouped by reason, for a page, a
    mail or an answer."""
    if not out:
        return None
    by_reason: dict[str, list[str]] = {}
    for name, reason in out.items():
        by_reason.setdefault(reason, []).append(name)
    listed = "; ".join(f"{', '.join(names)}: {reason}" for reason, names in by_reason.items())
    return f"publication is public, so these sources are not published: {listed}"


def publishable_state(settings: Settings, current: CurrentState) -> CurrentState:
    """``current`` without the offers of withheld sources, its note saying so (the state
    a digest or an alert under ``publication = public`` ranks); ``current`` itself when
    nothing is withheld."""
    import polars as pl

    out = withheld(settings, current.providers)
    if not out:
        return current
    note = " ".join(n for n in (current.note, withheld_note(out)) if n)
    return dataclasses.replace(
        current,
        frame=current.frame.filter(~pl.col("provider").is_in(list(out))),
        providers={k: v for k, v in current.providers.items() if k not in out},
        note=note,
        count_fields=None,
    )


def publishable_changes(settings: Settings, changes: WeekOverWeek) -> WeekOverWeek:
    """The week's price changes without those of withheld sources."""
    every = [*changes.cheaper, *changes.dearer, *changes.new, *changes.gone]
    out = withheld(settings, (c.offer.provider for c in every))
    if not out:
        return changes

    def kept(items: list[PriceChange]) -> list[PriceChange]:
        return [c for c in items if c.offer.provider not in out]

    return dataclasses.replace(
        changes,
        cheaper=kept(changes.cheaper),
        dearer=kept(changes.dearer),
        new=kept(changes.new),
        gone=kept(changes.gone),
    )
