"""``publication = "public"``: a source whose terms forbid republishing (Vast.ai's, as the
table records them) appears in no index, digest or alert, and ``/v1/providers`` and
``gpuscout providers --terms`` say why; under ``personal`` everything is shown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from types import SimpleNamespace

import httpx
import pytest
from typer.testing import CliRunner

from gpuscout.adapters import provider_names, source_terms
from gpuscout.adapters.source_terms import Permission, SourceTerms, terms_of, terms_table
from gpuscout.db.current import load_current_offers
from gpuscout.db.engine import make_engine
from gpuscout.service.api import create_app
from gpuscout.service.cli import app as cli
from gpuscout.service.fx import fx_table
from gpuscout.service.publication import publishable_state, withheld
from gpuscout.service.settings import Settings

from .conftest import PROVIDERS, Collector, settings_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def aws_allows_republishing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terms table in which AWS's terms say yes to republishing, so a public site has a
    source to publish (the shipped table has read no such clause)."""
    table = dict(terms_table())
    table["aws"] = SourceTerms("aws", republishing=Permission.YES, source="test")
    monkeypatch.setattr(source_terms, "terms_table", lambda: table)


def test_every_registered_source_has_a_row_and_none_is_guessed() -> None:
    table = terms_table()
    assert set(provider_names()) <= set(table)
    for terms in table.values():
        if terms.republishing is Permission.UNKNOWN:
            assert terms.republishing_clause is None
    vastai = terms_of("vastai")
    assert vastai.republishing is Permission.NO
    assert vastai.republishing_clause == "any index, benchmark, pricing-comparison service"
    assert terms_of("runpod").automated_access is Permission.NO
    assert terms_of("no-such-source") == SourceTerms("no-such-source")  # unknown, not allowed


def test_personal_withholds_nothing_and_public_withholds_no_and_unknown() -> None:
    names = ["vastai", "aws"]
    assert withheld(settings_of_any("personal"), names) == {}
    out = withheld(settings_of_any("public"), names)
    assert "forbid republishing" in out["vastai"] and "not been read" in out["aws"]


def settings_of_any(publication: str) -> Settings:
    return Settings(_env_file=None, publication=publication)  # type: ignore[call-arg]


@pytest.fixture
def state_and_engine(collector: Collector):  # type: ignore[no-untyped-def]
    engine = make_engine(collector.settings.database_url)
    yield load_current_offers(engine, fx=fx_table(collector.settings)), engine
    engine.dispose()


@pytest.mark.usefixtures("aws_allows_republishing")
def test_a_public_state_ranks_no_offer_of_a_withheld_source(state_and_engine) -> None:  # type: ignore[no-untyped-def]
    state, _ = state_and_engine
    assert set(state.frame["provider"].unique()) == set(PROVIDERS)
    public = publishable_state(settings_of_any("public"), state)
    assert set(public.frame["provider"].unique()) == {"aws"}
    assert "vastai" not in public.providers and "vastai" in (public.note or "")
    assert publishable_state(settings_of_any("personal"), state) is state


@pytest.mark.usefixtures("aws_allows_republishing")
def test_alerts_and_digests_rank_the_public_state(
    collector: Collector, monkeypatch: pytest.MonkeyPatch, state_and_engine
) -> None:  # type: ignore[no-untyped-def]
    """Both entry points hand the evaluation and the composer the public state."""
    from gpuscout.service.alerts import run as alerts_run
    from gpuscout.service.digest import schedule

    state, engine = state_and_engine
    seen: list[set[str]] = []

    def evaluate(settings, engine, current, *, now):  # type: ignore[no-untyped-def]
        seen.append(set(current.frame["provider"].unique()))
        raise RuntimeError("seen")

    monkeypatch.setattr(alerts_run, "evaluate_alerts", evaluate)
    public = settings_of(collector.settings.data_dir, publication="public")
    with pytest.raises(RuntimeError, match="seen"):
        alerts_run.run_alerts(public, engine, current=state)

    class Composer:
        def __init__(self, settings, current, now, *, engine):  # type: ignore[no-untyped-def]
            seen.append(set(current.frame["provider"].unique()))
            raise RuntimeError("seen")

    monkeypatch.setattr(schedule, "DigestComposer", Composer)
    monkeypatch.setattr(
        schedule, "active_subscriptions", lambda engine: [SimpleNamespace(time_zone="UTC")]
    )
    monkeypatch.setattr(schedule, "due_week", lambda *a, **k: "2026-W49")
    with pytest.raises(RuntimeError, match="seen"):
        schedule.run_digests(public, engine, current=state, now=datetime.now(UTC))
    assert seen == [{"aws"}, {"aws"}]


@pytest.fixture
async def clients(collector: Collector) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    engine = make_engine(collector.settings.database_url)
    out = {}
    try:
        for publication in ("personal", "public"):
            settings = settings_of(collector.settings.data_dir, publication=publication)
            state = load_current_offers(engine, fx=fx_table(settings))
            app = create_app(settings, offers_loader=lambda state=state: state, history=engine)
            transport = httpx.ASGITransport(app=app)
            out[publication] = httpx.AsyncClient(transport=transport, base_url="http://t")
        yield out
    finally:
        for client in out.values():
            await client.aclose()
        engine.dispose()


async def test_providers_say_what_each_source_allows_and_why_it_is_withheld(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    personal = (await clients["personal"].get("/v1/providers")).json()
    public = (await clients["public"].get("/v1/providers")).json()
    assert personal["publication"] == "personal" and personal["withheld_note"] is None
    assert all(p["published"] for p in personal["providers"])
    by_name = {p["provider"]: p for p in public["providers"]}
    vastai = by_name["vastai"]
    assert vastai["published"] is False and "forbid republishing" in vastai["withheld_reason"]
    assert vastai["terms"]["republishing"] == "no"
    assert vastai["terms"]["terms_url"] == "https://vast.ai/terms"
    assert vastai["terms"]["republishing_clause"] == (
        "any index, benchmark, pricing-comparison service"
    )
    assert by_name["aws"]["terms"]["republishing"] == "unknown"
    assert "not been read" in by_name["aws"]["withheld_reason"]
    assert "vastai" in public["withheld_note"]


async def test_the_index_leaves_out_a_forbidden_source_and_says_so(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    query = {"gpus": "RTX 4090", "term": "on_demand", "days": 2}  # Vast.ai's alone
    personal = (await clients["personal"].get("/v1/history/index", params=query)).json()
    public = (await clients["public"].get("/v1/history/index", params=query)).json()
    assert sum(d["offers"] for d in personal["days"]) > 0 and personal["withheld_note"] is None
    assert sum(d["offers"] for d in public["days"]) == 0
    assert "vastai" in public["withheld_note"]
    page = await clients["public"].get("/index", params={"gpus": "RTX 4090"})
    assert page.status_code == 200 and "not published" in page.text
    spread = page.text.split('id="spread-h"', 1)[1]
    assert "providers=vastai" not in spread
    shown = await clients["personal"].get("/index", params={"gpus": "RTX 4090"})
    assert "providers=vastai" in shown.text.split('id="spread-h"', 1)[1]


def test_providers_terms_lists_every_source_and_what_is_withheld(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gpuscout.service.settings import get_settings

    monkeypatch.setenv("GPUSCOUT_PUBLICATION", "public")
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(cli, ["providers", "--terms"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert "terms (publication: public)" in result.output
    assert '"any index, benchmark, pricing-comparison service"' in result.output
    for name in provider_names():
        assert name in result.output
    assert "not published: its terms forbid republishing" in result.output
