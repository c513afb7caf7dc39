"""Named unit conversions for parsing provider payloads.

Providers mix MB, MiB, GB and GiB freely; every conversion in an adapter goes through one of
these helpers, so a reader sees which unit the provider used. GB here is the decimal
gigabyte the GPU datasheets and cloud price pages use, except where a name says GiB.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from importlib import resources
from typing import Any

import tenacity

from .base import (
    FailedCall,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
    failed_calls_payload,
    failure_groups,
)
from .schema import HOURS_PER_MONTH

__all__ = [
    "QUERY_KEY",
    "RESPONSE_KEY",
    "CallFailure",
    "cents_to_units",
    "error_code",
    "failure_cause",
    "fresh_retries",
    "gbps_to_mbps",
    "gib_to_gb",
    "google_money_to_decimal",
    "http_status",
    "keep_failures",
    "kib_to_gb",
    "lenient_float",
    "mb_to_gb",
    "mbps_to_gbps",
    "mib_to_gb",
    "nominal_gpu_memory_gb",
    "per_gb_hour_to_per_gb_month",
    "per_gib_hour_to_per_gb_month",
    "positive",
    "positive_decimal",
    "query_payload",
    "read_query_payload",
    "sourced_rows",
    "to_decimal",
    "to_float",
    "unwrapped_response",
    "whole_count",
]

_GIB = 1024**3
_GB = 1000**3


def mb_to_gb(mb: float) -> float:
    """Decimal megabytes to gigabytes."""
    return mb / 1000


def mib_to_gb(mib: float) -> float:
    """Mebibytes (as nvidia-smi reports GPU memory) to decimal gigabytes."""
    return mib * 1024**2 / _GB


def gib_to_gb(gib: float) -> float:
    """Gibibytes to decimal gigabytes."""
    return gib * _GIB / _GB


def kib_to_gb(kib: float) -> float:
    return kib * 1024 / _GB


def mbps_to_gbps(mbps: float) -> float:
    return mbps / 1000


def gbps_to_mbps(gbps: float) -> float:
    """Gigabits per second to megabits per second (link speeds quoted in Gbps)."""
    return gbps * 1000


def to_decimal(value: Any) -> Decimal | None:
    """A price as an exact Decimal from a JSON number or numeric string; None if absent.

    Floats go through ``str`` so that 0.1 stays 0.1. Raises ValueError on garbage.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    try:
        result = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"not a number: {value!r}") from None
    if not result.is_finite():
        raise ValueError(f"not a finite number: {value!r}")
    return result


def to_float(value: Any) -> float | None:
    """A quantity from a JSON number or numeric string; None if absent; ValueError on garbage."""
    dec = to_decimal(value)
    return None if dec is None else float(dec)


def cents_to_units(cents: Any) -> Decimal | None:
    """Hundredths of a currency unit (Lambda's ``price_cents_per_hour``) to units, exactly.

    >>> cents_to_units(2392)
    Decimal('23.92')
    """
    dec = to_decimal(cents)
    return None if dec is None else dec / 100


def nominal_gpu_memory_gb(size: float) -> float:
    """A GPU's memory size as quoted (\"80GB\", \"gpuMemoryGib: 80\"), kept as the nominal figure.

    GPU memory is sold by nominal size: an "80 GB" H100 holds 80 GiB, and providers label that
    same 80 as GB or GiB at random. The GPU catalog keys on the nominal number, so it is kept
    as is rather than converted; this helper names that decision.
    """
    return float(size)


def per_gb_hour_to_per_gb_month(price_per_gb_hour: Decimal) -> Decimal:
    """A storage price per GB-hour to per GB per 730-hour month (the schema's month).

    >>> per_gb_hour_to_per_gb_month(Decimal("0.00005"))
    Decimal('0.03650')
    """
    return price_per_gb_hour * HOURS_PER_MONTH


def per_gib_hour_to_per_gb_month(price_per_gib_hour: Decimal) -> Decimal:
    """A storage price per GiB-hour to per decimal-GB per 730-hour month.

    >>> per_gib_hour_to_per_gb_month(Decimal("0.0001"))
    Decimal('0.06798655')
    """
    per_gb_hour = price_per_gib_hour * Decimal(_GB) / Decimal(_GIB)
    return (per_gb_hour * HOURS_PER_MONTH).quantize(Decimal("0.00000001"))


def google_money_to_decimal(units: Any, nanos: Any) -> Decimal:
    """A ``google.type.Money`` amount (whole ``units`` as a string, ``nanos`` = 1e-9) as Decimal.

    The Cloud Billing Catalog sends ``{"units": "2", "nanos": 933908000}`` for 2.933908;
    either part may be absent (zero). Raises ValueError on garbage or mixed signs.

    >>> google_money_to_decimal("2", 933908000)
    Decimal('2.933908000')
    """
    whole = to_decimal(units) or Decimal(0)
    frac = to_decimal(nanos) or Decimal(0)
    if whole != whole.to_integral_value() or frac != frac.to_integral_value():
        raise ValueError(f"units/nanos must be integers: {units!r}, {nanos!r}")
    if abs(frac) >= 10**9 or (whole > 0 > frac) or (whole < 0 < frac):
        raise ValueError(f"bad nanos {nanos!r} for units {units!r}")
    return whole + frac.scaleb(-9)


def lenient_float(value: Any) -> float | None:
    """An optional quantity; garbage becomes ``None`` (one bad field must not drop an offer)."""
    try:
        return to_float(value)
    except ValueError:
        return None


def whole_count(value: Any) -> int | None:
    """A whole, positive count (``2``, ``2.0`` or ``"2"``), else ``None``."""
    number = lenient_float(value)
    if number is None or number < 1 or number != int(number):
        return None
    return int(number)


def positive(value: float | None) -> float | None:
    """``value`` if it is above zero, else ``None`` (a 0 GB disk means "not published")."""
    return value if value is not None and value > 0 else None


# --- cn clouds ---
# Shared by the Alibaba, Tencent and Mithril adapters. Only ``positive_decimal`` is a number
# helper; the rest is fetch machinery the three had each written (signed calls retried with a
# fresh signature, a response wrapped with its query, failed calls kept as skipped records).
# It belongs in base.py beside failed_calls_payload; it is here only because this branch may
# not edit base.py.


def positive_decimal(value: Any) -> Decimal | None:
    """A price above zero, else ``None``: providers fill a price that does not apply with 0.

    Raises ValueError on garbage, like :func:`to_decimal`.

    >>> positive_decimal("0"), positive_decimal("2.5")
    (None, Decimal('2.5'))
    """
    amount = to_decimal(value)
    return amount if amount is not None and amount > 0 else None


#: Key of gpuscout's own wrapper (lower-case prefix: not a provider response) of a response
#: that does not repeat what was asked: ``{QUERY_KEY: {...}, RESPONSE_KEY: response}``.
QUERY_KEY = "gpuscout_query"
RESPONSE_KEY = "response"


def query_payload(query: Mapping[str, Any], response: Any) -> dict[str, Any]:
    """A response stored beside the query that produced it (plain JSON, so a recorded run
    parses the same as a live one)."""
    return {QUERY_KEY: dict(query), RESPONSE_KEY: response}


def read_query_payload(payload: Mapping[str, Any], provider: str) -> tuple[Mapping[str, Any], Any]:
    """``(query, response)`` of a :func:`query_payload`; a broken wrapper is a format error."""
    query = payload[QUERY_KEY]
    if not isinstance(query, Mapping) or RESPONSE_KEY not in payload:
        raise ResponseFormatError(provider, f"bad {QUERY_KEY} payload")
    return query, payload[RESPONSE_KEY]


def unwrapped_response(provider: str) -> ResponseFormatError:
    """The error for a price response recorded bare: without its query it cannot be placed."""
    return ResponseFormatError(
        provider,
        "a price response without its query (instance type, region): "
        f"wrap it as {{{QUERY_KEY!r}: ..., {RESPONSE_KEY!r}: ...}}",
    )


_HTTP_STATUS = re.compile(r"^HTTP (\d{3})\b")
_JSON_CODE = re.compile(r'"Code"\s*:\s*"([^"]+)"')


def http_status(reason: str) -> int | None:
    """The HTTP status of a failed :func:`~adapters.base.request` (``HTTP 403 from ...``)."""
    status = _HTTP_STATUS.match(reason)
    return int(status.group(1)) if status else None


def error_code(reason: str) -> str | None:
    """The JSON ``"Code"`` in the body excerpt of a failed request, if it has one."""
    code = _JSON_CODE.search(reason)
    return code.group(1) if code else None


def failure_cause(reason: str) -> str:
    """What a failed :func:`~adapters.base.request` says, the same text for every region and
    id (no URL, no request id), so that equal failures group.

    ``request`` reports ``HTTP <status> from <url>: <body>``, ``timeout after <n> attempts:
    <url>``, ``network error on <url>: <detail>`` or ``response from <url> is not JSON``; the
    cause is ``HTTP 403 Forbidden.RAM`` (with the body's JSON ``Code`` when it has one),
    ``timeout``, ``network error`` or ``response is not JSON``.
    """
    status = http_status(reason)
    if status is not None:
        code = error_code(reason)
        return f"HTTP {status} {code}" if code else f"HTTP {status}"
    for start in ("timeout", "network error"):
        if reason.startswith(start):
            return start
    return "response is not JSON" if "is not JSON" in reason else reason


def fresh_retries(
    policy: RetryPolicy,
    *,
    error: Callable[[BaseException], bool] | None = None,
    result: Callable[[Any], bool] | None = None,
) -> tenacity.AsyncRetrying:
    """The policy's attempts and backoff for a call signed anew at each attempt.

    A signature carries a nonce or a timestamp, so the plain resend of
    :func:`~adapters.base.request` cannot retry it. An attempt is tried again when ``error``
    says so of its exception or ``result`` of its result; the last attempt's outcome is
    returned or raised as it is.
    """
    retry: tenacity.retry_base = tenacity.retry_never
    if error is not None:
        retry = tenacity.retry_if_exception(error)
    if result is not None:
        retry = retry | tenacity.retry_if_result(result)
    return tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(max(1, policy.attempts)),
        wait=tenacity.wait_exponential(multiplier=policy.base_wait_s, max=policy.max_wait_s),
        retry=retry,
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        sleep=asyncio.sleep,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class CallFailure:
    """One provider call fetch gave up on: the skipped record it becomes, and how it groups."""

    #: The skipped record parse reports (the ref names what was asked, the reason the cause).
    call: FailedCall
    #: What failed, the same text in every region: the failures group on it.
    cause: str
    #: What was asked, short: ``cn-hangzhou/ecs.gn7i-c8g1.2xlarge/Hour``.
    place: str
    #: Shown once per group (the provider's message); "" for none.
    detail: str = ""


def keep_failures(
    provider: str,
    payloads: Sequence[Any],
    failures: Sequence[CallFailure],
    *,
    calls: int,
    what: str,
    hint: str = "",
) -> list[Any]:
    """``payloads``, and when some calls failed, a warning and their record for parse
    (:func:`~adapters.base.failed_calls_payload`).

    When every call failed (``payloads`` is empty) the provider fails: a
    :class:`~adapters.base.ProviderError` ``all N <what> failed: <causes>`` and ``hint``.
    """
    if not failures:
        return list(payloads)
    summary = failure_groups(
        failures, cause=lambda f: f.cause, place=lambda f: f.place, detail=lambda f: f.detail
    )
    if not payloads:
        raise ProviderError(provider, f"all {len(failures)} {what} failed: {summary}{hint}")
    logging.getLogger(f"gpuscout.adapters.{provider}").warning(
        "%s: %d of %d %s failed, their prices are missing: %s",
        provider,
        len(failures),
        calls,
        what,
        summary,
    )
    return [*payloads, failed_calls_payload([f.call for f in failures])]


def sourced_rows(filename: str, rows: str) -> list[dict[str, Any]]:
    """The ``[[<rows>]]`` entries of the TOML file ``adapters/data/<filename>``.

    Such a file holds a table read from a provider's documentation: a ``[sources]`` table (key
    -> where it was read) and entries that each name their ``source`` (and may ``quote`` it).
    An entry without a known source is a ValueError: every row keeps its source.
    """
    text = resources.files(__package__ or "adapters").joinpath("data", filename).read_text("utf-8")
    table = tomllib.loads(text)
    sources, entries = table.get("sources", {}), table.get(rows)
    if not isinstance(entries, list):
        raise ValueError(f"{filename}: no [[{rows}]] entries")
    for number, entry in enumerate(entries, start=1):
        if entry.get("source") not in sources:
            raise ValueError(f"{filename}: {rows} {number} does not name one of its [sources]")
    return entries
