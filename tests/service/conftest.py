"""Fixtures of the service tests."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

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


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def catalog_server(tmp_path: Path) -> Iterator[str]:
    """A static server on 127.0.0.1 (ephemeral port) of the published tree; anything else
    is its 404, as a catalog the publisher does not hold."""
    root = tmp_path / "published"
    from tests.service.test_catalog_snapshot import published_tree

    published_tree(root)
    handler = functools.partial(_Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
