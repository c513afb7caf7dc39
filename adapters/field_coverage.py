"""Field coverage: per provider, the share of its current offers that carry each field.

A renter filtering on PSU watts or a CUDA version sees many offers as "unknown"; this says
where that comes from: which providers publish which of the checklist's parameter groups
(:data:`adapters.schema.FIELD_GROUPS`). A field is *carried* by an offer when it is not
``None`` (an empty tuple of OS images is carried: the provider said "none").

Pure: offers (or the stored records, which leave ``None`` fields out) in, counts out. A
group's share is the filled cells over offers x fields of the group, so a group of two
fields one of which every offer carries is at 50%.

>>> cov = count_records([{"provider": "p", "cuda_version": "12.2"}, {"provider": "p"}])
>>> cov["p"].offers, cov["p"].field_share("cuda_version")
(2, 0.5)
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

from .schema import FIELD_GROUPS, Offer
from .tables import DATA_DIR, package_text

__all__ = [
    "ALL_PROVIDERS",
    "GROUP_LABELS",
    "ProviderCoverage",
    "count_offers",
    "count_records",
    "coverage_json",
    "coverage_markdown",
    "percent_text",
    "total_coverage",
]

#: Fields every offer has (required by :class:`Offer`), though a stored record leaves one
#: out (``fetched_at`` is a column of its own).
_ALWAYS = frozenset(name for name, info in Offer.model_fields.items() if info.is_required()) | {
    "fetched_at"
}
_FIELDS = tuple(f for fields in FIELD_GROUPS.values() for f in fields)
#: The row of :func:`total_coverage`: every provider's offers together.
ALL_PROVIDERS = "all"
#: One short word per checklist group, for tables that fit 80 columns, from
#: ``data/field_groups.toml``: the "Offer" group is left out of the tables (the JSON has it).
GROUP_LABELS: dict[str, str] = tomllib.loads(package_text(DATA_DIR, "field_groups.toml"))["labels"]


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderCoverage:
    """How many of one provider's ``offers`` carry each field (``filled``, by field name)."""

    provider: str
    offers: int
    filled: Mapping[str, int]

    def field_share(self, field: str) -> float | None:
        """Share of the offers that carry ``field`` (0-1); ``None`` with no offers."""
        if field not in self.filled:
            raise KeyError(f"not a field of FIELD_GROUPS: {field!r}")
        return self.filled[field] / self.offers if self.offers else None

    def group_share(self, group: str) -> float | None:
        """Filled cells of ``group`` over offers x its fields (0-1); ``None`` with no offers."""
        fields = FIELD_GROUPS[group]
        if not self.offers:
            return None
        return sum(self.filled[f] for f in fields) / (self.offers * len(fields))


def _tally(pairs: Iterable[tuple[str, Iterable[str]]]) -> dict[str, ProviderCoverage]:
    """Coverage from (provider, names of the fields it carries) per offer, by provider."""
    offers: dict[str, int] = {}
    filled: dict[str, dict[str, int]] = {}
    for provider, names in pairs:
        offers[provider] = offers.get(provider, 0) + 1
        counts = filled.setdefault(provider, dict.fromkeys(_FIELDS, 0))
        for name in names:
            if name in counts:
                counts[name] += 1
    return {p: ProviderCoverage(p, offers[p], filled[p]) for p in sorted(offers)}


def count_records(records: Iterable[Mapping[str, Any]]) -> dict[str, ProviderCoverage]:
    """Coverage of offer records (field name -> value; a ``None`` or absent field is not
    carried, fields :class:`Offer` requires always are), by provider name in name order."""
    return _tally(
        (
            str(r["provider"]),
            {*_ALWAYS, *(k for k, v in r.items() if v is not None)},
        )
        for r in records
    )


def count_offers(offers: Iterable[Offer]) -> dict[str, ProviderCoverage]:
    """Coverage of :class:`Offer` objects, by provider name in name order."""
    return _tally((o.provider, [f for f in _FIELDS if getattr(o, f) is not None]) for o in offers)


def total_coverage(coverage: Mapping[str, ProviderCoverage]) -> ProviderCoverage:
    """Every provider's offers together, as the provider :data:`ALL_PROVIDERS`."""
    filled = {f: sum(c.filled[f] for c in coverage.values()) for f in _FIELDS}
    return ProviderCoverage(ALL_PROVIDERS, sum(c.offers for c in coverage.values()), filled)


def percent_text(share: float | None) -> str:
    """A share as a whole percent for people; a share above 0 never reads as 0%.

    >>> percent_text(0.004), percent_text(1.0), percent_text(None)
    ('<1%', '100%', '-')
    """
    if share is None:
        return "-"
    if 0 < share < 0.005:
        return "<1%"
    return f"{share * 100:.0f}%"


def coverage_markdown(coverage: Mapping[str, ProviderCoverage]) -> str:
    """docs/providers.md's table: one row per provider (and all of them), one column per group."""
    head = ["provider", "offers", *GROUP_LABELS.values()]
    rows = [
        "| " + " | ".join(head) + " |",
        "|---|" + "---:|" * (len(head) - 1),
    ]
    for cov in [*coverage.values(), total_coverage(coverage)]:
        cells = [f"`{cov.provider}`" if cov.provider != ALL_PROVIDERS else "all", str(cov.offers)]
        cells += [percent_text(cov.group_share(g)) for g in GROUP_LABELS]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def coverage_json(cov: ProviderCoverage) -> dict[str, Any]:
    """One provider's coverage as plain data: each group's share and, in it, each field's
    share and count (shares rounded to a thousandth; ``None`` with no offers)."""
    return {
        "provider": cov.provider,
        "offers": cov.offers,
        "groups": [
            {
                "group": group,
                "share": _rounded(cov.group_share(group)),
                "fields": [
                    {
                        "field": f,
                        "offers": cov.filled[f],
                        "share": _rounded(cov.field_share(f)),
                    }
                    for f in fields
                ],
            }
            for group, fields in FIELD_GROUPS.items()
        ],
    }


def _rounded(share: float | None) -> float | None:
    return None if share is None else round(share, 3)
