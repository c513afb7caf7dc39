"""The plausibility guard a provider's run passes before its offers become current.

A run that is ``ok`` replaces the provider's stored offers (:mod:`db.snapshots`). A broken
answer can look ok: an empty list, every record rejected (prices of 0, a renamed field), or
a half-served catalogue. Stored as ok it would wipe the last good offers. So a run is
*suspect*, and stored as failed with its last good offers kept (stale), when:

* **empty**: it yields no offer while the provider has offers stored;
* **drop**: its offer count falls by more than ``drop_share`` of the stored count *and* by
  more than ``min_count`` offers (so a provider listing a handful of types can lose a few);
* **skipped**: more than ``skipped_share`` of the records it read were skipped, and more
  than ``min_count`` of them. By-design skips (Windows meters, CPU-only types, capacity
  reservations) reach a third of the recorded AWS rows and a sixth of Azure's
  (``adapters/samples``); 90% is far above that and below "all records rejected".

The defaults come from the settings ``snapshot_guard_*`` (``service/settings.py``); the
error names the guard and its figures, e.g. ``suspect answer, last good offers kept: 0
offers (41 stored)``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from gpuscout.adapters.base import SkippedRecord

__all__ = ["SUSPECT_PREFIX", "OfferGuard"]

#: How a guarded run's error starts (the rest names the guard and its figures).
SUSPECT_PREFIX = "suspect answer, last good offers kept: "


@dataclasses.dataclass(frozen=True, slots=True)
class OfferGuard:
    """Thresholds of the guard; :meth:`verdict` applies them to one run."""

    drop_share: float = 0.5
    min_count: int = 20
    skipped_share: float = 0.9

    def __post_init__(self) -> None:
        if not 0 <= self.drop_share <= 1 or not 0 <= self.skipped_share <= 1:
            raise ValueError("guard shares are between 0 and 1")
        if self.min_count < 0:
            raise ValueError("guard min_count is not negative")

    def verdict(
        self, *, offer_count: int, skipped: Sequence[SkippedRecord], stored_count: int
    ) -> str | None:
        """Why a run of ``offer_count`` offers and ``skipped`` records, for a provider with
        ``stored_count`` offers stored, is suspect (its error); ``None`` if it is not."""
        if offer_count == 0 and stored_count > 0:
            return f"{SUSPECT_PREFIX}0 offers ({stored_count} stored){_reasons(skipped)}"
        lost = stored_count - offer_count
        if lost > self.min_count and lost > self.drop_share * stored_count:
            return (
                f"{SUSPECT_PREFIX}offer count fell from {stored_count} to {offer_count} "
                f"(-{lost / stored_count:.0%}; guard: more than {self.drop_share:.0%} and "
                f"more than {self.min_count} offers){_reasons(skipped)}"
            )
        read = offer_count + len(skipped)
        if len(skipped) > self.min_count and len(skipped) > self.skipped_share * read:
            return (
                f"{SUSPECT_PREFIX}{len(skipped)} of {read} records skipped "
                f"({len(skipped) / read:.0%}; guard: more than {self.skipped_share:.0%})"
                f"{_reasons(skipped)}"
            )
        return None


def _reasons(skipped: Sequence[SkippedRecord], top: int = 3) -> str:
    """``; skipped: 12 x no positive price, ...`` (the commonest reasons), or ``""``."""
    if not skipped:
        return ""
    counts = Counter(s.reason for s in skipped).most_common(top)
    return "; skipped: " + ", ".join(f"{n} x {reason}" for reason, n in counts)
