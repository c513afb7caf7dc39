"""The mail and the webhook body of one alert firing (pure, given the links).

The mail names the condition that held, the best offer with its factors (the peak TFLOPs
the GPU is credited with, the MFU and scaling that make them effective TFLOPs, the price
per hour, per GPU-hour, per effective TFLOP-hour and the job's cost) and links to the
alert's firing history and to the one-click unsubscribe (also in ``List-Unsubscribe``).
It goes through the digest's mail path (:func:`service.digest.mail.build_list_message`).
"""

from __future__ import annotations

import dataclasses
import html
import json
from datetime import datetime
from email.message import EmailMessage
from typing import Any

from gpuscout.adapters.rent import rent_link
from gpuscout.db.alerts import AlertRow, FiringRow

from ..digest.mail import build_list_message, parse_sender
from ..settings import Settings
from .condition import AlertCondition

__all__ = ["AlertLinks", "alert_message", "describe_condition", "webhook_body"]

_METRIC_WORDS = {
    "usd_per_gpu_hour": "USD per GPU-hour",
    "usd_per_effective_tflop_hour": "USD per effective TFLOP-hour",
    "job_cost_usd": "USD for the job",
    "usd_per_m_tokens": "USD per million output tokens",
}


@dataclasses.dataclass(frozen=True, slots=True)
class AlertLinks:
    history_url: str
    unsubscribe_url: str


def describe_condition(condition: AlertCondition) -> str:
    """One line saying what the alert waits for.

    >>> from decimal import Decimal
    >>> describe_condition(AlertCondition(kind="below", threshold=Decimal("2.20")))
    'USD per GPU-hour at or below 2.20'
    """
    words = _METRIC_WORDS[condition.metric]
    if condition.kind == "below":
        return f"{words} at or below {condition.threshold}"
    if condition.kind == "drop":
        return f"{words} {condition.drop_pct:g}% or more below its 7-day median"
    return "a qualifying offer available now"


def _number(value: Any, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    try:
        return f"{float(value):,.{digits}f}".rstrip("0").rstrip(".")
    except (TypeError, ValueError):
        return str(value)


def _head_lines(offer: dict[str, Any]) -> list[tuple[str, str]]:
    """The lines every firing's offer starts with: what, where, which term, at what price."""
    return [
        (
            "offer",
            f"{offer.get('gpu_count')}x {offer.get('gpu_model')} at {offer.get('provider')}"
            f" ({offer.get('region') or 'any region'}, {offer.get('term')})",
        ),
        ("instance", str(offer.get("instance_name") or offer.get("offer_id"))),
        ("USD per hour", _number(offer.get("usd_per_hour"))),
    ]


def _serve_lines(offer: dict[str, Any]) -> list[tuple[str, str]]:
    """A serving offer's lines: $/Mtok, replicas and batch, and the throughput's source."""
    return [
        *_head_lines(offer),
        ("USD per million output tokens", _number(offer.get("usd_per_m_tokens"))),
        (
            "replicas x GPUs, batch",
            f"{offer.get('replicas')} x {offer.get('gpus_per_replica')}, {offer.get('batch')}",
        ),
        ("throughput", f"{_number(offer.get('tokens_per_s_per_gpu'), 1)} tokens/s per GPU"),
        ("throughput source", str(offer.get("throughput_source"))),
    ]


def _offer_lines(offer: dict[str, Any] | None) -> list[tuple[str, str]]:
    if not offer:
        return [("offer", "none recorded")]
    if "usd_per_m_tokens" in offer:
        return _serve_lines(offer)
    return [
        *_head_lines(offer),
        ("USD per GPU-hour", _number(offer.get("usd_per_gpu_hour"))),
        (
            "effective TFLOPs",
            f"{_number(offer.get('effective_tflops'), 1)}"
            f" (peak {_number(offer.get('peak_tflops'), 1)}"
            f" x MFU {_number(offer.get('mfu'), 3)} x scaling {_number(offer.get('scaling'), 3)})",
        ),
        ("USD per effective TFLOP-hour", _number(offer.get("usd_per_effective_tflop_hour"), 6)),
        ("job cost, USD", _number(offer.get("job_cost_usd"), 2)),
        ("available now", "yes" if offer.get("available_now") else "not stated"),
        ("price fetched at", str(offer.get("fetched_at"))),
    ]


def _rent(offer: dict[str, Any] | None) -> str | None:
    """Where to rent the firing's best offer (:func:`adapters.rent.rent_link`)."""
    if not offer or not offer.get("provider"):
        return None
    return rent_link(
        str(offer["provider"]),
        instance_name=offer.get("instance_name"),
        region=offer.get("region"),
        offer_id=offer.get("offer_id"),
        seller=offer.get("seller"),
    )


def alert_message(
    settings: Settings,
    alert: AlertRow,
    condition: AlertCondition,
    firing: FiringRow,
    links: AlertLinks,
    *,
    message_id: str,
    date: datetime,
) -> EmailMessage:
    """The mail of one firing (text and HTML), with the one-click unsubscribe headers."""
    offer = json.loads(firing.offer_json)
    what = describe_condition(condition)
    value = "" if firing.value is None else f": {_number(firing.value)}"
    subject = f"gpuscout price alert #{alert.id}: {what}{value}"[:150]  # no chosen text
    lines = [("condition", what)]
    if firing.value is not None:
        lines.append(("value now", _number(firing.value)))
    if firing.baseline is not None:
        lines.append(("7-day median", _number(firing.baseline)))
    lines += _offer_lines(offer)
    rent = _rent(offer)
    when = f"#{firing.seq}, {firing.fired_at:%Y-%m-%d %H:%M} UTC"
    text = "\n".join(
        [
            f'Your gpuscout alert "{alert.name}" fired ({when}).',
            "",
            *(f"{k}: {v}" for k, v in lines),
            "",
            *([f"Rent it: {rent}"] if rent else []),
            f"Firing history: {links.history_url}",
            f"Stop this alert: {links.unsubscribe_url}",
        ]
    )
    rows = "".join(
        f'<tr><td style="padding:2px 12px 2px 0;color:#6b7280;">{html.escape(k)}</td>'
        f"<td>{html.escape(v)}</td></tr>"
        for k, v in lines
    )
    rent_html = (
        f'<p><a href="{html.escape(rent, quote=True)}" rel="noopener nofollow">Rent it</a></p>'
        if rent
        else ""
    )
    body = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"></head>'
        '<body style="font-family:Arial,Helvetica,sans-serif;color:#111827;">'
        f"<p>Your gpuscout alert <strong>{html.escape(alert.name)}</strong> fired"
        f" ({html.escape(when)}).</p>"
        f'<table role="presentation" style="font-size:14px;">{rows}</table>{rent_html}'
        f'<p><a href="{html.escape(links.history_url, quote=True)}">Firing history</a> &middot; '
        f'<a href="{html.escape(links.unsubscribe_url, quote=True)}">Stop this alert</a></p>'
        "</body></html>"
    )
    return build_list_message(
        subject=subject,
        text=text,
        html=body,
        sender=parse_sender(settings.mail_from),
        to_email=alert.email,
        message_id=message_id,
        unsubscribe_url=links.unsubscribe_url,
        date=date,
    )


def webhook_body(
    alert: AlertRow, condition: AlertCondition, firing: FiringRow, history_url: str
) -> bytes:
    """The JSON a webhook receives (keys sorted: the signed bytes are reproducible)."""
    payload = {
        "alert_id": alert.id,
        "name": alert.name,
        "firing": firing.seq,
        "fired_at": firing.fired_at.isoformat(),
        "condition": condition.model_dump(mode="json"),
        "value": firing.value,
        "baseline": firing.baseline,
        "offer": json.loads(firing.offer_json),
        "history_url": history_url,
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
