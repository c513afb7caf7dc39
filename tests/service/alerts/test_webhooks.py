"""The webhook URL check and the call's retries against a real local HTTP server."""

from __future__ import annotations

import httpx
import pytest

from gpuscout.service.alerts.webhooks import (
    WebhookError,
    WebhookUrlRefused,
    check_webhook_url,
    post_webhook,
    sign,
)

from .conftest import WebhookServer


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/hook",
        "https://10.1.2.3/hook",
        "https://192.168.0.1/hook",
        "https://172.16.5.5/hook",
        "https://169.254.169.254/latest/meta-data",  # cloud metadata: link-local
        "https://100.64.0.1/hook",  # CGNAT
        "https://[::1]/hook",
        "https://[fd00::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://0.0.0.0/hook",
        "https://224.0.0.1/hook",
    ],
)
def test_production_refuses_non_public_addresses(url: str) -> None:
    with pytest.raises(WebhookUrlRefused, match="non-public"):
        check_webhook_url(url, production=True)
    with pytest.raises(WebhookUrlRefused, match="non-public"):
        check_webhook_url(url, production=False)  # the same outside production


def test_production_checks_what_a_name_resolves_to() -> None:
    with pytest.raises(WebhookUrlRefused, match="10.0.0.7"):
        check_webhook_url(
            "https://hooks.example.com/x", production=True, resolve=lambda _h: ["10.0.0.7"]
        )
    url = "https://hooks.example.com/x"
    assert check_webhook_url(url, production=True, resolve=lambda _h: ["93.184.216.34"]) == url


@pytest.mark.parametrize(
    ("url", "production", "message"),
    [
        ("http://93.184.216.34/hook", True, "https in production"),
        ("ftp://example.com/x", False, "http"),
        ("https://user:pw@example.com/x", False, "user name"),
        ("https://exa mple.com/x", False, "whitespace"),
    ],
)
def test_bad_urls(url: str, production: bool, message: str) -> None:
    with pytest.raises(WebhookUrlRefused, match=message):
        check_webhook_url(url, production=production, resolve=lambda _h: ["93.184.216.34"])


def test_allow_private_lets_loopback_through() -> None:
    url = "http://127.0.0.1:9/x"
    assert check_webhook_url(url, production=False, allow_private=True) == url


def test_a_client_error_is_not_retried(webhook_server: WebhookServer) -> None:
    webhook_server.status = 410
    with httpx.Client() as client, pytest.raises(WebhookError) as caught:
        post_webhook(
            client,
            webhook_server.url,
            secret="k",
            body=b"{}",
            delivery_id="d1",
            attempts=3,
            sleep=lambda _s: None,
        )
    assert not caught.value.retryable and caught.value.attempts == 1
    assert len(webhook_server.calls) == 1


def test_retries_back_off_and_a_late_success_counts(webhook_server: WebhookServer) -> None:
    waits: list[float] = []
    webhook_server.status = 500

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            webhook_server.status = 204

    with httpx.Client() as client:
        attempts = post_webhook(
            client,
            webhook_server.url,
            secret="k",
            body=b'{"a":1}',
            delivery_id="d1",
            attempts=4,
            clock=lambda: 1_700_000_000,
            sleep=sleep,
        )
    assert attempts == 3 and waits == [1.0, 2.0]
    headers, _body = webhook_server.calls[-1]
    assert headers["X-Gpuscout-Signature"] == sign("k", 1_700_000_000, b'{"a":1}')
    assert headers["X-Gpuscout-Timestamp"] == "1700000000"
