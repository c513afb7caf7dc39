"""The fetch-call records Alibaba, Tencent and Mithril share (``adapters/calls.py``)."""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gpuscout.adapters import calls, tables
from gpuscout.adapters.base import (
    FailedCall,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
    read_failed_calls,
)
from gpuscout.adapters.calls import (
    CallFailure,
    failure_cause,
    fresh_retries,
    keep_failures,
    key_rejected,
    query_payload,
    read_query_payload,
)
from gpuscout.adapters.tables import sourced_rows
from gpuscout.adapters.units import positive_decimal

FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)


def test_positive_decimal_drops_zero_and_keeps_garbage_an_error() -> None:
    assert positive_decimal(0) is None and positive_decimal(None) is None
    assert positive_decimal("-1") is None
    assert positive_decimal(0.1) == Decimal("0.1")
    with pytest.raises(ValueError, match="not a number"):
        positive_decimal("n/a")


@pytest.mark.parametrize(
    ("reason", "cause"),
    [
        (
            "HTTP 400 from https://ecs.cn-hangzhou.aliyuncs.com/ (application/json, 60 bytes);"
            " code Throttling.User",
            "HTTP 400 Throttling.User",
        ),
        ("HTTP 503 from https://api.mithril.ai/v2/pricing/current after 2 attempts", "HTTP 503"),
        ("timeout after 3 attempts: https://ecs.us-east-1.aliyuncs.com/", "timeout"),
        ("network error on https://api.mithril.ai/v2/x: boom", "network error"),
        (
            "response from https://api.mithril.ai/v2/x is not JSON (x): <html>",
            "response is not JSON",
        ),
        ("DescribeAvailableResource: not an object", "DescribeAvailableResource: not an object"),
    ],
)
def test_failure_cause_is_the_same_in_every_region(reason: str, cause: str) -> None:
    assert failure_cause(reason) == cause


@pytest.mark.parametrize(
    ("reason", "rejected"),
    [
        ("HTTP 401 from https://ec2.us-east-1.amazonaws.com/: <Code>AuthFailure</Code>", True),
        ("HTTP 403 from https://api.mithril.ai/v2/instance-types: forbidden", True),
        ("HTTP 404 from https://api.mithril.ai/v2/x: not found", False),
        ("timeout after 3 attempts: https://api.mithril.ai/v2/x", False),
    ],
)
def test_key_rejected_is_an_http_401_or_403(reason: str, rejected: bool) -> None:
    assert key_rejected(reason) is rejected


def test_query_payload_reads_back_and_a_broken_one_is_a_format_error() -> None:
    payload = query_payload({"region": "r"}, {"price": 1})
    assert read_query_payload(payload, "ex") == ({"region": "r"}, {"price": 1})
    with pytest.raises(ResponseFormatError, match="bad gpuscout_query payload"):
        read_query_payload({calls.QUERY_KEY: "r", calls.RESPONSE_KEY: {}}, "ex")
    with pytest.raises(ResponseFormatError, match="bad gpuscout_query payload"):
        read_query_payload({calls.QUERY_KEY: {}}, "ex")


def failure(place: str, cause: str = "HTTP 500") -> CallFailure:
    return CallFailure(FailedCall(f"ex:{place}", f"call failed: {cause}"), cause, place)


def test_keep_failures_adds_their_record_and_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    assert keep_failures("ex", [{"a": 1}], [], calls=1, what="calls") == [{"a": 1}]
    with caplog.at_level(logging.WARNING, logger="gpuscout.adapters.ex"):
        kept = keep_failures("ex", [{"a": 1}], [failure("r1"), failure("r2")], calls=3, what="x")
    assert kept[0] == {"a": 1}
    assert read_failed_calls(kept[1], "ex") == [
        FailedCall("ex:r1", "call failed: HTTP 500"),
        FailedCall("ex:r2", "call failed: HTTP 500"),
    ]
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning == "ex: 2 of 3 x failed, their prices are missing: HTTP 500 in 2 [r1, r2]"


def test_keep_failures_fails_the_provider_when_every_call_failed() -> None:
    with pytest.raises(
        ProviderError, match=r"^ex: all 1 calls failed: HTTP 401 in 1 \[r1\] \(h\)$"
    ):
        keep_failures("ex", [], [failure("r1", "HTTP 401")], calls=1, what="calls", hint=" (h)")


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_fresh_retries_call_again_until_the_result_is_good_or_attempts_end() -> None:
    answers = iter(["busy", "busy", "ok", "never"])
    calls: list[str] = []

    async def attempt() -> str:
        calls.append(answer := next(answers))
        return answer

    assert run(fresh_retries(FAST, result=lambda a: a == "busy")(attempt)) == "ok"
    assert calls == ["busy", "busy", "ok"]
    calls.clear()
    answers = iter(["busy"] * 5)
    assert run(fresh_retries(FAST, result=lambda a: a == "busy")(attempt)) == "busy"
    assert len(calls) == FAST.attempts


def test_fresh_retries_raise_the_last_error_and_do_not_retry_others() -> None:
    tries: list[int] = []

    async def attempt() -> None:
        tries.append(1)
        raise ProviderError("ex", "HTTP 503 from x" if len(tries) < 9 else "never")

    with pytest.raises(ProviderError, match="HTTP 503"):
        run(fresh_retries(FAST, error=lambda e: "503" in str(e))(attempt))
    assert len(tries) == FAST.attempts
    tries.clear()
    with pytest.raises(ProviderError):
        run(fresh_retries(FAST, error=lambda e: False)(attempt))
    assert len(tries) == 1


def test_sourced_rows_need_a_known_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.toml").write_text(
        '[sources]\na = "a page"\n[[row]]\nx = 1\nsource = "a"\n[[row]]\nx = 2\nsource = "b"\n'
    )
    monkeypatch.setattr(tables.resources, "files", lambda package: tmp_path)
    with pytest.raises(ValueError, match=r"t.toml: row 2 does not name one of its \[sources\]"):
        sourced_rows("t.toml", "row")
    with pytest.raises(ValueError, match=r"no \[\[other\]\] entries"):
        sourced_rows("t.toml", "other")


@pytest.mark.parametrize(
    "name",
    [
        "alibaba_gpu_families.toml",
        "alibaba_regions.toml",
        "tencent_gpu_families.toml",
        "tencent_regions.toml",
    ],
)
def test_every_cn_cloud_data_file_loads(name: str) -> None:
    rows = sourced_rows(name, "region" if "regions" in name else "family")
    assert rows and all(row["source"] for row in rows)
