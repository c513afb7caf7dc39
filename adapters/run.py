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

__all__ = ["ProviderRun", "RunStatus"]


class RunStatus(enum.StrEnum):
    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"


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

    @property
    def offer_count(self) -> int:
        return len(self.offers)
