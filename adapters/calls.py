"""What a fetch keeps of the calls it made, for the pure parse step to read back.

Some providers answer a price call without repeating what was asked (Alibaba's DescribePrice,
Mithril's quotes): the response is kept beside its query (:func:`query_payload`). Calls signed
afresh for every attempt (a nonce or a timestamp in the signature) cannot use the plain resend
of :func:`~adapters.base.request`; :func:`fresh_retries` retries them. A call given up on after
its retries becomes a :class:`CallFailure`: its skipped record, and the cause it groups under
in one warning (:func:`keep_failures`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import tenacity

from .base import (
    FailedCall,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
    failed_calls_payload,
)

__all__ = [
    "QUERY_KEY",
    "RESPONSE_KEY",
    "CallFailure",
    "error_code",
    "failure_cause",
    "failure_groups",
    "fresh_retries",
    "gather_limited",
    "http_status",
    "keep_failures",
    "key_rejected",
    "query_payload",
    "read_query_payload",
]

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


_HTTP_STATUS = re.compile(r"^HTTP (\d{3})\b")
_JSON_CODE = re.compile(r"; code (\S+)")


def http_status(reason: str) -> int | None:
    """The HTTP status of a failed :func:`~adapters.base.request` (``HTTP 403 from ...``)."""
    status = _HTTP_STATUS.match(reason)
    return int(status.group(1)) if status else None


def key_rejected(reason: str) -> bool:
    """A failed request the server refused for its credentials: HTTP 401 or 403 (a key that
    is wrong, or lacks the permission)."""
    return http_status(reason) in (401, 403)


def error_code(reason: str) -> str | None:
    """The error code a failed request names (``; code <Code>``, read from the answer's JSON
    ``"Code"`` or XML ``<Code>``), if it has one."""
    code = _JSON_CODE.search(reason)
    return code.group(1) if code else None


def failure_cause(reason: str) -> str:
    """What a failed :func:`~adapters.base.request` says, the same text for every region and
    id (no URL, no request id), so that equal failures group.

    ``request`` reports ``HTTP <status> from <url> (<type>); code <Code>``, ``timeout after
    <n> attempts: <url>``, ``network error on <url>: <detail>`` or ``response from <url> is
    not JSON``; the cause is ``HTTP 403 Forbidden.RAM`` (with the answer's ``Code`` if any),
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


T = TypeVar("T")


async def gather_limited(calls: Iterable[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """The results of ``calls``, in order, with at most ``limit`` under way at once (a provider
    throttles, and one call after another would take minutes where each costs retries).

    A call that raises stops the others (cancelled, not left running behind a failed fetch)
    and its error is raised; a call that may fail alone returns its failure instead.
    """
    gate = asyncio.Semaphore(limit)

    async def gated(call: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await call()

    tasks = [asyncio.create_task(gated(call)) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


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


#: Places named per cause in :func:`failure_groups`; the rest are "...".
MAX_NAMED = 6


def failure_groups(failures: Sequence[CallFailure]) -> str:
    """``cause (detail) in N [place, ...]; ...``: one line for a log warning or an error.

    Failures are grouped by ``cause`` in order of first appearance; each group shows the
    ``detail`` of its first failure (when not empty) and names at most :data:`MAX_NAMED`
    places.
    """
    groups: dict[str, list[CallFailure]] = {}
    for failure in failures:
        groups.setdefault(failure.cause, []).append(failure)
    parts = []
    for key, group in groups.items():
        names = [f.place for f in group[:MAX_NAMED]]
        if len(group) > MAX_NAMED:
            names.append("...")
        text = group[0].detail
        parts.append(f"{key}{f' ({text})' if text else ''} in {len(group)} [{', '.join(names)}]")
    return "; ".join(parts)


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
    summary = failure_groups(failures)
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
