"""Settings: provider credentials are handed to adapters, the service's secrets are not."""

from __future__ import annotations

from pathlib import Path

from service.settings import Settings


def test_provider_credentials_exclude_service_secrets(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        runpod_api_key="rp-key",
        admin_token="an-admin-token-of-some-length",
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
    from adapters import registry

    creds = Settings(_env_file=None).provider_credentials()  # type: ignore[call-arg]
    for cls in registry().values():
        for name in cls.credential_names:
            assert name in creds, (cls.name, name)


def test_an_unusable_database_url_is_a_configuration_error() -> None:
    import pytest
    from pydantic import ValidationError

    for url, reason in (
        ("garbage", "not a database URL"),
        ("mysql://u@h/db", "unsupported database 'mysql'"),
    ):
        with pytest.raises(ValidationError, match=reason) as info:
            Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
        assert info.value.errors()[0]["loc"] == ("database_url",)
    for url in ("sqlite:///x.db", "postgresql+psycopg://u@h/db"):
        assert Settings(_env_file=None, database_url=url).database_url == url  # type: ignore[call-arg]


def test_placeholder_secrets_are_named() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.placeholder_secrets() == ["admin_token", "token_secret"]
    real = Settings(
        _env_file=None,  # type: ignore[call-arg]
        admin_token="an-admin-token-of-some-length",  # type: ignore[arg-type]
        token_secret="a-token-secret-of-some-length",  # type: ignore[arg-type]
    )
    assert real.placeholder_secrets() == []
