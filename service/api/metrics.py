"""Prometheus metrics of one API app: requests, latency, cache and snapshot outcomes.

Every app owns its :class:`~prometheus_client.CollectorRegistry`, so two apps in one process
(tests) never share counters. Per-provider figures of the current snapshot are read from the
live state at scrape time (:class:`StateCollector`), so replicas that did not take the
snapshot themselves still report it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from .state import ApiState

__all__ = ["METHOD_LABELS", "ApiMetrics", "MetricsMiddleware", "method_label"]

#: Latency buckets in seconds, dense where the API's targets are (10 ms p50, 50 ms p99).
LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
#: The ``method`` label's values: the methods of RFC 9110 (and PATCH); any other method a
#: client invents is counted as ``other``, so clients cannot grow the label set.
METHOD_LABELS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}
)


def method_label(method: str) -> str:
    """``method`` if it is a standard one, else ``"other"``.

    >>> method_label("GET"), method_label("FOO"), method_label("get")
    ('GET', 'other', 'other')
    """
    return method if method in METHOD_LABELS else "other"


class StateCollector(Collector):
    """Gauges read from the current state: offers loaded, snapshot age, each provider."""

    def __init__(self, get_state: Callable[[], ApiState | None]) -> None:
        self._get_state = get_state

    def collect(self) -> Iterator[Metric]:
        state = self._get_state()
        loaded = GaugeMetricFamily("gpuscout_offers_loaded", "current offers held in memory")
        age = GaugeMetricFamily(
            "gpuscout_snapshot_age_seconds", "age of the current snapshot", labels=["source"]
        )
        offers = GaugeMetricFamily(
            "gpuscout_provider_offers",
            "offers per provider in the current snapshot",
            labels=["provider"],
        )
        outcome = GaugeMetricFamily(
            "gpuscout_provider_last_outcome",
            "1 for each provider's outcome in its last fetch",
            labels=["provider", "outcome"],
        )
        fetch_age = GaugeMetricFamily(
            "gpuscout_provider_fetch_age_seconds",
            "age of each provider's prices",
            labels=["provider"],
        )
        if state is not None:
            loaded.add_metric([], state.frame.height)
            if state.current.snapshot_at is not None:
                age.add_metric([state.current.source], state.age_s(state.current.snapshot_at))
            now = datetime.now(UTC)
            for p in state.current.providers.values():
                offers.add_metric([p.provider], p.offer_count)
                outcome.add_metric([p.provider, p.outcome.value], 1)
                price_age_s = p.price_age_s(now)
                if price_age_s is not None:
                    fetch_age.add_metric([p.provider], price_age_s)
        yield from (loaded, age, offers, outcome, fetch_age)


class ApiMetrics:
    """The metrics of one app, in its own registry."""

    def __init__(self, get_state: Callable[[], ApiState | None]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "gpuscout_http_requests",
            "HTTP requests by method (standard ones, else other), route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "gpuscout_http_request_duration_seconds",
            "time to answer, by route template",
            ["method", "route"],
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self.offers_cache = Counter(
            "gpuscout_offers_cache",
            "ranked-result cache lookups (hit, miss)",
            ["result"],
            registry=self.registry,
        )
        self.snapshot_runs = Counter(
            "gpuscout_snapshot_provider_runs",
            "provider outcomes of snapshots taken by this process",
            ["provider", "outcome"],
            registry=self.registry,
        )
        self.state_refreshes = Counter(
            "gpuscout_state_refreshes",
            "reloads of the in-memory offers (ok, error)",
            ["result"],
            registry=self.registry,
        )
        self.registry.register(StateCollector(get_state))


class MetricsMiddleware:
    """Pure ASGI middleware timing every HTTP request, labelled by its route template."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = (
                scope.get("gpuscout.route")
                or getattr(scope.get("route"), "path", None)
                or "unmatched"
            )
            method = method_label(scope["method"])
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - started)
