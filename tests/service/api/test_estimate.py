from __future__ import annotations

import httpx
import pytest

from .conftest import error_locs

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
    from adapters.gpus import Precision, catalog

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
