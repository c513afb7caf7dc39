"""``/subscribe``: the digest's form saves the explorer's search, its provider names read
as the explorer reads them."""

from __future__ import annotations

import html
import json
from pathlib import Path

import httpx
import pytest

from gpuscout.db.subscriptions import get_subscription
from tests.service.api.conftest import mail_app
from tests.service.digest.conftest import RecordingHandler

pytestmark = pytest.mark.anyio

FORM = {"email": "ada@example.com", "name": "H100 weekly"}


async def test_an_unknown_provider_is_a_sentence_of_the_form(client: httpx.AsyncClient) -> None:
    """A digest of a provider no offer has would never list anything: the form says so,
    as the explorer and ``/v1/offers`` do, before anything is stored."""
    offers = await client.get("/v1/offers?providers=blot")
    (refused,) = offers.json()["errors"]
    assert refused["msg"].startswith("unknown provider 'blot' (did you mean 'bolt'?); known: ")
    shown = await client.get("/subscribe?gpus=H100&providers=blot")
    posted = await client.post("/subscribe", data={**FORM, "query": "gpus=H100&providers=blot"})
    assert posted.status_code == shown.status_code == 422
    # nothing was submitted yet: the page says the search cannot be saved, not that it failed
    assert "This search cannot be saved" in shown.text and "Not subscribed" not in shown.text
    assert "Not subscribed" in posted.text
    for page in (shown, posted):
        assert f"<li>providers: {refused['msg']}</li>" in html.unescape(page.text)


async def test_a_provider_in_another_case_is_stored_as_the_offers_spell_it(
    tmp_path: Path, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, port = smtp_server
    async with mail_app(tmp_path, port) as (client, _settings):
        query = "gpus=H100&providers=BOLT&exclude_providers=Acme"
        posted = await client.post("/subscribe", data={**FORM, "query": query})
        assert posted.status_code == 202, posted.text
        manager = client._transport.app.state.subscriptions  # type: ignore[attr-defined]
        stored = get_subscription(manager.engine, 1)
    assert stored is not None and len(handler.messages) == 1
    saved = json.loads(stored.requirement_json)
    assert saved["providers"] == ["bolt"] and saved["exclude_providers"] == ["acme"]


async def test_a_serve_mode_search_is_saved_with_its_serve_request(
    tmp_path: Path, smtp_server: tuple[RecordingHandler, int]
) -> None:
    """The explorer's serve mode query makes a digest of serving rows ($/Mtok)."""
    _handler, port = smtp_server
    async with mail_app(tmp_path, port) as (client, _settings):
        query = "gpus=H100&serve=llama-3.1-8b&scenario=server&hours=100"
        posted = await client.post("/subscribe", data={**FORM, "query": query})
        assert posted.status_code == 202, posted.text
        manager = client._transport.app.state.subscriptions  # type: ignore[attr-defined]
        stored = get_subscription(manager.engine, 1)
    assert stored is not None
    assert json.loads(stored.job_json) == {
        "hours": 100.0,
        "serve": {"serve": "llama-3.1-8b", "scenario": "server"},
    }
