"""Verda adapter: recorded instance types, locations and availability; OAuth2 fetch via respx."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

import gpuscout.adapters
from gpuscout.adapters.base import (
    MissingCredentials,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
)
from gpuscout.adapters.sample import sample_entries
from gpuscout.adapters.schema import PriceBasis, PriceUnit, RentalTerm, StorageType
from gpuscout.adapters.verda import API_BASE, VerdaAdapter

FIXTURES = Path(__file__).parent.parent / "fixtures" / "verda"
NOW = datetime(2025, 10, 1, tzinfo=UTC)
FAST = RetryPolicy(base_wait_s=0, max_wait_s=0)
CREDS = {"verda_client_id": "id", "verda_client_secret": "shh"}


def adapter(creds: dict[str, str | None] | None = None) -> VerdaAdapter:
    return VerdaAdapter(CREDS if creds is None else creds, policy=FAST)


def load(name: str) -> Any:
    return adapter().decode((FIXTURES / name).read_bytes(), name)


def recorded(types: str = "instance_types.reconstructed.json") -> list[Any]:
    return [
        load(types),
        load("locations.gpuhunt_fixture.verbatim.json"),
        load("instance_availability_spot.gpuhunt_fixture.verbatim.json"),
    ]


def offers_of(payloads: list[Any]) -> list[Any]:
    return adapter().parse(payloads, fetched_at=NOW).offers


def one(offers: list[Any], offer_id: str, term: RentalTerm) -> list[Any]:
    return [o for o in offers if o.offer_id == offer_id and o.term is term]


def test_decode_wraps_the_spot_availability_file() -> None:
    payload = load("instance_availability_spot.gpuhunt_fixture.verbatim.json")
    assert payload["is_spot"] is True
    assert payload["availabilities"][0]["location_code"] == "FIN-01"


def test_h100_on_demand_and_spot() -> None:
    offers = offers_of(recorded("instance_types.gpuhunt_fixture.verbatim.json"))
    [od] = one(offers, "1H100.80S.30V", RentalTerm.ON_DEMAND)
    assert od.gpu_model == "H100-SXM5-80GB"
    assert od.gpu_raw_name == "H100 SXM5 80GB"
    assert od.gpu_count == 1
    assert od.gpu_memory_gb == 80
    assert od.vcpus == 30
    assert od.ram_gb == 120
    assert od.storage_gb is None  # "dynamic": volumes are attached separately
    assert od.price_amount == Decimal("3.95")
    assert od.price_currency == "USD"
    assert od.price_unit is PriceUnit.HOUR
    assert od.price_basis is PriceBasis.INSTANCE
    assert od.usd_per_hour == Decimal("3.95")
    assert od.region is None and od.available_now is None  # on-demand availability not recorded
    assert od.os_images == ("ubuntu-22.04", "ubuntu-24.04")
    [spot] = one(offers, "1H100.80S.30V", RentalTerm.INTERRUPTIBLE)
    assert spot.price_amount == Decimal("1.70")
    assert spot.available_now is False  # not in the spot availability list


def test_total_vram_is_divided_per_gpu_and_spot_is_placed_by_location() -> None:
    offers = offers_of(recorded("instance_types.gpuhunt_fixture.verbatim.json"))
    [spot] = one(offers, "2A6000.20V", RentalTerm.INTERRUPTIBLE)
    assert spot.gpu_model == "RTX-A6000"
    assert spot.gpu_count == 2
    assert spot.gpu_memory_gb == 48
    assert spot.region == "FIN-01"
    assert spot.country == "FI"
    assert spot.available_now is True
    assert spot.price_amount == Decimal("0.70")
    assert spot.usd_per_gpu_hour == Decimal("0.35")


def test_v100_local_nvme_and_unstated_form_factor() -> None:
    offers = offers_of(recorded("instance_types.gpuhunt_fixture.verbatim.json"))
    [od] = one(offers, "1V100.6V", RentalTerm.ON_DEMAND)
    assert od.gpu_raw_name == "Tesla V100 16GB"
    # SXM2 or PCIe not stated: the slower PCIe part, the form factor left unset (#13)
    assert (od.gpu_model, od.gpu_form_factor) == ("V100-PCIE-16GB", None)
    assert od.storage_gb == 225
    assert od.storage_type is StorageType.NVME
    assert od.price_amount == Decimal("0.89")


def test_8x_h100_reconstructed() -> None:
    offers = offers_of(recorded())
    [od] = one(offers, "8H100.80S.176V", RentalTerm.ON_DEMAND)
    assert od.gpu_count == 8 and od.gpu_memory_gb == 80
    assert od.usd_per_gpu_hour == Decimal("2.99")


def test_cpu_only_types_are_skipped() -> None:
    result = adapter().parse(recorded(), fetched_at=NOW)
    assert "verda:instance-type/CPU.120V.480G" in [s.ref for s in result.skipped]
    assert all(o.gpu_count > 0 for o in result.offers)


def test_on_demand_availability_places_offers() -> None:
    on_demand = {
        "is_spot": False,
        "availabilities": [
            {"location_code": "FIN-02", "availabilities": ["1H100.80S.30V"]},
            {"location_code": "ICE-01", "availabilities": ["1H100.80S.30V"]},
        ],
    }
    offers = offers_of([*recorded(), on_demand])
    placed = one(offers, "1H100.80S.30V", RentalTerm.ON_DEMAND)
    assert [(o.region, o.country) for o in placed] == [("FIN-02", "FI"), ("ICE-01", "IS")]
    [h200] = one(offers, "1H200.141S.44V", RentalTerm.ON_DEMAND)
    assert h200.available_now is False


def record(**over: Any) -> dict[str, Any]:
    base = json.loads((FIXTURES / "instance_types.gpuhunt_fixture.verbatim.json").read_text())[0]
    return {**base, **over}


@pytest.mark.parametrize("price", [None, "-1", "0", "abc"])
def test_bad_on_demand_price_skipped_not_crashed(price: Any) -> None:
    result = adapter().parse([[record(price_per_hour=price)]], fetched_at=NOW)
    assert all(o.term is RentalTerm.INTERRUPTIBLE for o in result.offers)
    assert result.skipped


def test_absurd_and_equal_spot_prices_skipped() -> None:
    result = adapter().parse([[record(price_per_hour="0.001", spot_price="3.95")]], fetched_at=NOW)
    assert result.offers == []
    reasons = " ".join(result.skip_reasons())
    assert "absurd" in reasons and "spot price not below" in reasons


def test_unknown_gpu_is_kept() -> None:
    rec = record(gpu={"description": "1x Mystery GPU 9000", "number_of_gpus": 1})
    [od, _spot] = adapter().parse([[rec]], fetched_at=NOW).offers
    assert od.gpu_model is None and od.gpu_raw_name == "Mystery GPU 9000"


@pytest.mark.parametrize("payload", [{"x": 1}, "text", [{"foo": 1}]])
def test_wrong_shape_is_a_format_error(payload: Any) -> None:
    with pytest.raises(ResponseFormatError):
        adapter().parse([payload], fetched_at=NOW)


def test_truncated_json_and_unnamed_availability_file() -> None:
    with pytest.raises(ResponseFormatError):
        adapter().decode(b'[{"instance_type": "1H1', "types.json")
    with pytest.raises(ResponseFormatError, match="spot"):
        adapter().decode(b'[{"location_code": "FIN-01", "availabilities": []}]', "avail.json")


# --- fetch -------------------------------------------------------------------------------

TOKEN = {"access_token": "tok", "token_type": "Bearer", "expires_in": 3600}


def run_fetch(a: VerdaAdapter) -> list[Any]:
    async def go() -> list[Any]:
        async with httpx.AsyncClient() as client:
            return await a.fetch(client)

    return asyncio.run(go())


def mock_api(types: Any) -> dict[str, respx.Route]:
    return {
        "token": respx.post(f"{API_BASE}/oauth2/token").mock(
            return_value=httpx.Response(200, json=TOKEN)
        ),
        "types": respx.get(f"{API_BASE}/instance-types").mock(side_effect=types),
        "locations": respx.get(f"{API_BASE}/locations").mock(
            return_value=httpx.Response(200, json=load("locations.gpuhunt_fixture.verbatim.json"))
        ),
        "avail": respx.get(f"{API_BASE}/instance-availability").mock(
            return_value=httpx.Response(
                200, json=[{"location_code": "FIN-01", "availabilities": []}]
            )
        ),
    }


@respx.mock
def test_fetch_token_then_bearer_and_both_availabilities() -> None:
    types = load("instance_types.gpuhunt_fixture.verbatim.json")
    routes = mock_api([httpx.Response(200, json=types)])
    payloads = run_fetch(adapter())
    sent = json.loads(routes["token"].calls.last.request.content)
    assert sent == {"grant_type": "client_credentials", "client_id": "id", "client_secret": "shh"}
    assert routes["types"].calls.last.request.headers["Authorization"] == "Bearer tok"
    params = [c.request.url.params["isSpot"] for c in routes["avail"].calls]
    assert params == ["false", "true"]
    assert payloads[0] == types
    assert [p["is_spot"] for p in payloads[2:]] == [False, True]
    assert adapter().parse(payloads, fetched_at=NOW).offers


@respx.mock
def test_the_offline_sample_is_what_fetch_returns() -> None:
    """The sample's files decode to the payloads fetch returns; only the on-demand
    availability is not recorded (its offers stay unplaced, ``available_now=None``)."""
    [entry] = [e for e in sample_entries() if e.provider == "verda"]
    samples = Path(gpuscout.adapters.__file__).parent / "samples"
    types, locations, spot = [adapter().decode((samples / f).read_bytes(), f) for f in entry.files]
    respx.get(f"{API_BASE}/instance-availability", params={"isSpot": "true"}).mock(
        return_value=httpx.Response(200, json=spot["availabilities"])
    )  # before mock_api's catch-all availability route: the first matching route answers
    mock_api([httpx.Response(200, json=types)])
    payloads = run_fetch(adapter())
    assert [payloads[0], payloads[1], payloads[3]] == [types, locations, spot]
    assert payloads[2]["is_spot"] is False


@respx.mock
def test_fetch_retries_429_and_502() -> None:
    routes = mock_api(
        [
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(502),
            httpx.Response(200, json=[]),
        ]
    )
    assert run_fetch(adapter())[0] == []
    assert routes["types"].call_count == 3


@respx.mock
def test_fetch_500_every_time_is_a_provider_error() -> None:
    mock_api([httpx.Response(500)] * FAST.attempts)
    with pytest.raises(ProviderError, match="HTTP 500"):
        run_fetch(adapter())


@respx.mock
def test_fetch_rejected_credentials() -> None:
    respx.post(f"{API_BASE}/oauth2/token").mock(return_value=httpx.Response(401, json={}))
    with pytest.raises(ProviderError, match="401"):
        run_fetch(adapter())
    respx.post(f"{API_BASE}/oauth2/token").mock(return_value=httpx.Response(200, json={}))
    with pytest.raises(ResponseFormatError, match="access_token"):
        run_fetch(adapter())


def test_fetch_without_credentials_is_skipped() -> None:
    with pytest.raises(MissingCredentials, match="VERDA_CLIENT_SECRET"):
        run_fetch(adapter({"verda_client_id": "id", "verda_client_secret": None}))
