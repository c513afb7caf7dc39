"""An installed gpuscout occupies one import name, so it installs beside any ML library.

The wheel is built from this checkout by hatchling itself (no network, no build isolation)
and its top-level names are listed: ``gpuscout`` and its dist-info, nothing else. The
checkout's own code imports its packages only as ``gpuscout.<name>``: a bare ``adapters``
would load a second copy of a module from the repository's root.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("adapters", "db", "pricing", "service")


def test_the_wheel_installs_one_top_level_name(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("gpuscout-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"gpuscout"}
    # the packages, their data files and the migrations are all inside it
    for package in PACKAGES:
        assert f"gpuscout/{package}/__init__.py" in names
    assert "gpuscout/adapters/samples/manifest.toml" in names
    assert any(n.startswith("gpuscout/db/migrations/versions/") for n in names)
    entry = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    )
    assert b"gpuscout = gpuscout.service.cli:main" in entry


_BARE = re.compile(rf"^\s*(?:from|import) ({'|'.join(PACKAGES)})(?:\.|\s|$)", re.M)


def test_no_code_imports_a_package_by_its_bare_name() -> None:
    sources = [p for top in (*PACKAGES, "tests", "benchmarks") for p in (ROOT / top).rglob("*.py")]
    bare = [
        f"{p.relative_to(ROOT)}: {m.group(0).strip()}"
        for p in sources
        for m in _BARE.finditer(p.read_text("utf-8"))
    ]
    assert not bare, "import these as gpuscout.<name>:\n" + "\n".join(bare)


def test_the_version_is_the_distribution_s() -> None:
    from importlib.metadata import version

    import gpuscout

    assert gpuscout.__version__ == version("gpuscout")


def test_the_cli_prints_its_version() -> None:
    from typer.testing import CliRunner

    import gpuscout
    from gpuscout.service.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output == f"gpuscout {gpuscout.__version__}\n"
