"""The CLI loads a command's module only when the command runs (``service.cli.COMMANDS``),
and a warm ``gpuscout offers`` loads only what it runs (#15: under a second)."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.main import get_group

from gpuscout.adapters import adapter_modules
from gpuscout.service.cli import COMMAND_MODULES, COMMANDS
from gpuscout.service.sample_cache import CACHE_DIR

ROOT = Path(__file__).resolve().parents[3]


def test_the_map_is_what_each_module_registers() -> None:
    registered: dict[str, str] = {}
    for module in COMMAND_MODULES:
        sub = typer.Typer()
        importlib.import_module(f"gpuscout.service.commands.{module}").register(sub)
        registered.update(dict.fromkeys(get_group(sub).commands, module))
    assert registered == COMMANDS


def _run_main(args: list[str], tmp_path: Path, report: str, prelude: str = "") -> str:
    """What ``report`` (Python code run after the command) prints, the command run in a new
    process through :func:`service.cli.main`, as the ``gpuscout`` script runs it."""
    code = (
        "import gc, sys\n"
        "from gpuscout.service.cli import main\n"
        f"{prelude}\n"
        f"sys.argv = ['gpuscout', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"{report}\n"
    )
    env = {**os.environ, "GPUSCOUT_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("GPUSCOUT_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    return done.stderr


def _modules_after(args: list[str], tmp_path: Path) -> set[str]:
    said = _run_main(args, tmp_path, "print('MODULES', *sorted(sys.modules), file=sys.stderr)")
    line = next(x for x in said.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:])


#: What a warm ``offers`` table never runs: migrations (the database is read, not
#: migrated), HTTP, the web framework and pages, mail, the scheduler, the API's answers
#: (the table is built from the frame), every provider's parse (the sample's is kept), and
#: the ECB's XML (only a download reads it).
WARM_NEVER = {
    "alembic",
    "fastapi",
    "starlette",
    "uvicorn",
    "httpx",
    "jinja2",
    "matplotlib",
    "gpuscout.service.api",
    "gpuscout.service.web",
    "gpuscout.service.digest",
    "gpuscout.service.alerts",
    "gpuscout.service.scheduler",
    "gpuscout.service.snapshots",
    "gpuscout.service.commands.db",
    "gpuscout.adapters.base",
    "xml.etree",
    *(f"gpuscout.adapters.{m}" for m in adapter_modules()),
}


@pytest.mark.parametrize("stored", [False, True], ids=["sample", "stored-snapshot"])
def test_a_warm_offers_imports_only_what_it_runs(tmp_path: Path, stored: bool) -> None:
    args = ["offers", "--gpu", "H100", "--hours", "100"]
    if stored:
        _run_main(["snapshot", "--sample"], tmp_path, "")
        # the snapshot kept its frame in the database: the first table after it is warm
        shutil.rmtree(tmp_path / CACHE_DIR, ignore_errors=True)  # and needs no sample
        warm = _modules_after(args, tmp_path)
        assert "gpuscout.service.commands.pricing" in warm
        assert not WARM_NEVER & warm, sorted(WARM_NEVER & warm)
        return
    cold = _modules_after(args, tmp_path)  # the sample parsed
    warm = _modules_after(args, tmp_path)
    assert "gpuscout.service.commands.pricing" in warm
    assert "gpuscout.service.sample_cache" in warm
    assert cold & WARM_NEVER, "the cold run should load some of them: the check would see them"
    assert not WARM_NEVER & warm, sorted(WARM_NEVER & warm)
