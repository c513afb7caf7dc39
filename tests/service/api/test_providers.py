from __future__ import annotations

import httpx
import pytest

from adapters import registry
from adapters.schema import default_fx

from .conftest import error_locs

pytestmark = pytest.mark.anyio


async def test_providers_report_outcome_count_and_age(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/providers")
    assert r.status_code == 200
    by_name = {p["provider"]: p for p in r.json()["providers"]}
    assert set(registry()) <= set(by_name)
    assert by_name["acme"]["outcome"] == "ok" and by_name["acme"]["fresh"] is True
    assert by_name["acme"]["offer_count"] == 2
    assert by_name["acme"]["price_age_s"] == pytest.approx(7200, abs=600)
    assert by_name["bolt"]["outcome"] == "stale" and by_name["bolt"]["fresh"] is False
    assert by_name["gcp"]["outcome"] == "failed" and by_name["gcp"]["offer_count"] == 0
    assert by_name["gcp"]["error"] == "HTTP 503" and by_name["gcp"]["last_fetch_at"] is None
    assert by_name["bolt"]["error"] == "no key" and by_name["bolt"]["price_age_s"] > 0
    assert r.json()["fx_as_of"] == default_fx().as_of  # the table the prices converted with


async def test_unknown_parameter(client: httpx.AsyncClient) -> None:
    assert error_locs(await client.get("/v1/providers?all=1")) == [["query", "all"]]
