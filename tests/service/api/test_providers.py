from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
import time_machine

from gpuscout.adapters import registry
from gpuscout.adapters.base import FRESH_WITHIN_HOURS
from gpuscout.adapters.collect import Origin, RunStatus
from gpuscout.adapters.schema import default_fx
from gpuscout.db.current import ProviderState

from .conftest import NOW, FakeSource, database_state, error_locs, offer

pytestmark = pytest.mark.anyio


async def test_providers_report_outcome_count_and_age(client: httpx.AsyncClient) -> None:
    with time_machine.travel(NOW, tick=False):  # the prices were fetched 2 h before NOW
        r = await client.get("/v1/providers")
    assert r.status_code == 200
    by_name = {p["provider"]: p for p in r.json()["providers"]}
    assert set(registry()) <= set(by_name)
    assert by_name["acme"]["outcome"] == "ok" and by_name["acme"]["fresh"] is True
    assert by_name["acme"]["offer_count"] == 2
    assert by_name["acme"]["price_age_s"] == 7200
    # its latest fetch was skipped, but its prices are 2 h old: fresh follows price age
    assert by_name["bolt"]["outcome"] == "stale" and by_name["bolt"]["fresh"] is True
    assert by_name["gcp"]["fresh"] is False and by_name["gcp"]["origin"] is None
    assert by_name["acme"]["origin"] == "live" and by_name["acme"]["capture_date_known"]
    assert by_name["acme"]["fresh_within_hours"] == FRESH_WITHIN_HOURS
    assert r.json()["sample"] is False
    assert by_name["gcp"]["outcome"] == "failed" and by_name["gcp"]["offer_count"] == 0
    assert by_name["gcp"]["error"] == "HTTP 503" and by_name["gcp"]["last_fetch_at"] is None
    assert by_name["bolt"]["error"] == "no key" and by_name["bolt"]["price_age_s"] > 0
    assert r.json()["fx_as_of"] == default_fx().as_of  # the table the prices converted with


async def test_each_provider_says_account_settings_source_lifecycle_and_check(
    client: httpx.AsyncClient,
) -> None:
    by_name = {p["provider"]: p for p in (await client.get("/v1/providers")).json()["providers"]}
    for name in registry():
        assert by_name[name]["prices_from"] and by_name[name]["format_checked"], name
        assert by_name[name]["lifecycle"] in ("active", "deprecated", "retired"), name
    azure, lambda_ = by_name["azure"], by_name["lambda"]
    assert azure["account_needed"] is False and lambda_["account_needed"] is True
    assert "GPUSCOUT_LAMBDA_API_KEY" in lambda_["settings"]
    assert azure["settings"][-1] == "GPUSCOUT_AZURE_BASE_URL"
    cudo = by_name["cudo"]
    assert cudo["lifecycle"] == "retired" and "2026-03-31" in cudo["lifecycle_note"]
    assert "dstack PR #4018" in cudo["lifecycle_note"]
    assert by_name["runpod"]["lifecycle"] == "deprecated"
    assert by_name["azure"]["lifecycle_note"] is None
    assert by_name["acme"]["lifecycle"] is None  # not a registered provider


async def test_unknown_parameter(client: httpx.AsyncClient) -> None:
    assert error_locs(await client.get("/v1/providers?all=1")) == [["query", "all"]]


@pytest.mark.parametrize(
    ("age_hours", "fresh"),
    [(FRESH_WITHIN_HOURS - 1, True), (FRESH_WITHIN_HOURS + 1, False)],
)
async def test_fresh_follows_price_age_against_the_threshold(
    client: httpx.AsyncClient, source: FakeSource, age_hours: float, fresh: bool
) -> None:
    fetched_at = datetime.now(UTC) - timedelta(hours=age_hours)
    source.current = database_state([offer(fetched_at=fetched_at)])
    by_name = {p["provider"]: p for p in (await client.get("/v1/providers")).json()["providers"]}
    assert by_name["acme"]["outcome"] == "ok" and by_name["acme"]["fresh"] is fresh


async def test_a_provider_threshold_is_its_adapters(
    client: httpx.AsyncClient, source: FakeSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registered provider's ``fresh_within_hours`` decides, not the default."""
    fetched_at = datetime.now(UTC) - timedelta(hours=FRESH_WITHIN_HOURS + 1)
    source.current = database_state([offer(provider="lambda", fetched_at=fetched_at)])
    monkeypatch.setattr(registry()["lambda"], "fresh_within_hours", FRESH_WITHIN_HOURS + 2)
    by_name = {p["provider"]: p for p in (await client.get("/v1/providers")).json()["providers"]}
    assert by_name["lambda"]["fresh"] is True
    assert by_name["lambda"]["fresh_within_hours"] == FRESH_WITHIN_HOURS + 2


async def test_sample_offers_are_never_fresh(client: httpx.AsyncClient, source: FakeSource) -> None:
    """Stored sample offers, even one an hour old, say sample and are not fresh."""
    recent = datetime.now(UTC) - timedelta(hours=1)
    held = ProviderState(
        "acme", RunStatus.OK, 1, recent, origin=Origin.SAMPLE, capture_date_known=False
    )
    source.current = database_state([offer(fetched_at=recent)], held)
    body = (await client.get("/v1/providers")).json()
    acme = {p["provider"]: p for p in body["providers"]}["acme"]
    assert acme["fresh"] is False and acme["origin"] == "sample"
    assert acme["capture_date_known"] is False
    assert body["sample"] is True


async def test_coverage_says_which_fields_each_provider_fills(
    client: httpx.AsyncClient, source: FakeSource
) -> None:
    source.current = database_state(
        [
            offer(cuda_version="12.4", psu_watts=3000.0),
            offer(offer_id="1x-h100", gpu_count=1),
            offer(provider="bolt"),
        ]
    )
    r = await client.get("/v1/providers/coverage")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["source"] == "database" and body["sample"] is False
    by_name = {p["provider"]: p for p in body["providers"]}
    assert list(by_name) == ["acme", "bolt"] and by_name["acme"]["offers"] == 2
    groups = {g["group"]: g for g in by_name["acme"]["groups"]}
    software = {f["field"]: f for f in groups["Software"]["fields"]}
    assert software["cuda_version"] == {"field": "cuda_version", "offers": 1, "share": 0.5}
    assert groups["Software"]["share"] == 0.1  # 1 of 2 offers x 5 fields
    power = {f["field"]: f["share"] for f in groups["Power and cooling"]["fields"]}
    assert power == {"psu_watts": 0.5, "psu_redundancy": 0.0, "cooling": 0.0}
    assert body["all"]["provider"] == "all" and body["all"]["offers"] == 3
    head = await client.head("/v1/providers/coverage")
    assert head.status_code == 200 and not head.content
    assert error_locs(await client.get("/v1/providers/coverage?x=1")) == [["query", "x"]]


async def test_coverage_of_the_sample(client: httpx.AsyncClient, source: FakeSource) -> None:
    from gpuscout.service.current import load_sample

    source.current = load_sample(default_fx())
    body = (await client.get("/v1/providers/coverage")).json()
    assert body["sample"] is True and body["note"].startswith("offline sample")
    autodl = {p["provider"]: p for p in body["providers"]}["autodl"]  # its offer states CUDA
    software = {g["group"]: g for g in autodl["groups"]}["Software"]
    assert {f["field"]: f["share"] for f in software["fields"]}["cuda_version"] == 1.0
