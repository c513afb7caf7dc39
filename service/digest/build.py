"""The digest of one subscription, built by one pure function: :func:`build_digest`.

Everything it needs comes in as arguments (the current offers, the week's changes, the
price index, which providers are stale, the links, and ``now``), so the same input always
gives the same subject, HTML, text and chart, and tests need neither a database nor a clock.
Gathering those inputs and sending the result live elsewhere (:mod:`.delivery`, :mod:`.mail`).

The HTML is for mail clients: tables and inline styles only, no external CSS, scripts or
images (the chart is a ``cid:`` part of the same message). Both templates are Jinja2 with
autoescaping on for HTML, so nothing a subscriber typed can become markup.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import jinja2
import polars as pl

from gpuscout.adapters.rent import rent_link
from gpuscout.adapters.schema import Offer
from gpuscout.db.history import HistoryLabel, PriceChange, WeekOverWeek
from gpuscout.pricing import Job, RankOptions, Requirement, rank
from gpuscout.pricing.display import provider_label
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.pricing.offer_checklist import summaries
from gpuscout.pricing.serve_rank import ServeRequest, rank_serving

from .chart import IndexPoint, render_price_chart
from .saved_search import service_hours

__all__ = [
    "SAMPLE_SUBJECT_MARK",
    "Confirmation",
    "Digest",
    "DigestLinks",
    "StaleProvider",
    "SubscriptionView",
    "build_confirmation",
    "build_digest",
    "chart_content_id",
    "describe_job",
    "describe_requirement",
]

#: Rows shown per change section (cheaper, dearer, new, gone).
CHANGES_PER_SECTION = 8
#: What the subject of a digest built on sample prices starts with.
SAMPLE_SUBJECT_MARK = "[sample prices] "


@dataclasses.dataclass(frozen=True, slots=True)
class SubscriptionView:
    """What the digest needs to know about a subscription."""

    id: int
    name: str
    email: str
    requirement: Requirement
    job: Job
    time_zone: str = "UTC"
    serve: ServeRequest | None = None
    """a serving search: the top rows are ranked by USD per million tokens"""


@dataclasses.dataclass(frozen=True, slots=True)
class StaleProvider:
    """A provider whose latest fetch failed: its offers are from ``fetched_at``."""

    provider: str
    fetched_at: datetime | None
    error: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class DigestLinks:
    unsubscribe_url: str
    home_url: str


@dataclasses.dataclass(frozen=True, slots=True)
class Digest:
    """One rendered digest; ``html`` refers to the chart as ``cid:<chart_cid>``."""

    subject: str
    html: str
    text: str
    chart_png: bytes
    chart_cid: str
    week: str


@dataclasses.dataclass(frozen=True, slots=True)
class Confirmation:
    """The double opt-in mail."""

    subject: str
    html: str
    text: str


# --- helpers the templates use ------------------------------------------------------------


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gpuscout.service.digest", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default=False),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["usd"] = _usd
    env.filters["pct"] = _pct
    return env


def _usd(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    number = float(value)
    if 0 < abs(number) < 0.1 and digits <= 2:
        digits = 4
    return f"${number:,.{digits}f}"


def _pct(ratio: float | None) -> str:
    return "–" if ratio is None else f"{ratio * 100:+.1f}%"


_UNSAFE = re.compile(r"[\x00-\x1f\x7f]+")


def _one_line(text: str, limit: int = 80) -> str:
    """``text`` without control characters, on one line, at most ``limit`` characters."""
    clean = " ".join(_UNSAFE.sub(" ", text).split())
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def describe_requirement(requirement: Requirement) -> str:
    """The constraints that are set, as ``name=value`` pairs ("any offer" if none)."""
    data = requirement.model_dump(mode="json", exclude_defaults=True)
    parts = []
    for name, value in data.items():
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        parts.append(f"{name}={shown}")
    return "; ".join(parts) or "any offer"


def describe_job(job: Job) -> str:
    """A job in words, e.g. ``100 h on 8 GPUs`` or ``training 7e+09 params x 2e+12 tokens``."""
    if job.hours is not None:
        text = f"{job.hours:g} h"
    elif job.gpu_hours is not None:
        text = f"{job.gpu_hours:g} GPU-hours"
    else:
        text = f"training {job.params:.3g} params × {job.tokens:.3g} tokens"
    return text + (f" on {job.gpus} GPUs" if job.gpus else "")


def iso_week_label(moment: datetime) -> str:
    """``YYYY-Www`` of ``moment`` in its own time zone (ISO 8601 week)."""
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def chart_content_id(subscription_id: int, week: str) -> str:
    """The chart's Content-ID (without angle brackets), unique per subscription and week."""
    return f"price-chart.{subscription_id}.{week}@gpuscout"


def _offer_label(offer: Offer) -> str:
    gpu = offer.gpu_model or offer.gpu_raw_name or "?"
    return f"{offer.gpus:g}× {gpu}"


def _where(
    provider: str,
    offer_id: str,
    region: str | None,
    instance_name: str | None,
    seller: str | None = None,
) -> dict[str, Any]:
    """A row's offer id, region and the link to rent it, as every table of the mail shows them."""
    rent = rent_link(
        provider, instance_name=instance_name, region=region, offer_id=offer_id, seller=seller
    )
    return {"offer_id": offer_id, "region": region or "–", "rent": rent}


def _change_rows(changes: Sequence[PriceChange]) -> list[dict[str, Any]]:
    rows = []
    for change in changes[:CHANGES_PER_SECTION]:
        offer = change.offer
        rows.append(
            {
                "provider": provider_label(offer.provider, offer.seller),
                **_where(
                    offer.provider, offer.offer_id, offer.region, offer.instance_name, offer.seller
                ),
                "gpu": _offer_label(offer),
                "term": offer.term.value,
                "old": change.old_usd_per_hour,
                "new": change.new_usd_per_hour,
                "ratio": change.change_ratio,
            }
        )
    return rows


def _top_rows(
    ranked: pl.DataFrame, checklist: Sequence[str | None], stale: set[str], sample: set[str]
) -> list[dict[str, Any]]:
    rows = []
    for r, summary in zip(ranked.iter_rows(named=True), checklist, strict=True):
        rows.append(
            {
                "rank": r["rank"],
                "provider": provider_label(r["provider"], r["seller"]),
                **_where(
                    r["provider"], r["offer_id"], r["region"], r["instance_name"], r["seller"]
                ),
                "gpu": f"{r['gpus']:g}× {r['gpu_model'] or '?'}",
                "term": str(r["term"]),
                "usd_per_hour": r["usd_per_hour"],
                "usd_per_effective_tflop_hour": r["usd_per_effective_tflop_hour"],
                "job_cost_usd": r["job_cost_usd"],
                "all_in_cost_usd": r["all_in_cost_usd"],
                "caveats": r["caveats"],
                "checklist": summary,
                "stale": r["provider"] in stale,
                "sample": r["provider"] in sample,
            }
        )
    return rows


def _serve_rows(ranked: pl.DataFrame, stale: set[str], sample: set[str]) -> list[dict[str, Any]]:
    """A serving search's top rows: $/Mtok, replicas and batch, the throughput's source."""
    return [
        {
            "rank": r["rank"],
            "provider": r["provider"],
            **_where(r["provider"], r["offer_id"], r["region"], r["instance_name"]),
            "gpu": f"{r['gpu_count']}× {r['gpu_model'] or '?'}",
            "term": str(r["term"]),
            "usd_per_hour": r["usd_per_hour"],
            "usd_per_m_tokens": r["usd_per_m_tokens"],
            "usd_per_m_tokens_at_demand": r["usd_per_m_tokens_at_demand"],
            "replicas": f"{r['replicas']} × {r['gpus_per_replica']} GPU",
            "batch": r["batch"],
            "throughput_source": r["throughput_source"],
            "caveats": r["restart_risk"],
            "checklist": None,
            "stale": r["provider"] in stale,
            "sample": r["provider"] in sample,
        }
        for r in ranked.iter_rows(named=True)
    ]


def describe_serve(serve: ServeRequest) -> str:
    """One line naming what a serving search serves, e.g. ``llama-3.1-70b, fp8, offline``."""
    demand = f", {serve.tokens_per_day:g} tokens/day" if serve.tokens_per_day else ""
    return f"{serve.serve}, {serve.precision.value}, {serve.scenario.value}{demand}"


def _age(now: datetime, then: datetime | None) -> str:
    if then is None:
        return "never fetched"
    hours = (now - then).total_seconds() / 3600
    return f"{hours:.0f} h old" if hours < 48 else f"{hours / 24:.0f} days old"


# --- the builders -------------------------------------------------------------------------


def build_digest(
    subscription: SubscriptionView,
    offers: pl.DataFrame,
    *,
    changes: WeekOverWeek | None,
    price_index: Sequence[IndexPoint],
    price_index_label: HistoryLabel | None = None,
    stale_providers: Sequence[StaleProvider],
    links: DigestLinks,
    now: datetime,
    top: int = 10,
    source_note: str | None = None,
    sample_note: str | None = None,
    sample_providers: Sequence[str] = (),
    fx_note: str | None = None,
) -> Digest:
    """Render the weekly digest of ``subscription`` as of ``now`` (timezone-aware).

    ``offers`` are today's offers as a frame (:attr:`db.current.CurrentState.frame`),
    ranked here with the subscription's requirement and job; ``changes`` the week-over-week
    changes already filtered by that requirement; ``price_index`` the daily index of the GPU
    models involved, ``price_index_label`` where its prices come from (a chart counting
    sample prices says so in its title and section; ``None``: all live). Pure: no I/O, no clock.

    ``sample_note`` (set when some offers are the offline sample's recorded prices, as
    :attr:`db.current.CurrentState.note` gives it) is the mail's first line and marks the
    subject (:data:`SAMPLE_SUBJECT_MARK`); the offers of ``sample_providers`` are marked
    "(sample)". ``fx_note`` names the FX table non-USD prices were converted with.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    local_now = now.astimezone(ZoneInfo(subscription.time_zone))
    week = iso_week_label(local_now)
    options = RankOptions(limit=top, now=now)
    if not isinstance(offers, pl.DataFrame):  # Offer objects (tests, one-off digests)
        offers = offers_to_frame(offers)
    stale_names = {s.provider for s in stale_providers}
    serve = subscription.serve
    if serve is None:
        ranked = rank(offers, subscription.requirement, subscription.job, options)
        checklist = summaries(offers, ranked).to_list()  # the renter's checklist, counted
        top_rows = _top_rows(ranked, checklist, stale_names, set(sample_providers))
    else:
        hours = service_hours(subscription.job)
        served = rank_serving(offers, serve, subscription.requirement, hours, now).rows
        top_rows = _serve_rows(served.head(top), stale_names, set(sample_providers))
    name = _one_line(subscription.name, 60)
    best = top_rows[0] if top_rows else None
    if best is not None and serve is not None:
        headline = (
            f"best {best['gpu']} {_usd(best['usd_per_m_tokens'], 4)}/Mtok "
            f"({best['provider']}, {best['term']})"
        )
    elif best is not None:
        headline = (
            f"best {best['gpu']} {_usd(best['usd_per_hour'])}/h "
            f"({best['provider']}, {best['term']})"
        )
    else:
        headline = "no offer meets your requirement"
    marker = SAMPLE_SUBJECT_MARK if sample_note else ""
    # no text the subscriber chose goes into a Subject (the name is in the body)
    subject = _one_line(f"{marker}gpuscout {week}: {headline}", 150)
    empty = WeekOverWeek(now - timedelta(days=7), now, [], [], [], [])
    wow = changes or empty
    sections = [
        ("cheaper", "Cheaper", _change_rows(wow.cheaper), len(wow.cheaper)),
        ("dearer", "Dearer", _change_rows(wow.dearer), len(wow.dearer)),
        ("new", "New", _change_rows(wow.new), len(wow.new)),
        ("gone", "Gone", _change_rows(wow.gone), len(wow.gone)),
    ]
    models = sorted({p.gpu_model for p in price_index})
    index_label = price_index_label or HistoryLabel()
    caption = index_label.caption
    chart_png = render_price_chart(
        price_index,
        title="Median USD per GPU-hour, "
        + (", ".join(models) if models else "no data")
        + (f"\n({caption})" if caption else ""),
    )
    chart_cid = chart_content_id(subscription.id, week)
    context = {
        "name": name,
        "week": week,
        "generated": local_now.strftime("%Y-%m-%d %H:%M %Z"),
        "requirement": describe_requirement(subscription.requirement),
        "job": describe_job(subscription.job),
        "serve": None if serve is None else describe_serve(serve),
        "top": top_rows,
        "sections": sections,
        "has_changes": any(count for *_, count in sections),
        "since": wow.since.astimezone(local_now.tzinfo).strftime("%Y-%m-%d"),
        "chart_cid": chart_cid,
        "chart_models": models,
        "chart_caption": caption,
        "chart_note": index_label.note,
        "stale": [
            {"provider": s.provider, "age": _age(now, s.fetched_at), "error": s.error}
            for s in sorted(stale_providers, key=lambda s: s.provider)
        ],
        "links": links,
        "source_note": None if source_note == sample_note else source_note,
        "sample_note": sample_note,
        "fx_note": fx_note,
        "subject": subject,
    }
    env = _environment()
    html = env.get_template("digest.html").render(context)
    text = env.get_template("digest.txt").render(context)
    return Digest(subject, html, text, chart_png, chart_cid, week)


def build_confirmation(
    subscription: SubscriptionView, *, confirm_url: str, alert: str | None = None
) -> Confirmation:
    """The mail asking the address owner to confirm the subscription (double opt-in).

    ``alert``: the subscription is a price alert waiting for that (one line), not a digest.
    """
    name = _one_line(subscription.name, 60)
    schedule = (
        f"Sent on your local schedule ({subscription.time_zone})."
        if alert is None
        else f"Sent when it fires: {_one_line(alert, 200)}."
    )
    context = {
        "name": name,
        "requirement": describe_requirement(subscription.requirement),
        "job": describe_job(subscription.job),
        "confirm_url": confirm_url,
        "what": "weekly digest" if alert is None else "price alert",
        "schedule": schedule,
    }
    env = _environment()
    return Confirmation(
        # no text the requester chose in the Subject: a stranger's address may be given
        subject=f"Confirm your gpuscout {'digest' if alert is None else 'price alert'}",
        html=env.get_template("confirm.html").render(context),
        text=env.get_template("confirm.txt").render(context),
    )
