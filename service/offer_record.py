"""One offer for its page, the API's detail and ``gpuscout offer``: the fields the provider
published, its rows in the frame, the renter's checklist for it and how often it was in
stock.

The ranking's frame holds the fields it ranks by; the page shows every field of the
:class:`~adapters.schema.Offer` the provider filled in. Those come from the stored record
(``current_offer.record``) when the app has a database, from the replayed sample when the
state is the sample, and otherwise from the frame's columns (a subset, said so on the page).
"""

from __future__ import annotations

import functools
import json
from datetime import datetime
from typing import Any, Literal

import polars as pl
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from gpuscout.adapters.schema import FIELD_GROUPS, Offer
from gpuscout.pricing import expressions as ex
from gpuscout.pricing.display import for_display
from gpuscout.pricing.frame import CONFIG_KEYS
from gpuscout.pricing.offer_checklist import Checklist, checklists

__all__ = [
    "RecordSource",
    "checklist_of",
    "detail_parts",
    "frame_key",
    "grouped_fields",
    "published_record",
    "terms_of",
]

RecordSource = Literal["database", "sample", "frame"]


def frame_key() -> pl.Expr:
    """:attr:`Offer.key` of each frame row, as a polars expression."""
    base = pl.concat_str(
        [
            pl.col("provider"),
            pl.col("offer_id"),
            pl.col("region").fill_null(""),
            pl.col("term").cast(pl.String),
            pl.col("price_basis"),
        ],
        separator="|",
    )
    return (
        pl.when(pl.col("term_variant").is_null())
        .then(base)
        .otherwise(pl.concat_str([base, pl.col("term_variant")], separator="|"))
    )


@functools.lru_cache(maxsize=1)
def _sample_records() -> dict[str, dict[str, Any]]:
    from gpuscout.adapters.sample import replay_sample

    return {
        o.key: o.model_dump(mode="json", exclude_none=True)
        for run in replay_sample()
        for o in run.offers
    }


#: The frame's USD columns of extras priced per hour or per GB, and the offer field each
#: comes from: the same figure for an offer priced in USD (:data:`pricing.frame._EXTRA_PRICES`).
_USD_EXTRAS = {
    "ipv4_usd_per_hour": "ipv4_price_per_hour",
    "boot_disk_usd_per_hour": "boot_disk_price_per_hour",
    "egress_usd_per_gb": "egress_price_per_gb",
}


def published_record(
    key: str, row: dict[str, Any], *, source: str, engine: Any
) -> tuple[dict[str, Any], RecordSource]:
    """The fields published for the offer ``key`` (its frame ``row`` as the last resort)."""
    if source == "database" and isinstance(engine, Engine):
        from gpuscout.db.models import CurrentOffer

        table = CurrentOffer.__table__
        with engine.connect() as connection:
            text = connection.execute(
                sa.select(table.c.record).where(table.c.offer_key == key)
            ).scalar_one_or_none()
        if text is not None:
            record: dict[str, Any] = json.loads(text)
            record.setdefault("fetched_at", row["fetched_at"].isoformat())
            return record, "database"
    if source == "sample":
        found = _sample_records().get(key)
        if found is not None:
            return found, "sample"
    fields = set(Offer.model_fields)
    plain = {
        k: (v.isoformat() if hasattr(v, "isoformat") else str(v) if k == "price_amount" else v)
        for k, v in row.items()
        if k in fields and v is not None
    }
    if row.get("price_currency") == "USD":  # the frame's USD extras are the published ones
        for column, field in _USD_EXTRAS.items():
            if row.get(column) is not None:
                plain.setdefault(field, row[column])
    return plain, "frame"


def availability_shares(
    engine: Any, key: str, now: datetime, *, source: str
) -> list[dict[str, Any]]:
    """The offer's availability over each window (:func:`db.availability.availability`),
    oldest window last; none unless the offers are the database's (``source``)."""
    if source != "database" or not isinstance(engine, Engine):
        return []
    from gpuscout.db.availability import availability

    with engine.connect() as connection:
        frame = availability(connection, now, keys=[key])
    return frame.drop("offer_key", "gpu_model").sort("days").to_dicts()


def grouped_fields(record: dict[str, Any]) -> list[tuple[str, list[tuple[str, Any]], list[str]]]:
    """Per group: the published (name, value) pairs, and the names left unpublished."""
    out = []
    for group, names in FIELD_GROUPS.items():
        given = [(n, record[n]) for n in names if record.get(n) not in (None, "", [])]
        missing = [n for n in names if record.get(n) in (None, "", [])]
        out.append((group, given, missing))
    return out


def terms_of(frame: pl.DataFrame, key: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The frame row of ``key``, and every term of its configuration side by side.

    Each term's break-even against this configuration's on-demand price is
    :func:`pricing.expressions.break_even_hours`, as in the ranking. Each carries the
    instance's effective TFLOPs at BF16 (its GPUs' peak x the modelled MFU x the scaling
    within it, as the ranking credits one node: :func:`pricing.rank.costed_plan`) and its
    hourly rate per effective TFLOP-hour, the ranking's key without a job's billing (a
    commitment's whole periods, a minimum rental) or extras; null where the GPU has no
    figure to rank by.
    """
    hit = frame.filter(frame_key() == key)
    if hit.is_empty():
        return None, []
    row = hit.row(0, named=True)
    same = pl.all_horizontal([pl.col(c).eq_missing(row[c]) for c in CONFIG_KEYS])
    on_demand = pl.col("usd_per_hour").filter(pl.col("term") == "on_demand").min()
    terms = (
        frame.filter(same)
        .with_columns(on_demand_usd_per_hour=on_demand, key=frame_key())
        .with_columns(
            usd_per_gpu_hour=ex.usd_per_gpu_hour(),
            break_even_hours=ex.break_even_hours(),
        )
        .sort("term", "usd_per_hour")
    )
    return row, for_display(_with_effective_tflops(terms)).to_dicts()


def _with_effective_tflops(terms: pl.DataFrame) -> pl.DataFrame:
    """``terms`` with ``effective_tflops`` (one instance, BF16) and ``usd_per_effective_
    tflop_hour`` at each term's hourly rate (see :func:`terms_of`)."""
    from gpuscout.pricing.rank import costed_plan  # the ranking's own costing, for these rows only

    # one costed row per term row (an offer key is its configuration, term and variant)
    credited = (
        costed_plan(terms.drop("key"), require_fit=False)
        .select("config_id", "term", "term_variant", "effective_tflops")
        .collect()
    )
    return terms.join(
        credited, on=["config_id", "term", "term_variant"], how="left", nulls_equal=True
    ).with_columns(usd_per_effective_tflop_hour=pl.col("usd_per_hour") / pl.col("effective_tflops"))


def checklist_of(frame: pl.DataFrame, key: str) -> Checklist | None:
    """The renter's checklist for the current offer ``key`` (None: no such offer)."""
    found = checklists(frame.filter(frame_key() == key).head(1))
    return found[0] if found else None


def detail_parts(record: dict[str, Any], checklist: Checklist) -> dict[str, Any]:
    """The ``fields`` (by group) and ``checklist`` of the API's offer detail
    (:class:`service.api.answer_schema.OfferDetail`), for the API and ``gpuscout offer``."""
    return {
        "fields": [
            {"group": group, "fields": dict(given), "not_published": missing}
            for group, given, missing in grouped_fields(record)
        ],
        "checklist": {
            **checklist.counts(),
            "checks": [
                {
                    "key": c.key,
                    "group": c.group,
                    "item": c.item,
                    "threshold": c.threshold,
                    "status": c.status.value,
                    "value": c.value,
                }
                for c in checklist.checks
            ],
        },
    }
