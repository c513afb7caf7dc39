from __future__ import annotations

import json

import httpx
import pytest

from gpuscout.adapters.schema import default_fx
from gpuscout.db.current import state_from_offers
from gpuscout.pricing.requirement import Requirement
from gpuscout.service.api.offers_query import JOB_PARAMS, OffersQuery

from .conftest import FakeSource, database_state, error_locs, offer

pytestmark = pytest.mark.anyio


async def test_ranked_offers_with_breakdown_and_provenance(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/offers", params={"gpus": "H100", "hours": 100})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["source"] == "database" and body["sample"] is False
    assert body["stale_providers"] == ["bolt"] and body["failed_providers"] == ["gcp"]
    assert any("gcp" in w for w in body["warnings"])
    assert [o["hardware"]["gpu_model"] for o in body["offers"]] == ["H100-SXM5-80GB"] * 2
    assert [o["rank"] for o in body["offers"]] == [1, 2]
    first = body["offers"][0]
    assert first["price"]["term"] in {"on_demand", "commit_1mo"}
    assert first["price"]["break_even"] is not None or first["price"]["term"] == "on_demand"
    perf = first["performance"]
    assert perf["effective_tflops"] == pytest.approx(
        first["hardware"]["total_gpus"] * perf["peak_tflops"] * perf["mfu"] * perf["scaling"]
    )
    assert first["price_age_hours"] == pytest.approx(2, abs=0.2)
    assert first["provider"] and "region" in first and first["seller"] is None
    costs = [o["job"]["usd_per_effective_tflop_hour"] for o in body["offers"]]
    assert costs == sorted(costs)


async def test_filters_lists_commas_and_limit(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/offers?providers=bolt,cirrus&terms=on_demand&limit=1")
    body = r.json()
    assert body["count"] == 1
    assert body["offers"][0]["provider"] == "bolt"
    r2 = await client.get("/v1/offers?providers=cirrus&providers=bolt&terms=on_demand&limit=1")
    assert r2.json()["query"] == body["query"]  # canonical: order and form do not matter


async def test_training_job_and_sort(client: httpx.AsyncClient) -> None:
    r = await client.get(
        "/v1/offers", params={"model_params": 7e9, "tokens": 1e10, "sort": "job_cost_usd"}
    )
    assert r.status_code == 200, r.text
    offers = r.json()["offers"]
    assert offers and all(o["job"]["memory_needed_gb"] > 0 for o in offers)
    costs = [o["job"]["job_cost_usd"] for o in offers]
    assert costs == sorted(costs)
    # derived figures come rounded to what they can claim: cents, thousandths of an hour
    for o in offers:
        job = o["job"]
        assert job["job_cost_usd"] == round(job["job_cost_usd"], 2)
        assert job["wall_clock_hours"] == round(job["wall_clock_hours"], 3)
        assert len(repr(o["performance"]["effective_tflops"]).split(".")[1]) <= 3


async def test_preset(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/offers?preset=8xh100")
    assert r.status_code == 200
    assert {o["hardware"]["gpu_count"] for o in r.json()["offers"]} == {8}


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("min_gpus=lots", "min_gpus"),
        ("min_gpus=-1", "min_gpus"),
        ("hours=inf", "hours"),
        ("terms=weekly", "terms"),
        ("precision=fp4", "precision"),
        ("limit=0", "limit"),
        ("gpus=H1000", "gpus"),
        ("min_gpus=8&max_gpus=1", "max_gpus"),
        ("model_params=7e9", "tokens"),
        ("hours=1&gpu_hours=2", ""),
        ("sort=price", "sort"),
        ("frobnicate=1", "frobnicate"),
        ("gpu=H100", "gpu"),
    ],
)
async def test_invalid_parameters_are_422_naming_them(
    client: httpx.AsyncClient, query: str, param: str
) -> None:
    r = await client.get(f"/v1/offers?{query}")
    locs = error_locs(r)
    assert all(loc[0] == "query" for loc in locs)
    if param:
        assert any(param in loc for loc in locs), locs
    assert all(e["msg"] for e in r.json()["errors"])


async def test_etag_cache_control_and_304(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/offers?gpus=H100")
    etag = r.headers["etag"]
    assert r.headers["cache-control"].startswith("public, max-age=")
    again = await client.get("/v1/offers?gpus=H100", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.headers["etag"] == etag
    other = await client.get("/v1/offers?gpus=A100", headers={"If-None-Match": etag})
    assert other.status_code == 200 and other.headers["etag"] != etag


async def test_gzip_for_large_answers(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/offers?limit=50", headers={"Accept-Encoding": "gzip"})
    assert r.headers.get("content-encoding") == "gzip"
    assert r.json()["count"] == 4  # acme's two terms are one configuration


async def test_refresh_after_snapshot_swaps_state(
    client: httpx.AsyncClient, app: object, source: FakeSource
) -> None:
    before = await client.get("/v1/offers")
    assert source.loads == 1
    again = await client.get("/v1/offers")
    assert source.loads == 1 and again.json() == before.json()  # served from memory
    source.current = database_state([offer(provider="newco", offer_id="x", price_amount=1)])
    app.state.context.refresh_state()  # type: ignore[attr-defined]
    after = await client.get("/v1/offers", headers={"If-None-Match": before.headers["etag"]})
    assert after.status_code == 200
    assert [o["provider"] for o in after.json()["offers"]] == ["newco"]
    assert after.json()["stale_providers"] == []


async def test_sample_source_is_said(
    app: object, source: FakeSource, client: httpx.AsyncClient
) -> None:
    source.current = state_from_offers(
        [offer()], fx=default_fx(), source="sample", note="offline sample: recorded"
    )
    app.state.context.refresh_state()  # type: ignore[attr-defined]
    body = (await client.get("/v1/offers")).json()
    assert body["source"] == "sample" and body["sample"] is True
    assert body["warnings"][0].startswith("offline sample")


def test_every_requirement_and_job_field_is_a_parameter() -> None:
    fields = set(OffersQuery.model_fields)
    assert set(Requirement.model_fields) <= fields
    assert set(JOB_PARAMS) <= fields


async def test_offers_left_out_for_an_unknown_gpu_are_named_in_warnings(
    client: httpx.AsyncClient, app: object, source: FakeSource
) -> None:
    source.current = database_state(
        [
            offer(provider="newco", offer_id="x"),
            offer(provider="oddco", offer_id="y", gpu_model=None, gpu_raw_name="nvidia_h100"),
        ]
    )
    app.state.context.refresh_state()  # type: ignore[attr-defined]
    body = (await client.get("/v1/offers", params={"gpus": "H100"})).json()
    assert [o["provider"] for o in body["offers"]] == ["newco"]
    assert any("'nvidia_h100' (oddco, 1: GPU not identified)" in w for w in body["warnings"])
    assert body["left_out"] == [
        {
            "provider": "oddco",
            "gpu_raw_name": "nvidia_h100",
            "gpu_model": None,
            "reason": "GPU not identified",
            "offers": 1,
        }
    ]
    other = (await client.get("/v1/offers", params={"gpus": "A100"})).json()
    assert not any("not ranked" in w for w in other["warnings"])


async def test_answer_flags_an_unstated_form_factor_and_a_fallback_figure(
    client: httpx.AsyncClient, app: object, source: FakeSource
) -> None:
    """#13: every output says "form factor not stated" and how a figure was had."""
    source.current = database_state(
        [
            offer(
                provider="doco",
                offer_id="h",
                gpu_model="H100-PCIE-80GB",
                gpu_raw_name="H100",
                gpu_form_factor=None,
            ),
            offer(provider="old", offer_id="v", gpu_model="V100-SXM2-32GB", gpu_memory_gb=32),
        ]
    )
    app.state.context.refresh_state()  # type: ignore[attr-defined]
    body = (await client.get("/v1/offers")).json()
    by = {o["provider"]: o for o in body["offers"]}
    assert by["doco"]["hardware"]["form_factor_stated"] is False
    assert by["doco"]["hardware"]["gpu_form_factor"] is None
    assert by["doco"]["job"]["caveats"].startswith(
        "form factor not stated: ranked as the slower variant (H100-PCIE-80GB)"
    )  # the row's own caveat, not only a flag
    assert "form factor" not in (by["old"]["job"]["caveats"] or "")
    assert by["doco"]["performance"]["peak_basis"] == "datasheet"
    assert by["old"]["performance"]["peak_precision"] == "fp16"
    assert by["old"]["performance"]["peak_note"] == "ranked at FP16: no BF16 figure"
    assert body["left_out"] == []
    # a form-factor requirement does not take the assumed PCIe for a fact
    pcie = (await client.get("/v1/offers", params={"form_factors": "pcie"})).json()
    assert pcie["query"]["form_factors"] == ["pcie"]
    assert {o["provider"] for o in pcie["offers"]} == set()  # the V100 is SXM, the H100 unknown
    sxm = (await client.get("/v1/offers", params={"form_factors": "sxm"})).json()
    assert {o["provider"] for o in sxm["offers"]} == {"old"}


async def test_job_disk_and_egress_are_billed_apart_and_rank_by_the_all_in_cost(
    client: httpx.AsyncClient, app: object, source: FakeSource
) -> None:
    from decimal import Decimal

    vm = offer(
        provider="diskco",
        offer_id="1x",
        gpu_count=1,
        vcpus=1.0,
        ram_gb=1.0,
        price_amount=Decimal("1"),
        storage_price_per_gb_month=Decimal("7.3"),  # 0.01 per GB-hour
        storage_included_gb=0.0,
        boot_disk_min_gb=10.0,
        ipv4_price_per_hour=Decimal("0.5"),
        egress_price_per_gb=Decimal("0.02"),
    )
    source.current = database_state(
        [vm, offer(provider="plain", offer_id="1x", gpu_count=1, price_amount=Decimal("1.2"))]
    )
    app.state.context.refresh_state()  # type: ignore[attr-defined]
    r = await client.get("/v1/offers", params={"hours": 10, "job_storage_gb": 50, "egress_gb": 100})
    assert r.status_code == 200, r.text
    offers = r.json()["offers"]
    assert [o["provider"] for o in offers] == ["plain", "diskco"]  # 12 < 10 + 6 + 4 + 2
    job, price = offers[1]["job"], offers[1]["price"]
    assert job["job_cost_usd"] == 10.0
    assert job["job_storage_gb"] == 50.0
    assert job["required_extras_usd"] == pytest.approx(10 * (10 * 0.01 + 0.5))
    assert job["storage_cost_usd"] == pytest.approx(10 * 40 * 0.01)
    assert job["egress_cost_usd"] == pytest.approx(2.0)
    assert job["all_in_cost_usd"] == pytest.approx(22.0)
    assert job["caveats"].startswith("below a runnable GPU server")
    assert price["ipv4_usd_per_hour"] == 0.5 and price["egress_usd_per_gb"] == 0.02
    assert offers[1]["hardware"]["boot_disk_min_gb"] == 10.0
    # the plain offer says nothing of disk or egress: its bill is compute only, and it says so
    assert offers[0]["job"]["all_in_cost_usd"] == 12.0
    assert offers[0]["job"]["caveats"] == "disk beyond the included not priced; egress not priced"


async def test_a_conflicting_job_names_every_input_of_it(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/offers?hours=10&model_params=7e9&tokens=1e12")
    assert r.status_code == 422
    (error,) = r.json()["errors"]
    assert "(got hours, params, tokens)" in error["msg"]


@pytest.mark.parametrize("param", ["providers", "exclude_providers"])
async def test_an_unknown_provider_is_422_with_a_did_you_mean(
    client: httpx.AsyncClient, param: str
) -> None:
    r = await client.get(f"/v1/offers?{param}=bolt,blot")
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]
    assert error["loc"] == ["query", param]
    assert error["msg"].startswith("unknown provider 'blot' (did you mean 'bolt'?); known: ")
    known = error["msg"].split("known: ", 1)[1].split(", ")
    assert {"acme", "bolt", "cirrus", "lambda", "runpod"} <= set(known)  # data's and adapters'
    assert "vultr" in known and "cut)" not in error["msg"]  # the whole list, not cut


async def test_a_provider_in_another_case_is_the_known_one(client: httpx.AsyncClient) -> None:
    lower = (await client.get("/v1/offers?providers=bolt")).json()["offers"]
    r = await client.get("/v1/offers?providers=BOLT")
    assert r.status_code == 200, r.text
    assert r.json()["offers"] == lower and lower


async def test_a_registered_provider_without_offers_is_no_error(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/offers?providers=lambda")
    assert r.status_code == 200, r.text
    assert r.json()["offers"] == []


async def test_a_seller_and_a_provider_of_a_new_snapshot_are_known(
    client: httpx.AsyncClient, app: object, source: FakeSource
) -> None:
    """Known providers are found per snapshot: a price sheet's seller counts."""
    assert (await client.get("/v1/offers?providers=my-own-cloud")).status_code == 422
    source.current = database_state(
        [offer(provider="sheet", seller="my-own-cloud", offer_id="my-own-cloud/x")]
    )
    app.state.context.refresh_state()  # type: ignore[attr-defined]
    r = await client.get("/v1/offers?providers=my-own-cloud")
    assert r.status_code == 200, r.text
    assert [o["offer_id"] for o in r.json()["offers"]] == ["my-own-cloud/x"]
    r = await client.get("/v1/offers?exclude_providers=bolt")  # not in this snapshot
    assert r.status_code == 422 and "unknown provider 'bolt'" in r.text


@pytest.mark.parametrize(
    ("gpus", "models"),
    [
        ("H100 SXM", {"H100-SXM5-80GB"}),
        ("H100-SXM", {"H100-SXM5-80GB"}),
        ("A100-80GB", {"A100-SXM4-80GB"}),
        ("4090", {"RTX-4090"}),
        ("H100", {"H100-SXM5-80GB"}),
    ],
)
async def test_gpu_names_as_providers_write_them(
    client: httpx.AsyncClient, gpus: str, models: set[str]
) -> None:
    r = await client.get("/v1/offers", params={"gpus": gpus})
    assert r.status_code == 200, r.text
    assert {o["hardware"]["gpu_model"] for o in r.json()["offers"]} == models


async def test_an_unknown_gpu_is_422_with_a_did_you_mean(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/offers?gpus=H1000")
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]
    assert error["loc"] == ["query", "gpus"]
    assert error["msg"].startswith("unknown GPU model, family or vendor: 'H1000' (did you mean")
    assert r.json()["detail"].startswith("gpus: unknown GPU model")  # no "Value error, "


async def test_an_answer_is_compact_standard_json_whatever_the_encoding(
    client: httpx.AsyncClient,
) -> None:
    """The body is what ``json.dumps`` writes with compact separators (the serialiser is
    orjson, for speed), and a gzip client's bytes are the same answer."""
    plain = await client.get("/v1/offers?limit=50", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    body = json.loads(plain.content)
    assert plain.content == json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    zipped = await client.get("/v1/offers?limit=50", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip" and zipped.content == plain.content


async def test_a_former_preset_name_is_taken_and_marked_deprecated(
    client: httpx.AsyncClient,
) -> None:
    """``preset=seed-checklist`` answers as ``full-checklist`` with the ``Deprecation`` and
    ``Warning`` headers naming the new value; the OpenAPI document lists only new names."""
    new = await client.get("/v1/offers?preset=full-checklist&allow_unknown=true")
    old = await client.get("/v1/offers?preset=seed-checklist&allow_unknown=true")
    assert old.status_code == new.status_code == 200, old.text
    assert old.json()["offers"] == new.json()["offers"]
    assert old.json()["query"]["preset"] == "full-checklist"
    assert "Deprecation" in old.headers and "Deprecation" not in new.headers
    assert "'preset=full-checklist'" in old.headers["Warning"]
    spec = (await client.get("/openapi.json")).json()
    (param,) = [
        p for p in spec["paths"]["/v1/offers"]["get"]["parameters"] if p["name"] == "preset"
    ]
    assert "full-checklist" in json.dumps(param) and "seed-" not in json.dumps(param)
