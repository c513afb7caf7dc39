"""A database whose every live fetch failed (no network) holds no offers: the answers are
the sample's, but each provider's outcome is its latest attempt's, with the error text, in
``/v1/providers``, the offers' header and the web providers page, and the state follows each
new snapshot, failed or not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.service.api import create_app
from gpuscout.service.api.app_context import ApiContext
from gpuscout.service.api.hooks import default_hooks
from gpuscout.service.settings import Settings
from gpuscout.service.snapshots import take_snapshot

from .conftest import ADMIN_TOKEN

pytestmark = pytest.mark.anyio

AWS_ERROR = (
    "network error on https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/index.json: "
    "[Errno -2] Name or service not known"
)


class Offline:
    """A fetch as a machine without network answers it: aws and scaleway fail (the sample holds
    offers of aws, none of scaleway), lambda is skipped (no credential)."""

    def __init__(self) -> None:
        self.aws_error = AWS_ERROR

    def __call__(self) -> list[ProviderRun]:
        now = datetime.now(UTC)
        return [
            ProviderRun("aws", RunStatus.ERROR, now, 0.1, error=self.aws_error),
            ProviderRun("scaleway", RunStatus.ERROR, now, 0.1, error="network error on scaleway"),
            ProviderRun(
                "lambda", RunStatus.SKIPPED, now, 0.0, error="lambda: skipped, credential not set"
            ),
        ]


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        database_url=db_url,
        admin_token=ADMIN_TOKEN,  # type: ignore[arg-type]
    )


@pytest.fixture
def fetch() -> Offline:
    return Offline()


@pytest.fixture
async def offline(
    settings: Settings, fetch: Offline
) -> AsyncIterator[tuple[httpx.AsyncClient, ApiContext]]:
    """An app on a fresh database (not even migrated) whose snapshots fetch :class:`Offline`."""
    app = create_app(settings, **default_hooks(settings, fetch=fetch))
    context: ApiContext = app.state.context
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client, context
    finally:
        context.history.dispose()


def by_name(body: dict[str, object]) -> dict[str, dict[str, object]]:
    return {p["provider"]: p for p in body["providers"]}  # type: ignore[attr-defined,index]


async def test_failed_attempts_over_the_sample_are_told_and_followed(
    offline: tuple[httpx.AsyncClient, ApiContext], settings: Settings, fetch: Offline
) -> None:
    client, context = offline
    before = (await client.get("/v1/providers")).json()
    assert by_name(before)["aws"]["outcome"] == "ok"  # no attempt recorded: the sample's own
    assert before["snapshot_at"] is None

    # the scheduler (this process or another) takes a snapshot; every fetch fails
    take_snapshot(settings, fetch=fetch)
    assert context.refresh_if_changed()  # what the poll does: the marker moved

    body = (await client.get("/v1/providers")).json()
    assert body["source"] == "sample" and body["sample"] is True
    assert body["snapshot_at"] is not None
    providers = by_name(body)
    aws = providers["aws"]
    assert aws["outcome"] == "stale" and aws["error"] == AWS_ERROR
    assert aws["origin"] == "sample" and aws["offer_count"] == before_count(before, "aws")
    assert providers["scaleway"]["outcome"] == "failed"
    assert providers["scaleway"]["error"] == "network error on scaleway"
    assert providers["lambda"]["outcome"] == "stale"
    assert providers["lambda"]["error"] == "lambda: skipped, credential not set"
    assert providers["azure"]["outcome"] == "ok"  # not attempted: the sample's own state
    assert "failing now: aws" in body["note"]

    offers = (await client.get("/v1/offers", params={"gpus": "H100"})).json()
    assert offers["source"] == "sample" and offers["count"] > 0
    assert offers["failed_providers"] == ["aws", "scaleway"]
    assert offers["stale_providers"] == ["aws", "lambda"]
    [failed_warning] = [w for w in offers["warnings"] if w.startswith("failed providers")]
    assert failed_warning.endswith(": scaleway")  # aws has (sample) offers: not "no offers"
    assert any(w.startswith("stale providers") and "aws" in w for w in offers["warnings"])

    page = (await client.get("/providers")).text
    assert AWS_ERROR in page
    assert "latest live fetch failed or skipped: sample offers shown" in page

    # a second failure with another error, taken through the API: the state follows
    tag = context.holder.state.tag  # type: ignore[union-attr]
    fetch.aws_error = "HTTP 503 from pricing.us-east-1.amazonaws.com"
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    r = await client.post("/v1/snapshots?wait=true", headers=auth)
    assert r.status_code == 200, r.text
    again = by_name((await client.get("/v1/providers")).json())
    assert again["aws"]["error"] == "HTTP 503 from pricing.us-east-1.amazonaws.com"
    assert context.holder.state.tag != tag  # type: ignore[union-attr]
    assert not context.refresh_if_changed()  # nothing new since


def before_count(body: dict[str, object], name: str) -> int:
    count = by_name(body)[name]["offer_count"]
    assert isinstance(count, int) and count > 0
    return count
