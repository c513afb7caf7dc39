"""``GET /v1/offers/{id}`` (every published field by group, the renter's checklist) and the
checklist summary of each offer of ``/v1/offers``; 422s for the seed filters' bad values."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gpuscout.adapters.schema import FIELD_GROUPS, Cooling
from gpuscout.pricing.checklist import CHECKLIST
from gpuscout.service.api.answer_schema import OfferDetail, RankedOffer
from gpuscout.service.api.offer_ids import offer_id

from .conftest import FakeSource, database_state, error_locs, offer, sample_offers

pytestmark = pytest.mark.anyio

#: An offer that publishes the power, chassis and software groups.
RACK = offer(
    provider="rackco",
    offer_id="8x-h100-rack",
    cpu_model="AMD EPYC 9654",
    cpu_sockets=2,
    psu_watts=12000.0,
    psu_redundancy="3+3",
    cooling=Cooling.LIQUID,
    chassis_form_factor="8U",
    os_images=("Ubuntu 22.04 LTS",),
    cuda_version="12.4",
    driver_version="550.54.15",
    frameworks=("PyTorch",),
    support_tier="enterprise",
)


@pytest.fixture
def source() -> FakeSource:
    return FakeSource(database_state([*sample_offers(), RACK]))


async def test_offer_detail_groups_every_field_and_checks_the_checklist(
    client: httpx.AsyncClient,
) -> None:
    r = await client.get(f"/v1/offers/{offer_id(RACK.key)}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    OfferDetail.model_validate(body)
    assert body["key"] == RACK.key and body["record_from"] == "frame"
    groups = {g["group"]: g for g in body["fields"]}
    assert list(groups) == list(FIELD_GROUPS)
    power = groups["Power and cooling"]["fields"]
    assert power == {"psu_watts": 12000.0, "psu_redundancy": "3+3", "cooling": "liquid"}
    assert groups["Software"]["fields"]["os_images"] == ["Ubuntu 22.04 LTS"]
    assert "backup_service" in groups["Software"]["not_published"]
    checks = {c["key"]: c for c in body["checklist"]["checks"]}
    assert [c["key"] for c in body["checklist"]["checks"]] == [e.key for e in CHECKLIST]
    assert checks["psu_redundancy"] == {
        "key": "psu_redundancy",
        "group": "Power and cooling",
        "item": "Redundant power supplies",
        "threshold": "a spare PSU (2+2, N+1, 1+1, 2N)",
        "status": "met",
        "value": "psu_redundancy: 3+3",
    }
    assert checks["chassis"]["status"] == "met" and checks["os"]["status"] == "met"
    assert checks["backup"]["status"] == "unknown" and checks["ram"]["status"] == "met"
    assert checks["gpu_model"]["status"] == "met"
    counts = body["checklist"]
    assert counts["met"] + counts["not_met"] + counts["unknown"] == counts["items"]
    assert counts["summary"].startswith(f"{counts['met']} of {len(CHECKLIST)} met")
    assert body["links"]["history"] == f"/v1/offers/{offer_id(RACK.key)}/history"
    head = await client.head(f"/v1/offers/{offer_id(RACK.key)}")
    assert head.status_code == 200 and head.content == b""


async def test_a_bad_or_gone_offer_id_is_a_404_problem(client: httpx.AsyncClient) -> None:
    bad = await client.get("/v1/offers/not-an-id")
    assert bad.status_code == 404 and "is not an offer id" in bad.json()["detail"]
    assert bad.headers["content-type"] == "application/problem+json"
    gone = await client.get(f"/v1/offers/{offer_id('nobody|x|r|on_demand|instance')}")
    assert gone.status_code == 404 and "no current offer" in gone.json()["detail"]
    assert (await client.get(f"/v1/offers/{offer_id(RACK.key)}?x=1")).status_code == 422


async def test_each_answer_row_carries_its_checklist_summary(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/offers?gpus=H100&limit=5")).json()
    assert body["offers"]
    for row in body["offers"]:
        RankedOffer.model_validate(row)
        detail = (await client.get(f"/v1/offers/{row['id']}")).json()
        summary = {k: v for k, v in detail["checklist"].items() if k != "checks"}
        assert row["checklist"] == summary
    rack = next(o for o in body["offers"] if o["provider"] == "rackco")
    assert rack["checklist"]["met"] > min(o["checklist"]["met"] for o in body["offers"])


async def test_the_seed_filters_are_parameters(client: httpx.AsyncClient) -> None:
    query = (
        "min_psu_watts=2000&psu_redundant=true&min_chassis_u=4&os_images=ubuntu 22.04"
        "&min_cuda_version=12.2&frameworks=pytorch&support_tiers=Enterprise&min_cpu_sockets=2"
        "&server_cpu=true"
    )
    body = (await client.get(f"/v1/offers?{query}")).json()
    assert [o["provider"] for o in body["offers"]] == ["rackco"]
    assert (await client.get("/v1/offers?min_cuda_version=12.6")).json()["offers"] == []
    both = (await client.get("/v1/offers?preset=full-checklist&allow_unknown=true")).json()
    assert both["offers"] == []  # no sample offer has 8 A100-80GB


@pytest.mark.parametrize(
    ("query", "parameter", "says"),
    [
        ("min_cuda_version=12.x", "min_cuda_version", "not a version: '12.x'"),
        ("min_driver_version=1.2.3.4", "min_driver_version", "give major[.minor[.patch]]"),
        ("min_chassis_u=-4", "min_chassis_u", "greater than 0"),
        ("psu_redundant=maybe", "psu_redundant", "valid boolean"),
        ("min_cpu_sockets=1.5", "min_cpu_sockets", "valid integer"),
        ("os_images=--", "os_images", "letter or digit"),
    ],
)
async def test_bad_values_are_422s_naming_the_parameter(
    client: httpx.AsyncClient, query: str, parameter: str, says: str
) -> None:
    r = await client.get(f"/v1/offers?{query}")
    assert error_locs(r) == [["query", parameter]]
    assert says in r.text
