"""``db.memory.release_memory``: glibc's malloc_trim where there is one, else nothing."""

from __future__ import annotations

import platform

import pytest

from gpuscout.db import memory


def test_gives_the_free_heap_back_on_glibc() -> None:
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not a glibc system")
    garbage = [bytes(4096) for _ in range(20_000)]  # ~80 MB of small blocks, then freed
    del garbage
    assert memory.release_memory() is True


def test_does_nothing_on_another_c_library(monkeypatch: pytest.MonkeyPatch) -> None:
    memory._malloc_trim.cache_clear()
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    try:
        assert memory.release_memory() is False
    finally:
        memory._malloc_trim.cache_clear()
