"""Property tests over the OpenAPI schema: no input gives a 5xx or breaks the schema.

The app is built on the fake offers and a migrated SQLite file (so the history routes run
for real); examples are bounded so the module takes well under a minute. Schemathesis
sends strict JSON only, so NaN, Infinity, 1e400, oversized and deeply nested bodies are
written by hand for every POST route (:func:`test_hostile_bodies_on_every_post_route`).
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # import-time deprecations of schemathesis' dependencies
    import schemathesis
    from hypothesis import HealthCheck, settings
    from schemathesis.specs.openapi.checks import positive_data_acceptance

from gpuscout.db.engine import make_engine, sqlite_url
from gpuscout.db.migrate import upgrade
from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings

from .conftest import ADMIN_TOKEN, FakeSource, database_state, sample_offers, stale

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


def _app():  # type: ignore[no-untyped-def]
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="gpuscout-st-"))
    url = sqlite_url(tmp / "st.db")
    upgrade(url)
    offers = sample_offers()
    source = FakeSource(database_state(offers, stale("bolt", offers)))

    async def runner(*, on_start):  # type: ignore[no-untyped-def]
        on_start()
        return []

    return create_app(
        Settings(_env_file=None, data_dir=tmp, admin_token=ADMIN_TOKEN),  # type: ignore[call-arg, arg-type]
        offers_loader=source,
        history=make_engine(url),
        snapshot_runner=runner,
    )


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())


@schema.parametrize()
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_api_conforms(case: schemathesis.Case) -> None:
    # Cross-parameter rules (min_gpus <= max_gpus, one job size, ...) cannot be said in
    # OpenAPI: a schema-valid request may rightly get a 422. Every other check runs: no
    # 5xx, documented status codes, content types, headers and bodies.
    case.call_and_validate(excluded_checks=[positive_data_acceptance])


# --- Hand-written hostile bodies for every POST route: strict JSON has no NaN or Infinity,
# so schemathesis never sends them; Python's JSON reader (and so FastAPI) accepts them, and
# 1e400 reads as Infinity. Each body below must be answered without a server error.

#: A body each POST route accepts (so a hostile value in one field is what gets judged).
VALID_BODIES: dict[str, dict[str, Any]] = {
    "/v1/estimate": {"params": 1e9, "tokens": 1e10},
    "/v1/subscriptions": {"email": "a@example.org", "name": "weekly", "job": {"hours": 10}},
    "/v1/subscriptions/confirm": {},
    "/v1/subscriptions/unsubscribe": {},
    "/v1/snapshots": {},
    "/v1/alerts": {"email": "a@example.org", "name": "stock", "condition": {"kind": "in_stock"}},
}
NON_FINITE = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400")


def _post_paths(app: Any) -> list[str]:
    return [path for path, ops in app.openapi()["paths"].items() if "post" in ops]


def _properties(app: Any, path: str) -> dict[str, Any]:
    """The request body's properties, each with its own (``$ref``-resolved) schema."""
    document = app.openapi()
    op = document["paths"][path]["post"]
    content = op.get("requestBody", {}).get("content", {})
    schema = next(iter(content.values()), {}).get("schema", {})

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref") or next(
            (s["$ref"] for s in node.get("anyOf", []) if "$ref" in s), None
        )
        if ref is None:
            return node
        return resolve(document["components"]["schemas"][ref.rsplit("/", 1)[-1]])

    return {k: resolve(v) for k, v in resolve(schema).get("properties", {}).items()}


def _hostile_bodies(app: Any, path: str) -> Iterator[tuple[str, bytes]]:
    base = VALID_BODIES[path]
    head = json.dumps(base)[1:-1]
    sep = ", " if head else ""
    for name, schema in _properties(app, path).items():
        nested = list(schema.get("properties", {}))
        for number in NON_FINITE:
            yield f"{name}={number}", ("{" + head + sep + f'"{name}": {number}' + "}").encode()
            for inner in nested:  # one level down: Requirement, Job
                value = f'{{"{inner}": {number}}}'
                yield (
                    f"{name}.{inner}={number}",
                    ("{" + head + sep + f'"{name}": {value}' + "}").encode(),
                )
    for number in NON_FINITE:
        yield f"body={number}", number.encode()
        yield f"body=[{number}]", f"[{number}, {number}]".encode()
    yield "10,000-item list", json.dumps({**base, "x": ["H100"] * 10_000}).encode()
    yield "long string", json.dumps({**base, "name": "x" * 50_000}).encode()
    yield "deep nesting", b"[" * 50_000 + b"]" * 50_000
    yield "not JSON", b"\xff\xfe{"
    yield "1 MB", b'{"a": "' + b"x" * 1_000_000 + b'"}'


def test_hostile_bodies_on_every_post_route() -> None:
    app = _app()
    paths = _post_paths(app)
    assert set(paths) == set(VALID_BODIES), "a new POST route needs a valid body here"

    async def run() -> list[str]:
        failures = []
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}", "content-type": "application/json"}
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            for path in paths:
                for label, body in _hostile_bodies(app, path):
                    r = await client.post(path, content=body, headers=auth)
                    if r.status_code >= 500 or len(r.content) > 5000:
                        failures.append(f"{path} {label}: {r.status_code} {r.text[:200]}")
                    elif path == "/v1/estimate" and r.status_code not in (413, 422):
                        # every hostile estimate body is refused (its fields are all read)
                        failures.append(f"{path} {label}: {r.status_code} accepted")
        return failures

    assert asyncio.run(run()) == []
