"""The offline sample: recorded provider responses shipped as package data.

Where there is no network (or with ``--sample``) gpuscout replays these files through each
adapter's own ``parse``, so the sample exercises exactly the code real data goes through.
Their prices are those of the capture dates in ``samples/manifest.toml``; every caller
must say so to the user (:func:`sample_note`). A capture date that is not known is
``unknown`` there, with ``known_by``, the latest it can be: its runs say so
(:attr:`~adapters.collect.ProviderRun.capture_date_known`) and the note says "capture date
unknown".
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from collections.abc import Iterable
from datetime import UTC, date, datetime, time
from importlib import resources

from .run import Origin, ProviderRun

__all__ = [
    "SAMPLE_NOTE",
    "UNKNOWN",
    "SampleEntry",
    "capture_label",
    "manifest_bytes",
    "replay_sample",
    "sample_entries",
    "sample_note",
]

#: What every answer built on sample offers says first.
SAMPLE_NOTE = "offline sample: recorded prices, not live"
#: The manifest's ``captured`` for a capture date nobody recorded.
UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True, slots=True)
class SampleEntry:
    provider: str
    files: tuple[str, ...]
    captured: date | None
    """the capture date (or the data's own date for its prices); ``None``: unknown"""
    source: str
    known_by: date | None = None
    """for an unknown capture date, the latest it can be (when the prices are on record)"""

    def __post_init__(self) -> None:
        if self.captured is None and self.known_by is None:
            raise ValueError(f"sample {self.provider}: an unknown capture date needs known_by")

    @property
    def capture_date_known(self) -> bool:
        return self.captured is not None

    @property
    def dated(self) -> date:
        """The date its offers carry: the capture date, else the latest it can be."""
        day = self.captured or self.known_by
        assert day is not None  # __post_init__
        return day

    @property
    def fetched_at(self) -> datetime:
        return datetime.combine(self.dated, time(0, 0), tzinfo=UTC)


def capture_label(provider: str, day: date, known: bool) -> str:
    """How an answer names one sample's date: ``"aws 2025-09-15"``, or for an unknown
    capture date ``"lambda capture date unknown (on record by 2025-11-22)"``."""
    if known:
        return f"{provider} {day.isoformat()}"
    return f"{provider} capture date unknown (on record by {day.isoformat()})"


def sample_note(captures: Iterable[tuple[str, date, bool]] | None = None) -> str:
    """:data:`SAMPLE_NOTE` with each sample's date (``captures``: (provider, date, known)
    triples; default: every entry of the manifest)."""
    if captures is None:
        captures = ((e.provider, e.dated, e.capture_date_known) for e in sample_entries())
    labels = sorted({capture_label(*c) for c in captures})
    return SAMPLE_NOTE + (" (" + ", ".join(labels) + ")" if labels else "")


def _manifest_date(entry: dict[str, object], key: str) -> date | None:
    value = entry.get(key)
    if value is None or value == UNKNOWN:
        return None
    if isinstance(value, date):
        return value
    raise ValueError(f"sample {entry.get('provider')}: {key} must be a date or {UNKNOWN!r}")


def _root() -> resources.abc.Traversable:
    return resources.files(__package__ or "adapters").joinpath("samples")


def manifest_bytes() -> bytes:
    """The manifest as stored (what a cache of the replayed sample is keyed by)."""
    return _root().joinpath("manifest.toml").read_bytes()


@functools.cache
def sample_entries() -> tuple[SampleEntry, ...]:
    """The manifest's entries in file order, read once (the manifest ships with the code)."""
    return tuple(
        SampleEntry(
            provider=e["provider"],
            files=tuple(e["files"]),
            captured=_manifest_date(e, "captured"),
            source=e["source"],
            known_by=_manifest_date(e, "known_by"),
        )
        for e in tomllib.loads(manifest_bytes().decode("utf-8")).get("sample", [])
    )


def replay_sample(providers: Iterable[str] | None = None) -> list[ProviderRun]:
    """The sample's runs, one per provider (``providers``: only theirs; all by default).

    Every entry is parsed, then one run is kept per provider (:func:`apply_precedence`):
    a published catalog's entry holds many providers' offers, so a provider is chosen by
    the offers' provider, not by the entry that recorded them. The catalog's own run,
    which then holds no offers, is left out: the sample has no provider of that name.
    """
    from . import get_adapter  # the registry imports adapter modules; keep that lazy
    from .collect import parse_payloads
    from .precedence import apply_precedence

    runs = []
    for entry in sample_entries():
        adapter = get_adapter(entry.provider)()
        payloads = [adapter.decode(_root().joinpath(f).read_bytes(), f) for f in entry.files]
        run = parse_payloads(adapter, payloads, fetched_at=entry.fetched_at)
        run.origin = Origin.SAMPLE
        run.capture_date_known = entry.capture_date_known
        runs.append(run)
    kept = [run for run in apply_precedence(runs) if run.offers]
    if providers is None:
        return kept
    wanted = set(providers)
    return [run for run in kept if run.provider in wanted]
