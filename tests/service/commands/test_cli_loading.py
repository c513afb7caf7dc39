"""The CLI loads a command's module only when the command runs (``service.cli.COMMANDS``)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import typer
from typer.main import get_group

from service.cli import COMMAND_MODULES, COMMANDS

ROOT = Path(__file__).resolve().parents[3]


def test_the_map_is_what_each_module_registers() -> None:
    registered: dict[str, str] = {}
    for module in COMMAND_MODULES:
        sub = typer.Typer()
        importlib.import_module(f"service.commands.{module}").register(sub)
        registered.update(dict.fromkeys(get_group(sub).commands, module))
    assert registered == COMMANDS


def _modules_after(args: list[str], tmp_path: Path) -> set[str]:
    code = (
        "import sys\n"
        "from service.cli import main\n"
        f"sys.argv = ['gpuscout', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('MODULES', *sorted(sys.modules), file=sys.stderr)\n"
    )
    env = {**os.environ, "GPUSCOUT_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("GPUSCOUT_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:])


def test_offers_on_the_sample_imports_no_database_web_or_http_code(tmp_path: Path) -> None:
    args = ["offers", "--gpu", "H100", "--hours", "100"]
    _modules_after(args, tmp_path)  # cold: parses the sample, fills the cache
    warm = _modules_after(args, tmp_path)
    assert "service.commands.pricing" in warm
    heavy = {"sqlalchemy", "alembic", "fastapi", "httpx", "matplotlib", "service.commands.db"}
    assert not heavy & warm, heavy & warm
