"""The app ``gpuscout serve`` serves: its first load begun before FastAPI and the routes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpuscout.db.current import CurrentState
from gpuscout.service.api import create_app
from gpuscout.service.api.serving import Loaded, begin_load, marker_or_none
from gpuscout.service.settings import Settings

from .conftest import FakeSource, started

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]


def test_the_marker_is_read_before_the_offers() -> None:
    """A snapshot stored while the offers load moves the marker past the one kept, so the
    next poll loads again: the marker must be the older of the two readings."""
    calls: list[str] = []

    def marker() -> int:
        calls.append("marker")
        return 7

    def loader() -> CurrentState:
        calls.append("offers")
        return "state"  # type: ignore[return-value]

    loaded = begin_load(loader, marker).result(10)
    assert calls == ["marker", "offers"]
    assert loaded == Loaded(7, "state")  # type: ignore[arg-type]


def test_an_unreadable_marker_is_none_and_the_load_goes_on() -> None:
    def down() -> object:
        raise ConnectionError("no tables yet")

    assert marker_or_none(down) is None and marker_or_none(None) is None
    loaded = begin_load(lambda: "state", down).result(10)  # type: ignore[arg-type,return-value]
    assert loaded.marker is None and loaded.current == "state"


def test_a_failed_load_is_held_by_the_future() -> None:
    def broken() -> CurrentState:
        raise RuntimeError("no such table: current_offer")

    with pytest.raises(RuntimeError, match="no such table"):
        begin_load(broken, None).result(10)


async def test_the_app_starts_on_the_load_begun_before_it_and_keeps_its_marker(
    settings: Settings, source: FakeSource
) -> None:
    """The start-up waits for the load begun before the app and serves it: no second load;
    the marker read before it is the one the next poll compares."""
    go_on = threading.Event()

    def slow() -> CurrentState:
        assert go_on.wait(10)
        return source()

    first = begin_load(slow, lambda: (1, "at"))
    app = create_app(settings, offers_loader=source, snapshot_marker=lambda: (2, "later"),
                     first_load=first)  # fmt: skip
    go_on.set()
    async with started(app) as client:
        assert source.loads == 1
        assert app.state.context.last_marker == (1, "at")
        r = await client.get("/readyz")
        assert r.status_code == 200 and r.json()["offers"] == 5
    assert source.loads == 1


async def test_a_failed_first_load_is_counted_and_logged(
    settings: Settings, source: FakeSource, caplog: pytest.LogCaptureFixture
) -> None:
    """The start-up says what failed and counts it as a failed refresh; the app still
    starts, and its first request loads again (here with success)."""

    def broken() -> CurrentState:
        raise RuntimeError("no such table: current_offer")

    app = create_app(settings, offers_loader=source, first_load=begin_load(broken, None))
    async with started(app) as client:
        assert app.state.context.holder.state is None and source.loads == 0
        registry = app.state.context.metrics.registry
        failed = {"result": "error"}
        assert registry.get_sample_value("gpuscout_state_refreshes_total", failed) == 1
        assert (await client.get("/readyz")).status_code == 200
    assert "could not load the current offers" in caplog.text
    assert "no such table: current_offer" in caplog.text


def test_the_serving_module_imports_neither_fastapi_nor_the_app() -> None:
    """What begins the load must not wait for the imports it is meant to overlap."""
    code = (
        "import sys, gpuscout.service.api.serving, gpuscout.service.api.hooks\n"
        "print([m for m in ('fastapi', 'gpuscout.service.api.app') if m in sys.modules])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_serving_begins_the_load_before_the_app_module_is_imported(tmp_path: Path) -> None:
    """``serving`` (what ``gpuscout serve`` builds) starts loading, then imports the app:
    an import hook on ``service.api.app`` waits for the loader to have begun (it never
    would, were the load begun by the app), then the load is the app's first state."""
    code = """
import importlib.abc, sys, threading
import gpuscout.service.api.hooks as hooks
from gpuscout.service.api.serving import serving
from gpuscout.service.settings import Settings

began = threading.Event()
seen = []

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "gpuscout.service.api.app" and not seen:
            seen.append(began.wait(5))
        return None

wired = hooks.default_hooks

def default_hooks(settings):
    out = wired(settings)
    load = out["offers_loader"]

    def loader():
        began.set()
        return load()

    out["offers_loader"] = loader
    return out

hooks.default_hooks = default_hooks
sys.meta_path.insert(0, Watch())
settings = Settings(_env_file=None, data_dir=sys.argv[1])
app = serving(settings)
print("load begun before the app was imported:", seen)
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GPUSCOUT_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
        cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "load begun before the app was imported: [True]" in done.stdout, done.stdout


def _run(code: str, tmp_path: Path) -> str:
    """``code`` in a process of its own (the collector's state is the process's), on the
    offline sample under ``tmp_path``, with ``started(app)``, an async context giving a
    client of the app once its start-up ran; what it printed."""
    preamble = """
import contextlib, httpx

@contextlib.asynccontextmanager
async def started(app):
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GPUSCOUT_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", preamble + code, str(tmp_path)], capture_output=True,
        text=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_collector_is_paused_through_the_start_and_resumed_on_what_it_made(
    tmp_path: Path,
) -> None:
    """``serving`` pauses the collector until the start-up has its first state, then freezes
    what the start made and resumes it; a replaced state's frame is still freed when the
    holder lets it go, with no collection (the frozen objects are not in a cycle)."""
    code = """
import asyncio, gc, sys, weakref
from gpuscout.service.api.serving import serving
from gpuscout.service.settings import Settings

app = serving(Settings(_env_file=None, data_dir=sys.argv[1]))
print("built:", gc.isenabled(), gc.get_freeze_count() == 0)

async def main():
    async with started(app) as client:
        print("started:", gc.isenabled(), gc.get_freeze_count() > 100_000)
        assert (await client.get("/v1/offers?gpus=H100")).status_code == 200
        holder = app.state.context.holder
        holder.refresh()  # the start's own load stays in what the start froze
        frame = weakref.ref(holder.state.frame)
        gc.disable()
        holder.refresh()
        print("replaced frame freed:", frame() is None)

asyncio.run(main())
"""
    out = _run(code, tmp_path)
    assert "built: False True" in out, out
    assert "started: True True" in out, out
    assert "replaced frame freed: True" in out, out


def test_the_collector_runs_again_after_a_failed_first_load(tmp_path: Path) -> None:
    code = """
import asyncio, gc, sys
import gpuscout.service.api.hooks as hooks
from gpuscout.service.api.serving import serving
from gpuscout.service.settings import Settings

wired = hooks.default_hooks

def broken(settings):
    out = wired(settings)

    def loader():
        raise RuntimeError("no such table: current_offer")

    out["offers_loader"] = loader
    return out

hooks.default_hooks = broken
app = serving(Settings(_env_file=None, data_dir=sys.argv[1]))

async def main():
    async with started(app):
        print("started:", gc.isenabled(), app.state.context.holder.state is None)

asyncio.run(main())
"""
    assert "started: True True" in _run(code, tmp_path)


async def test_an_app_built_elsewhere_leaves_the_collector_alone(
    settings: Settings, source: FakeSource
) -> None:
    """Only ``serving`` pauses it: an app a test (or ``serve --get``) builds does not
    freeze the objects of the process it runs in."""
    import gc

    frozen = gc.get_freeze_count()
    app = create_app(settings, offers_loader=source, first_load=begin_load(source, None))
    async with started(app) as client:
        assert (await client.get("/readyz")).status_code == 200
        assert gc.isenabled() and gc.get_freeze_count() == frozen
