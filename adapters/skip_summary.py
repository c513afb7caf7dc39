"""What a provider's run skipped, summarised: :class:`SkipSummary` and :func:`summarise_skips`.

A run's skipped records (:class:`~adapters.base.SkippedRecord`) are grouped by their reason
text and counted; the commonest :data:`MAX_REASONS` reasons are kept, the rest counted
together as ``other``, and each reason is cut to :data:`MAX_REASON_CHARS`. So a provider
that skips 50k malformed rows leaves a few lines, not 50k strings. A snapshot stores the
summary (``snapshot_provider.skip_reasons``), the current state carries it, and the offers
answers name what was not ranked with :func:`skip_line` (a region a provider does not
provision, say). The database's path and the offline sample's go through this one function.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import SkippedRecord

__all__ = [
    "DUPLICATE",
    "ILLUSTRATIVE",
    "MAX_REASONS",
    "MAX_REASON_CHARS",
    "NOT_OFFERS",
    "NO_GPU",
    "SkipSummary",
    "skip_line",
    "summarise_skips",
]

#: Why a run skips a record that is no GPU offer at all (an instance type without a GPU).
NO_GPU = "no GPU (CPU-only instance type)"
#: Why a price sheet skips an entry that shows the format with a made-up price.
ILLUSTRATIVE = "illustrative entry (a made-up price showing the format, not a quote)"
#: Why a run skips a record whose offer an earlier record of the run already gave.
DUPLICATE = "duplicate offer (same provider, id, region, term and variant as an earlier record)"
#: Reasons (a reason containing one) of records that are no offer a renter could rent (or
#: one ranked already, a duplicate), so an answer does not name them among what it leaves
#: out.
NOT_OFFERS = (NO_GPU, ILLUSTRATIVE, DUPLICATE)

#: Distinct reasons a summary keeps; the records of any further reason count as ``other``.
MAX_REASONS = 20
#: Characters of a reason kept (a longer one is cut and ends in ``…``).
MAX_REASON_CHARS = 200


@dataclasses.dataclass(frozen=True, slots=True)
class SkipSummary:
    """The records a run skipped, counted by reason."""

    reasons: tuple[tuple[str, int], ...] = ()
    """``(reason, records)``, the commonest first (ties in reason order)"""
    other: int = 0
    """records of reasons not kept: beyond :data:`MAX_REASONS`, or of a run stored before
    reasons were (only its count is known)"""

    def offers_only(self) -> SkipSummary:
        """This summary without the reasons of :data:`NOT_OFFERS`: the offers a run could
        not rank (``other`` kept: its reasons are unknown)."""
        kept = tuple(r for r in self.reasons if not any(text in r[0] for text in NOT_OFFERS))
        return SkipSummary(kept, self.other)

    @property
    def total(self) -> int:
        """Every record skipped."""
        return sum(n for _, n in self.reasons) + self.other

    def as_dict(self) -> dict[str, Any]:
        """``{"reasons": {reason: records}, "other": records}``: what is stored as JSON."""
        return {"reasons": dict(self.reasons), "other": self.other}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SkipSummary:
        """The summary :meth:`as_dict` gave."""
        reasons = data.get("reasons") or {}
        return cls(
            tuple((str(reason), int(n)) for reason, n in reasons.items()),
            int(data.get("other") or 0),
        )


def _cut(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 1] + "…"


def summarise_skips(skipped: Iterable[SkippedRecord], *, cap: int = MAX_REASONS) -> SkipSummary:
    """``skipped`` counted by reason: the ``cap`` commonest reasons (ties in reason order,
    so equal runs give equal summaries) and the count of the other records."""
    counts = Counter(_cut(record.reason) for record in skipped)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return SkipSummary(tuple(ranked[:cap]), sum(n for _, n in ranked[cap:]))


def _rows(n: int) -> str:
    return f"{n} row{'' if n == 1 else 's'}"


def skip_line(provider: str, summary: SkipSummary, *, top: int = 3) -> str:
    """One line naming what ``provider``'s run skipped, its ``top`` commonest reasons first:
    ``jarvislabs skipped 1 row: region JarvisLabs does not provision (unknown-region)``;
    with several reasons each has its count, and the rest are counted together."""
    head = f"{provider} skipped {_rows(summary.total)}"
    if len(summary.reasons) == 1 and not summary.other:
        return f"{head}: {summary.reasons[0][0]}"
    shown = [f"{reason} ({n})" for reason, n in summary.reasons[:top]]
    rest = summary.total - sum(n for _, n in summary.reasons[:top])
    if rest and shown:
        shown.append(f"other reasons ({rest})")
    return f"{head}: {', '.join(shown)}" if shown else head
