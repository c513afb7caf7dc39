"""The adapter contract, the error tree and the shared HTTP helper.

An adapter keeps I/O and parsing apart:

* :meth:`Adapter.fetch` is async, gets an injected :class:`httpx.AsyncClient`, handles
  pagination and auth, and returns the decoded raw responses (a list of payloads);
* :meth:`Adapter.parse` is pure: decoded payloads in, :class:`ParseResult` out. A broken
  record is skipped and counted with its reason; a broken response raises
  :class:`ProviderError`. Nothing is invented to fill a gap.

A fetch that goes on past a call which failed after its retries (one region, one term...)
hands the failures to parse in a last payload of its own, :func:`failed_calls_payload`;
parse reads it back with :func:`read_failed_calls` and reports each as a skipped record.

Errors::

    AdapterError                    base of everything raised here
    ├── MissingCredentials          the provider needs a key that is not configured: skip it
    └── ProviderError               the provider failed: HTTP error, timeout, bad payload
        └── ResponseFormatError     the payload is not what the provider documents
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import email.utils
import functools
import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar, TypeVar, Unpack

import httpx
import pydantic
import tenacity

from .billing_rules import billing_fields
from .boot_disk import boot_disk_fields
from .declarations import ACTIVE, Lifecycle, ProviderSetting
from .fabrics import fabric_fields
from .gpus import resolve_gpu_name, spec_fields
from .json_depth import MAX_JSON_DEPTH, json_depth_exceeds
from .public_ipv4 import ipv4_fields
from .run import FRESH_WITHIN_HOURS
from .schema import GpuFormFactor, Offer, OfferFields, PriceBasis, PriceUnit, RentalTerm, Vendor
from .skip_summary import DUPLICATE
from .units import PriceReading, read_price, whole_count

__all__ = [
    "ACCOUNT_PRICE_VARIANT",
    "DUPLICATE_REASON",
    "FAILED_CALLS_KEY",
    "FRESH_WITHIN_HOURS",
    "MAX_USD_PER_GPU_HOUR",
    "MIN_USD_PER_GPU_HOUR",
    "UNREACHABLE",
    "Adapter",
    "AdapterError",
    "FailedCall",
    "MissingCredentials",
    "ParseResult",
    "ProviderError",
    "ResponseFormatError",
    "RetryPolicy",
    "SkippedRecord",
    "add_per_region",
    "failed_calls_payload",
    "gpu_fields",
    "key_headers",
    "listed_regions",
    "payload_list",
    "positive_price",
    "price_fields",
    "read_failed_calls",
    "request",
    "request_json",
    "request_stream",
    "required_count",
    "unreachable",
]

T = TypeVar("T")


class AdapterError(Exception):
    """Base of the adapter error tree."""


class MissingCredentials(AdapterError):
    """A required credential is not configured; the provider is skipped, not failed."""

    def __init__(self, provider: str, names: Sequence[str]) -> None:
        self.provider = provider
        self.names = tuple(names)
        env = ", ".join(f"GPUSCOUT_{n.upper()}" for n in self.names)
        super().__init__(f"{provider}: skipped, credential not set ({env})")


class ProviderError(AdapterError):
    """The provider failed as a whole; the message names what was wrong."""

    def __init__(self, provider: str, message: str) -> None:
        self.provider = provider
        self.reason = message
        super().__init__(f"{provider}: {message}")


class ResponseFormatError(ProviderError):
    """The response does not have the documented shape (a key missing, wrong type...)."""


#: Below this a GPU-hour is a data error, not a bargain (the cheapest real GPU rentals cost
#: cents per hour): such a record is skipped, whatever the provider.
MIN_USD_PER_GPU_HOUR = Decimal("0.01")

#: Above this a GPU-hour is a data error too (a price in cents read as dollars, a missing
#: decimal point, a placeholder like 1e9). The dearest real GPU-hours cost tens of dollars at
#: most: AWS's p5.48xlarge (8x H100) was listed at $98.32 an hour on demand, $12.29 per
#: GPU-hour ("H100 GPU Instance Pricing On AWS", The Next Platform, 2023-07-27), about the
#: top of the big clouds' on-demand lists. 100 leaves eight times that for dearer GPUs and
#: short terms, and still stops a price a hundred times too high.
MAX_USD_PER_GPU_HOUR = Decimal("100")

#: ``term_variant`` of an offer priced at what the calling account is quoted, where the
#: provider's answer shows it differs from the list price (Alibaba DescribePrice
#: ``TradePrice`` vs ``OriginalPrice``, Tencent ``UnitPriceDiscount``/``DiscountPrice`` vs
#: ``UnitPrice``/``OriginalPrice``, Hyperstack ``value`` vs ``original_value``): a negotiated
#: or promotional price another account may not get. The list-price offer is emitted beside
#: it, so the answer names which one it ranked.
ACCOUNT_PRICE_VARIANT = "account price"


@dataclasses.dataclass(frozen=True, slots=True)
class SkippedRecord:
    """One raw record that could not become an offer, and why."""

    reason: str
    ref: str | None = None


#: Key of the payload that lists the provider calls a fetch gave up on. It is gpuscout's own
#: record, not a provider response (hence the lower-case prefix): the only way for fetch to
#: hand the failures to the pure parse step, which turns them into skipped records the run
#: reports (and a recorded run replays the same).
FAILED_CALLS_KEY = "gpuscout_failed_calls"


@dataclasses.dataclass(frozen=True, slots=True)
class FailedCall:
    """A provider call that failed after its retries, as parse reports it: a skipped record.

    ``reason`` groups in the run's counts, so it names the cause but no request id, region or
    instance type; those belong in ``ref`` (``"aws:spot/us-west-2"``).
    """

    ref: str
    reason: str


def failed_calls_payload(calls: Sequence[FailedCall]) -> dict[str, Any]:
    """The payload a fetch appends for parse: ``{FAILED_CALLS_KEY: [{"ref", "reason"}...]}``.

    Plain JSON, so that a recorded run parses the same as a live one.
    """
    return {FAILED_CALLS_KEY: [{"ref": c.ref, "reason": c.reason} for c in calls]}


def read_failed_calls(payload: Any, provider: str) -> list[FailedCall] | None:
    """The calls a :func:`failed_calls_payload` lists; None for any other payload.

    A payload with the key but not the shape is a :class:`ResponseFormatError` naming
    ``provider``: a broken record must not pass for "nothing failed".
    """
    if not isinstance(payload, Mapping) or FAILED_CALLS_KEY not in payload:
        return None
    entries = payload[FAILED_CALLS_KEY]
    if not isinstance(entries, list):
        raise ResponseFormatError(provider, f"'{FAILED_CALLS_KEY}' is not a list")
    calls: list[FailedCall] = []
    for entry in entries:
        if not (
            isinstance(entry, Mapping)
            and isinstance(entry.get("ref"), str)
            and isinstance(entry.get("reason"), str)
        ):
            raise ResponseFormatError(provider, f"bad {FAILED_CALLS_KEY} entry: {entry!r}")
        calls.append(FailedCall(entry["ref"], entry["reason"]))
    return calls


#: Every keyword :meth:`ParseResult.add` accepts: the fields of :class:`Offer`.
_OFFER_FIELDS = frozenset(Offer.model_fields)

#: The skip reason of a record whose offer key an earlier record of the run already gave.
DUPLICATE_REASON = DUPLICATE


@dataclasses.dataclass(slots=True)
class ParseResult:
    """What :meth:`Adapter.parse` found: the offers, and the records it had to skip.

    The rules every adapter needs live here, once: :meth:`add` stamps each offer with the
    ``provider`` and ``fetched_at`` of the run and its record's ``ref`` as ``raw_ref`` (where
    the fields do not say otherwise), validates the fields, drops a price below the floor and
    a second record with an offer key already seen. An adapter holds only its provider's story.
    """

    offers: list[Offer] = dataclasses.field(default_factory=list)
    skipped: list[SkippedRecord] = dataclasses.field(default_factory=list)
    _refs: dict[str, str | None] = dataclasses.field(default_factory=dict, repr=False)
    provider: str | None = dataclasses.field(default=None, kw_only=True)
    fetched_at: datetime | None = dataclasses.field(default=None, kw_only=True)

    def skip(self, reason: str, ref: str | None = None) -> None:
        self.skipped.append(SkippedRecord(reason, ref))

    def skip_failed(self, calls: Iterable[FailedCall]) -> None:
        """Report each call fetch gave up on, so that a lost region or term is not unseen."""
        for call in calls:
            self.skip(call.reason, call.ref)

    def add(self, ref: str | None = None, /, **fields: Unpack[OfferFields]) -> Offer | None:
        """Build an Offer from ``fields`` and keep it, or skip the record with its reason.

        The cluster fabric its provider documents for the offer's instance type
        (:func:`adapters.fabrics.fabric_fields`) fills ``fabric``, ``fabric_gbps`` and
        ``multi_node`` where the adapter left them unset: what an API states wins. So do
        the provider's billing increment and minimum (:func:`adapters.billing_rules.
        billing_fields`) on on-demand and interruptible terms, and the price of the public
        IPv4 address and the boot disk a hyperscaler's machine needs
        (:func:`adapters.public_ipv4.ipv4_fields`, :func:`adapters.boot_disk.boot_disk_fields`).

        Skipped: a record that fails validation (the reason names the field), a price below
        :data:`MIN_USD_PER_GPU_HOUR` or above :data:`MAX_USD_PER_GPU_HOUR`, and a record
        whose :attr:`Offer.key` an earlier one in this result already has (the first wins:
        providers list one configuration once, and a second listing is an echo, not a second
        machine). An unknown field name is a bug
        in the adapter, not bad data: :class:`TypeError`.
        """
        unknown = fields.keys() - _OFFER_FIELDS
        if unknown:
            raise TypeError(
                f"ParseResult.add: unknown Offer field(s): {', '.join(sorted(unknown))}"
            )
        if self.provider is not None:
            fields.setdefault("provider", self.provider)
        if self.fetched_at is not None:
            fields.setdefault("fetched_at", self.fetched_at)
        if ref is not None:
            fields.setdefault("raw_ref", ref)
        provider, offer_id = fields.get("provider"), fields.get("offer_id")
        if isinstance(provider, str) and isinstance(offer_id, str):
            for key, value in fabric_fields(provider, offer_id).items():
                if fields.get(key) is None:
                    fields[key] = value  # type: ignore[literal-required]
        if isinstance(provider, str):
            term, currency = fields.get("term"), fields.get("price_currency")
            documented = {
                **billing_fields(provider, term),
                **ipv4_fields(provider, term, currency),
                **boot_disk_fields(provider, term, currency),
            }
            for key, value in documented.items():
                if fields.get(key) is None:
                    fields[key] = value  # type: ignore[literal-required]
        try:
            offer = Offer(**fields)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "offer"
            self.skip(f"invalid {loc}: {first['msg']}", ref)
            return None
        return self.add_offer(offer, ref)

    def add_offer(self, offer: Offer, ref: str | None = None) -> Offer | None:
        """Keep an already validated ``offer`` under the same price bounds and duplicate rules."""
        per_gpu = offer.usd_per_gpu_hour
        if per_gpu is not None and not MIN_USD_PER_GPU_HOUR <= per_gpu <= MAX_USD_PER_GPU_HOUR:
            self.skip(f"absurd price: {per_gpu} USD per GPU-hour ({offer.term.value})", ref)
            return None
        key = offer.key
        if key in self._refs:
            first = self._refs[key]
            self.skip(DUPLICATE_REASON, f"{ref} (first: {first})" if first and ref else ref)
            return None
        self._refs[key] = ref
        self.offers.append(offer)
        return offer

    def skip_reasons(self) -> Counter[str]:
        return Counter(s.reason for s in self.skipped)


@dataclasses.dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries for one request: on 429, 5xx and transport errors, honouring ``Retry-After``.

    ``timeout_s`` bounds each attempt of :func:`request` as a whole, answer and body (httpx's
    own timeouts are per read, which a server sending a byte every few seconds never trips);
    a streamed body (:func:`request_stream`, a long download) is bounded per read only, and
    by the provider's deadline (:func:`adapters.collect.run_provider`).
    """

    attempts: int = 4
    base_wait_s: float = 1.0
    max_wait_s: float = 60.0
    timeout_s: float = 30.0
    #: Seconds to open a connection: a host that takes longer is unreachable, not slow.
    connect_timeout_s: float = 2.0

    def timeout(self) -> httpx.Timeout:
        """httpx's timeouts of one attempt: ``timeout_s`` per read, ``connect_timeout_s`` to
        connect."""
        return httpx.Timeout(self.timeout_s, connect=min(self.connect_timeout_s, self.timeout_s))

    #: The largest answer :func:`request` reads, decompressed; more fails the request.
    max_response_bytes: int = 64 * 2**20


RETRY_STATUS = frozenset({429, 500, 502, 503, 504})

#: What the error of a request whose host could not be reached says (its name did not
#: resolve, it refused the connection, or none was opened within ``connect_timeout_s``):
#: such a failure is not retried, since without a network every retry fails the same way,
#: and :func:`unreachable` finds it in a run's error text.
UNREACHABLE = "host unreachable"


def unreachable(reason: str | None) -> bool:
    """Whether a provider's error text is a host that could not be reached (no network, a
    name that does not resolve, a refused connection): see :data:`UNREACHABLE`."""
    return reason is not None and UNREACHABLE in reason


def _worth_retrying(exc: BaseException) -> bool:
    """A 429/5xx answer, or a transport error past the connection (a read cut off, a stream
    broken mid-body); a host that cannot be reached (:data:`UNREACHABLE`) is not retried."""
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return False
    return isinstance(exc, _Retryable | httpx.TransportError)


class _Retryable(Exception):
    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        super().__init__(f"HTTP {response.status_code}")


def _retry_after_s(response: httpx.Response) -> float | None:
    """Seconds from a ``Retry-After`` header (seconds or an HTTP date), if any."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _wait(policy: RetryPolicy) -> Callable[[tenacity.RetryCallState], float]:
    """Exponential backoff, unless the server said how long to wait."""
    backoff = tenacity.wait_exponential(multiplier=policy.base_wait_s, max=policy.max_wait_s)

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Retryable):
            after = _retry_after_s(exc.response)
            if after is not None:
                return min(after, policy.max_wait_s)
        return float(backoff(state))

    return wait


async def _with_retries(
    call: Callable[[], Awaitable[T]], *, url: str, provider: str, policy: RetryPolicy
) -> T:
    """Run ``call`` with the policy's retries; every failure becomes a ProviderError.

    ``call`` raises :class:`_Retryable` for a 429/5xx answer; transport errors (including a
    stream broken mid-body) are retried too, but not a host that cannot be reached
    (:func:`_worth_retrying`): that fails at once, so that with no network every provider
    fails within ``connect_timeout_s``.
    """
    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(policy.attempts),
        wait=_wait(policy),
        retry=tenacity.retry_if_exception(_worth_retrying),
        reraise=True,
        sleep=asyncio.sleep,
    )
    try:
        return await retrying(call)
    except _Retryable as exc:
        raise ProviderError(
            provider,
            f"HTTP {exc.response.status_code} from {_short(url)} after {policy.attempts} attempts",
        ) from None
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        detail = str(exc) or type(exc).__name__
        raise ProviderError(
            provider, f"network error on {_short(url)}: {UNREACHABLE} ({detail}), not retried"
        ) from None
    except httpx.TimeoutException:
        raise ProviderError(
            provider, f"timeout after {policy.attempts} attempts: {_short(url)}"
        ) from None
    except httpx.TransportError as exc:
        raise ProviderError(provider, f"network error on {_short(url)}: {exc!s}") from None


async def request(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    provider: str,
    policy: RetryPolicy | None = None,
    **kwargs: Any,
) -> httpx.Response:
    """One HTTP request with retries; any failure becomes a :class:`ProviderError`."""
    policy = policy or RetryPolicy()
    kwargs.setdefault("timeout", policy.timeout())

    async def once() -> httpx.Response:
        try:
            async with asyncio.timeout(policy.timeout_s):
                async with client.stream(method, url, **kwargs) as streamed:
                    response = await _read_capped(streamed, policy.max_response_bytes, provider)
        except TimeoutError:  # the whole attempt took too long: a timeout like httpx's own
            raise httpx.ReadTimeout(
                f"no complete answer within {policy.timeout_s:g} s", request=None
            ) from None
        if response.status_code in RETRY_STATUS:
            raise _Retryable(response)
        return response

    response = await _with_retries(once, url=url, provider=provider, policy=policy)
    if response.is_error:
        raise ProviderError(
            provider,
            f"HTTP {response.status_code} from {_short(url)}{_kind(response)}"
            f"{_code(response.content)}",
        )
    return response


async def _read_capped(response: httpx.Response, max_bytes: int, provider: str) -> httpx.Response:
    """``response`` read whole, decompressed, unless it passes ``max_bytes`` (then a
    :class:`ProviderError`: nothing more is read); a plain response holding the bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ProviderError(
                provider,
                f"answer from {_short(str(response.url))} larger than"
                f" {max_bytes / 2**20:g} MB (decompressed): not read further",
            )
        chunks.append(chunk)
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code,
        headers=headers,
        content=b"".join(chunks),
        request=response.request,
        history=response.history,
    )


async def request_stream(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    consume: Callable[[httpx.Response], Awaitable[T]],
    *,
    provider: str,
    policy: RetryPolicy | None = None,
    **kwargs: Any,
) -> T:
    """A streamed request for bodies too large to hold: ``consume`` reads the open response.

    The same retries as :func:`request`; a stream broken mid-body is retried from the start.
    """
    policy = policy or RetryPolicy()
    kwargs.setdefault("timeout", policy.timeout())

    async def once() -> T:
        async with client.stream(method, url, **kwargs) as response:
            if response.status_code in RETRY_STATUS:
                raise _Retryable(response)
            if response.is_error:
                head = b""
                async for chunk in response.aiter_bytes():
                    head += chunk
                    if len(head) >= _CODE_SCAN_BYTES:
                        break
                raise ProviderError(
                    provider,
                    f"HTTP {response.status_code} from {_short(url)}{_kind(response)}{_code(head)}",
                )
            return await consume(response)

    return await _with_retries(once, url=url, provider=provider, policy=policy)


async def request_json(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    provider: str,
    policy: RetryPolicy | None = None,
    **kwargs: Any,
) -> Any:
    """:func:`request`, then decode JSON; a body that is not JSON is a provider error."""
    response = await request(client, method, url, provider=provider, policy=policy, **kwargs)
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResponseFormatError(
            provider, f"response from {_short(url)} is not JSON ({exc}){_kind(response)}"
        ) from None


def _short(url: str) -> str:
    return url.split("?", 1)[0]


#: How much of an error answer is searched for its error code.
_CODE_SCAN_BYTES = 16384
#: An error code as providers write them (``Throttling.User``, ``AuthFailure``,
#: ``InvalidRegionId.NotFound``): JSON's ``"Code"``/``"code"`` or XML's ``<Code>``.
_ERROR_CODE = re.compile(
    rb'(?:"[Cc]ode"\s*:\s*"|<Code>)([A-Za-z][A-Za-z0-9_.:-]{0,63})(?:"|</Code>)'
)


def _code(body: bytes) -> str:
    """``; code <Code>``: the machine error code an error answer names, if it has one. The
    one piece of an answer an error quotes: an identifier, never free text."""
    match = _ERROR_CODE.search(body[:_CODE_SCAN_BYTES])
    return f"; code {match.group(1).decode()}" if match else ""


def _kind(response: httpx.Response) -> str:
    """``; <content type>, <n> bytes``: what an error says of an answer. Never its text: an
    answer (or one a redirect led to) may hold what must not be shown on a public page."""
    kind = response.headers.get("Content-Type", "no content type").split(";", 1)[0][:80]
    size = response.headers.get("Content-Length")
    return f" ({kind}{f', {size} bytes' if size and size.isdigit() else ''})"


class Adapter(abc.ABC):
    """One provider. Subclasses set the class attributes and implement fetch and parse."""

    #: Registry key and the ``provider`` field of every offer, e.g. ``"vastai"``.
    name: ClassVar[str]
    #: Human name, e.g. ``"Vast.ai"``.
    title: ClassVar[str]
    #: Where the prices come from (API base URL or price page), for the docs.
    source_url: ClassVar[str]
    #: Where a renter starts renting one of the provider's offers: its console or launch page,
    #: ``{region}``, ``{instance_name}``, ``{offer_id}`` or ``{offer_id_head}`` (the id up to
    #: its first ``/``) filled from the offer (:mod:`adapters.rent`); ``""``: none is
    #: documented, the pricing page is the link.
    rent_url: ClassVar[str] = ""
    #: The provider's public pricing page: the link to rent where no launch page is declared
    #: or an offer lacks a part the launch page needs.
    pricing_url: ClassVar[str] = ""
    #: Credentials (secret settings, named without the ``GPUSCOUT_`` prefix, e.g.
    #: ``vastai_api_key``) that must be set to fetch: the provider needs an account.
    credential_names: ClassVar[tuple[str, ...]] = ()
    #: Credentials used when set, but not required (a public catalogue works without them).
    optional_credential_names: ClassVar[tuple[str, ...]] = ()
    #: The adapter's settings that are not credentials (a currency, files to read), each
    #: declared with its kind. With the credentials and ``base_url`` they become settings
    #: (:mod:`adapters.declarations`): an adapter declares, nothing else lists them.
    other_settings: ClassVar[tuple[ProviderSetting, ...]] = ()
    #: Whether the provider still sells what the adapter reads (active, deprecated or
    #: retired, each but active with its date and source): a retired provider is not
    #: fetched by default and its offers are never ranked.
    lifecycle: ClassVar[Lifecycle] = ACTIVE
    #: Hours after its fetch that the provider's prices still count as fresh
    #: (default :data:`FRESH_WITHIN_HOURS`); a provider whose prices change rarely, or that
    #: is fetched less often, may set more.
    fresh_within_hours: ClassVar[float] = FRESH_WITHIN_HOURS
    #: Base URL of the provider's API, as its module documents it: every URL the adapter
    #: calls is built on it (:meth:`url`), so that one setting, ``GPUSCOUT_<NAME>_BASE_URL``
    #: (passed as ``base_url``), points the adapter elsewhere: a proxy, a mirror, a local
    #: test server. Placeholders (``{region}``) mark the parts of a regional host that
    #: :meth:`url` fills in; a replacement without them serves every region at one address.
    #: ``""``: the adapter makes no HTTP call.
    base_url: str = ""

    def __init__(
        self,
        credentials: Mapping[str, str | None] | None = None,
        *,
        policy: RetryPolicy | None = None,
        base_url: str | None = None,
    ) -> None:
        self.credentials = dict(credentials or {})
        self.policy = policy or RetryPolicy()
        self.base_url = (base_url or type(self).base_url).rstrip("/")

    def url(self, path: str = "", **parts: str) -> str:
        """``path`` (``"/v2/sizes"``; ``""`` for the base itself) on this adapter's base URL,
        its placeholders filled from ``parts`` (``region="us-east-1"``).

        A next-page link the provider gives as a full URL is followed as it is.
        """
        return self.base_url.format(**parts) + path

    @classmethod
    def source_text(cls) -> str:
        """Where the prices come from, in one phrase for people: the API and whether it needs
        an account (a price list's adapter says whose page, and when it was read)."""
        if not cls.base_url:
            return cls.source_url
        account = "API, account needed" if cls.credential_names else "API, no account"
        return f"{account}: {cls.source_url}"

    @classmethod
    def needed_settings(cls) -> tuple[str, ...]:
        """The settings that must be set for the provider to be fetched: its credentials
        and any other setting declared ``required``."""
        return (*cls.credential_names, *(s.name for s in cls.other_settings if s.required))

    def require_credentials(self) -> dict[str, str]:
        """The configured credentials, or :class:`MissingCredentials` naming the gap."""
        missing = [n for n in self.credential_names if not self.credentials.get(n)]
        if missing:
            raise MissingCredentials(self.name, missing)
        return {n: str(self.credentials[n]) for n in self.credential_names}

    async def get_json(self, client: httpx.AsyncClient, url: str, **kwargs: Any) -> Any:
        """GET ``url`` as JSON with this adapter's name and retry policy (:func:`request_json`)."""
        return await request_json(
            client, "GET", url, provider=self.name, policy=self.policy, **kwargs
        )

    async def post_json(self, client: httpx.AsyncClient, url: str, **kwargs: Any) -> Any:
        """POST to ``url`` and decode JSON, with this adapter's name and retry policy."""
        return await request_json(
            client, "POST", url, provider=self.name, policy=self.policy, **kwargs
        )

    async def follow_pages(
        self,
        page: Callable[[Any], Awaitable[Any]],
        next_cursor: Callable[[Any], Any],
        *,
        max_pages: int,
        too_many: str,
        repeated: str | None = None,
    ) -> list[Any]:
        """Every page of a paged listing: ``page(None)``, then ``page(cursor)`` with each cursor
        (a token, an offset, a next link) ``next_cursor`` reads from the page before, until it
        reads ``None``.

        A server that never stops paging must not hold the run: a page past ``max_pages`` is a
        :class:`ProviderError` saying ``too_many``, and where ``repeated`` is given, so is a
        cursor given twice (an API whose cursors are unique says so at once).
        """
        pages: list[Any] = []
        cursor: Any = None
        seen: set[Any] = set()
        while len(pages) < max_pages:
            pages.append(await page(cursor))
            cursor = next_cursor(pages[-1])
            if cursor is None:
                return pages
            if repeated is not None and cursor in seen:
                raise ProviderError(self.name, repeated)
            seen.add(cursor)
        raise ProviderError(self.name, too_many)

    @abc.abstractmethod
    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Call the provider and return the decoded raw responses, in order."""

    @abc.abstractmethod
    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        """Pure: decoded raw responses to offers (``fetched_at`` stamps every offer)."""

    def parse_records(
        self,
        payloads: Sequence[Any],
        records: str | Callable[[Any], Iterable[Any]],
        parse_record: Callable[[ParseResult, Mapping[str, Any]], None],
        *,
        what: str,
        fetched_at: datetime,
    ) -> ParseResult:
        """The parse of a provider whose every payload lists records that become offers one
        by one: ``records`` is the key of the list in each payload (:func:`payload_list`) or
        lists a payload's records itself; ``parse_record`` adds the offers of one to the result
        (which stamps them, :class:`ParseResult`). A record that is not a JSON object is
        skipped: ``<what> is not an object``.
        """
        if isinstance(records, str):
            records = functools.partial(payload_list, key=records, provider=self.name)
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        for payload in payloads:
            for record in records(payload):
                if isinstance(record, Mapping):
                    parse_record(result, record)
                else:
                    result.skip(f"{what} is not an object")
        return result

    def split_failed_calls(self, payloads: Sequence[Any]) -> tuple[list[Any], list[FailedCall]]:
        """The payloads but a :func:`failed_calls_payload`, and the calls it lists (for
        :meth:`ParseResult.skip_failed`)."""
        read = [(payload, read_failed_calls(payload, self.name)) for payload in payloads]
        rest = [payload for payload, calls in read if calls is None]
        return rest, [call for _, calls in read for call in calls or ()]

    def decode(self, data: bytes, filename: str) -> Any:
        """Decode one recorded raw response file (JSON unless the adapter says otherwise)."""
        if json_depth_exceeds(data, MAX_JSON_DEPTH):
            raise ResponseFormatError(
                self.name, f"{filename} nests deeper than {MAX_JSON_DEPTH} levels: not read"
            )
        try:
            return json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ResponseFormatError(self.name, f"{filename} is not JSON: {exc}") from None


# --- helpers of the parse step, shared by adapters -----------------------------------


def payload_list(payload: Any, key: str, provider: str) -> list[Any]:
    """The list under ``key`` of a JSON-object response (``{"sizes": [...]}``).

    Any other shape is a :class:`~adapters.base.ResponseFormatError` naming what was wrong.
    """
    if not isinstance(payload, Mapping):
        raise ResponseFormatError(provider, f"expected a JSON object, got {type(payload).__name__}")
    if key not in payload:
        raise ResponseFormatError(provider, f"response has no '{key}' list")
    items = payload[key]
    if not isinstance(items, list):
        raise ResponseFormatError(provider, f"'{key}' is {type(items).__name__}, not a list")
    return items


def positive_price(
    result: ParseResult, value: Any, name: str, ref: str | None, **how: Unpack[PriceReading]
) -> Decimal | None:
    """``value`` (the record's ``name`` field) as a positive exact price, else ``None``, the
    record skipped with the reason :func:`~adapters.units.read_price` gives (``how`` words
    the cases, or makes one no offer: ``absent=None`` for a spot price not sold)."""
    price = read_price(value, name, **how)
    if isinstance(price, str):
        result.skip(price, ref)
        return None
    return price


def required_count(result: ParseResult, value: Any, name: str, ref: str | None) -> int | None:
    """``value`` (the record's ``name`` field) as a whole count of one or more
    (:func:`~adapters.units.whole_count`), else ``None`` with the record skipped:
    ``bad <name> <value>``."""
    count = whole_count(value)
    if count is None:
        result.skip(f"bad {name} {value!r}", ref)
    return count


def gpu_fields(
    raw: str | None,
    *,
    memory_gb: float | None = None,
    form_factor: GpuFormFactor | str | None = None,
    vendor: Vendor | None = None,
    name: str | None = None,
) -> OfferFields:
    """The GPU fields of an offer from the provider's raw GPU name: ``gpu_raw_name``, the
    catalog model it resolves to with the provider's hints (:func:`spec_fields`) and
    ``gpu_memory_gb`` (``memory_gb``, nominal GB per GPU).

    A :class:`GpuFormFactor` is what the provider states: it narrows the lookup and fills
    ``gpu_form_factor``; a text hint (``"SXM2"`` from documentation) only narrows the lookup.
    ``name`` is the text to look up where the raw name needs a rewrite first
    (``H100_SXM5_80GB`` as ``H100 SXM5 80GB``). No raw name resolves to nothing.
    """
    lookup = name or raw
    spec = (
        resolve_gpu_name(lookup, memory_gb=memory_gb, form_factor=form_factor) if lookup else None
    )
    stated = form_factor if isinstance(form_factor, GpuFormFactor) else None
    return {
        "gpu_raw_name": raw or None,
        **spec_fields(spec, form_factor=stated, vendor=vendor),
        "gpu_memory_gb": memory_gb,
    }


def price_fields(
    amount: Decimal,
    basis: PriceBasis,
    term: RentalTerm = RentalTerm.ON_DEMAND,
    *,
    unit: PriceUnit = PriceUnit.HOUR,
    currency: str = "USD",
) -> OfferFields:
    """The price fields of an offer: ``amount`` in ``currency`` per ``unit`` (an hour unless
    told: a month, the whole term) for one GPU or the whole instance (``basis``), under
    ``term``."""
    return {
        "price_amount": amount,
        "price_currency": currency,
        "price_unit": unit,
        "price_basis": basis,
        "term": term,
    }


def listed_regions(regions: Any, country: Callable[[str], str | None]) -> list[OfferFields]:
    """The :func:`add_per_region` entries of a provider's list of the region names where a type
    can be created now: each non-empty string, with its ``country``; anything but a list is
    none."""
    names = regions if isinstance(regions, list) else []
    return [
        {"region": r, "country": country(r), "available_now": True}
        for r in names
        if isinstance(r, str) and r
    ]


def add_per_region(
    result: ParseResult, ref: str, fields: OfferFields, regions: Sequence[OfferFields]
) -> None:
    """Add one offer per region an instance type is listed in (each entry of ``regions`` holds
    that region's ``region``, ``country``, ``available_now``).

    A type listed in no region is still priced: one region-less offer, ``available_now=False``.
    """
    unlisted: OfferFields = {"available_now": False}
    for region in regions or [unlisted]:
        merged: OfferFields = {**fields, **region}
        result.add(ref, **merged)


def key_headers(
    adapter: Adapter, header: str = "Authorization", scheme: str = "Bearer"
) -> dict[str, str]:
    """JSON request headers carrying the adapter's one key in ``header``.

    ``scheme`` prefixes the key (``"Bearer <key>"``); ``""`` sends the bare key (Shadeform's
    ``X-API-KEY``). A required key that is not configured raises
    :class:`~adapters.base.MissingCredentials`, which skips the provider; an adapter whose
    catalogue is public sends its optional key only where one is configured.
    """
    headers = {"Accept": "application/json"}
    if adapter.credential_names:
        [name] = adapter.credential_names
        key = adapter.require_credentials()[name]
    else:
        [name] = adapter.optional_credential_names
        key = adapter.credentials.get(name) or ""
    if key:
        headers[header] = f"{scheme} {key}" if scheme else key
    return headers
