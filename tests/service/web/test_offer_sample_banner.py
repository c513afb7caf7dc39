"""The page of one offer says "Sample data" whenever that offer's provider's held offers
are the offline sample's: a snapshot stored from the sample (``gpuscout snapshot
--sample``), and in a mixed database only the sample's providers, with their capture date;
and the replayed sample itself (no database)."""

from __future__ import annotations

import html
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import Engine

from gpuscout.adapters.sample import SAMPLE_NOTE, replay_sample
from gpuscout.adapters.schema import default_fx
from gpuscout.db.current import state_from_runs
from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings
from tests.service.api.conftest import FakeSource, database_client, store_sample_then_live

pytestmark = pytest.mark.anyio

BANNER = '<p class="banner sample" role="status">'


def _key(provider: str) -> str:
    """A key of one of ``provider``'s sample offers (a GPU the catalog names)."""
    (run,) = replay_sample([provider])
    return next(o.key for o in run.offers if o.gpu_model is not None)


async def _page(tmp_path: Path, db_url: str, provider: str) -> str:
    async with database_client(tmp_path, db_url) as client:
        r = await client.get("/offer", params={"key": _key(provider)})
    assert r.status_code == 200, r.text
    return r.text


def _banner(text: str) -> str:
    return html.unescape(text.split(BANNER, 1)[1].split("</p>", 1)[0])


async def test_an_offer_of_a_stored_sample_says_sample_with_its_capture_date(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    store_sample_then_live(engine, live=())
    banner = _banner(await _page(tmp_path, db_url, "aws"))
    assert banner == f"<strong>Sample data.</strong> {SAMPLE_NOTE} (aws 2025-09-15)"


async def test_in_a_mixed_database_only_the_sample_providers_offer_says_sample(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    store_sample_then_live(engine, live=("lambda",))
    banner = _banner(await _page(tmp_path, db_url, "aws"))
    assert banner.startswith(f"<strong>Sample data.</strong> {SAMPLE_NOTE} (aws 2025-09-15)")
    assert "lambda" not in banner  # the note is of this offer's provider only
    live = await _page(tmp_path, db_url, "lambda")
    assert "Sample data" not in live and BANNER not in live


async def test_an_offer_of_the_replayed_sample_says_sample(tmp_path: Path) -> None:
    current = state_from_runs(replay_sample(["aws"]), fx=default_fx(), source="sample")
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    app = create_app(settings, offers_loader=FakeSource(current))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        r = await c.get("/offer", params={"key": _key("aws")})
    assert r.status_code == 200, r.text
    assert _banner(r.text) == f"<strong>Sample data.</strong> {SAMPLE_NOTE} (aws 2025-09-15)"
