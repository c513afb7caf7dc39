"""What a ranking leaves out, and why: offers whose GPU the catalog could not identify.

An offer without a catalog model has no peak TFLOPs, so :func:`pricing.rank` cannot rank
it (by design the catalog does not guess between, say, an H100 SXM and an H100 PCIe). Users
asking for H100s should still hear that a provider's ``nvidia_h100`` exists and was left
out: :func:`unidentified` lists such offers for a requirement, matching its GPU names
against the raw names loosely (``H100`` finds ``nvidia_h100`` and ``H100 80GB``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import polars as pl

from .expressions import qualifies
from .requirement import Requirement

__all__ = ["unidentified", "unidentified_note"]


#: What loose matching ignores: case, and everything but letters and digits.
_NOT_ALNUM = r"[^0-9a-z]"


def _squash(text: str) -> str:
    return re.sub(_NOT_ALNUM, "", text.lower())


def unidentified(
    frame: pl.DataFrame, requirement: Requirement | None = None, now: datetime | None = None
) -> pl.DataFrame:
    """Offers with no catalog GPU that would otherwise be candidates for ``requirement``:
    one row per (provider, raw GPU name) with the number of offers, most first.

    The requirement's GPU names are matched against the raw names loosely; every other
    constraint applies as in the ranking, a fact the offer does not state counting as met.
    """
    req = requirement or Requirement()
    rest = req.model_copy(update={"gpus": (), "allow_unknown": True})
    rows = (
        frame.lazy()
        .filter(pl.col("gpu_model").is_null() & pl.col("gpu_raw_name").is_not_null())
        .with_columns(
            catalog_memory_gb=pl.lit(None, dtype=pl.Float64),
            catalog_form_factor=pl.lit(None, dtype=pl.String),
        )
        .filter(qualifies(rest, now or datetime.now(UTC)))
    )
    wanted = [w for w in (_squash(g) for g in req.gpus) if w]
    if wanted:
        squashed = pl.col("gpu_raw_name").str.to_lowercase().str.replace_all(_NOT_ALNUM, "")
        rows = rows.filter(
            pl.any_horizontal([squashed.str.contains(w, literal=True) for w in wanted])
        )
    return (
        rows.group_by("provider", "gpu_raw_name")
        .agg(offers=pl.len())
        .sort(["offers", "provider", "gpu_raw_name"], descending=[True, False, False])
        .collect()
    )


def unidentified_note(
    frame: pl.DataFrame, requirement: Requirement | None = None, now: datetime | None = None
) -> str | None:
    """One line for people: which offers were not ranked because their GPU is unknown."""
    left = unidentified(frame, requirement, now)
    if left.is_empty():
        return None
    total = int(left["offers"].sum())
    shown = [f"{raw!r} ({provider}, {n})" for provider, raw, n in left.head(6).iter_rows()]
    more = f" and {left.height - 6} more" if left.height > 6 else ""
    return (
        f"{total} offer(s) not ranked, GPU not identified (no form factor or model stated): "
        + ", ".join(shown)
        + more
    )
