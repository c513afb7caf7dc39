"""A client generated from the OpenAPI document (openapi-python-client, offline) reads
naturally and works: its modules are named by our operationIds, its models by our
schemas, and its ``list_offers`` pages through the answer of the running app."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from fastapi import FastAPI

pytestmark = pytest.mark.anyio

GENERATOR = Path(sys.executable).parent / "openapi-python-client"
PACKAGE = "gpuscout_api_client"
OPTIONS = ("--meta", "none", "--config")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    from gpuscout.service.api import create_app
    from gpuscout.service.settings import Settings

    from .conftest import FakeSource, database_state, sample_offers

    tmp = tmp_path_factory.mktemp("client")
    app = create_app(
        Settings(_env_file=None, data_dir=tmp),  # type: ignore[call-arg]
        offers_loader=FakeSource(database_state(sample_offers())),
    )
    spec = tmp / "openapi.json"
    spec.write_text(json.dumps(app.openapi()), "utf-8")
    config = tmp / "config.json"
    config.write_text(json.dumps({"package_name_override": PACKAGE}), "utf-8")
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [GENERATOR, "generate", "--path", spec, "--output-path", tmp / "out", *OPTIONS, config],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout, done.stdout
    (tmp / "out").rename(tmp / PACKAGE)
    sys.path.insert(0, str(tmp))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(tmp))
        for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def test_method_names_read_naturally(generated: ModuleType) -> None:
    root = Path(generated.__file__).parent
    operations = {
        f"{p.parent.name}.{p.stem}" for p in (root / "api").glob("*/*.py") if p.stem != "__init__"
    }
    assert {
        "offers.list_offers",
        "offers.get_offer_price_history",
        "estimate.estimate_cost",
        "gpus.list_gpus",
        "gpus.get_gpu",
        "history.get_price_index",
        "providers.list_providers",
        "health.get_health",
    } <= operations
    assert not [o for o in operations if "_v1_" in o or o.endswith(("_get", "_post"))]
    models = {p.stem for p in (root / "models").glob("*.py")}
    assert {"offers_page", "ranked_offer", "offer_links", "problem", "estimate_request"} <= models
    # one Problem model, not one per operation
    assert not [m for m in models if m.endswith("_problem")]


async def test_the_generated_client_pages_through_the_offers(
    generated: ModuleType, app: FastAPI
) -> None:
    list_offers = importlib.import_module(f"{PACKAGE}.api.offers.list_offers")
    client_module = importlib.import_module(f"{PACKAGE}.client")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        client = client_module.Client(base_url="http://test").set_async_httpx_client(http)
        first = await list_offers.asyncio(client=client, limit=2)
        assert not hasattr(first, "errors"), (first.detail, first.instance)
        assert first.count == 2 and first.total > 2
        assert first.offers[0].links.history == f"/v1/offers/{first.offers[0].id}/history"
        second = await list_offers.asyncio(client=client, limit=2, cursor=first.next_)
        assert second.offset == 2 and second.offers[0].rank == 3
        problem = await list_offers.asyncio(client=client, limit=0)
        assert problem.status == 422 and problem.errors[0].parameter == "limit"
