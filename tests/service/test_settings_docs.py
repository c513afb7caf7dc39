"""Every setting is documented in ``.env.example``; every adapter credential is named."""

from __future__ import annotations

import os
import typing
from pathlib import Path

import pytest

from gpuscout.adapters import registry
from gpuscout.service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def _env_example() -> str:
    return (ROOT / ".env.example").read_text("utf-8")


@pytest.mark.parametrize("name", list(Settings.model_fields))
def test_every_setting_in_env_example(name: str) -> None:
    text = _env_example()
    line = f"GPUSCOUT_{name.upper()}="
    assert line in text, f"{line} missing from .env.example"
    before = text.split(line, 1)[0].rstrip().splitlines()[-1]
    assert before.startswith("#"), f"{line} has no comment above it"


def _credential_env_names() -> list[str]:
    return sorted(
        {
            f"GPUSCOUT_{n.upper()}"
            for cls in registry().values()
            for n in (*cls.credential_names, *cls.optional_credential_names)
        }
    )


def test_env_example_names_every_adapter_credential() -> None:
    text = _env_example()
    assert [n for n in _credential_env_names() if n not in text] == []


def test_readme_names_every_adapter_credential() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    assert [n for n in _credential_env_names() if n not in text] == []


def test_readme_lists_every_adapter() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    assert [n for n in registry() if f"| `{n}` |" not in text] == []


def _http_adapters() -> list[str]:
    return [name for name, cls in registry().items() if cls.base_url]


@pytest.mark.parametrize("name", _http_adapters())
def test_every_http_adapter_has_a_documented_base_url_setting(name: str) -> None:
    """``GPUSCOUT_<NAME>_BASE_URL`` points the adapter elsewhere; .env.example shows the
    documented default it replaces."""
    setting = f"{name}_base_url"
    assert setting in Settings.model_fields
    default = registry()[name].base_url
    line = f"GPUSCOUT_{setting.upper()}="
    before = _env_example().split(line, 1)[0].rstrip().splitlines()
    assert before[-2].endswith(f"default {default}"), before[-2]
    assert Settings(**{setting: "http://127.0.0.1:9/x"}).provider_base_urls() == {
        name: "http://127.0.0.1:9/x"
    }


def test_only_http_adapters_have_base_url_settings() -> None:
    settings = {
        n.removesuffix("_base_url") for n in Settings.model_fields if n.endswith("_base_url")
    }
    assert settings - {"public"} == set(_http_adapters())


def test_env_example_reads_as_it_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Copied to .env unchanged, every value it sets is valid (lists included)."""
    for name in [n for n in os.environ if n.startswith("GPUSCOUT_")]:
        monkeypatch.delenv(name)
    settings = Settings(_env_file=ROOT / ".env.example")  # type: ignore[call-arg]
    assert settings.providers_disabled == [] and settings.cors_origins == []


def test_env_example_says_how_lists_are_written() -> None:
    from gpuscout.service.settings import LIST_FORM

    header = _env_example().split("\n\n", 1)[0]
    assert "comma-separated (a,b) or a JSON list" in header
    assert "(a,b)" in LIST_FORM
    for name, field in Settings.model_fields.items():
        if typing.get_origin(field.annotation) is list:
            assert "comma-separated or a JSON list" in (field.description or ""), name
            assert "comma-separated or a JSON list" in _comment_above(name), name


def _comment_above(name: str) -> str:
    """The comment lines right above ``GPUSCOUT_<NAME>=`` in .env.example, as one line."""
    before = _env_example().split(f"GPUSCOUT_{name.upper()}=", 1)[0].rstrip().splitlines()
    lines: list[str] = []
    while before and before[-1].startswith("#"):
        lines.insert(0, before.pop().lstrip("# "))
    return " ".join(lines)
