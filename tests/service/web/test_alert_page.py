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


async def test_a_serve_mode_search_is_saved_with_its_serve_request(
    tmp_path: Path, smtp_server: tuple[RecordingHandler, int]
) -> None:
    """The explorer's serve mode query (``serve=...``) makes a serving alert: the form's
    metric defaults to USD per million tokens and the serve request is stored."""
    _handler, port = smtp_server
    query = "gpus=H100&serve=llama-3.1-70b&precision=fp8"
    form = {**FORM, "kind": "below", "threshold": "0.5", "query": query}
    async with mail_app(tmp_path, port) as (client, _settings):
        shown = await client.get(f"/alert?{query}")
        assert shown.status_code == 200
        assert 'value="usd_per_m_tokens" selected' in shown.text
        posted = await client.post("/alert", data=form)
        assert posted.status_code == 202, posted.text
        bad = await client.post("/alert", data={**form, "query": "serve=no-such-model"})
        assert bad.status_code == 422 and "unknown model" in html.unescape(bad.text)
        manager = client._transport.app.state.subscriptions  # type: ignore[attr-defined]
        stored = get_subscription(manager.engine, 1)
    assert stored is not None
    assert json.loads(stored.job_json)["serve"] == {"serve": "llama-3.1-70b", "precision": "fp8"}


async def test_usd_per_m_tokens_without_serve_is_refused_by_the_form(
    client: httpx.AsyncClient,
) -> None:
    posted = await client.post(
        "/alert",
        data={**FORM, "kind": "below", "metric": "usd_per_m_tokens", "threshold": "1"},
    )
    assert posted.status_code == 422
    assert "needs a serve request" in html.unescape(posted.text)
