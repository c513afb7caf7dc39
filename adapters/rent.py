"""Where to rent an offer: the provider's console or launch page, else its pricing page.

Each adapter declares ``rent_url`` (a template over the offer's ``region``,
``instance_name``, ``offer_id`` and ``offer_id_head``) and ``pricing_url``; the manifest
carries both (:mod:`adapters.declarations`), so a link is made from an offer's stored
columns without importing an adapter. A price sheet's offer (provider ``sheet``) is rented
from its seller: a seller that names a known provider (``tencent-cloud`` is Tencent Cloud,
:func:`adapters.provider_aliases`) links to that provider's pricing page (the sheet's
instance names are not the provider's ids); a seller with no adapter but a known pricing page
(``jd-cloud``, ``data/seller_pages.csv``) links to that page; any other seller has no link.
"""

from __future__ import annotations

import functools
import re
import string
from urllib.parse import quote

from . import provider_aliases
from .declarations import Declaration, declared
from .tables import data_rows

__all__ = ["SHEET", "rent_link", "template_fields"]

#: The provider of a user's price-sheet offers.
SHEET = "sheet"
#: The parts of an offer a ``rent_url`` template may name.
_PARTS = frozenset({"region", "instance_name", "offer_id", "offer_id_head"})


@functools.cache
def _declarations() -> dict[str, Declaration]:
    return {d.name: d for d in declared()}


def template_fields(template: str) -> frozenset[str]:
    """The placeholders of a ``rent_url`` template (an unknown one is a ValueError)."""
    names = frozenset(f for _, f, _, _ in string.Formatter().parse(template) if f is not None)
    unknown = names - _PARTS
    if unknown:
        raise ValueError(f"rent_url {template!r} names unknown parts {sorted(unknown)}")
    return names


def _folded(name: str) -> str:
    """A seller's name compared without case, spaces or punctuation."""
    return re.sub(r"[\W_]+", "", name.lower())


@functools.cache
def _seller_providers() -> dict[str, str]:
    """Folded provider names and aliases -> the registered provider."""
    known = {_folded(name): name for name in _declarations()}
    known |= {_folded(alias): name for alias, name in provider_aliases().items()}
    known.pop(_folded(SHEET), None)
    return known


@functools.cache
def _seller_pages() -> dict[str, str]:
    """Folded names of price-sheet sellers that have no adapter -> their pricing page, from
    ``data/seller_pages.csv``, where each row carries its source."""
    return {_folded(row["seller"]): row["pricing_url"] for row in data_rows("seller_pages.csv")}


def rent_link(
    provider: str,
    *,
    instance_name: str | None = None,
    region: str | None = None,
    offer_id: str | None = None,
    seller: str | None = None,
) -> str | None:
    """The link to rent this offer: the provider's launch page filled with the offer's parts,
    its pricing page where the launch page needs a part the offer lacks (or none is
    declared); ``None`` for a price sheet's seller that names no known provider or page."""
    if provider == SHEET:
        folded = _folded(seller or "")
        named = _seller_providers().get(folded)
        if named is None:
            return _seller_pages().get(folded)
        return _declarations()[named].pricing_url or None
    declaration = _declarations().get(provider)
    if declaration is None:
        return None
    template = declaration.rent_url
    if template:
        parts = {
            "region": region,
            "instance_name": instance_name,
            "offer_id": offer_id,
            "offer_id_head": None if offer_id is None else offer_id.split("/", 1)[0],
        }
        needed = template_fields(template)
        if all(parts[name] for name in needed):
            return template.format(**{n: quote(str(parts[n]), safe="") for n in needed})
    return declaration.pricing_url or None
