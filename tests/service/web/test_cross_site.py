"""A page elsewhere cannot make its visitors' browsers post our forms: ``/subscribe`` and
``/alert`` refuse a cross-site post, by ``Sec-Fetch-Site`` or ``Origin``, before anything
is stored or mailed; the same site's posts and non-browser clients pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.service.api.conftest import mail_app
from tests.service.digest.conftest import RecordingHandler

pytestmark = pytest.mark.anyio

FORMS = {
    "/subscribe": {"email": "victim@example.com", "name": "x", "query": "gpus=H100"},
    "/alert": {
        "email": "victim@example.com",
        "name": "x",
        "query": "gpus=H100",
        "kind": "below",
        "metric": "usd_per_gpu_hour",
        "threshold": "2.20",
    },
}

CROSS_SITE = [
    {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
    {"Sec-Fetch-Site": "same-site", "Origin": "https://sub.gpuscout.test"},
    {"Origin": "https://evil.example"},  # a browser without Fetch Metadata
    {"Origin": "null"},  # a sandboxed frame or a data: URL
]


@pytest.mark.parametrize("path", list(FORMS))
@pytest.mark.parametrize("headers", CROSS_SITE)
async def test_a_cross_site_post_is_refused(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],
    path: str,
    headers: dict[str, str],
) -> None:
    handler, port = smtp_server
    async with mail_app(tmp_path, port) as (client, _settings):
        answer = await client.post(path, data=FORMS[path], headers=headers)
        assert answer.status_code == 403, answer.text
        assert "cross-site form post refused" in answer.text
    assert handler.messages == []  # nothing mailed to the stranger


@pytest.mark.parametrize("path", list(FORMS))
@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://gpuscout"},
        {"Origin": "https://gpuscout.test"},  # public_base_url, behind a TLS proxy
        {},  # not a browser (curl): no page can make it post
    ],
)
async def test_the_same_site_posts(
    tmp_path: Path,
    smtp_server: tuple[RecordingHandler, int],
    path: str,
    headers: dict[str, str],
) -> None:
    handler, port = smtp_server
    async with mail_app(tmp_path, port) as (client, _settings):
        answer = await client.post(path, data=FORMS[path], headers=headers)
        assert answer.status_code == 202, answer.text
    assert len(handler.messages) == 1
