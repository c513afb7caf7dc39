"""Invariants every registered adapter keeps (the shared "integrity" checks).

Each adapter has its own field-by-field tests; this module runs the same rules over all of
them, so a new adapter cannot join the registry without meeting them.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from gpuscout.adapters import adapter_modules, provider_names, registry
from gpuscout.adapters.base import Adapter, AdapterError
from gpuscout.adapters.collect import RunStatus
from gpuscout.adapters.format_checks import NOT_CHECKED, NOT_FOUND, format_checks
from gpuscout.adapters.sample import replay_sample, sample_entries
from gpuscout.service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
NAMES = list(registry())
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def test_registry_is_the_module_list() -> None:
    assert len(NAMES) == len(adapter_modules()) >= 12
    assert len(set(NAMES)) == len(NAMES)


def test_the_registry_is_what_the_adapters_declare() -> None:
    """Every adapter class found under ``adapters/`` is registered, and the manifest the
    settings are built from is what the classes declare (``stale_entries``: a provider
    added or changed without ``python -m gpuscout.service.provider_docs`` fails here)."""
    from gpuscout.adapters.declarations import discover, stale_entries

    found = discover()
    assert [cls.name for cls in found] == sorted(NAMES)
    assert stale_entries(found) == []


def test_the_provider_names_are_known_without_importing_an_adapter() -> None:
    """:func:`adapters.provider_names` (what a requirement's providers are checked
    against) is the registry's names, in its order."""
    assert provider_names() == tuple(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_adapter_declares_itself(name: str) -> None:
    cls = registry()[name]
    assert issubclass(cls, Adapter)
    assert name == name.lower() and name.isidentifier()
    assert cls.title and cls.source_url
    names = {*cls.credential_names, *cls.optional_credential_names}
    names |= {s.name for s in cls.other_settings}
    assert names <= set(Settings.model_fields), "setting not in settings"
    check = format_checks()[name]  # every provider is in the one table of format checks
    assert check.source and (check.day is None or check.day <= date.today())
    assert check.day is not None or check.checked_on in (NOT_FOUND, NOT_CHECKED)
    assert (ROOT / "tests" / "adapters" / f"test_{name}.py").exists(), "adapter without tests"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("payload", [None, 42, "text", {"unexpected": []}, [{"x": None}]])
def test_garbage_is_a_provider_error_never_a_crash(name: str, payload: Any) -> None:
    adapter = registry()[name]()
    try:
        result = adapter.parse([payload], fetched_at=NOW)
    except AdapterError:
        return
    # Tolerated only if nothing was invented from it.
    assert result.offers == []


@pytest.mark.parametrize("name", NAMES)
def test_truncated_file_is_a_provider_error(name: str) -> None:
    adapter = registry()[name]()
    with pytest.raises(AdapterError):
        payload = adapter.decode(b'{"offers": [{"id": 1, "pri', "truncated.json")
        adapter.parse([payload], fetched_at=NOW)


def test_sample_providers_are_registered() -> None:
    entries = sample_entries()
    assert len(entries) >= 4
    assert {e.provider for e in entries} <= set(NAMES)
    for entry in entries:
        assert entry.source, entry.provider


@pytest.fixture(scope="module")
def sample_runs() -> list[Any]:
    return replay_sample()


def test_sample_replays_through_parse(sample_runs: list[Any]) -> None:
    for run in sample_runs:
        assert run.status is RunStatus.OK, (run.provider, run.error)
        assert run.offers, run.provider


def test_offer_invariants_on_recorded_data(sample_runs: list[Any]) -> None:
    from gpuscout.adapters.gpus import get_gpu

    dates = {e.provider: e.fetched_at for e in sample_entries()}
    for run in sample_runs:
        keys = Counter(o.key for o in run.offers)
        dupes = [k for k, n in keys.items() if n > 1]
        assert not dupes, f"{run.provider}: duplicate offer keys {dupes[:3]}"
        for o in run.offers:
            where = f"{run.provider}:{o.offer_id}"
            assert o.provider == run.provider, where
            # the sample's date, or an older one of the offer's own (a sheet's price_date);
            # an offer that came through the catalog capture carries the catalog's date
            entry = "skypilot_catalog" if o.via_catalog else run.provider
            assert o.fetched_at <= dates[entry], where
            assert o.usd_per_hour > 0, where
            if o.gpu_count:
                assert o.gpu_raw_name, where
            if o.gpu_model is not None:
                spec = get_gpu(o.gpu_model)
                assert spec is not None, f"{where}: {o.gpu_model} not in catalog"
                assert o.gpu_vendor in (None, spec.vendor), where
                if o.gpu_memory_gb and spec.memory_gb and o.gpu_fraction is None:
                    ratio = o.gpu_memory_gb / spec.memory_gb
                    assert 0.85 <= ratio <= 1.15, f"{where}: memory {o.gpu_memory_gb}"
            per_gpu = o.usd_per_gpu_hour
            if per_gpu is not None and o.gpu_model is not None:
                assert per_gpu < 200, f"{where}: ${per_gpu}/GPU-hour is absurd"
