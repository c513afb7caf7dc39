"""When each adapter's format was last checked against the provider's current documentation.

One table for every provider, ``data/format_checks.csv``: the day it was checked (ISO
``YYYY-MM-DD``; ``not found`` where the provider documents no API; ``not checked`` where the
current documentation was not read again), what was checked (the endpoint and the key
fields), and the documentation it was checked against (``source``). ``gpuscout providers``
and the generated provider docs show it; a test checks that every registered provider has
exactly one row.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import date

from .tables import data_rows

__all__ = ["NOT_CHECKED", "NOT_FOUND", "FormatCheck", "format_checks"]

#: ``checked_on`` of a provider that documents no API (an undocumented JSON, no reference).
NOT_FOUND = "not found"
#: ``checked_on`` of a provider whose current documentation was not read again.
NOT_CHECKED = "not checked"


@dataclasses.dataclass(frozen=True, slots=True)
class FormatCheck:
    """One row of the table."""

    provider: str
    checked_on: str
    what_was_checked: str
    source: str

    @property
    def day(self) -> date | None:
        """The day checked, or ``None`` (not found, not checked)."""
        if self.checked_on in (NOT_FOUND, NOT_CHECKED):
            return None
        return date.fromisoformat(self.checked_on)


@functools.cache
def format_checks() -> dict[str, FormatCheck]:
    """Provider -> its row, read once; a repeated provider or a malformed day is a
    ValueError naming it."""
    checks: dict[str, FormatCheck] = {}
    for row in data_rows("format_checks.csv"):
        check = FormatCheck(**{f.name: row[f.name] for f in dataclasses.fields(FormatCheck)})
        if check.provider in checks:
            raise ValueError(f"data/format_checks.csv: {check.provider} appears twice")
        try:
            check.day  # noqa: B018 (read here so that a malformed day fails at once)
        except ValueError:
            raise ValueError(
                f"data/format_checks.csv: {check.provider}: checked_on {check.checked_on!r} is"
                f" neither a YYYY-MM-DD day, {NOT_FOUND!r} nor {NOT_CHECKED!r}"
            ) from None
        checks[check.provider] = check
    return checks
