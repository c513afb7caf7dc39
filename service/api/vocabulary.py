"""The API's one vocabulary: the name of each concept, its deprecated aliases, one time format.

:data:`PARAMETERS` is the table of every name a request may carry (query parameter or
body field) with what it means and its unit; ``docs/api-vocabulary.md`` is written from the
same table and a test walks the OpenAPI document against both. One concept, one name:

- ``gpus``: which GPU models or families (a filter; ``H100`` matches every H100 variant);
  ``gpu_model``: one exact catalog model; ``job_gpus``: how many GPUs the job runs on;
  ``gpu_count`` is only an answer's field (GPUs per instance).
- every price age in hours (``price_age_hours``, ``max_price_age_hours``); durations the
  provider bills in seconds keep ``_s``.
- every time in RFC 3339, UTC, whole seconds, with ``Z`` (:func:`rfc3339`).

An old name stays accepted where clients may use it (:data:`ALIASES`): the answer then
carries a ``Deprecation`` header (RFC 9745), a ``Warning`` header naming the new name, and,
where the answer has ``warnings``, the same sentence there.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated

from pydantic import PlainSerializer
from starlette.datastructures import MutableHeaders

__all__ = [
    "ALIASES",
    "DEPRECATED_SINCE",
    "PARAMETERS",
    "UNDECLARED_ALIASES",
    "UtcTime",
    "deprecation_headers",
    "deprecation_note",
    "document",
    "rfc3339",
]


def rfc3339(when: datetime) -> str:
    """A time as RFC 3339 in UTC, whole seconds, ``Z`` (a naive time is taken as UTC).

    >>> from datetime import timedelta, timezone
    >>> rfc3339(datetime(2026, 12, 1, 10, 30, 5, 123456, tzinfo=timezone(timedelta(hours=1))))
    '2026-12-01T09:30:05Z'
    """
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: A datetime field of an answer model, serialized by :func:`rfc3339`.
UtcTime = Annotated[datetime, PlainSerializer(rfc3339, return_type=str, when_used="json")]

#: Every request name of the API: meaning (and unit). Order: the docs' table.
PARAMETERS: dict[str, str] = {
    # what to rent
    "preset": "a named requirement; other parameters refine it",
    "gpus": "GPU models or families (H100 matches every H100 variant); several allowed",
    "gpu_model": "one exact catalog GPU model (H100-SXM5-80GB)",
    "min_gpus": "fewest GPUs per instance",
    "max_gpus": "most GPUs per instance",
    "min_gpu_memory_gb": "least memory per GPU, GB",
    "min_total_gpu_memory_gb": "least GPU memory per instance, GB",
    "form_factors": "GPU form factors (sxm, pcie...)",
    "nvlink": "GPUs joined by NVLink",
    "min_cpu_cores": "fewest CPU cores per instance",
    "min_cpu_sockets": "fewest CPU sockets per instance",
    "server_cpu": "a server CPU line (Xeon, EPYC...) named in cpu_model",
    "min_vcpus": "fewest vCPUs per instance",
    "min_ram_gb": "least RAM per instance, GB",
    "ram_ecc": "ECC RAM",
    "min_storage_gb": "least storage per instance, GB",
    "storage_types": "storage kinds (nvme, ssd...)",
    "min_disk_bandwidth_mbps": "least disk bandwidth as the provider measures it (Vast.ai: MB/s)",
    "min_bandwidth_down_mbps": "least download bandwidth, Mbit/s",
    "min_bandwidth_up_mbps": "least upload bandwidth, Mbit/s",
    "fabrics": "inter-node fabrics (infiniband, roce...)",
    "min_fabric_gbps": "least inter-node bandwidth per instance, Gbit/s",
    "multi_node": "offers that can be rented as several nodes",
    "min_psu_watts": "least power supply capacity, all PSUs together, W",
    "psu_redundant": "redundant power supplies (2+2, N+1...)",
    "cooling": "cooling kinds",
    "min_chassis_u": "least chassis height, rack units (4U is 4)",
    "os_images": "OS images, any of (Ubuntu 22.04 matches ubuntu-22.04)",
    "min_cuda_version": "least CUDA version stated (12.4 < 12.10)",
    "min_driver_version": "least NVIDIA driver version stated",
    "frameworks": "installed frameworks, any of (pytorch, tensorflow)",
    "backup_service": "the provider offers backup and recovery",
    "regions": "provider regions",
    "countries": "ISO 3166 country codes",
    "providers": "providers to keep",
    "exclude_providers": "providers to leave out",
    "terms": "rental terms (on_demand, spot, commit_1mo...)",
    "max_commitment_hours": "longest commitment, hours",
    "max_usd_per_hour": "highest price per instance-hour, USD",
    "max_usd_per_gpu_hour": "highest price per GPU-hour, USD",
    "min_reliability": "least provider-stated reliability, 0..1",
    "support_tiers": "the provider's support tiers, any of",
    "min_sla_uptime_pct": "least SLA uptime, percent",
    "datacenter_only": "only datacenter hosts (no consumer machines)",
    "available_now": "only offers rentable now",
    "verified_only": "only hosts the provider verified",
    "max_price_age_hours": "oldest price, hours",
    "min_availability": "in stock in this share of the last 7 days' snapshots, 0..1",
    "allow_unknown": "keep offers whose value of a filtered field is not stated",
    # the job
    "hours": "job length, wall-clock hours",
    "gpu_hours": "job size, GPU-hours",
    "model_params": "the model's parameter count (a mixture of experts: its total)",
    "active_params": "a mixture of experts' parameters active per token (its FLOPs)",
    "tokens": "training tokens",
    "job_gpus": "GPUs the job runs on",
    "interruptible_overhead": "extra work from interruptions, fraction",
    "bytes_per_param": "training memory per parameter, bytes",
    "layers": "transformer layers of the model (attention FLOPs, activations)",
    "hidden_size": "model width d (attention FLOPs, activations)",
    "context_tokens": "sequence length in training, tokens",
    "job_storage_gb": "disk GB per instance the job needs (offers' query name)",
    "storage_gb": "disk GB per instance the job needs (a job object's field: job_storage_gb)",
    "egress_gb": "GB the job sends out",
    "allow_ethernet": "let a multi-node job span nodes joined by plain Ethernet",
    "exclude_interruptible": "leave out interruptible (spot, preemptible) terms",
    "min_vcpus_per_gpu": "vCPUs per GPU, at least",
    "min_ram_gb_per_gpu": "system RAM GB per GPU, at least",
    "precision": "arithmetic precision (bf16, fp8...; serving also fp4)",
    # serving a model (/v1/offers?serve=...)
    "serve": "the model to serve, ranked by USD per million tokens (/v1/models lists them)",
    "scenario": "serving: offline (largest batch), server (latency targets), single_stream",
    "tokens_per_day": "serving: output tokens a day (rents as many offers as that needs)",
    "input_tokens": "serving: prompt tokens a request",
    "output_tokens": "serving: output tokens a request",
    "ttft_s": "serving: time to first token, seconds (server scenario)",
    "tpot_s": "serving: time per output token, seconds (server scenario)",
    "mfu": "model FLOPs utilisation, 0..1 (replaces the modelled one)",
    "scaling": "scaling efficiency, 0..1 (replaces the modelled one)",
    "fabric": "fabric an estimate assumes between nodes, over the offers' (with gpu_model)",
    "fabric_gbps_per_gpu": "its bandwidth per GPU, Gbit/s, over the offers' (with gpu_model)",
    "requirement": "which offers qualify (the filters above, as an object)",
    # presentation and paging
    "sort": "order of the answer",
    "limit": "offers in one page",
    "cursor": "the next page (from the previous answer's next)",
    "q": "a free search of the GPU catalog: model, family or vendor",
    "days": "UTC days up to today",
    "interval": "the price index per UTC day or per UTC hour (day | hour)",
    "region_class": "a coarse region of the offers' countries (north-america, europe, china...)",
    "term": "one rental term",
    "wait": "answer when the snapshot is stored",
    "token": "the token of a mailed link",
    # history and subscriptions
    "offer_id": "an offer's id, as in an answer's offers[].id",
    "key": "an offer's key (provider|offer_id|region|term|basis); prefer offer_id",
    "name": "one catalog GPU model, by name; in /v1/catalog/, a file of a catalog version",
    "version": "a published catalog's version: the UTC time it was published (its directory)",
    "email": "the address the digest goes to",
    "job": "the job of a saved search",
    "top": "offers in each digest",
    "time_zone": "IANA time zone the digest's times are shown in",
    # price alerts
    "alert_id": "an alert's id, as the alert's creation answered it",
    "condition": "when an alert fires (kind, metric, threshold or drop)",
    "kind": "below (a threshold), in_stock, or drop (from the 7-day median)",
    "metric": "what a threshold is on: usd_per_gpu_hour, usd_per_effective_tflop_hour, job cost",
    "threshold": "the value at or below which a below-alert fires, in the metric's unit",
    "drop_pct": "the drop from the 7-day median that fires a drop-alert, in %",
    "quiet_minutes": "minutes an alert stays quiet after it fired",
    "webhooks": "URLs an alert's firings are also POSTed to (signed, HMAC-SHA256)",
}

#: Deprecated request names: route path -> {old name: new name}.
ALIASES: dict[str, dict[str, str]] = {
    "/v1/offers": {"params": "model_params"},
    "/v1/history/index": {"gpu": "gpus"},
    "/v1/estimate": {"gpu_count": "job_gpus", "params": "model_params"},
}
#: Aliases accepted but left out of the OpenAPI document: a query parameter named
#: ``params`` breaks clients generated by openapi-python-client (its own query dict).
UNDECLARED_ALIASES: dict[str, frozenset[str]] = {"/v1/offers": frozenset({"params"})}

#: When the aliases were deprecated (the ``Deprecation`` header's date, RFC 9745).
DEPRECATED_SINCE = datetime(2026, 12, 1, tzinfo=UTC)


def deprecation_note(old: str, new: str) -> str:
    return f"parameter {old!r} is deprecated; use {new!r} (see docs/api-vocabulary.md)"


def deprecation_headers(used: Iterable[tuple[str, str]], headers: MutableHeaders) -> None:
    """Mark an answer that was asked with deprecated names ``(old, new)``."""
    notes = [deprecation_note(old, new) for old, new in used]
    if not notes:
        return
    headers["Deprecation"] = f"@{int(DEPRECATED_SINCE.timestamp())}"
    headers["Warning"] = ", ".join(f'299 gpuscout "{n}"' for n in notes)


_DOC_HEAD = """\
# The API's vocabulary

One name per concept on every route of the API, one unit per concept, one time format.
This page is written from `service.api.vocabulary`; a test checks it is current and walks
every route's parameters and body fields in the OpenAPI document against the same table.
To rewrite it: `uv run python -m gpuscout.service.api.vocabulary > docs/api-vocabulary.md`.

## Rules

- `gpus`: which GPU models or families (a filter; `H100` matches every H100 variant).
  `gpu_model`: one exact catalog model. `job_gpus`: how many GPUs the job runs on.
  `gpu_count` is only an answer's field: GPUs per instance. `model_params`: the model's
  parameter count.
- A quantity carries its unit in its name (`usd_per_gpu_hour`, `min_ram_gb`). Every price
  age is in hours (`price_age_hours`, `max_price_age_hours`).
- Every time is RFC 3339 in UTC, whole seconds, with `Z`: `2026-12-01T09:30:05Z`.
- Lists repeat or are comma-separated: `?gpus=H100&gpus=A100` or `?gpus=H100,A100`.
- Each offer has a stable, URL-safe `id`, `links.history` (`/v1/offers/{id}/history`) and
  `links.rent` (the provider's console or launch page for it, else its pricing page).
- `/v1/offers` answers a page: `limit` offers, `count` in this page, `total` qualifying
  configurations in all, `next` (and `links.next`) the cursor of the next page, null on the
  last. A cursor is opaque and belongs to one snapshot and one query (the page size may
  change): one from an older snapshot answers 410 (`urn:gpuscout:problem:cursor-expired`),
  one of another query 422.
- Every error is an RFC 9457 problem (`application/problem+json`) with `type`, `title`,
  `status`, `detail`, `instance`; a validation problem lists each offending parameter in
  `errors` (`parameter`, `in`, `msg`, `loc`, `pointer` for body fields, `did_you_mean` for an
  unknown name). Problem types: `urn:gpuscout:problem:invalid-parameters` (422),
  `body-too-large` (413), `body-too-deep` (400), `rate-limited` (429), `cursor-expired`
  (410); any other is
  `about:blank` with the status phrase as its title.
- `HEAD` answers wherever `GET` does, with the same headers and no body.

## Deprecated names

Still accepted (a preset's former name too, though the OpenAPI document lists only the
current ones); the answer then carries `Deprecation` (RFC 9745), a `Warning` naming the
new name and, where the answer has `warnings`, the same sentence there. `params` on
`/v1/offers` is not declared in the OpenAPI document: a query parameter of that name breaks
clients generated by openapi-python-client.

| route | old name | use |
|---|---|---|
"""


def document() -> str:
    """``docs/api-vocabulary.md``, from :data:`PARAMETERS`, :data:`ALIASES` and the
    presets' former names (:data:`pricing.requirement.PRESET_ALIASES`)."""
    from gpuscout.pricing.requirement import PRESET_ALIASES

    lines = [
        f"| `{path}` | `{old}` | `{new}` |"
        for path, aliases in ALIASES.items()
        for old, new in aliases.items()
    ]
    lines += [
        f"| `/v1/offers` | `preset={old}` | `preset={new}` |" for old, new in PRESET_ALIASES.items()
    ]
    lines += ["", "## Names", "", "| name | meaning |", "|---|---|"]
    lines += [f"| `{name}` | {meaning} |" for name, meaning in PARAMETERS.items()]
    return _DOC_HEAD + "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(document(), end="")
