"""The sample manifest dates every sample truly: a capture date where one is known (or the
data dates its own prices), else ``unknown`` with the latest it can be; never a guess."""

from __future__ import annotations

import tomllib
from datetime import date
from importlib import resources

import pytest

from gpuscout.adapters.collect import Origin, RunStatus
from gpuscout.adapters.declarations import retired_providers
from gpuscout.adapters.sample import (
    SAMPLE_NOTE,
    UNKNOWN,
    SampleEntry,
    capture_label,
    replay_sample,
    sample_entries,
    sample_note,
)

#: Samples whose capture nobody recorded, and the latest it can be (the commit that first
#: published their prices, or Vast's end_date): see each entry's ``source``.
UNKNOWN_CAPTURE = {
    "lambda": date(2025, 11, 22),
    "verda": date(2023, 11, 24),
    "vultr": date(2025, 1, 8),
    "jarvislabs": date(2026, 6, 11),
    "sheet": date(2026, 11, 30),
    "autodl": date(2024, 3, 4),
    "compshare": date(2026, 6, 26),
}


def _raw_entries() -> list[dict[str, object]]:
    text = (
        resources.files("gpuscout.adapters").joinpath("samples", "manifest.toml").read_text("utf-8")
    )
    return list(tomllib.loads(text)["sample"])


def test_every_capture_date_is_a_date_or_unknown_with_its_latest_possible_day() -> None:
    for raw in _raw_entries():
        captured = raw["captured"]
        assert isinstance(captured, date) or captured == UNKNOWN, raw["provider"]
        if captured == UNKNOWN:
            assert isinstance(raw.get("known_by"), date), raw["provider"]
        else:
            assert "known_by" not in raw, raw["provider"]


def test_the_sample_holds_no_retired_provider() -> None:
    retired = retired_providers()
    assert "cudo" in retired
    assert not retired & {e.provider for e in sample_entries()}


def test_no_entry_passes_off_a_guess_as_a_date() -> None:
    for raw in _raw_entries():
        source = str(raw["source"]).lower()
        for word in ("placeholder", "approximation", "approximate"):
            assert word not in source, (raw["provider"], word)


def test_the_unknown_capture_dates_are_unknown() -> None:
    entries = {e.provider: e for e in sample_entries()}
    for provider, known_by in UNKNOWN_CAPTURE.items():
        entry = entries[provider]
        assert entry.captured is None and not entry.capture_date_known
        assert entry.known_by == entry.dated == known_by
    dated = {p for p, e in entries.items() if e.capture_date_known}
    assert dated == {"aws", "gcp", "skypilot_catalog"}  # the data's own timestamps date these


def test_an_unknown_capture_date_needs_its_latest_possible_day() -> None:
    with pytest.raises(ValueError, match="needs known_by"):
        SampleEntry("x", ("f.json",), None, "somewhere")


def test_replayed_runs_are_sample_runs_and_say_whether_their_date_is_known() -> None:
    runs = {r.provider: r for r in replay_sample()}
    assert all(r.origin is Origin.SAMPLE and r.status is RunStatus.OK for r in runs.values())
    for provider, known_by in UNKNOWN_CAPTURE.items():
        run = runs[provider]
        assert not run.capture_date_known
        assert run.started_at.date() == known_by
        # every offer carries that day; a sheet entry may carry an older one of its own
        assert max(o.fetched_at.date() for o in run.offers) == known_by
        if provider != "sheet":
            assert {o.fetched_at.date() for o in run.offers} == {known_by}
    assert runs["aws"].capture_date_known and runs["aws"].started_at.date() == date(2025, 9, 15)
    nebius = runs["nebius"]  # through the catalog capture, dated by its snapshot time
    assert nebius.capture_date_known and nebius.started_at.date() == date(2026, 3, 21)
    assert {o.via_catalog for o in nebius.offers} == {"skypilot-catalog v8"}


#: What the sample must cover (issue #48 item 6): these GPU families, across >= 12 providers.
COVERED_GPUS = {"H100", "H200", "B200", "A100", "L40S", "L4", "RTX-4090", "MI300X"}


def test_the_sample_covers_the_gpus_renters_ask_for_across_twelve_providers() -> None:
    offers = [o for run in replay_sample() for o in run.offers]
    providers = {o.seller or o.provider for o in offers}
    assert len(providers) >= 12, sorted(providers)
    families = {str(o.gpu_model) for o in offers if o.gpu_model is not None}
    for gpu in COVERED_GPUS:
        assert any(f.startswith(gpu) for f in families), gpu


def test_the_note_says_capture_date_unknown() -> None:
    note = sample_note()
    assert note.startswith(SAMPLE_NOTE)
    assert "verda capture date unknown (on record by 2023-11-24)" in note
    assert "skypilot_catalog 2026-03-21" in note and "aws 2025-09-15" in note
    assert capture_label("gcp", date(2023, 3, 24), True) == "gcp 2023-03-24"
