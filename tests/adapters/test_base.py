"""The shared HTTP helper: retries on 429/5xx honouring Retry-After, clear provider errors;
the failed-calls payload fetch hands to parse."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest
import respx

from gpuscout.adapters import base
from gpuscout.adapters.base import (
    FAILED_CALLS_KEY,
    FailedCall,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
    SkippedRecord,
    failed_calls_payload,
    read_failed_calls,
)
from gpuscout.adapters.schema import Fabric, Offer, OfferFields, PriceBasis, PriceUnit, RentalTerm

URL = "https://api.example.test/v1/prices"
FAST = RetryPolicy(attempts=3, base_wait_s=0, max_wait_s=0)


def call(policy: RetryPolicy = FAST) -> Any:
    async def go() -> Any:
        async with httpx.AsyncClient() as client:
            return await base.request_json(client, "GET", URL, provider="ex", policy=policy)

    return asyncio.run(go())


@respx.mock
def test_retries_429_then_succeeds() -> None:
    route = respx.get(URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}),
            httpx.Response(503),
            httpx.Response(200, json={"ok": True}),
        ]
    )
    assert call() == {"ok": True}
    assert route.call_count == 3


@respx.mock
def test_retry_after_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(base.asyncio, "sleep", fake_sleep)
    respx.get(URL).mock(
        side_effect=[httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(200, json=1)]
    )
    assert call(RetryPolicy(attempts=2, base_wait_s=1, max_wait_s=60)) == 1
    assert waits == [7.0]


@respx.mock
def test_gives_up_after_attempts_with_status_named() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(500))
    with pytest.raises(ProviderError, match="HTTP 500 .* after 3 attempts"):
        call()
    assert route.call_count == 3


@respx.mock
def test_client_error_is_not_retried_and_body_is_shown() -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(401, text="bad key"))
    with pytest.raises(ProviderError, match="HTTP 401.*bad key"):
        call()
    assert route.call_count == 1


@respx.mock
def test_timeout_is_a_provider_error() -> None:
    respx.get(URL).mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(ProviderError, match="timeout after 3 attempts"):
        call()


@pytest.mark.parametrize(
    "failure",
    [
        httpx.ConnectError("[Errno -3] Temporary failure in name resolution"),
        httpx.ConnectError("[Errno 111] Connection refused"),
        httpx.ConnectTimeout("timed out"),
    ],
    ids=["dns", "refused", "connect-timeout"],
)
@respx.mock
def test_an_unreachable_host_is_not_retried(failure: Exception) -> None:
    """Without a network every retry fails the same way: one attempt, and the error says
    the host could not be reached (so a snapshot can say there is no network)."""
    route = respx.get(URL).mock(side_effect=failure)
    with pytest.raises(ProviderError) as raised:
        call()
    assert route.call_count == 1
    assert base.unreachable(raised.value.reason) and "not retried" in raised.value.reason


def test_the_connect_timeout_is_short_and_the_read_timeout_the_policys() -> None:
    timeout = RetryPolicy(timeout_s=30).timeout()
    assert (timeout.connect, timeout.read) == (2.0, 30)


def test_an_attempt_is_bounded_as_a_whole_so_a_slow_drip_cannot_beat_it() -> None:
    """httpx's timeouts are per read: a body trickling a byte every few seconds never trips
    them. ``RetryPolicy.timeout_s`` bounds the whole attempt, and each attempt is retried."""
    attempts: list[float] = []

    async def drip() -> Any:
        for _ in range(100):
            yield b" "
            await asyncio.sleep(0.05)

    def answer(request: httpx.Request) -> httpx.Response:
        attempts.append(asyncio.get_running_loop().time())
        return httpx.Response(200, content=drip())

    async def go() -> Any:
        transport = httpx.MockTransport(answer)
        async with httpx.AsyncClient(transport=transport) as client:
            policy = RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0, timeout_s=0.3)
            return await base.request_json(client, "GET", URL, provider="ex", policy=policy)

    with pytest.raises(ProviderError, match="timeout after 2 attempts"):
        asyncio.run(go())
    assert len(attempts) == 2


@respx.mock
def test_network_error_is_a_provider_error() -> None:
    respx.get(URL).mock(side_effect=httpx.ConnectError("no route"))
    with pytest.raises(ProviderError, match="network error"):
        call()


@respx.mock
def test_non_json_body_is_a_format_error() -> None:
    respx.get(URL).mock(return_value=httpx.Response(200, text="<html>maintenance</html>"))
    with pytest.raises(ResponseFormatError, match="not JSON.*maintenance"):
        call()


def test_parse_result_add_skips_invalid_record_naming_the_field() -> None:
    result = ParseResult()
    common: dict[str, Any] = {
        "provider": "ex",
        "offer_id": "a",
        "fetched_at": datetime(2026, 1, 1, tzinfo=UTC),
        "gpu_count": 1,
        "price_currency": "USD",
        "price_unit": "hour",
        "price_basis": "instance",
        "term": "on_demand",
    }
    assert result.add("ex:a", price_amount=Decimal("1.5"), **common) is not None
    assert result.add("ex:b", price_amount=Decimal("-1"), **common) is None
    assert len(result.offers) == 1
    assert result.skipped[0].ref == "ex:b"
    assert "price_amount" in result.skipped[0].reason


def _fields(**overrides: Any) -> OfferFields:
    fields: OfferFields = {
        "provider": "ex",
        "offer_id": "a",
        "fetched_at": datetime(2026, 1, 1, tzinfo=UTC),
        "gpu_count": 2,
        "price_amount": Decimal("3"),
        "price_currency": "USD",
        "price_unit": PriceUnit.HOUR,
        "price_basis": PriceBasis.INSTANCE,
        "term": RentalTerm.ON_DEMAND,
    }
    fields.update(overrides)  # type: ignore[typeddict-item]
    return fields


def test_parse_result_add_rejects_an_unknown_field_as_a_bug() -> None:
    result = ParseResult()
    with pytest.raises(TypeError, match="unknown Offer field.*gpu_cuont"):
        result.add("ex:a", **_fields(), gpu_cuont=8)  # type: ignore[call-arg]
    assert result.offers == [] and result.skipped == []


def test_parse_result_add_keeps_the_first_of_two_records_with_one_key() -> None:
    result = ParseResult()
    first = result.add("ex:first", **_fields())
    assert result.add("ex:echo", **_fields(price_amount=Decimal("2"))) is None
    assert result.offers == [first]
    assert result.skipped == [SkippedRecord(base.DUPLICATE_REASON, "ex:echo (first: ex:first)")]
    # another term or region of the same configuration is another offer
    assert result.add("ex:spot", **_fields(term=RentalTerm.INTERRUPTIBLE)) is not None
    assert result.add("ex:eu", **_fields(region="eu")) is not None
    assert len(result.offers) == 3


def test_parse_result_add_applies_the_price_floor_per_gpu() -> None:
    result = ParseResult()
    # 0.01 USD/h for the instance of 2 GPUs: half a cent per GPU-hour, below the floor
    assert result.add("ex:cheap", **_fields(price_amount=Decimal("0.01"))) is None
    assert result.skipped[0].reason.startswith("absurd price: 0.005")
    assert result.add("ex:ok", **_fields(price_amount=Decimal("0.02"))) is not None


def test_parse_result_add_applies_the_price_ceiling_per_gpu() -> None:
    result = ParseResult()
    # 2 GPUs: 200 USD/h is 100 per GPU-hour, the ceiling; a cent more is a data error
    assert result.add("ex:dear", **_fields(price_amount=Decimal("200"))) is not None
    assert result.add("ex:absurd", **_fields(price_amount=Decimal("1e9"), region="eu")) is None
    assert result.skipped[0].reason.startswith("absurd price: 500000000")
    assert Decimal("100") == base.MAX_USD_PER_GPU_HOUR


def test_parse_result_add_offer_follows_the_same_rules() -> None:
    result = ParseResult()
    offer = Offer(**_fields())
    assert result.add_offer(offer, "ex:a") is offer
    assert result.add_offer(offer, "ex:again") is None
    assert result.skip_reasons() == {base.DUPLICATE_REASON: 1}


@respx.mock
def test_stream_retries_then_consumes_the_body() -> None:
    route = respx.get(URL).mock(
        side_effect=[httpx.Response(503), httpx.Response(200, content=b"a\nb\nc\n")]
    )

    async def lines(response: httpx.Response) -> list[str]:
        return [line async for line in response.aiter_lines()]

    async def go() -> list[str]:
        async with httpx.AsyncClient() as client:
            return await base.request_stream(client, "GET", URL, lines, provider="ex", policy=FAST)

    assert asyncio.run(go()) == ["a", "b", "c"]
    assert route.call_count == 2


@respx.mock
def test_stream_client_error_is_a_provider_error() -> None:
    respx.get(URL).mock(return_value=httpx.Response(403, text="denied"))

    async def go() -> None:
        async with httpx.AsyncClient() as client:
            await base.request_stream(
                client, "GET", URL, lambda r: r.aread(), provider="ex", policy=FAST
            )

    with pytest.raises(ProviderError, match="HTTP 403.*denied"):
        asyncio.run(go())


def test_parse_result_add_skips_an_absurdly_cheap_gpu_hour() -> None:
    result = ParseResult()
    fields: dict[str, Any] = {
        "provider": "ex",
        "offer_id": "h100",
        "fetched_at": datetime(2026, 1, 1, tzinfo=UTC),
        "gpu_model": "H100-SXM5-80GB",
        "gpu_count": 8,
        "price_currency": "USD",
        "price_unit": "hour",
        "price_basis": "instance",
        "term": "on_demand",
    }
    assert result.add("ex:cheap", price_amount=Decimal("0.008"), **fields) is None
    assert "absurd price" in result.skipped[0].reason
    assert result.add("ex:real", price_amount=Decimal("0.08"), **fields) is not None


class _Bound(base.Adapter):
    name = "bound"
    title = "Bound"
    source_url = URL

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        return [await self.get_json(client, URL), await self.post_json(client, URL, json={})]

    def parse(self, payloads: Any, *, fetched_at: datetime) -> ParseResult:
        return ParseResult()


@respx.mock
def test_adapter_helpers_use_its_name_and_retry_policy() -> None:
    respx.get(URL).mock(side_effect=[httpx.Response(503), httpx.Response(200, json={"a": 1})])
    respx.post(URL).mock(return_value=httpx.Response(500))
    adapter = _Bound(policy=RetryPolicy(attempts=2, base_wait_s=0, max_wait_s=0))

    async def go() -> Any:
        async with httpx.AsyncClient() as client:
            return await adapter.fetch(client)

    with pytest.raises(ProviderError, match="HTTP 500 .* after 2 attempts") as caught:
        asyncio.run(go())
    assert caught.value.provider == "bound"
    assert respx.calls.call_count == 4  # GET retried once, POST tried twice


# --- failed calls: fetch hands them to parse ---------------------------------------------

CALLS = [
    FailedCall("ex:us-west/h100", "price call failed: HTTP 500"),
    FailedCall("ex:eu-north", "price call failed: timeout after 3 attempts: https://ex.test/"),
]


def test_failed_calls_round_trip_through_json() -> None:
    payload = failed_calls_payload(CALLS)
    assert list(payload) == [FAILED_CALLS_KEY]
    recorded = json.loads(json.dumps(payload))
    assert read_failed_calls(recorded, "ex") == CALLS
    assert read_failed_calls(failed_calls_payload([]), "ex") == []


def test_failed_calls_become_skipped_records_in_order() -> None:
    result = ParseResult()
    result.skip_failed(CALLS)
    assert result.skipped == [SkippedRecord(c.reason, c.ref) for c in CALLS]


@pytest.mark.parametrize(
    "payload",
    [None, "text", 42, [], [{FAILED_CALLS_KEY: []}], {}, {"Response": {}}, {"gpuscout_query": {}}],
)
def test_any_other_payload_is_not_a_failed_calls_record(payload: Any) -> None:
    assert read_failed_calls(payload, "ex") is None


@pytest.mark.parametrize(
    ("payload", "wrong"),
    [
        ({FAILED_CALLS_KEY: "HTTP 500"}, "is not a list"),
        ({FAILED_CALLS_KEY: {"ref": "ex:a", "reason": "r"}}, "is not a list"),
        ({FAILED_CALLS_KEY: [None]}, "bad gpuscout_failed_calls entry: None"),
        ({FAILED_CALLS_KEY: [{"ref": "ex:a"}]}, "bad gpuscout_failed_calls entry"),
        ({FAILED_CALLS_KEY: [{"reason": "r"}]}, "bad gpuscout_failed_calls entry"),
        ({FAILED_CALLS_KEY: [{"ref": 1, "reason": "r"}]}, "bad gpuscout_failed_calls entry"),
        ({FAILED_CALLS_KEY: [{"ref": "ex:a", "reason": None}]}, "bad gpuscout_failed_calls"),
    ],
)
def test_a_malformed_failed_calls_record_is_a_format_error_naming_the_provider(
    payload: Any, wrong: str
) -> None:
    with pytest.raises(ResponseFormatError, match=wrong) as caught:
        read_failed_calls(payload, "ex")
    assert caught.value.provider == "ex"
    assert str(caught.value).startswith("ex: ")


def test_offer_fields_name_every_offer_field_and_nothing_else() -> None:
    """The TypedDict mypy checks adapters against is the schema, field for field."""
    assert set(OfferFields.__annotations__) == set(Offer.model_fields)


def test_parse_result_add_fills_the_documented_fabric_unless_the_adapter_states_one() -> None:
    result = ParseResult()
    documented = result.add("aws:p5", **_fields(provider="aws", offer_id="p5.48xlarge"))
    assert documented is not None
    assert (documented.fabric, documented.fabric_gbps, documented.multi_node) == (
        Fabric.EFA,
        3200.0,
        True,
    )
    stated = result.add(
        "aws:p5-eu",
        **_fields(provider="aws", offer_id="p5.48xlarge", region="eu", fabric_gbps=1600.0),
    )
    assert stated is not None and stated.fabric_gbps == 1600.0 and stated.fabric is Fabric.EFA
    plain = result.add("aws:g6", **_fields(provider="aws", offer_id="g6.xlarge"))
    assert plain is not None and plain.fabric is None and plain.multi_node is None


class _Regional(_Bound):
    base_url = "https://api.{region}.example.test/v1/"


def test_every_url_is_built_on_the_base_url_which_a_setting_replaces() -> None:
    default = _Regional()
    assert default.url("/prices", region="eu") == "https://api.eu.example.test/v1/prices"
    local = _Regional(base_url="http://127.0.0.1:8080/bound")
    assert local.url("/prices", region="eu") == "http://127.0.0.1:8080/bound/prices"
    assert (
        type(local).base_url == "https://api.{region}.example.test/v1/"
    )  # the class keeps its own


@pytest.mark.parametrize(
    ("value", "count"), [(2, 2), ("8", 8), (4.0, 4), (0, None), (1.5, None), ("x", None)]
)
def test_required_count_is_a_whole_count_or_a_skip_naming_the_field(
    value: Any, count: int | None
) -> None:
    result = ParseResult()
    assert base.required_count(result, value, "num_gpus", "p:1") == count
    expected = [] if count else [base.SkippedRecord(f"bad num_gpus {value!r}", "p:1")]
    assert result.skipped == expected
