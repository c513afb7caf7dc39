from __future__ import annotations

import httpx
import pytest

from gpuscout.service.settings import Settings

from .conftest import FakeSource, database_state, error_locs, offer

pytestmark = pytest.mark.anyio


async def test_model_and_count(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/estimate",
        json={"model_params": 7e9, "tokens": 1e11, "gpu_model": "H100-SXM5-80GB", "job_gpus": 8},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == "model"
    est = body["estimate"]
    assert est["memory_fits"] is True and est["wall_clock_hours"] > 0
    assert est["offer"]["provider"] == "acme" and est["cost_usd"] > 0


async def test_across_offers(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/estimate",
        json={"model_params": 1e9, "tokens": 1e10, "requirement": {"providers": ["bolt"]}},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == "offers"
    assert {o["provider"] for o in body["offers"]} == {"bolt"}
    assert all(o["job"]["job_cost_usd"] > 0 for o in body["offers"])


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"model_params": 7e9}, "tokens"),
        ({"model_params": -1, "tokens": 1}, "model_params"),
        ({"model_params": 1, "tokens": 1, "gpu_model": "H100-SXM5-80GB"}, ""),
        ({"model_params": 1, "tokens": 1, "gpu_model": "nope", "job_gpus": 1}, ""),
        ({"model_params": 1, "tokens": 1, "requirement": {"colour": "red"}}, "colour"),
        ({"model_params": 1, "tokens": 1, "extra": True}, "extra"),
    ],
)
async def test_invalid_body_is_422(client: httpx.AsyncClient, payload: dict, field: str) -> None:
    r = await client.post("/v1/estimate", json=payload)
    locs = error_locs(r)
    assert all(loc[0] == "body" for loc in locs)
    if field:
        assert any(field in loc for loc in locs), locs


async def test_unknown_query_parameter(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/estimate?fast=1", json={"model_params": 1e9, "tokens": 1e9})
    assert error_locs(r) == [["query", "fast"]]


async def test_every_gpu_and_precision_is_an_answer_never_a_500(
    client: httpx.AsyncClient,
) -> None:
    """All 539 catalog GPU x precision pairs: 200, or a 422 naming the pair (212 of them
    have no published peak at that precision and answered 500)."""
    from gpuscout.adapters.gpus import Precision, catalog

    answered: dict[int, int] = {}
    for spec in catalog():
        for precision in Precision:
            r = await client.post(
                "/v1/estimate",
                json={
                    "model_params": 1e9,
                    "tokens": 1e10,
                    "gpu_model": spec.name,
                    "job_gpus": 8,
                    "precision": precision.value,
                },
            )
            answered[r.status_code] = answered.get(r.status_code, 0) + 1
            if spec.figure(precision) is None:  # no datasheet, derived or fallback figure
                assert r.status_code == 422, (spec.name, precision, r.text)
                (error,) = r.json()["errors"]
                assert error["loc"] == ["body", "precision"]
                assert spec.name in error["msg"] and precision.value in error["msg"]
            else:
                assert r.status_code == 200, (spec.name, precision, r.text)
    assert sum(answered.values()) == len(catalog()) * len(Precision)
    assert answered.get(422, 0) > 0 and answered.get(200, 0) > 0


async def test_the_model_shape_counts_attention_flops(client: httpx.AsyncClient) -> None:
    """With layers, width and context the FLOPs are 6N + 12 x L x d x ctx per token (PaLM
    appendix B), more than the 6N of the same run without them."""
    base = {"model_params": 7e9, "tokens": 1e11, "gpu_model": "H100-SXM5-80GB", "job_gpus": 8}
    plain = (await client.post("/v1/estimate", json=base)).json()
    shaped = (
        await client.post(
            "/v1/estimate",
            json={**base, "layers": 32, "hidden_size": 4096, "context_tokens": 4096},
        )
    ).json()
    assert shaped["estimate"]["flops_per_token"] == pytest.approx(
        plain["estimate"]["flops_per_token"] + 12 * 32 * 4096 * 4096
    )


async def test_a_mixture_of_experts_counts_its_active_parameters(
    client: httpx.AsyncClient,
) -> None:
    """``active_params`` sizes the FLOPs, ``model_params`` the memory; each factor says where
    it comes from, and a run beyond a year is warned of."""
    base = {"model_params": 671e9, "tokens": 1e11, "gpu_model": "H100-SXM5-80GB", "job_gpus": 64}
    moe = (await client.post("/v1/estimate", json={**base, "active_params": 37e9})).json()
    est = moe["estimate"]
    assert est["active_params"] == 37e9 and est["flops_per_token"] == pytest.approx(6 * 37e9)
    assert "moe" in est["factor_sources"] and est["factor_sources"]["mfu"]
    dense = (await client.post("/v1/estimate", json=base)).json()["estimate"]
    assert est["memory_needed_gb"] == dense["memory_needed_gb"]
    long = {"model_params": 8e9, "tokens": 15e12, "gpu_model": "H100-SXM5-80GB", "job_gpus": 8}
    warned = (await client.post("/v1/estimate", json=long)).json()["estimate"]
    assert warned["warnings"] and "years of wall clock" in warned["warnings"][0]
    bad = await client.post("/v1/estimate", json={**base, "active_params": 700e9})
    assert bad.status_code == 422, bad.text


_H100_512 = {"model_params": 70e9, "tokens": 2e12, "gpu_model": "H100-SXM5-80GB", "job_gpus": 16}


async def test_fabric_in_the_body_wins_over_the_offers(settings: Settings) -> None:
    """An H100 node stating 400 Gbps/GPU InfiniBand and multi-node use: the body's fabric
    was ignored whenever an offer could run the job."""
    from gpuscout.service.api import create_app

    clustered = offer(multi_node=True)  # infiniband, 3200 Gbps per 8 GPUs
    app = create_app(settings, offers_loader=FakeSource(database_state([clustered])))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        stated = (await client.post("/v1/estimate", json=_H100_512)).json()["estimate"]
        what_if = await client.post(
            "/v1/estimate", json={**_H100_512, "fabric": "ethernet", "fabric_gbps_per_gpu": 25}
        )
    assert what_if.status_code == 200, what_if.text
    est = what_if.json()["estimate"]
    assert stated["basis"] == est["basis"] == "offer"
    assert (stated["fabric"], stated["fabric_gbps_per_gpu"]) == ("infiniband", 400)
    assert stated["fabric_source"] == stated["fabric_gbps_source"] == "offer"
    assert (est["fabric"], est["fabric_gbps_per_gpu"]) == ("ethernet", 25)
    assert est["fabric_source"] == est["fabric_gbps_source"] == "user"
    assert est["scaling"] == pytest.approx(0.71, abs=0.005)
    assert stated["scaling"] == 1.0 and est["wall_clock_hours"] > stated["wall_clock_hours"]
    assert "ethernet at 25 Gbps per GPU (as given)" in est["topology"]


async def test_ethernet_is_an_answer_not_a_false_peak_error(client: httpx.AsyncClient) -> None:
    body = {**_H100_512, "gpu_model": "H200-SXM-141GB", "job_gpus": 512, "fabric": "ethernet"}
    r = await client.post("/v1/estimate", json=body)
    assert r.status_code == 200, r.text
    est = r.json()["estimate"]
    assert est["basis"] == "reference" and est["fabric"] == "ethernet"
    assert (est["fabric_source"], est["fabric_gbps_source"]) == ("user", "default")


@pytest.mark.parametrize("field", ["fabric", "fabric_gbps_per_gpu"])
async def test_fabric_across_offers_is_refused_not_ignored(
    client: httpx.AsyncClient, field: str
) -> None:
    value = "roce" if field == "fabric" else 25
    r = await client.post("/v1/estimate", json={"model_params": 1e9, "tokens": 1e10, field: value})
    assert r.status_code == 422
    (error,) = r.json()["errors"]
    assert field in error["msg"] and "only with gpu_model" in error["msg"]


async def test_a_gpu_family_is_422_naming_its_models(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/estimate",
        json={"model_params": 7e9, "tokens": 1e11, "gpu_model": "H100", "job_gpus": 8},
    )
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]
    assert "gpu_model" in error["loc"] or "gpu_model" in error["msg"]
    assert "'H100' is a family: one of H100-SXM5-80GB, H100-PCIE-80GB" in error["msg"]


async def test_a_name_meaning_one_model_is_estimated(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/estimate",
        json={"model_params": 7e9, "tokens": 1e11, "gpu_model": "H100 SXM", "job_gpus": 8},
    )
    assert r.status_code == 200, r.text
    assert r.json()["estimate"]["gpu_model"] == "H100-SXM5-80GB"


async def test_an_unknown_provider_of_the_requirement_is_422(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/estimate",
        json={"model_params": 1e9, "tokens": 1e10, "requirement": {"providers": ["blot"]}},
    )
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]
    assert error["loc"] == ["body", "requirement", "providers"]
    assert error["msg"].startswith("unknown provider 'blot' (did you mean 'bolt'?)")
