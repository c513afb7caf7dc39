"""deploy/: Docker cannot run here, so the compose file and Dockerfile are checked as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpuscout.service.settings import Settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text("utf-8"))
    return data


def test_services_and_order() -> None:
    services = _compose()["services"]
    assert {"db", "migrate", "api", "scheduler"} <= set(services)
    assert services["api"]["command"][:3] == ["gpuscout", "serve", "--no-scheduler"]
    assert services["scheduler"]["command"] == ["gpuscout", "scheduler"]
    assert services["scheduler"]["deploy"]["replicas"] == 1
    for name in ("api", "scheduler"):
        depends = services[name]["depends_on"]
        assert depends["db"]["condition"] == "service_healthy"
        assert depends["migrate"]["condition"] == "service_completed_successfully"
    assert "upgrade" in " ".join(services["migrate"]["command"])


def test_the_scheduler_yields_the_cores_to_the_api() -> None:
    """A snapshot frames every offer on every core: under contention the scheduler gets a
    quarter of the API's CPU weight (compose's default weight is 1024)."""
    services = _compose()["services"]
    assert services["scheduler"]["cpu_shares"] == 256
    assert "cpu_shares" not in services["api"]


def test_api_reads_the_fx_table_the_scheduler_writes() -> None:
    compose = _compose()
    services = compose["services"]
    assert "data" in compose["volumes"]
    assert "data:/home/gpuscout/data" in services["scheduler"]["volumes"]
    assert any(v.startswith("data:/home/gpuscout/data:ro") for v in services["api"]["volumes"])
    assert "GPUSCOUT_DATA_DIR=/home/gpuscout/data" in (DEPLOY / "Dockerfile").read_text("utf-8")


def test_healthchecks() -> None:
    services = _compose()["services"]
    assert "pg_isready" in " ".join(services["db"]["healthcheck"]["test"])
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])
    assert services["scheduler"]["healthcheck"]["test"]


def test_environment_names_real_settings() -> None:
    fields = {f"GPUSCOUT_{n.upper()}" for n in Settings.model_fields}
    for name in ("api", "scheduler", "migrate"):
        env = _compose()["services"][name]["environment"]
        assert env["GPUSCOUT_ENVIRONMENT"] == "production"
        assert env["GPUSCOUT_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert set(env) <= fields, set(env) - fields
        assert "changeme" not in str(env)


def test_dockerfile() -> None:
    text = (DEPLOY / "Dockerfile").read_text("utf-8")
    assert "python:3.11-slim" in text and "uv sync --frozen" in text
    assert "\nUSER gpuscout" in text
    assert "HEALTHCHECK" in text and "/healthz" in text
    assert (DEPLOY / "README.md").read_text("utf-8").count("scheduler") >= 3


def test_only_the_proxy_is_published_and_it_bounds_slow_clients() -> None:
    services = _compose()["services"]
    assert "ports" not in services["api"]  # reached through the proxy only
    assert services["proxy"]["ports"] == ["8000:8080"]
    conf = (DEPLOY / "nginx.conf").read_text("utf-8")
    for directive in (
        "client_header_timeout 10s;",
        "client_body_timeout 10s;",
        "limit_conn per_client",
        "limit_req zone=per_client_rate",
        "server api:8000;",
    ):
        assert directive in conf, directive
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in services["proxy"]["volumes"]
