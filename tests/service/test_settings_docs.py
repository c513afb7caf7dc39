"""Every setting is documented: the service's own in ``.env.example``, the providers' (what
their adapters declare) in the generated tables of ``adapters/README.md``."""

from __future__ import annotations

import os
import re
import typing
from pathlib import Path

import pytest

from gpuscout.adapters import registry
from gpuscout.adapters.declarations import declared
from gpuscout.service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]

#: The settings the adapters declare, and each HTTP adapter's ``<name>_base_url``.
PROVIDER_SETTINGS = {s.name for d in declared() for s in d.settings} | {
    d.base_url_setting for d in declared() if d.base_url_setting
}
SERVICE_SETTINGS = [n for n in Settings.model_fields if n not in PROVIDER_SETTINGS]


def _env_example() -> str:
    return (ROOT / ".env.example").read_text("utf-8")


def _adapters_readme() -> str:
    return (ROOT / "adapters" / "README.md").read_text("utf-8")


@pytest.mark.parametrize("name", SERVICE_SETTINGS)
def test_every_service_setting_in_env_example(name: str) -> None:
    text = _env_example()
    line = f"GPUSCOUT_{name.upper()}="
    assert line in text, f"{line} missing from .env.example"
    before = text.split(line, 1)[0].rstrip().splitlines()[-1]
    assert before.startswith("#"), f"{line} has no comment above it"


def test_env_example_sets_only_known_settings() -> None:
    named = re.findall(r"^#? ?GPUSCOUT_([A-Z0-9_]+)=", _env_example(), flags=re.M)
    assert [n for n in named if n.lower() not in Settings.model_fields] == []


def test_every_provider_setting_is_a_field_and_documented() -> None:
    """Each setting an adapter declares is a settings field, and the README beside the
    adapters names it (the table is generated: ``test_provider_docs``)."""
    text = _adapters_readme()
    assert set(Settings.model_fields) >= PROVIDER_SETTINGS
    assert [n for n in sorted(PROVIDER_SETTINGS) if f"`GPUSCOUT_{n.upper()}`" not in text] == []


def test_every_needed_setting_is_a_setting() -> None:
    for cls in registry().values():
        assert set(cls.needed_settings()) <= set(Settings.model_fields), cls.name


def _http_adapters() -> list[str]:
    return [name for name, cls in registry().items() if cls.base_url]


@pytest.mark.parametrize("name", _http_adapters())
def test_every_http_adapter_has_a_base_url_setting(name: str) -> None:
    """``GPUSCOUT_<NAME>_BASE_URL`` points the adapter elsewhere; its description shows the
    documented default it replaces."""
    setting = f"{name}_base_url"
    default = registry()[name].base_url
    assert (Settings.model_fields[setting].description or "").endswith(default)
    assert Settings(**{setting: "http://127.0.0.1:9/x"}).provider_base_urls() == {
        name: "http://127.0.0.1:9/x"
    }


def test_only_http_adapters_have_base_url_settings() -> None:
    settings = {
        n.removesuffix("_base_url") for n in Settings.model_fields if n.endswith("_base_url")
    }
    assert settings - {"public"} == set(_http_adapters())


def test_existing_provider_variables_keep_their_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """The names users have in their environment still work, derived now from the adapters."""
    for name in [n for n in os.environ if n.startswith("GPUSCOUT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GPUSCOUT_VASTAI_API_KEY", "vk")
    monkeypatch.setenv("GPUSCOUT_LAMBDA_BASE_URL", "http://127.0.0.1:9/lambda")
    monkeypatch.setenv("GPUSCOUT_TENCENT_CURRENCY", "USD")
    monkeypatch.setenv("GPUSCOUT_PRICE_SHEET_PATHS", "/a.csv,/b.yaml")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    creds = settings.provider_credentials()
    assert creds["vastai_api_key"] == "vk"
    assert creds["tencent_currency"] == "USD"
    assert creds["price_sheet_paths"] == os.pathsep.join(["/a.csv", "/b.yaml"])
    assert settings.provider_base_urls() == {"lambda": "http://127.0.0.1:9/lambda"}


def test_a_declared_choice_is_checked_when_the_settings_are_read() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="tencent_currency"):
        Settings(_env_file=None, tencent_currency="EUR")  # type: ignore[call-arg]


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
            if name in SERVICE_SETTINGS:
                assert "comma-separated or a JSON list" in _comment_above(name), name


def _comment_above(name: str) -> str:
    """The comment lines right above ``GPUSCOUT_<NAME>=`` in .env.example, as one line."""
    before = _env_example().split(f"GPUSCOUT_{name.upper()}=", 1)[0].rstrip().splitlines()
    lines: list[str] = []
    while before and before[-1].startswith("#"):
        lines.insert(0, before.pop().lstrip("# "))
    return " ".join(lines)
