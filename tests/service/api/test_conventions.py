"""API conventions: RFC 9457 problems, did-you-mean, offer ids and links, cursor pagination,
HEAD wherever GET, OpenAPI names, one vocabulary, RFC 3339 ``Z`` times."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI

from gpuscout.service.api import create_app
from gpuscout.service.api.offer_ids import decode_offer_id, offer_id
from gpuscout.service.api.problems import PROBLEM_MEDIA_TYPE, did_you_mean
from gpuscout.service.api.vocabulary import ALIASES, PARAMETERS, UNDECLARED_ALIASES, document
from gpuscout.service.settings import Settings

from .conftest import FakeSource, database_state, sample_offers

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
RFC3339_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def _problem(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == PROBLEM_MEDIA_TYPE
    body: dict[str, Any] = r.json()
    assert {"type", "title", "status", "detail", "instance"} <= set(body), body
    assert body["status"] == status and body["detail"]
    return body


async def test_unknown_parameter_is_a_problem_with_did_you_mean(client: httpx.AsyncClient) -> None:
    body = _problem(await client.get("/v1/offers?gpu=H100"), 422)
    assert body["type"] == "urn:gpuscout:problem:invalid-parameters"
    assert body["detail"] == "unknown parameter 'gpu'; did you mean 'gpus'?"
    assert body["instance"] == "/v1/offers?gpu=H100"
    (error,) = body["errors"]
    assert error["parameter"] == "gpu" and error["in"] == "query"
    assert error["did_you_mean"] == "gpus"


async def test_did_you_mean_on_model_query_routes(client: httpx.AsyncClient) -> None:
    body = _problem(await client.get("/v1/gpus?qq=H100"), 422)
    assert body["errors"][0]["did_you_mean"] == "q"
    body = _problem(await client.get("/v1/offers?gpus=H100&limt=3"), 422)
    assert "did you mean 'limit'?" in body["detail"]


async def test_every_invalid_parameter_is_named(client: httpx.AsyncClient) -> None:
    body = _problem(await client.get("/v1/offers?limit=0&precision=fp4"), 422)
    assert {e["parameter"] for e in body["errors"]} == {"limit", "precision"}
    assert body["detail"] == "2 invalid parameters: precision, limit" or body["detail"] == (
        "2 invalid parameters: limit, precision"
    )


async def test_body_errors_carry_a_json_pointer(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/estimate", json={"model_params": 1e9, "tokens": "many"})
    (error,) = _problem(r, 422)["errors"]
    assert error["parameter"] == "tokens" and error["in"] == "body"
    assert error["pointer"] == "#/tokens"


@pytest.mark.parametrize(
    ("method", "url", "status"),
    [
        ("GET", "/v1/gpus/H9000", 404),
        ("GET", "/nowhere", 404),
        ("DELETE", "/v1/offers", 405),
        ("GET", "/v1/history/index?gpus=H100", 503),  # no database configured
    ],
)
async def test_http_errors_are_problems(
    client: httpx.AsyncClient, method: str, url: str, status: int
) -> None:
    body = _problem(await client.request(method, url), status)
    assert body["type"] == "about:blank"


async def test_a_browser_gets_the_sites_404_page_outside_the_api(
    client: httpx.AsyncClient,
) -> None:
    """A page asked for by a browser (Accept names HTML) that does not exist is the site's
    page, the path escaped; under /v1/ and for other clients it stays a problem."""
    html = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    r = await client.get("/nowhere/<b>x</b>", headers=html)
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "Page not found" in r.text and "&lt;b&gt;x&lt;/b&gt;" in r.text
    assert "<b>x" not in r.text and 'href="/"' in r.text
    assert _problem(await client.get("/v1/nowhere", headers=html), 404)
    assert _problem(await client.get("/nowhere"), 404)


async def test_405_allows_head_with_get(client: httpx.AsyncClient) -> None:
    r = await client.delete("/v1/offers")
    assert r.headers["allow"] == "GET, HEAD"


async def test_413_is_a_problem(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/estimate", content=b"{" + b" " * 70_000 + b"}", headers={"content-type": "x/json"}
    )
    assert _problem(r, 413)["type"] == "urn:gpuscout:problem:body-too-large"


def test_did_you_mean() -> None:
    assert did_you_mean("GPUS", ["gpus"]) == "gpus"
    assert did_you_mean("provider", ["providers", "regions"]) == "providers"
    assert did_you_mean("xyzzy", ["providers"]) is None


# offer ids and links


async def test_every_offer_has_a_url_safe_id_and_a_history_link(
    client: httpx.AsyncClient,
) -> None:
    offers = (await client.get("/v1/offers?limit=50")).json()["offers"]
    assert offers
    for o in offers:
        assert re.fullmatch(r"[A-Za-z0-9_-]+", o["id"])
        assert quote(o["id"], safe="") == o["id"]
        assert o["links"]["history"] == f"/v1/offers/{o['id']}/history"
        key = decode_offer_id(o["id"])
        assert key is not None and key.split("|")[:2] == [o["provider"], o["offer_id"]]
    assert len({o["id"] for o in offers}) == len(offers)


async def test_estimate_offers_carry_ids_too(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/estimate", json={"model_params": 1e9, "tokens": 1e10})
    assert r.status_code == 200, r.text
    assert all(o["links"]["history"].endswith(f"{o['id']}/history") for o in r.json()["offers"])


def test_offer_ids_round_trip_and_refuse_garbage() -> None:
    key = "acme|8x/h100?|us east|on_demand|instance|spot zone"
    assert decode_offer_id(offer_id(key)) == key
    for text in ("", "!!", offer_id("no pipes"), offer_id(key) + "A", "x" * 3000):
        assert decode_offer_id(text) is None


async def test_history_by_an_id_that_is_not_one_is_404(client: httpx.AsyncClient) -> None:
    body = _problem(await client.get("/v1/offers/not-an-id/history"), 404)
    assert "offers[].id" in body["detail"]


# pagination


async def test_pages_walk_the_whole_ranking_once(client: httpx.AsyncClient) -> None:
    whole = (await client.get("/v1/offers?limit=500")).json()
    assert whole["total"] == whole["count"] == len(whole["offers"]) >= 3
    assert whole["next"] is None and whole["links"]["next"] is None
    seen: list[str] = []
    url: str | None = "/v1/offers?limit=2"
    while url is not None:
        page = (await client.get(url)).json()
        assert page["total"] == whole["total"] and page["offset"] == len(seen)
        assert [o["rank"] for o in page["offers"]] == list(
            range(len(seen) + 1, len(seen) + 1 + page["count"])
        )
        seen += [o["id"] for o in page["offers"]]
        url = page["links"]["next"]
        if url is not None:
            assert f"cursor={page['next']}" in url
    assert seen == [o["id"] for o in whole["offers"]]


async def test_a_cursor_may_change_the_page_size_but_not_the_query(
    client: httpx.AsyncClient,
) -> None:
    cursor = (await client.get("/v1/offers?limit=1")).json()["next"]
    assert (await client.get(f"/v1/offers?limit=3&cursor={cursor}")).status_code == 200
    body = _problem(await client.get(f"/v1/offers?limit=1&gpus=H100&cursor={cursor}"), 422)
    assert body["errors"][0]["parameter"] == "cursor"
    body = _problem(await client.get("/v1/offers?cursor=bm90LWEtY3Vyc29y"), 422)
    assert body["errors"][0]["parameter"] == "cursor"


async def test_a_cursor_of_an_older_snapshot_is_410(
    app: FastAPI, client: httpx.AsyncClient, source: FakeSource
) -> None:
    cursor = (await client.get("/v1/offers?limit=1")).json()["next"]
    source.current = database_state(sample_offers()[:-1])
    app.state.context.refresh_state()
    body = _problem(await client.get(f"/v1/offers?limit=1&cursor={cursor}"), 410)
    assert body["type"] == "urn:gpuscout:problem:cursor-expired"


async def test_pages_are_cached_apart(client: httpx.AsyncClient) -> None:
    first = await client.get("/v1/offers?limit=1")
    cursor = first.json()["next"]
    second = await client.get(f"/v1/offers?limit=1&cursor={cursor}")
    again = await client.get(f"/v1/offers?limit=1&cursor={cursor}")  # the fast path
    assert second.json()["offers"][0]["id"] != first.json()["offers"][0]["id"]
    assert again.content == second.content
    assert second.headers["etag"] != first.headers["etag"]


# HEAD wherever GET


def _get_paths(app: FastAPI) -> list[str]:
    examples = {
        "/v1/gpus/{name}": "/v1/gpus/H100-SXM5-80GB",
        "/v1/history/index": "/v1/history/index?gpus=H100",
        "/v1/history/offers/{key}": "/v1/history/offers/a|b|c|on_demand|x",
        "/v1/offers/{offer_id}/history": "/v1/offers/YXxifGN8b25fZGVtYW5kfHg/history",
        "/v1/subscriptions/confirm": "/v1/subscriptions/confirm?token=x",
        "/v1/subscriptions/unsubscribe": "/v1/subscriptions/unsubscribe?token=x",
    }
    paths = [p for p, ops in app.openapi()["paths"].items() if "get" in ops]
    return [examples.get(p, p) for p in paths]


async def test_every_get_path_answers_head_alike(app: FastAPI, client: httpx.AsyncClient) -> None:
    paths = _get_paths(app)
    assert len(paths) >= 10
    for path in paths:
        get = await client.get(path)
        head = await client.head(path)
        assert head.status_code == get.status_code, path
        assert head.content == b"", path
        # the providers' price ages move with the clock: their length may differ by a byte;
        moving = path in ("/v1/providers", "/metrics")  # the metrics count this very request
        drop = {"date", "content-length"} if moving else {"date"}
        assert {k: v for k, v in head.headers.items() if k not in drop} == {
            k: v for k, v in get.headers.items() if k not in drop
        }, path


async def test_head_validates_a_cached_offers_answer(client: httpx.AsyncClient) -> None:
    etag = (await client.get("/v1/offers?limit=2")).headers["etag"]
    r = await client.head("/v1/offers?limit=2", headers={"If-None-Match": etag})
    assert r.status_code == 304 and r.content == b""


# OpenAPI names


def test_operation_ids_summaries_and_descriptions_read_naturally(app: FastAPI) -> None:
    schema = app.openapi()
    ids = []
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            ids.append(op["operationId"])
            assert re.fullmatch(r"[a-z]+(_[a-z]+)*", op["operationId"]), op["operationId"]
            assert not re.search(r"_(get|post|v1)(_|$)", op["operationId"]), op["operationId"]
            assert op["summary"] and op["summary"][0].isupper(), (path, method)
            assert op["summary"] not in ("Get One", "List Offers")
            for text in _descriptions(op):
                assert not re.search(r":[a-z]+:`|``|module doc", text), (path, text)
            for code, response in op["responses"].items():
                if int(code) >= 400:
                    assert PROBLEM_MEDIA_TYPE in response["content"], (path, code)
    assert len(ids) == len(set(ids))
    assert {"list_offers", "estimate_cost", "get_gpu", "get_offer_price_history"} <= set(ids)


def _descriptions(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = [v for k, v in node.items() if k == "description" and isinstance(v, str)]
        return out + [d for v in node.values() for d in _descriptions(v)]
    if isinstance(node, list):
        return [d for v in node for d in _descriptions(v)]
    return []


def test_openapi_has_examples(app: FastAPI) -> None:
    text = str(app.openapi())
    assert "'examples'" in text
    params = app.openapi()["paths"]["/v1/offers"]["get"]["parameters"]
    assert any("examples" in p.get("schema", {}) or "example" in p for p in params)


# one vocabulary


def _request_names(schema: dict[str, Any]) -> dict[str, bool]:
    """Every request name of the document: parameter and body field -> deprecated."""
    defs = schema.get("components", {}).get("schemas", {})
    names: dict[str, bool] = {}

    def walk(node: Any, seen: frozenset[str]) -> None:
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if ref:
            name = ref.rsplit("/", 1)[-1]
            if name not in seen:
                walk(defs[name], seen | {name})
            return
        for prop, sub in node.get("properties", {}).items():
            names[prop] = names.get(prop, False) or bool(sub.get("deprecated"))
            walk(sub, seen)
        for key in ("anyOf", "allOf", "oneOf"):
            for sub in node.get(key, ()):
                walk(sub, seen)
        walk(node.get("items"), seen)

    for ops in schema["paths"].values():
        for op in ops.values():
            for p in op.get("parameters", ()):
                deprecated = bool(p.get("deprecated") or p.get("schema", {}).get("deprecated"))
                names[p["name"]] = names.get(p["name"], False) or deprecated
            for media in op.get("requestBody", {}).get("content", {}).values():
                walk(media.get("schema"), frozenset())
    return names


def test_every_request_name_is_in_the_vocabulary(app: FastAPI) -> None:
    schema = app.openapi()
    components = {"components": schema["components"]}
    names = _request_names(schema)
    old = {o for aliases in ALIASES.values() for o in aliases}
    unknown = {n for n in names if n not in PARAMETERS and n not in old}
    assert not unknown, f"add to service.api.vocabulary.PARAMETERS: {sorted(unknown)}"
    for path, aliases in ALIASES.items():
        declared = _request_names({"paths": {path: schema["paths"][path]}, **components})
        for name, new in aliases.items():
            if name in UNDECLARED_ALIASES.get(path, ()):
                assert name not in declared, f"{path} {name}: declared, though it must not be"
            else:
                assert declared.get(name) is True, f"{path} {name}: not marked deprecated"
            assert declared.get(new) is False, (path, new)
    assert "gpu" not in PARAMETERS and "gpu_count" not in PARAMETERS
    # concept words: one unit per concept
    assert not [n for n in names if n.startswith("price_age") and not n.endswith("_hours")]


def test_the_vocabulary_doc_lists_every_name_and_alias() -> None:
    doc = (ROOT / "docs" / "api-vocabulary.md").read_text("utf-8")
    assert doc == document(), (
        "uv run python -m gpuscout.service.api.vocabulary > docs/api-vocabulary.md"
    )
    missing = [n for n in PARAMETERS if f"`{n}`" not in doc]
    assert not missing, missing
    for path, aliases in ALIASES.items():
        for o, n in aliases.items():
            assert re.search(rf"`{o}`.*`{n}`", doc), (path, o)


async def test_deprecated_names_still_work_and_say_so(client: httpx.AsyncClient) -> None:
    body = {"model_params": 7e9, "tokens": 1e11, "gpu_model": "H100-SXM5-80GB"}
    new = await client.post("/v1/estimate", json={**body, "job_gpus": 8})
    old = await client.post("/v1/estimate", json={**body, "gpu_count": 8})
    assert new.status_code == old.status_code == 200, old.text
    assert new.json()["estimate"] == old.json()["estimate"]
    assert "deprecation" not in new.headers
    assert old.headers["deprecation"].startswith("@")
    assert "job_gpus" in old.headers["warning"]
    assert any("'gpu_count' is deprecated" in w for w in old.json()["warnings"])
    both = await client.post("/v1/estimate", json={**body, "job_gpus": 8, "gpu_count": 8})
    assert _problem(both, 422)["errors"][0]["parameter"] == "gpu_count"


async def test_the_old_params_name_still_works_on_offers(client: httpx.AsyncClient) -> None:
    new = await client.get("/v1/offers?model_params=7e9&tokens=1e10")
    for _ in range(2):  # the second is not answered by the fast path without the headers
        old = await client.get("/v1/offers?params=7e9&tokens=1e10")
        assert old.status_code == 200, old.text
        assert old.json()["offers"] == new.json()["offers"]
        assert "model_params" in old.headers["warning"] and old.headers["deprecation"]
    assert "deprecation" not in new.headers
    both = await client.get("/v1/offers?params=7e9&model_params=7e9&tokens=1e10")
    assert _problem(both, 422)["errors"][0]["parameter"] == "params"


async def test_times_are_rfc3339_z(client: httpx.AsyncClient) -> None:
    page = (await client.get("/v1/offers?limit=3")).json()
    assert RFC3339_Z.match(page["generated_at"]) and RFC3339_Z.match(page["snapshot_at"])
    assert all(RFC3339_Z.match(o["fetched_at"]) for o in page["offers"])


async def test_provider_times_and_ages_share_the_vocabulary(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/providers")).json()
    assert body["snapshot_at"] is None or RFC3339_Z.match(body["snapshot_at"])
    for p in body["providers"]:
        assert p["last_fetch_at"] is None or RFC3339_Z.match(p["last_fetch_at"])
        if p["price_age_s"] is not None:
            assert p["price_age_hours"] == pytest.approx(p["price_age_s"] / 3600, abs=1e-3)


async def test_a_problem_never_echoes_a_token(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/subscriptions/confirm?token=secret-token&x=1")
    body = _problem(r, 422)
    assert body["instance"] == "/v1/subscriptions/confirm"


async def test_every_offer_of_the_sample_has_a_link_to_rent(settings: Settings) -> None:
    """Each row of /v1/offers and each offer page carries ``links.rent``: the provider's
    launch page or its pricing page (a price sheet's unknown seller alone has none)."""
    from gpuscout.service.current import load_current

    state = load_current(sample=True, settings=settings)
    app = create_app(settings, offers_loader=lambda: state)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        offers = (await c.get("/v1/offers?limit=500")).json()["offers"]
        assert len(offers) > 50
        for o in offers:
            rent = o["links"]["rent"]
            if o["provider"] == "sheet" and o["seller"] == "example-host":
                assert rent is None
            else:
                assert rent is not None and rent.startswith("https://"), o["provider"]
        aws = next(o for o in offers if o["provider"] == "aws")
        assert aws["links"]["rent"].endswith(
            f"?region={aws['region']}#LaunchInstances:instanceType={aws['offer_id']}"
        )
        detail = (await c.get(f"/v1/offers/{aws['id']}")).json()
        assert detail["links"] == aws["links"]
