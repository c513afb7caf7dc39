"""The plausibility guard a provider's run passes before its offers become current.

A run that is ``ok`` replaces the provider's stored offers (:mod:`db.snapshots`). A broken
answer can look ok: an empty list, every record rejected (prices of 0, a renamed field), or
a half-served catalogue. Stored as ok it would wipe the last good offers. So a run is
*suspect*, and stored as failed with its last good offers kept (stale), when:

* **empty**: it yields no offer while the provider has offers stored;
* **jump**: its offer count falls by more than ``drop_share`` of the *baseline*, or rises
  above ``rise_factor`` times it, *and* moves by more than ``min_count`` offers (so a
  provider listing a handful of types can gain or lose a few). The baseline is the median
  offer count of the provider's last ``baseline_runs`` accepted runs (since the last change
  the guard accepted; the stored count when there are none), so one bad answer accepted by
  mistake cannot lock in its count, and a jump up is judged as a drop is;
* **skipped**: more than ``skipped_share`` of the records it read were skipped, and more
  than ``min_count`` of them. By-design skips (Windows meters, CPU-only types, capacity
  reservations) reach a third of the recorded AWS rows and a sixth of Azure's
  (``adapters/samples``); 90% is far above that and below "all records rejected".

A provider whose catalogue really changed answers the same new count again: a jump repeated
by ``accept_after`` runs in a row (counts within 10% of each other) is accepted, the run
stored ok with the decision as its note (:data:`ACCEPTED_PREFIX`, shown on ``/providers``
and ``/v1/providers`` as the provider's latest message), and it becomes the new baseline.

The defaults come from the settings ``snapshot_guard_*`` (``service/settings.py``); the
error names the guard and its figures, e.g. ``suspect answer, last good offers kept: 0
offers (41 stored)``; it always starts with the run's offer count, which is how later runs
read the counts of the suspect runs before them (:func:`suspect_count`).
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections import Counter
from collections.abc import Sequence

from gpuscout.adapters.base import SkippedRecord

__all__ = ["ACCEPTED_PREFIX", "SUSPECT_PREFIX", "OfferGuard", "suspect_count"]

#: How a guarded run's error starts (then its offer count; the rest names the guard).
SUSPECT_PREFIX = "suspect answer, last good offers kept: "
#: How the note of a jump the guard accepted after repeated runs starts.
ACCEPTED_PREFIX = "guard accepted a changed catalogue: "
#: Two suspect counts within this share of each other are the same answer repeated.
CONSISTENT_SHARE = 0.1

_SUSPECT_COUNT = re.compile(re.escape(SUSPECT_PREFIX) + r"(\d+) offers")


def suspect_count(error: str | None) -> int | None:
    """The offer count of a run the guard found suspect, read from its stored error.

    >>> suspect_count(SUSPECT_PREFIX + "225000 offers against a baseline of 9")
    225000
    """
    match = _SUSPECT_COUNT.match(error or "")
    return int(match.group(1)) if match else None


def _consistent(a: int, b: int) -> bool:
    return abs(a - b) <= CONSISTENT_SHARE * max(a, b)


@dataclasses.dataclass(frozen=True, slots=True)
class OfferGuard:
    """Thresholds of the guard; :meth:`verdict` applies them to one run."""

    drop_share: float = 0.5
    min_count: int = 20
    skipped_share: float = 0.9
    rise_factor: float = 3.0
    accept_after: int = 3
    baseline_runs: int = 5

    def __post_init__(self) -> None:
        if not 0 <= self.drop_share <= 1 or not 0 <= self.skipped_share <= 1:
            raise ValueError("guard shares are between 0 and 1")
        if self.min_count < 0:
            raise ValueError("guard min_count is not negative")
        if self.rise_factor < 1 or self.accept_after < 1 or self.baseline_runs < 1:
            raise ValueError("guard rise_factor, accept_after and baseline_runs are >= 1")

    def verdict(
        self,
        *,
        offer_count: int,
        skipped: Sequence[SkippedRecord],
        stored_count: int,
        baseline: Sequence[int] = (),
        suspects: Sequence[int] = (),
    ) -> str | None:
        """Why a run is suspect (its error); ``None`` if it is not (see :meth:`judge`)."""
        return self.judge(
            offer_count=offer_count,
            skipped=skipped,
            stored_count=stored_count,
            baseline=baseline,
            suspects=suspects,
        )[0]

    def judge(
        self,
        *,
        offer_count: int,
        skipped: Sequence[SkippedRecord],
        stored_count: int,
        baseline: Sequence[int] = (),
        suspects: Sequence[int] = (),
    ) -> tuple[str | None, str | None]:
        """``(error, note)`` for a run of ``offer_count`` offers and ``skipped`` records, for
        a provider with ``stored_count`` offers stored, the offer counts of its latest
        accepted runs (``baseline``, newest first) and of the suspect runs just before this
        one (``suspects``, newest first). ``error``: why it is suspect; ``note``: the
        guard's acceptance of a jump repeated ``accept_after`` times."""
        if offer_count == 0 and stored_count > 0:
            return f"{SUSPECT_PREFIX}0 offers ({stored_count} stored){_reasons(skipped)}", None
        jump = self._jump(offer_count, baseline[: self.baseline_runs] or [stored_count])
        if jump is not None:
            repeats = 1
            for count in suspects:
                if not _consistent(count, offer_count):
                    break
                repeats += 1
            if repeats >= self.accept_after:
                return None, f"{ACCEPTED_PREFIX}{jump}, the same in {repeats} runs in a row"
            return (
                f"{SUSPECT_PREFIX}{offer_count} offers, {jump}; accepted if {self.accept_after}"
                f" runs in a row agree (this is {repeats}){_reasons(skipped)}",
                None,
            )
        read = offer_count + len(skipped)
        if len(skipped) > self.min_count and len(skipped) > self.skipped_share * read:
            return (
                f"{SUSPECT_PREFIX}{offer_count} offers: {len(skipped)} of {read} records "
                f"skipped ({len(skipped) / read:.0%}; guard: more than "
                f"{self.skipped_share:.0%}){_reasons(skipped)}"
            ), None
        return None, None

    def _jump(self, offer_count: int, baseline: Sequence[int]) -> str | None:
        """How ``offer_count`` jumps from the median of ``baseline``, if past the guard."""
        base = int(statistics.median(baseline))
        moved = abs(offer_count - base)
        if base == 0 or moved <= self.min_count:  # nothing to compare a first catalogue with
            return None
        if offer_count < base and moved > self.drop_share * base:
            return (
                f"fell from a baseline of {base} (-{moved / base:.0%}; guard: more than"
                f" {self.drop_share:.0%} and more than {self.min_count} offers)"
            )
        if offer_count > base and offer_count > self.rise_factor * base:
            return (
                f"rose from a baseline of {base} ({offer_count / max(base, 1):,.0f}x; guard:"
                f" more than {self.rise_factor:g}x and more than {self.min_count} offers)"
            )
        return None


def _reasons(skipped: Sequence[SkippedRecord], top: int = 3) -> str:
    """``; skipped: 12 x no positive price, ...`` (the commonest reasons), or ``""``."""
    if not skipped:
        return ""
    counts = Counter(s.reason for s in skipped).most_common(top)
    return "; skipped: " + ", ".join(f"{n} x {reason}" for reason, n in counts)
