"""Security headers: a policy without inline scripts on every page (which hold none),
no framing by other sites, nosniff and a referrer policy; HSTS only over TLS."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings
from tests.service.api.conftest import FakeSource, database_state, sample_offers

pytestmark = pytest.mark.anyio

PAGES = ["/", "/providers", "/gpus", "/index", "/subscribe", "/alert"]


@pytest.mark.parametrize("path", PAGES)
async def test_pages_carry_a_strict_policy_and_hold_no_inline_script(
    client: httpx.AsyncClient, path: str
) -> None:
    page = await client.get(path)
    assert page.status_code == 200, page.text
    policy = page.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self';" in policy
    assert "unsafe-inline" not in policy and "object-src 'none'" in policy
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Referrer-Policy"] == "same-origin"
    assert "Strict-Transport-Security" not in page.headers  # plain http
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", page.text) == []  # no inline script
    assert "<style" not in page.text and " style=" not in page.text
    assert re.search(r"\son[a-z]+=", page.text) is None  # no inline event handler


async def test_docs_allows_its_one_inline_script_by_hash(client: httpx.AsyncClient) -> None:
    page = await client.get("/docs")
    assert page.status_code == 200
    policy = page.headers["Content-Security-Policy"]
    assert re.search(r"script-src 'self' 'sha256-[A-Za-z0-9+/=]+';", policy), policy
    assert "frame-ancestors 'none'" in policy


async def test_json_answers_get_nosniff_not_a_page_policy(client: httpx.AsyncClient) -> None:
    answer = await client.get("/v1/providers")
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert "Content-Security-Policy" not in answer.headers


@pytest.mark.parametrize(
    ("base_url", "peer", "forwarded", "hsts"),
    [
        ("https://gpuscout.test", "203.0.113.9", None, True),  # TLS to the app itself
        ("http://gpuscout.test", "10.0.0.2", "https", True),  # a trusted proxy ended TLS
        ("http://gpuscout.test", "203.0.113.9", "https", False),  # anyone can say so
        ("http://gpuscout.test", "10.0.0.2", None, False),
    ],
)
async def test_hsts_only_over_tls(
    tmp_path: Path, base_url: str, peer: str, forwarded: str | None, hsts: bool
) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        trusted_proxies=["10.0.0.0/8"],
    )
    app = create_app(settings, offers_loader=FakeSource(database_state(sample_offers())))
    transport = httpx.ASGITransport(app=app, client=(peer, 40000))
    headers = {"X-Forwarded-Proto": forwarded} if forwarded else {}
    async with httpx.AsyncClient(transport=transport, base_url=base_url) as c:
        page = await c.get("/providers", headers=headers)
    assert ("Strict-Transport-Security" in page.headers) is hsts
