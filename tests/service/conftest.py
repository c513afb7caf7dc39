"""Fixtures of the service tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from service import sample_cache


@pytest.fixture
def recompute_code_digest() -> Iterator[Callable[[], None]]:
    """:func:`service.sample_cache.code_digest` is computed once per process. A test that
    changes what it digests (the package version, a source file) stands for another
    process: it calls this after the change, and leaves no digest of the change behind."""
    sample_cache.code_digest.cache_clear()
    yield sample_cache.code_digest.cache_clear
    sample_cache.code_digest.cache_clear()
