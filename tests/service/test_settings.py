"""Settings: provider credentials are handed to adapters, the service's secrets are not."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from pydantic import ValidationError
from pydantic_settings import NoDecode

from gpuscout.service.commands.errors import one_line
from gpuscout.service.settings import LIST_FORM, Settings


def test_provider_credentials_exclude_service_secrets(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        runpod_api_key="rp-key",
        admin_token="an-admin-token-of-some-length-0123456789",
        smtp_password="smtp-secret",
        price_sheet_paths=[tmp_path / "a.yaml", tmp_path / "b.csv"],
    )
    creds = settings.provider_credentials()
    assert creds["runpod_api_key"] == "rp-key"
    assert creds["lambda_api_key"] is None
    assert "admin_token" not in creds
    assert "smtp_password" not in creds
    assert "smtp-secret" not in creds.values()
    assert creds["price_sheet_paths"] is not None
    assert creds["price_sheet_paths"].count(str(tmp_path)) == 2


def test_every_adapter_credential_is_a_setting() -> None:
    from gpuscout.adapters import registry

    creds = Settings(_env_file=None).provider_credentials()  # type: ignore[call-arg]
    for cls in registry().values():
        for name in cls.credential_names:
            assert name in creds, (cls.name, name)


def test_an_unusable_database_url_is_a_configuration_error() -> None:
    for url, reason in (
        ("garbage", "not a database URL"),
        ("mysql://u@h/db", "unsupported database 'mysql'"),
    ):
        with pytest.raises(ValidationError, match=reason) as info:
            Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
        assert info.value.errors()[0]["loc"] == ("database_url",)
    for url in ("sqlite:///x.db", "postgresql+psycopg://u@h/db"):
        assert Settings(_env_file=None, database_url=url).database_url == url  # type: ignore[call-arg]


def test_unset_secrets_are_named(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    assert settings.unset_secrets() == ["admin_token", "token_secret"]
    real = Settings(
        _env_file=None,  # type: ignore[call-arg]
        admin_token="an-admin-token-of-some-length-0123456789",  # type: ignore[arg-type]
        token_secret="a-token-secret-of-some-length-0123456789",  # type: ignore[arg-type]
    )
    assert real.unset_secrets() == []
    assert real.signing_key() == "a-token-secret-of-some-length-0123456789"


def test_an_unset_token_secret_is_a_random_key_kept_in_the_data_dir(tmp_path: Path) -> None:
    first = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    key = first.signing_key()
    other = Settings(_env_file=None, data_dir=tmp_path / "b")  # type: ignore[call-arg]
    assert len(key) >= 32 and key != other.signing_key()
    assert Settings(_env_file=None, data_dir=tmp_path).signing_key() == key  # type: ignore[call-arg]
    assert (tmp_path / "token_secret").stat().st_mode & 0o077 == 0


#: Every list setting, with a value written both ways and what it reads as.
LIST_SETTINGS: dict[str, tuple[str, str, list[object]]] = {
    "providers_disabled": ("vastai, runpod", '["vastai", "runpod"]', ["vastai", "runpod"]),
    "price_sheet_paths": (
        "/a.csv,/b.yaml",
        '["/a.csv", "/b.yaml"]',
        [Path("/a.csv"), Path("/b.yaml")],
    ),
    "cors_origins": ("https://a.example", '["https://a.example"]', ["https://a.example"]),
    "trusted_proxies": (
        "10.0.0.1,10.1.0.0/16",
        '["10.0.0.1", "10.1.0.0/16"]',
        ["10.0.0.1", "10.1.0.0/16"],
    ),
}


def _from_env(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> Settings:
    monkeypatch.setenv(f"GPUSCOUT_{name.upper()}", value)
    return Settings(_env_file=None)  # type: ignore[call-arg]


def test_every_list_or_dict_setting_is_covered() -> None:
    """A new list (or dict) setting must be read with ``NoDecode`` and its own parsing,
    or pydantic-settings' JSON error (naming no variable) comes back."""
    complex_fields = {
        name
        for name, field in Settings.model_fields.items()
        if typing.get_origin(field.annotation) in (list, dict, set, tuple)
    }
    assert complex_fields == set(LIST_SETTINGS)
    for name in complex_fields:
        assert NoDecode in Settings.model_fields[name].metadata, name


@pytest.mark.parametrize("name", list(LIST_SETTINGS))
def test_list_settings_read_commas_or_json(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    commas, json_list, expected = LIST_SETTINGS[name]
    assert getattr(_from_env(monkeypatch, name, commas), name) == expected
    assert getattr(_from_env(monkeypatch, name, json_list), name) == expected
    assert getattr(_from_env(monkeypatch, name, ""), name) == []
    assert getattr(_from_env(monkeypatch, name, "[]"), name) == []


@pytest.mark.parametrize("name", list(LIST_SETTINGS))
@pytest.mark.parametrize("value", ['["a",', "[1, 2]", '[{"a": 1}]'])
def test_a_broken_list_setting_names_itself_and_the_form(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    with pytest.raises(ValidationError) as info:
        _from_env(monkeypatch, name, value)
    (error,) = info.value.errors()
    assert error["loc"] == (name,)
    assert LIST_FORM in error["msg"]
    message, code = one_line(info.value) or ("", 0)
    assert message.startswith(f"configuration: GPUSCOUT_{name.upper()}: ")
    assert "comma-separated" in message and code == 2


def test_a_list_given_in_python_passes_as_it_is() -> None:
    settings = Settings(_env_file=None, cors_origins=["https://a", "https://b"])  # type: ignore[call-arg]
    assert settings.cors_origins == ["https://a", "https://b"]


def test_a_disabled_provider_must_be_a_registered_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo in the setting left the provider fetched, silently."""
    with pytest.raises(ValidationError) as info:
        _from_env(monkeypatch, "providers_disabled", "vastai,lamda")
    message, code = one_line(info.value) or ("", 0)
    assert message.startswith(
        "configuration: GPUSCOUT_PROVIDERS_DISABLED: unknown provider 'lamda'"
        " (did you mean 'lambda'?); known: "
    )
    assert code == 2
    assert _from_env(monkeypatch, "providers_disabled", "vastai, lambda").providers_disabled == [
        "vastai",
        "lambda",
    ]
