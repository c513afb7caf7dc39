"""The answer's models are its one declaration: the OpenAPI schema, the shaped dicts and the
ranking's columns all agree with them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from gpuscout.pricing.display import for_display
from gpuscout.pricing.rank import RankOptions, rank
from gpuscout.pricing.requirement import Requirement
from gpuscout.service.api.answer_schema import GROUPS, TOP_LEVEL, OffersPage, RankedOffer
from gpuscout.service.api.routers.estimate import EstimateAnswer

pytestmark = pytest.mark.anyio


def _resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _mismatches(schema: dict[str, Any], value: Any, spec: dict[str, Any], at: str) -> list[str]:
    """Every key the answer has and the schema lacks, or the schema has and the answer lacks."""
    schema = _resolve(schema, spec)
    if value is None:
        return []
    if "anyOf" in schema:
        branches = [_resolve(b, spec) for b in schema["anyOf"]]
        branches = [b for b in branches if b.get("type") != "null"]
        assert len(branches) == 1, f"{at}: cannot pick a branch of {schema}"
        schema = branches[0]
    if isinstance(value, list):
        items = schema["items"]
        return [m for i, v in enumerate(value) for m in _mismatches(items, v, spec, f"{at}[{i}]")]
    if isinstance(value, dict) and "properties" in schema:
        props = schema["properties"]
        out = [f"{at}.{k}: in the answer, not in the schema" for k in value.keys() - props.keys()]
        out += [f"{at}.{k}: in the schema, not in the answer" for k in props.keys() - value.keys()]
        for k in value.keys() & props.keys():
            out += _mismatches(props[k], value[k], spec, f"{at}.{k}")
        return out
    return []


def _response_schema(spec: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    return spec["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]


async def test_offers_answer_and_openapi_schema_have_the_same_keys(
    client: httpx.AsyncClient,
) -> None:
    spec = (await client.get("/openapi.json")).json()
    body = (await client.get("/v1/offers", params={"model_params": 7e9, "tokens": 1e10})).json()
    assert body["offers"]
    assert _mismatches(_response_schema(spec, "/v1/offers", "get"), body, spec, "$") == []
    assert "term_variant" in body["offers"][0]["price"]
    OffersPage.model_validate(body)  # the json.dumps'd dicts are what the models say


@pytest.mark.parametrize(
    "payload",
    [
        {"model_params": 1e9, "tokens": 1e10},
        {"model_params": 7e9, "tokens": 1e11, "gpu_model": "H100-SXM5-80GB", "job_gpus": 8},
    ],
    ids=["offers", "model"],
)
async def test_estimate_answer_and_openapi_schema_have_the_same_keys(
    client: httpx.AsyncClient, payload: dict[str, Any]
) -> None:
    spec = (await client.get("/openapi.json")).json()
    body = (await client.post("/v1/estimate", json=payload)).json()
    assert body["offers"] or body["estimate"]
    assert _mismatches(_response_schema(spec, "/v1/estimate", "post"), body, spec, "$") == []
    EstimateAnswer.model_validate(body)


async def test_estimate_shares_the_offer_and_provenance_of_offers(
    client: httpx.AsyncClient,
) -> None:
    body = (await client.post("/v1/estimate", json={"model_params": 1e9, "tokens": 1e10})).json()
    offers = (await client.get("/v1/offers", params={"model_params": 1e9, "tokens": 1e10})).json()
    assert body["offers"][0].keys() == offers["offers"][0].keys()
    for group in GROUPS:
        assert body["offers"][0][group].keys() == offers["offers"][0][group].keys()
    assert {k: body[k] for k in ("source", "sample", "note")} == {
        k: offers[k] for k in ("source", "sample", "note")
    }


async def test_the_answer_holds_every_column_of_the_ranking(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    await client.get("/readyz")  # loads the state
    state = app.state.context.holder.state
    ranked = for_display(rank(state.frame, Requirement(), None, RankOptions(now=datetime.now(UTC))))
    shaped = set(TOP_LEVEL) | {c for columns in GROUPS.values() for c in columns}
    assert shaped == set(ranked.columns)


def test_groups_are_read_from_the_models() -> None:
    assert set(GROUPS) == {"hardware", "price", "performance", "job"}
    for group, columns in GROUPS.items():
        nested = RankedOffer.model_fields[group].annotation
        assert columns == tuple(nested.model_fields)  # type: ignore[union-attr]
    assert "term_variant" in GROUPS["price"]
    assert set(TOP_LEVEL).isdisjoint(GROUPS) and "rank" in TOP_LEVEL
