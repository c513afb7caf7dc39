from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuscout.service.web.docs_page import SWAGGER_UI_DIR, _package_dir


def test_the_assets_are_those_the_swagger_ui_package_ships() -> None:
    import swagger_ui

    assert Path(swagger_ui.__file__).parent / "static" == SWAGGER_UI_DIR
    assert (SWAGGER_UI_DIR / "swagger-ui-bundle.js").is_file()


def test_the_assets_are_found_without_importing_the_package() -> None:
    code = "import sys, service.web.docs_page\nprint('swagger_ui' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_missing_package_is_named() -> None:
    with pytest.raises(ModuleNotFoundError, match="the no_such_package_here package"):
        _package_dir("no_such_package_here")
