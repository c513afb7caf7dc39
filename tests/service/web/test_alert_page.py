"""``/alert``: the price alert's form saves the explorer's search, its provider names read
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

FORM = {"email": "ada@example.com", "name": "H100 in stock", "kind": "in_stock"}


async def test_an_unknown_provider_is_a_sentence_of_the_form(client: httpx.AsyncClient) -> None:
    """An alert on a provider no offer has would never fire: the form says so, as the
    explorer and ``/v1/offers`` do, before anything is stored."""
    offers = await client.get("/v1/offers?exclude_providers=blot")
    (refused,) = offers.json()["errors"]
    assert refused["msg"].startswith("unknown provider 'blot' (did you mean 'bolt'?); known: ")
    shown = await client.get("/alert?gpus=H100&exclude_providers=blot")
    query = "gpus=H100&exclude_providers=blot"
    posted = await client.post("/alert", data={**FORM, "query": query})
    assert posted.status_code == shown.status_code == 422
    for page in (shown, posted):
        assert f"<li>exclude_providers: {refused['msg']}</li>" in html.unescape(page.text)
    # nothing was submitted yet: the page says the search cannot be saved, not that it failed
    assert "This search cannot be saved" in shown.text and "No alert created" not in shown.text
    assert "No alert created" in posted.text


async def test_a_provider_in_another_case_is_stored_as_the_offers_spell_it(
    tmp_path: Path, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, port = smtp_server
    async with mail_app(tmp_path, port) as (client, _settings):
        posted = await client.post("/alert", data={**FORM, "query": "gpus=H100&providers=Bolt"})
        assert posted.status_code == 202, posted.text
        manager = client._transport.app.state.subscriptions  # type: ignore[attr-defined]
        stored = get_subscription(manager.engine, 1)
    assert stored is not None and len(handler.messages) == 1
    assert json.loads(stored.requirement_json)["providers"] == ["bolt"]
