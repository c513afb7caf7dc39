"""Settings, read from the environment (prefix ``GPUSCOUT_``) and an optional ``.env`` file.

Nothing is read at import time: call :func:`get_settings` (cached) or build
``Settings(...)`` directly in tests. Every field is listed in ``.env.example`` (a test
checks) but the providers': each provider's settings (its credentials, any other setting it
reads, the base URL of its API) are what its adapter declares (:mod:`adapters.declarations`),
made fields here from the adapters' manifest, and listed in ``adapters/README.md``.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import platformdirs
from pydantic import (
    BeforeValidator,
    Field,
    FilePath,
    SecretStr,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from gpuscout.adapters.declarations import ProviderSetting, declared

__all__ = ["Settings", "get_settings"]


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("gpuscout"))


#: How a list setting is written, said in every error about one.
LIST_FORM = 'expected comma-separated values (a,b) or a JSON list (["a", "b"])'


def _listed(value: object) -> object:
    """A list setting from the environment: ``a,b`` or the JSON list ``["a", "b"]``.

    pydantic-settings would read only JSON, and its error names neither the variable nor
    the form; with :class:`~pydantic_settings.NoDecode` the raw text reaches this
    validator, so a plain ``vastai`` works and a broken JSON list is a validation error
    that names its ``GPUSCOUT_`` variable. Values given in Python (a list) pass as they are.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text.startswith("["):
        return [item.strip() for item in text.split(",") if item.strip()]
    try:
        items = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not a JSON list ({exc}); {LIST_FORM}") from None
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"a JSON list of strings is needed; {LIST_FORM}")
    return items


#: A list of strings read from ``a,b`` or ``["a", "b"]`` (:func:`_listed`).
TextList = Annotated[list[str], NoDecode, BeforeValidator(_listed)]
#: A list of paths read the same way.
PathList = Annotated[list[Path], NoDecode, BeforeValidator(_listed)]


def _provider_field(setting: ProviderSetting) -> tuple[Any, Any]:
    """The settings field (type, default) of one setting an adapter declares."""
    described = Field(setting.default, description=setting.description)
    if setting.secret:
        return SecretStr | None, described
    if setting.paths:
        return PathList, Field(default_factory=list, description=setting.description)
    if setting.choices:
        allowed: Any = Literal.__getitem__(setting.choices)  # Literal["CNY", "USD"]
        return (allowed if setting.default is not None else allowed | None), described
    return str | None, described


def _provider_fields() -> dict[str, Any]:
    """One field per setting the adapters declare, and ``<provider>_base_url`` for each
    provider with an API (None: the adapter's documented base URL)."""
    fields = {s.name: _provider_field(s) for d in declared() for s in d.settings}
    for d in declared():
        if d.base_url_setting:
            what = (
                f"base URL of the {d.name} API, every call built on it (a proxy, a mirror, a"
                f" local test server); none = the documented one, {d.base_url}"
            )
            fields[d.base_url_setting] = (str | None, Field(None, description=what))
    return fields


#: The names of the settings the adapters declare (credentials and other settings).
_PROVIDER_SETTINGS = tuple(s.name for d in declared() for s in d.settings)
#: ``<provider>_base_url`` -> the provider's name.
_PROVIDER_BASE_URLS = {d.base_url_setting: d.name for d in declared() if d.base_url_setting}

if TYPE_CHECKING:
    _ProviderSettings = BaseSettings
else:  # the providers' fields, from their declarations
    _ProviderSettings = create_model(
        "_ProviderSettings", __base__=BaseSettings, **_provider_fields()
    )


class Settings(_ProviderSettings):
    """Every setting of gpuscout (the providers' from their adapters, :func:`_provider_fields`)."""

    model_config = SettingsConfigDict(
        env_prefix="GPUSCOUT_", env_file=".env", extra="ignore", frozen=True
    )

    environment: str = Field("development", description="development | production")
    data_dir: Path = Field(default_factory=_default_data_dir, description="where SQLite lives")

    # provider HTTP
    http_timeout_s: float = Field(
        30.0,
        gt=0,
        description="timeout of one provider request, answer and body (a streamed download:"
        " per read)",
    )
    provider_deadline_s: float = Field(
        600.0,
        gt=0,
        description="wall-clock limit of one provider's whole fetch (every request, retry and"
        " wait); past it the provider fails and keeps its earlier offers. Longer than the"
        " slowest healthy fetch (AWS streams one price list of hundreds of MB per region),"
        " far shorter than the snapshot interval",
    )
    http_retries: int = Field(4, ge=1, le=10, description="attempts per provider request")
    provider_max_response_mb: float = Field(
        64.0,
        gt=0,
        description="largest provider answer read whole, in MB once decompressed (more: that"
        " provider's run fails, nothing read further); streamed price lists are read in parts",
    )
    providers_disabled: TextList = Field(
        default_factory=list,
        description="provider names not to fetch, as `gpuscout providers` lists them"
        " (comma-separated or a JSON list)",
    )
    fetch_when_empty: bool = Field(
        True,
        description="`gpuscout offers` with nothing stored first takes a snapshot of the"
        " published catalogs (gpuhunt's, SkyPilot's: no account, hours-old prices); false ="
        " answer from the offline sample until `gpuscout snapshot` stores offers",
    )
    fx_rates_file: Path | None = Field(
        None,
        description="FX table (TOML) prices are converted to USD with; none = data_dir/"
        "fx_rates.toml if 'gpuscout fx update' wrote one, else the shipped ECB rates",
    )
    fx_update_hours: float = Field(
        24, ge=0, description="hours between the scheduler's ECB rate downloads; 0 = never"
    )

    # REST API (service/api)
    admin_token: SecretStr | None = Field(
        None,
        description="Bearer token of the admin endpoints, at least 32 characters (e.g. `openssl"
        " rand -hex 32`); none = the admin endpoints are refused",
    )
    cors_origins: TextList = Field(
        default_factory=list,
        description="origins allowed by CORS (comma-separated or a JSON list); none = no CORS",
    )
    api_host: str = Field("127.0.0.1", description="address `gpuscout serve` binds")
    api_port: int = Field(8000, ge=1, le=65535, description="port `gpuscout serve` binds")
    mcp_http: bool = Field(
        True,
        description="answer AI agents over the Model Context Protocol at /mcp (streamable"
        " HTTP) beside the API; `gpuscout mcp` serves the same tools over stdio",
    )
    cache_max_age_s: int = Field(60, ge=0, description="Cache-Control max-age of API responses")
    api_access_log: bool = Field(
        False,
        description="log every request (uvicorn's access log); off by default: /metrics counts"
        " requests per route, and a log line per cached answer costs more than the answer",
    )
    api_workers: int = Field(
        1,
        ge=1,
        le=64,
        description="API worker processes `gpuscout serve` starts on one machine (the API is"
        " stateless over the shared database; the scheduler runs in a process of its own)",
    )
    api_worker_polars_threads: int | None = Field(
        None,
        ge=1,
        le=256,
        description="polars threads each of several API workers ranks with (default: the"
        " machine's cores over api_workers, at least one; POLARS_MAX_THREADS in the"
        " environment wins): a ranking of a few thousand rows is mostly polars planning it"
        " on one thread, and threads one worker would share with the others only wait on"
        " each other (two workers on two cores: 14-15 ms of CPU a new query against 16-17,"
        " p50 at 100 new queries a second 20 ms against 39); one worker keeps polars'"
        " default, a thread per core",
    )
    api_ranking_threads: int = Field(
        default_factory=lambda: 2 * (os.cpu_count() or 1),
        ge=1,
        le=256,
        description="rankings one API worker runs at once (default: twice the machine's cores);"
        " more wait their turn, first come first served: the ranking is CPU-bound, so running"
        " more at once makes every one slower and the slowest much slower",
    )
    api_cache_entries: int = Field(
        2048, ge=0, description="ranked results cached per snapshot (LRU by normalized query)"
    )
    api_cache_mb: float = Field(
        64.0,
        ge=0,
        description="most megabytes of ranked results (their JSON) cached per snapshot and"
        " worker; the least recently used go first, whichever of this and api_cache_entries"
        " binds",
    )
    api_refresh_s: float = Field(
        30.0, gt=0, description="how often an API replica checks for a newer snapshot"
    )
    api_max_connections: int = Field(
        512,
        ge=1,
        description="connections and tasks one API worker holds at once (uvicorn's"
        " limit_concurrency; more: 503 at once): many slow clients cannot take every socket",
    )
    api_keep_alive_s: int = Field(
        5, ge=1, le=300, description="seconds an idle kept-alive connection stays open"
    )
    api_max_body_bytes: int = Field(
        65536, ge=1024, description="largest request body the API reads, in bytes (more: 413)"
    )
    api_max_json_depth: int = Field(
        32,
        ge=2,
        le=500,
        description="deepest nesting of arrays and objects in a request body (more: 400)",
    )
    api_max_list_items: int = Field(
        100,
        ge=1,
        description="most values one list parameter (gpus, regions, ...) takes (more: 422)",
    )

    # database and snapshots (db/, service/scheduler.py)
    database_url: str = Field(
        "",
        description="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db; "
        "empty = the SQLite file gpuscout.db in data_dir",
    )
    snapshot_interval_minutes: float = Field(
        60, gt=0, description="minutes between scheduled snapshots"
    )
    snapshot_jitter_s: int = Field(
        120, ge=0, description="random delay in seconds added to each scheduled snapshot"
    )
    snapshot_on_start: bool = Field(
        True, description="take a snapshot as soon as the scheduler starts"
    )
    misfire_grace_s: int = Field(
        900, ge=1, description="seconds a late snapshot may still run; later ones are skipped"
    )
    retention_snapshots_days: int = Field(
        90, ge=0, description="days snapshot records are kept; 0 = forever"
    )
    retention_history_days: int = Field(
        730, ge=0, description="days closed price-history rows are kept; 0 = forever"
    )
    rollup_hourly_days: int = Field(
        7,
        ge=0,
        le=92,
        description="days of hourly price rollups kept (the hourly index reads them; pruned"
        " by each snapshot beyond them); 0 = none",
    )
    snapshot_lease_s: float = Field(
        60,
        gt=0,
        description="seconds the SQLite snapshot lease lasts unrenewed (renewed every third"
        " of it while a snapshot runs): how long a killed snapshot blocks the next one",
    )
    snapshot_guard_drop_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="an ok provider run whose offer count falls by more than this share of"
        " its baseline (and by more than snapshot_guard_min_count) is stored as failed,"
        " its earlier offers kept; 1 = never",
    )
    snapshot_guard_rise_factor: float = Field(
        3.0,
        ge=1,
        description="an ok provider run whose offer count rises above this many times its"
        " baseline (and by more than snapshot_guard_min_count) is stored as failed too",
    )
    snapshot_guard_baseline_runs: int = Field(
        5,
        ge=1,
        le=100,
        description="the baseline is the median offer count of this many latest accepted runs"
        " of the provider (since the last change the guard accepted)",
    )
    snapshot_guard_accept_after: int = Field(
        3,
        ge=1,
        le=100,
        description="a jump repeated by this many runs in a row (counts within 10%) is a real"
        " change of catalogue: accepted, noted on /providers, the new baseline",
    )
    snapshot_guard_min_count: int = Field(
        20,
        ge=0,
        description="the drop and skipped guards need more than this many lost offers or"
        " skipped records (a provider of a handful of types may lose a few)",
    )
    snapshot_guard_skipped_share: float = Field(
        0.9,
        ge=0,
        le=1,
        description="an ok provider run that skipped more than this share of the records it"
        " read (and more than snapshot_guard_min_count) is stored as failed; 1 = never",
    )

    # publishing and following a catalog (service/catalog, service/publication.py)
    publication: Literal["personal", "public"] = Field(
        "personal",
        description="personal: for this instance's users; public: a site that republishes,"
        " which keeps out of the catalog, the index, digests and alerts every source whose"
        " terms do not say yes to republishing (no or unknown: adapters/data/source_terms.toml)",
    )
    publish_dir: Path | None = Field(
        None,
        description="where the scheduler publishes the catalog after each snapshot and"
        " `gpuscout serve` serves it under /v1/catalog/; none = no catalog",
    )
    publish_key_file: Path | None = Field(
        None,
        description="Ed25519 private key (PEM, `gpuscout keygen`) the catalog's manifest is"
        " signed with; none = data_dir/catalog-key.pem",
    )
    publish_keep_versions: int = Field(
        5, ge=1, le=1000, description="published catalog versions kept, the newest included"
    )
    catalog_url: str | None = Field(
        None,
        description="another gpuscout's published catalog (http(s) URL or local path) this"
        " instance follows instead of fetching providers: no provider account needed",
    )
    catalog_public_key: str | None = Field(
        None,
        description="the followed catalog's Ed25519 public key: PEM text, a PEM file's path"
        " or the raw key in base64; a manifest it does not verify is refused",
    )
    catalog_max_age_hours: float = Field(
        48,
        gt=0,
        description="a followed catalog published longer ago than this is stale: refused,"
        " the offers followed before kept and named stale",
    )

    # weekly email digest (service/digest)
    smtp_host: str = Field("localhost", description="SMTP server the digest is sent through")
    smtp_port: int = Field(25, ge=1, le=65535, description="SMTP port (587 starttls, 465 ssl)")
    smtp_security: Literal["none", "starttls", "ssl"] = Field(
        "starttls", description="none | starttls | ssl (implicit TLS)"
    )
    smtp_user: str | None = Field(None, description="SMTP login; none = no AUTH")
    smtp_password: SecretStr | None = Field(None, description="SMTP password for smtp_user")
    smtp_ca_file: FilePath | None = Field(
        None,
        description="PEM CA bundle the SMTP server's certificate is checked against"
        " (a private relay); none = the system's trusted CAs",
    )
    smtp_timeout_s: float = Field(30.0, gt=0, description="SMTP connect and command timeout")
    smtp_attempts: int = Field(4, ge=1, le=10, description="SMTP attempts per message (backoff)")
    mail_from: str = Field(
        "gpuscout <digest@localhost>", description="From: of every mail, 'Name <addr>' or addr"
    )
    public_base_url: str = Field(
        "http://127.0.0.1:8000", description="base URL of the API, for links in mails"
    )
    token_secret: SecretStr | None = Field(
        None,
        description="key signing confirm/unsubscribe links, at least 32 characters; none = a"
        " random key kept in data_dir/token_secret (one machine; required in production)",
    )
    token_max_age_days: int = Field(7, ge=1, description="days a confirmation link is valid")
    unsubscribe_max_age_days: int = Field(
        365, ge=1, description="days an unsubscribe link in a sent digest stays valid"
    )
    subscriptions_per_address_per_day: int = Field(
        5, ge=1, description="confirmation mails one address can be sent in 24 h (then 429)"
    )
    subscriptions_per_client_per_hour: int = Field(
        10, ge=1, description="subscription requests one client (IP, IPv6 /64) can make an hour"
    )
    subscriptions_per_network_per_hour: int = Field(
        30,
        ge=1,
        description="subscription requests the clients of one network (IPv4 /24, IPv6 /48) can"
        " make an hour",
    )
    subscriptions_per_hour: int = Field(
        1000,
        ge=1,
        description="confirmation mails gpuscout sends in all per hour (then 429): a ceiling"
        " against a spam run from many networks, far above what a few clients can use",
    )
    trusted_proxies: TextList = Field(
        default_factory=list,
        description="reverse proxies (IPs or CIDR networks, comma-separated or a JSON list)"
        " whose X-Forwarded-For names the client; none = the connection's peer is the client",
    )
    digest_weekday: int = Field(
        1, ge=1, le=7, description="ISO weekday the digest goes out (1 = Monday), local time"
    )
    digest_hour: int = Field(8, ge=0, le=23, description="hour the digest goes out, local time")
    digest_top_offers: int = Field(10, ge=1, le=50, description="offers listed per digest")
    digest_history_weeks: int = Field(8, ge=1, le=52, description="weeks in the price chart")
    digest_lease_minutes: float = Field(
        15, gt=0, description="minutes a claimed digest is reserved for the process sending it"
    )
    alerts_per_address: int = Field(
        20, ge=1, le=1000, description="pending and active price alerts one address may hold"
    )
    alert_webhooks_per_alert: int = Field(
        2, ge=0, le=10, description="webhook URLs one price alert may call (0: no webhooks)"
    )
    alert_hysteresis_pct: float = Field(
        5.0,
        ge=0,
        le=100,
        description="a fired price alert re-arms once the value is this % above its threshold",
    )
    alert_quiet_minutes: int = Field(
        360,
        ge=0,
        le=43200,
        description="default minutes after a firing before an alert fires again",
    )
    alert_drop_min_observations: int = Field(
        12, ge=1, description="observations a search needs before its 7-day median counts"
    )
    alert_webhook_attempts: int = Field(
        3, ge=1, le=10, description="webhook calls per delivery, with backoff, before it fails"
    )
    alert_webhook_max_failures: int = Field(
        5, ge=1, description="failed deliveries in a row after which a webhook is disabled"
    )
    alert_webhook_timeout_s: float = Field(
        10.0, gt=0, le=60, description="webhook connect and per-read timeout"
    )
    alert_webhook_deadline_s: float = Field(
        30.0,
        gt=0,
        le=600,
        description="total time one webhook delivery may take, every attempt and wait included"
        " (a receiver answering slowly cannot hold the alerts longer)",
    )
    alert_webhook_allow_private: bool = Field(
        False,
        description="let webhooks call loopback, private and other non-public addresses (a"
        " receiver on this machine, in development); off: only public addresses, pinned",
    )

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        """A URL gpuscout cannot open is a configuration error at start, not a traceback later."""
        if not value or value.startswith(("sqlite:///", "sqlite+pysqlite:///")):
            return value  # a file path: no need to import SQLAlchemy (a warm CLI call)
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        from gpuscout.db.engine import SUPPORTED_BACKENDS

        try:
            backend = make_url(value).get_backend_name()
        except ArgumentError:
            raise ValueError(
                "not a database URL (sqlite:///path or postgresql+psycopg://user@host/db)"
            ) from None
        if backend not in SUPPORTED_BACKENDS:
            raise ValueError(
                f"unsupported database {backend!r}: gpuscout runs on SQLite (sqlite:///path) "
                "or PostgreSQL (postgresql+psycopg://user@host/db)"
            )
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_networks(cls, value: list[str]) -> list[str]:
        """Each entry an IP address or network, so a typo is an error at start-up."""
        for entry in value:
            try:
                ipaddress.ip_network(entry.strip(), strict=False)
            except ValueError:
                raise ValueError(
                    f"not an IP address or network: {entry!r} (expected e.g. 10.0.0.1,10.1.0.0/16)"
                ) from None
        return [entry.strip() for entry in value]

    @field_validator("providers_disabled")
    @classmethod
    def _registered_providers(cls, value: list[str]) -> list[str]:
        """Each a registered provider's name, so a typo does not leave a provider fetched."""
        from gpuscout.adapters import provider_names  # the names only: no adapter is imported

        known = provider_names()
        names = [name.strip() for name in value]
        unknown = [name for name in names if name not in known]
        if unknown:  # the wording's helpers only now: pricing imports polars
            from gpuscout.pricing.names import did_you_mean, similar_names

            hint = did_you_mean(similar_names(unknown[0], known, limit=1))
            raise ValueError(
                f"unknown provider {unknown[0]!r}{hint}; known: {', '.join(sorted(known))}"
            )
        return names

    @field_validator("*", mode="after")
    @classmethod
    def _http_base_url(cls, value: object, info: ValidationInfo) -> object:
        """A base URL (a provider's, the public one) is an absolute http(s) URL."""
        if (
            info.field_name
            and info.field_name.endswith("_base_url")
            and isinstance(value, str)
            and not value.startswith(("http://", "https://"))
        ):
            raise ValueError(f"not an http(s) URL: {value!r}")
        return value

    @model_validator(mode="after")
    def _catalog_key(self) -> Settings:
        """A followed catalog needs the key its manifest is checked against."""
        if self.catalog_url and not self.catalog_public_key:
            raise ValueError(
                "catalog_url is set but catalog_public_key is not: a followed catalog is"
                " checked against its publisher's public key (GPUSCOUT_CATALOG_PUBLIC_KEY)"
            )
        return self

    @model_validator(mode="after")
    def _default_database_url(self) -> Settings:
        """An empty ``database_url`` means the embedded SQLite file in ``data_dir``."""
        if not self.database_url:
            url = f"sqlite:///{self.data_dir / 'gpuscout.db'}"
            object.__setattr__(self, "database_url", url)  # frozen model: set once, here
        return self

    @field_validator("admin_token", "token_secret")
    @classmethod
    def _strong_secret(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        """A secret that is set is long and not a placeholder, in every environment."""
        if value is None:
            return None
        text = value.get_secret_value().strip()
        if text.lower() in PLACEHOLDER_SECRETS or len(text) < MIN_SECRET_CHARS:
            raise ValueError(
                f"too weak: at least {MIN_SECRET_CHARS} characters and no placeholder (e.g."
                f" `openssl rand -hex 32`); set GPUSCOUT_{str(info.field_name).upper()}"
            )
        return value

    @model_validator(mode="after")
    def _production_secrets(self) -> Settings:
        """In production mail links must verify on every replica: the key is set, not a
        per-machine file."""
        if self.environment != "development" and self.token_secret is None:
            raise ValueError(
                f"token_secret: required when environment={self.environment!r}; set"
                f" GPUSCOUT_TOKEN_SECRET (at least {MIN_SECRET_CHARS} characters)"
            )
        return self

    def unset_secrets(self) -> list[str]:
        """The service's own secrets left unset (``admin_token``: no admin endpoints;
        ``token_secret``: a key kept in the data dir). ``gpuscout serve`` refuses to listen
        beyond loopback while any is unset."""
        return [name for name in SERVICE_SECRETS if getattr(self, name) is None]

    def signing_key(self) -> str:
        """The key mail links are signed with: ``token_secret``, else a random key made
        once and kept in ``data_dir/token_secret`` (readable by its owner only)."""
        if self.token_secret is not None:
            return self.token_secret.get_secret_value()
        return _kept_key(self.data_dir / "token_secret")

    def provider_base_urls(self) -> dict[str, str]:
        """The base URLs set for providers (``<provider>_base_url``), by provider name."""
        urls = {name: getattr(self, field) for field, name in _PROVIDER_BASE_URLS.items()}
        return {name: url for name, url in urls.items() if url}

    def provider_credentials(self) -> dict[str, str | None]:
        """The settings the adapters declare, by name, unwrapped, for the adapters.

        Only those go along: the service's own secrets (admin token, SMTP password, token
        secret) never reach provider code. A list of paths (``price_sheet_paths``) goes
        along as one string joined by the OS path separator.
        """
        out: dict[str, str | None] = {}
        for name in _PROVIDER_SETTINGS:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                out[name] = value.get_secret_value()
            elif isinstance(value, list):
                out[name] = os.pathsep.join(str(p) for p in value) or None
            else:
                out[name] = value
        return out


#: Secret values that mean "not set" (refused in every environment).
PLACEHOLDER_SECRETS = frozenset({"", "changeme", "changethis", "secret", "password", "admin"})
#: The fewest characters the admin token and the token secret may have.
MIN_SECRET_CHARS = 32
#: Secrets of the service itself (provider credentials are not the service's).
SERVICE_SECRETS = ("admin_token", "token_secret")


def _kept_key(path: Path) -> str:
    """The random key kept at ``path``, made (mode 0600) if missing; every process on the
    machine reads the same key (one that loses the race to create it reads the winner's)."""
    try:
        key = path.read_text("utf-8").strip()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(48)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return _kept_key(path)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(key)
        return key
    if len(key) < MIN_SECRET_CHARS:
        raise ValueError(f"{path}: a kept key of fewer than {MIN_SECRET_CHARS} characters")
    return key


@functools.cache
def get_settings() -> Settings:
    """The process's settings, read once. Reading them sets nothing else: the FX table they
    select is read where offers are loaded or stored (:func:`service.fx.fx_table`)."""
    return Settings()
