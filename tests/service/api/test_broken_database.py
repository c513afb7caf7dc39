"""A broken database: every route answers 503 (never 500), and no answer names the
driver, host, port or user of the database URL; the detail goes to the server log."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings

from .conftest import ADMIN_TOKEN

pytestmark = pytest.mark.anyio

#: Nothing listens on port 1: the connection is refused at once.
REFUSED_URL = "postgresql+psycopg://scout:hunter2@127.0.0.1:1/gpuscout"
#: Words of the URL (and its driver) that an answer must not carry.
SECRET_WORDS = ("psycopg", "postgresql", "127.0.0.1", "hunter2", "port 1", "sqlite", "garbage.db")

#: One request per operation of the OpenAPI document (a test checks none is missing), and
#: whether it needs the database (else it must still answer as usual).
REQUESTS: dict[tuple[str, str], tuple[dict[str, object], bool]] = {
    ("GET", "/v1/offers"): ({"url": "/v1/offers?gpus=H100"}, True),
    (
        "POST",
        "/v1/estimate",
    ): ({"url": "/v1/estimate", "json": {"params": 7e9, "tokens": 1e11}}, True),
    ("GET", "/v1/gpus"): ({"url": "/v1/gpus"}, False),
    ("GET", "/v1/gpus/{name}"): ({"url": "/v1/gpus/H100-SXM5-80GB"}, False),
    ("GET", "/v1/models"): ({"url": "/v1/models"}, False),
    ("GET", "/v1/models/{name}"): ({"url": "/v1/models/llama-3.1-70b"}, False),
    ("GET", "/v1/providers"): ({"url": "/v1/providers"}, True),
    # the published catalog: files on disk, none without publish_dir (404), no database
    ("GET", "/v1/catalog/manifest.json"): ({"url": "/v1/catalog/manifest.json"}, False),
    ("GET", "/v1/catalog/{version}/{name}"): ({"url": "/v1/catalog/v1/aws.parquet"}, False),
    ("GET", "/v1/providers/coverage"): ({"url": "/v1/providers/coverage"}, True),
    ("GET", "/v1/history/index"): ({"url": "/v1/history/index?gpu=H100"}, True),
    ("GET", "/v1/history/offers/{key}"): ({"url": "/v1/history/offers/a|b|c|on_demand|x"}, True),
    ("GET", "/v1/offers/{offer_id}"): ({"url": "/v1/offers/YXxifGN8b25fZGVtYW5kfHg"}, True),
    ("GET", "/v1/offers/{offer_id}/history"): (
        {"url": "/v1/offers/YXxifGN8b25fZGVtYW5kfHg/history"},
        True,
    ),
    (
        "POST",
        "/v1/snapshots",
    ): (
        {"url": "/v1/snapshots", "headers": {"Authorization": f"Bearer {ADMIN_TOKEN}"}},
        True,
    ),
    ("GET", "/healthz"): ({"url": "/healthz"}, False),
    ("GET", "/readyz"): ({"url": "/readyz"}, True),
    ("GET", "/metrics"): ({"url": "/metrics"}, False),
    (
        "POST",
        "/v1/subscriptions",
    ): (
        {
            "url": "/v1/subscriptions",
            "json": {"email": "a@example.org", "name": "weekly", "job": {"hours": 10}},
        },
        True,
    ),
    (
        "POST",
        "/v1/alerts",
    ): (
        {
            "url": "/v1/alerts",
            "json": {"email": "a@example.org", "name": "s", "condition": {"kind": "in_stock"}},
        },
        True,
    ),
    ("GET", "/v1/alerts/{alert_id}/firings"): ({"url": "/v1/alerts/1/firings?token=x"}, False),
    # a forged token is refused before the database is asked: 400 either way
    ("GET", "/v1/subscriptions/confirm"): ({"url": "/v1/subscriptions/confirm?token=x"}, False),
    ("POST", "/v1/subscriptions/confirm"): ({"url": "/v1/subscriptions/confirm?token=x"}, False),
    (
        "GET",
        "/v1/subscriptions/unsubscribe",
    ): ({"url": "/v1/subscriptions/unsubscribe?token=x"}, False),
    (
        "POST",
        "/v1/subscriptions/unsubscribe",
    ): ({"url": "/v1/subscriptions/unsubscribe?token=x"}, False),
}


def _broken_settings(tmp_path: Path, kind: str) -> Settings:
    if kind == "refused":
        url = REFUSED_URL
    else:  # a file that is not a SQLite database
        path = tmp_path / "garbage.db"
        path.write_bytes(b"this is not a database" * 200)
        url = f"sqlite:///{path}"
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
        database_url=url,
    )


def test_every_operation_has_a_request(tmp_path: Path) -> None:
    app = create_app(_broken_settings(tmp_path, "refused"))
    operations = {
        (method.upper(), path) for path, ops in app.openapi()["paths"].items() for method in ops
    }
    assert operations == set(REQUESTS)


@pytest.mark.parametrize("kind", ["refused", "garbage-sqlite"])
async def test_broken_database_is_503_without_details(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(_broken_settings(tmp_path, kind))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        for (method, _path), (request, needs_database) in REQUESTS.items():
            r = await client.request(method, **request)  # type: ignore[arg-type]
            assert r.status_code < 500 or r.status_code == 503, (method, _path, r.text)
            if needs_database:
                assert r.status_code == 503, (method, _path, r.status_code, r.text)
            else:
                allowed = (200, 400, 404) if _path.startswith("/v1/catalog/") else (200, 400)
                assert r.status_code in allowed, (method, _path, r.status_code, r.text)
            text = r.text.lower() if r.status_code >= 400 else ""
            assert not [w for w in SECRET_WORDS if w in text], (method, _path, r.text)
    assert any(word in caplog.text for word in ("refused", "not a database")), caplog.text
