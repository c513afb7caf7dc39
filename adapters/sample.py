"""The offline sample: recorded provider responses shipped as package data.

Where there is no network (or with ``--sample``) gpuscout replays these files through each
adapter's own ``parse``, so the sample exercises exactly the code real data goes through.
Their prices are those of the capture dates in ``samples/manifest.toml``; every caller
must say so to the user.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable
from datetime import UTC, date, datetime, time
from importlib import resources

from .run import ProviderRun

__all__ = ["SampleEntry", "manifest_bytes", "replay_sample", "sample_entries"]


@dataclasses.dataclass(frozen=True, slots=True)
class SampleEntry:
    provider: str
    files: tuple[str, ...]
    captured: date
    source: str

    @property
    def fetched_at(self) -> datetime:
        return datetime.combine(self.captured, time(0, 0), tzinfo=UTC)


def _root() -> resources.abc.Traversable:
    return resources.files(__package__ or "adapters").joinpath("samples")


def manifest_bytes() -> bytes:
    """The manifest as stored (what a cache of the replayed sample is keyed by)."""
    return _root().joinpath("manifest.toml").read_bytes()


def sample_entries() -> list[SampleEntry]:
    """The manifest's entries, in file order."""
    data = tomllib.loads(manifest_bytes().decode("utf-8"))
    return [
        SampleEntry(
            provider=e["provider"],
            files=tuple(e["files"]),
            captured=date.fromisoformat(str(e["captured"])),
            source=e["source"],
        )
        for e in data.get("sample", [])
    ]


def replay_sample(providers: Iterable[str] | None = None) -> list[ProviderRun]:
    """Parse the recorded responses of ``providers`` (all sampled ones by default)."""
    from . import get_adapter  # the registry imports adapter modules; keep that lazy
    from .collect import parse_payloads

    wanted = set(providers) if providers is not None else None
    runs = []
    for entry in sample_entries():
        if wanted is not None and entry.provider not in wanted:
            continue
        adapter = get_adapter(entry.provider)()
        payloads = [adapter.decode(_root().joinpath(f).read_bytes(), f) for f in entry.files]
        runs.append(parse_payloads(adapter, payloads, fetched_at=entry.fetched_at))
    return runs
