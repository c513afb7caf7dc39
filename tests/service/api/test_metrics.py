from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.anyio


async def test_prometheus_text(client: httpx.AsyncClient) -> None:
    await client.get("/v1/offers?gpus=H100")
    await client.get("/v1/offers?gpus=H100")
    await client.get("/v1/gpus/nope")
    r = await client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'gpuscout_http_requests_total{method="GET",route="/v1/offers",status="200"} 2.0' in text
    assert 'route="/v1/gpus/{name}",status="404"' in text
    assert "gpuscout_http_request_duration_seconds_bucket" in text
    assert 'gpuscout_offers_cache_total{result="hit"} 1.0' in text
    assert 'gpuscout_provider_last_outcome{outcome="failed",provider="gcp"} 1.0' in text
    assert "gpuscout_offers_loaded 5.0" in text


async def test_registries_are_per_app(client: httpx.AsyncClient, settings, source) -> None:  # type: ignore[no-untyped-def]
    from gpuscout.service.api import create_app

    await client.get("/healthz")
    other = create_app(settings, offers_loader=source)
    transport = httpx.ASGITransport(app=other)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        text = (await c.get("/metrics")).text
    assert 'route="/healthz"' not in text


async def test_invented_methods_are_one_label(client: httpx.AsyncClient) -> None:
    """A client cannot grow the label set: only standard methods are labels."""
    for method in ("FOO", "BAR-1", "get", "X" * 50):
        await client.request(method, "/v1/offers")
    text = (await client.get("/metrics")).text
    methods = {
        line.split('method="', 1)[1].split('"', 1)[0]
        for line in text.splitlines()
        if line.startswith("gpuscout_http_requests_total{")
    }
    assert "other" in methods
    assert methods <= {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "other"}
