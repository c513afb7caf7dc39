"""What each source's terms allow, as read: one table, ``data/source_terms.toml``.

For each provider: its terms URL, the date they were read, and three permissions
(automated access, keeping a history, republishing or building an index or comparison),
each ``yes``, ``no`` or ``unknown`` with the quoted clause where one was read. A provider
the table does not list is ``unknown`` on every count: unknown is never taken as allowed.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Any

from .tables import sourced_rows

__all__ = ["Permission", "SourceTerms", "terms_of", "terms_table"]


class Permission(enum.StrEnum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True, slots=True)
class SourceTerms:
    """One source's terms as read (or not yet read)."""

    provider: str
    terms_url: str | None = None
    read_on: str | None = None
    automated_access: Permission = Permission.UNKNOWN
    keeping_history: Permission = Permission.UNKNOWN
    republishing: Permission = Permission.UNKNOWN
    automated_access_clause: str | None = None
    keeping_history_clause: str | None = None
    republishing_clause: str | None = None
    note: str | None = None
    source: str = "not read yet: every permission unknown"

    def summary(self) -> str:
        """One line: the three permissions, the date read and the URL."""
        read = f"read {self.read_on}" if self.read_on else "not read"
        where = f" ({self.terms_url})" if self.terms_url else ""
        return (
            f"automated access: {self.automated_access}; keeping history:"
            f" {self.keeping_history}; republishing: {self.republishing}; {read}{where}"
        )


@functools.cache
def terms_table() -> dict[str, SourceTerms]:
    """Every listed source's terms, by provider name (read once)."""
    import tomllib

    from .tables import DATA_DIR, package_text

    sources = tomllib.loads(package_text(DATA_DIR, "source_terms.toml"))["sources"]
    table: dict[str, SourceTerms] = {}
    for row in sourced_rows("source_terms.toml", "terms"):
        fields: dict[str, Any] = {k: (v or None) for k, v in row.items() if k != "source"}
        for name in ("automated_access", "keeping_history", "republishing"):
            try:
                fields[name] = Permission(row[name])
            except ValueError:
                raise ValueError(
                    f"source_terms.toml: {row['provider']}: {name} = {row[name]!r};"
                    " expected yes, no or unknown"
                ) from None
        table[row["provider"]] = SourceTerms(**fields, source=sources[row["source"]])
    return table


def terms_of(provider: str) -> SourceTerms:
    """``provider``'s terms as read; unknown on every count when the table lacks it."""
    return terms_table().get(provider) or SourceTerms(provider)
