"""What one provider's run in a snapshot came to: :class:`ProviderRun` and its :class:`RunStatus`.

Plain data, apart from :mod:`adapters.collect` (which makes runs, with the HTTP client and
the adapter contract): whoever only reads runs or a state built from them (the database's
current state, the sample's cached state) imports this alone.
"""

from __future__ import annotations

import dataclasses
import enum
from datetime import datetime
from typing import TYPE_CHECKING

from .schema import Offer

if TYPE_CHECKING:
    from .base import SkippedRecord

__all__ = ["FRESH_WITHIN_HOURS", "Origin", "ProviderRun", "RunStatus"]

#: How old a provider's prices may be and still count as fresh (``fresh`` in
#: ``/v1/providers``), unless its adapter sets ``fresh_within_hours``: a day, 24 scheduled
#: snapshots at the default hourly interval, so a few failed runs in a row do not make
#: prices look old, and a scheduler stopped for a day does. Sample prices are never fresh.
FRESH_WITHIN_HOURS = 24.0


class RunStatus(enum.StrEnum):
    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"


class Origin(enum.StrEnum):
    """Where a run's offers come from: a snapshot records it, every answer says it."""

    LIVE = "live"
    """fetched now from the provider (or read from the user's price sheets)"""
    CATALOG = "catalog"
    """read from another project's published catalog of the provider's prices (gpuhunt's,
    SkyPilot's): the provider's prices as that project last collected them"""
    SAMPLE = "sample"
    """replayed from the recorded responses shipped with gpuscout (:mod:`adapters.sample`):
    prices of their capture date, not today's"""


@dataclasses.dataclass(slots=True)
class ProviderRun:
    """The outcome of one provider in one snapshot."""

    provider: str
    status: RunStatus
    started_at: datetime
    duration_s: float
    offers: list[Offer] = dataclasses.field(default_factory=list)
    skipped: list[SkippedRecord] = dataclasses.field(default_factory=list)
    error: str | None = None
    origin: Origin = Origin.LIVE
    source: str | None = None
    """the source the offers came through when it is not the provider's own adapter: the
    published catalog's adapter (``skypilot_catalog``); ``None``: the provider itself"""
    capture_date_known: bool = True
    """``False``: recorded prices whose capture date is unknown; ``started_at`` (and the
    offers' ``fetched_at``) is then the latest that date can be (the sample manifest's
    ``known_by``), so an age computed from it is the least the prices can be old"""

    @property
    def offer_count(self) -> int:
        return len(self.offers)
