"""Fixtures of the service tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import gpuscout.db.current
from gpuscout.service import sample_cache


@pytest.fixture
def framings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per frame built from the stored records (a cache miss)."""
    built: list[int] = []
    real = gpuscout.db.current._stored_records

    def counting(*args: object, **kwargs: object) -> object:
        built.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gpuscout.db.current, "_stored_records", counting)
    return built


@pytest.fixture
def recompute_code_digest() -> Iterator[Callable[[], None]]:
    """:func:`service.sample_cache.code_digest` is computed once per process. A test that
    changes what it digests (the package version, a source file) stands for another
    process: it calls this after the change, and leaves no digest of the change behind."""
    sample_cache.code_digest.cache_clear()
    yield sample_cache.code_digest.cache_clear
    sample_cache.code_digest.cache_clear()
