"""The renter's checklist (:data:`pricing.checklist.CHECKLIST`) evaluated for offers.

Each item is met, not met or unknown for an offer, with the value behind it. An item with
constraints runs the requirement's own filter (:func:`pricing.expressions.qualifies`)
twice: it is **met** where the offer passes with unknown fields refused, **unknown** where it
passes only when they are admitted (``allow_unknown``), **not met** otherwise. So the
checklist never disagrees with the filter a renter would set, and an unpublished field is
never a pass. An item without constraints is met where the offer states one of its fields.

Evaluated over rows of the offer frame (:data:`pricing.frame.OFFER_SCHEMA`, which holds
every field an item reads), a whole frame at once as a few polars expressions: the API
counts every offer's summary once per snapshot (:attr:`service.api.state.ApiState.
checklist`) and a page fetches its rows' by position; :func:`summaries` finds a ranking's
rows in the frame by their key.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import polars as pl

from .checklist import CHECKLIST, ChecklistItem
from .expressions import qualifies
from .requirement import Requirement

__all__ = [
    "OFFER_KEY_COLUMNS",
    "Check",
    "Checklist",
    "Status",
    "checklists",
    "counts_frame",
    "status_columns",
    "summaries",
    "summary_text",
]

#: The columns of :attr:`adapters.schema.Offer.key`: one frame row each.
OFFER_KEY_COLUMNS: tuple[str, ...] = (
    "provider",
    "offer_id",
    "region",
    "term",
    "price_basis",
    "term_variant",
)
_PREFIX = "check_"


class Status(StrEnum):
    MET = "met"
    NOT_MET = "not met"
    UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True, slots=True)
class Check:
    """One checklist item for one offer: its status and the published value behind it."""

    key: str
    group: str
    item: str
    threshold: str
    status: Status
    value: str
    """the fields behind it as ``name: value``, ``"; "``-separated; "not stated" if none"""


@dataclasses.dataclass(frozen=True, slots=True)
class Checklist:
    """Every item of the renter's checklist for one offer, in the table's order."""

    checks: tuple[Check, ...]

    def count(self, status: Status) -> int:
        return sum(1 for c in self.checks if c.status is status)

    @property
    def summary(self) -> str:
        """``"9 of 18 met, 3 unknown"``."""
        return summary_text(self.count(Status.MET), self.count(Status.UNKNOWN), len(self.checks))

    def counts(self) -> dict[str, Any]:
        """The summary as the answers carry it."""
        return {
            "met": self.count(Status.MET),
            "not_met": self.count(Status.NOT_MET),
            "unknown": self.count(Status.UNKNOWN),
            "items": len(self.checks),
            "summary": self.summary,
        }


def summary_text(met: int, unknown: int, total: int) -> str:
    """How many items an offer meets, and how many it leaves unknown.

    >>> summary_text(9, 3, 18)
    '9 of 18 met, 3 unknown'
    """
    return f"{met} of {total} met" + (f", {unknown} unknown" if unknown else "")


#: Any instant: no item depends on the price's age.
_NOW = datetime(2000, 1, 1, tzinfo=UTC)


def _status(entry: ChecklistItem) -> pl.Expr:
    if not entry.requirement:
        stated = pl.any_horizontal([pl.col(f).is_not_null() for f in entry.fields])
        return (
            pl.when(stated).then(pl.lit(Status.MET.value)).otherwise(pl.lit(Status.UNKNOWN.value))
        )
    strict = qualifies(Requirement.model_validate(dict(entry.requirement)), _NOW)
    lenient = qualifies(
        Requirement.model_validate({**entry.requirement, "allow_unknown": True}), _NOW
    )
    return (
        pl.when(strict.fill_null(False))
        .then(pl.lit(Status.MET.value))
        .when(lenient.fill_null(True))
        .then(pl.lit(Status.UNKNOWN.value))
        .otherwise(pl.lit(Status.NOT_MET.value))
    )


@functools.cache
def status_columns() -> tuple[pl.Expr, ...]:
    """One String column per item, ``check_<key>``: ``met`` / ``not met`` / ``unknown``."""
    return tuple(_status(e).alias(_PREFIX + e.key) for e in CHECKLIST)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(round(value, 2))
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _value(entry: ChecklistItem, row: dict[str, Any]) -> str:
    given = [(f, row[f]) for f in entry.fields if row.get(f) is not None]
    return "; ".join(f"{f}: {_text(v)}" for f, v in given) or "not stated"


def checklists(rows: pl.DataFrame) -> list[Checklist]:
    """The checklist of each row of ``rows`` (offer frame rows), in their order."""
    if rows.is_empty():
        return []
    statuses = rows.select(status_columns())
    out = []
    for row, status in zip(rows.iter_rows(named=True), statuses.iter_rows(named=True), strict=True):
        out.append(
            Checklist(
                tuple(
                    Check(
                        key=e.key,
                        group=e.group,
                        item=e.item,
                        threshold=e.threshold,
                        status=Status(status[_PREFIX + e.key]),
                        value=_value(e, row),
                    )
                    for e in CHECKLIST
                )
            )
        )
    return out


def _keyed(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col("term").cast(pl.String))


def _candidates(frame: pl.DataFrame, picked: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``frame`` that may be ``picked``'s (their offer ids), keyed: a filter
    on one column first, so the join on every key column runs over a few rows only."""
    ids = picked.get_column("offer_id").unique().implode()
    return _keyed(frame.filter(pl.col("offer_id").is_in(ids)))


def counts_frame(rows: pl.DataFrame) -> pl.DataFrame:
    """Per row of ``rows`` (offer frame rows): ``met``, ``not_met``, ``unknown``, ``items``
    and ``summary``, as :meth:`Checklist.counts` gives them, vectorised (the statuses are
    computed once, then counted)."""
    statuses = rows.select(status_columns())

    def tally(status: Status) -> pl.Expr:
        return pl.sum_horizontal(pl.all().eq(status.value).cast(pl.Int64))

    counts = statuses.select(
        met=tally(Status.MET), not_met=tally(Status.NOT_MET), unknown=tally(Status.UNKNOWN)
    )
    head = pl.format(f"{{}} of {len(CHECKLIST)} met", pl.col("met"))
    return counts.with_columns(
        items=pl.lit(len(CHECKLIST), dtype=pl.Int64),
        summary=pl.when(pl.col("unknown") > 0)
        .then(pl.format("{}, {} unknown", head, pl.col("unknown")))
        .otherwise(head),
    )


def summaries(frame: pl.DataFrame, picked: pl.DataFrame) -> pl.Series:
    """The checklist summary of each row of ``picked`` (rows carrying the
    :data:`OFFER_KEY_COLUMNS`), from its row of the offer ``frame``; null where the frame
    lacks it. Vectorised: for a ranking of many configurations."""
    keys = list(OFFER_KEY_COLUMNS)
    wanted = _keyed(picked.select(keys)).with_row_index("_order")
    present = _candidates(frame, picked).with_columns(_present=pl.lit(True))
    joined = wanted.join(present, on=keys, how="left", nulls_equal=True, maintain_order="left")
    joined = joined.sort("_order")
    shown = joined.select("_present").with_columns(counts_frame(joined)["summary"])
    return shown.select(pl.when(pl.col("_present")).then(pl.col("summary")).alias("checklist"))[
        "checklist"
    ]
