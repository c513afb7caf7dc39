"""What a ranking leaves out, and why: every offer a query would want that it cannot rank.

An offer is ranked when its GPU is a catalog model with a figure to rank by (the datasheet's,
one derived by a documented rule, or a visible fallback to a wider precision; see
:meth:`adapters.gpus.GpuSpec.figure`). The rest are named here with their reason, so that no
offer drops silently: users asking for H100s should still hear that a provider's unknown
``"H100 Tensor"`` exists and was left out.

* :data:`UNIDENTIFIED`: no catalog model (the catalog does not guess between parts); the
  requirement's GPU names are matched against the raw names loosely (``H100`` finds
  ``nvidia_h100`` and ``H100 80GB``);
* :data:`NOT_IN_CATALOG`: a model name the catalog does not hold (stored by an older catalog);
* :data:`NO_FIGURE`: a catalog model without any figure at the precision or a wider one.

Every other constraint of the requirement applies as in the ranking, a fact the offer does not
state counting as met (its GPU is unknown, so are the facts the catalog would add).

Given the job, the configurations the ranking could rank but cannot place the job on are
listed too, one group per reason of :func:`pricing.expressions.placement_reason` (no
declared multi-node capability or fabric, plain Ethernet not allowed, more nodes than
available, the model does not fit one GPU, preempted faster than it progresses), counted
in configurations: a 512-GPU job on the sample hears how many 1-GPU VMs have no fabric.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

import polars as pl

from adapters.gpus import Precision

from .expressions import PLACEMENT_REASONS, peak_tflops, qualifies
from .frame import catalog_frame
from .job import Job
from .rank import RankOptions, placement_plan
from .requirement import Requirement

__all__ = [
    "NOT_IN_CATALOG",
    "NO_FIGURE",
    "UNIDENTIFIED",
    "Unrankable",
    "binding_constraints",
    "binding_note",
    "left_out",
    "left_out_note",
    "note_of",
]

UNIDENTIFIED = "GPU not identified"
NOT_IN_CATALOG = "GPU model not in the catalog"
NO_FIGURE = "no TFLOPs figure at this or a wider precision"

#: What loose matching ignores: case, and everything but letters and digits.
_NOT_ALNUM = r"[^0-9a-z]"

_CATALOG_COLUMNS = ("catalog_memory_gb", "catalog_form_factor", "form_factor_varies")


def _squash(text: str) -> str:
    return re.sub(_NOT_ALNUM, "", text.lower())


def _loosely_named(req: Requirement) -> pl.Expr:
    """The raw name (or, failing that, the stored model name) contains a wanted GPU name;
    reads the ``squashed_name`` column :class:`Unrankable` adds."""
    wanted = [w for w in (_squash(g) for g in req.gpus) if w]
    if not wanted:
        return pl.lit(True)
    squashed = pl.col(_SQUASHED)
    return pl.any_horizontal([squashed.str.contains(w, literal=True) for w in wanted])


_SQUASHED = "squashed_name"
_IN_CATALOG = pl.col("form_factor_varies").is_not_null()


class Unrankable:
    """The offers of one frame no ranking can rank at some precision, found once per frame.

    Whether an offer's GPU is a catalog model with a figure does not depend on the query,
    so the API finds these rows once per snapshot (:class:`service.api.state.ApiState`)
    and each query filters only them: on 100k offers the loose name match over every raw
    GPU name was most of a query's time (the filters around it run on all rows, the
    lowercase-and-regex pass with them). Holds the offers whose GPU is not in the catalog
    (with a raw name or a model name) or lacks a figure at some precision, with their
    catalog columns, each precision's peak (``peak_<p>``) and the squashed name.
    """

    __slots__ = ("rows",)

    def __init__(self, frame: pl.DataFrame) -> None:
        peaks = {f"peak_{p.value}": peak_tflops(p) for p in Precision}
        catalog = catalog_frame().select("gpu_model", *_CATALOG_COLUMNS, **peaks)
        named = pl.col("gpu_raw_name").is_not_null() | pl.col("gpu_model").is_not_null()
        lacking = pl.any_horizontal([pl.col(c).is_null() for c in peaks])
        name = pl.coalesce(pl.col("gpu_raw_name"), pl.col("gpu_model"))
        self.rows: pl.DataFrame = (
            frame.lazy()
            .join(catalog.lazy(), on="gpu_model", how="left")
            .filter((~_IN_CATALOG & named) | (_IN_CATALOG & lacking))
            .with_columns(name.str.to_lowercase().str.replace_all(_NOT_ALNUM, "").alias(_SQUASHED))
            .collect()
        )


def left_out(
    frame: pl.DataFrame,
    requirement: Requirement | None = None,
    now: datetime | None = None,
    *,
    precision: Precision = Precision.BF16,
    job: Job | None = None,
    unrankable: Unrankable | None = None,
) -> pl.DataFrame:
    """Offers ``requirement`` would want that a ranking at ``precision`` cannot rank: one row
    per (provider, raw GPU name, model, reason) with its number of offers, most first. With
    ``job``, also the configurations it cannot be placed on, by placement reason.

    ``unrankable`` is ``frame``'s, when the caller keeps it (found here otherwise)."""
    req = requirement or Requirement()
    at = now or datetime.now(UTC)
    rows = (unrankable or Unrankable(frame)).rows.lazy()
    unknown_gpu = req.model_copy(update={"gpus": (), "allow_unknown": True})
    blank = [pl.lit(None, dtype=pl.Float64).alias("catalog_memory_gb")]
    blank += [pl.lit(None, dtype=pl.String).alias("catalog_form_factor")]
    blank += [pl.lit(None, dtype=pl.Boolean).alias("form_factor_varies")]
    not_known = (
        rows.filter(~_IN_CATALOG)
        .with_columns(blank)
        .filter(qualifies(unknown_gpu, at) & _loosely_named(req))
        .with_columns(
            reason=pl.when(pl.col("gpu_model").is_null())
            .then(pl.lit(UNIDENTIFIED))
            .otherwise(pl.lit(NOT_IN_CATALOG))
        )
    )
    no_figure = (
        rows.filter(_IN_CATALOG & pl.col(f"peak_{precision.value}").is_null())
        .filter(qualifies(req, at))
        .with_columns(reason=pl.lit(NO_FIGURE))
    )
    keys = ["provider", "gpu_raw_name", "gpu_model", "reason"]
    parts = [not_known.select(keys), no_figure.select(keys)]
    if job is not None:
        options = RankOptions(precision=precision, now=at, limit=None)
        placed = placement_plan(frame, req, job, options).select(
            "config_id", "term", "provider", "gpu_raw_name", "gpu_model", "placement_reason"
        )
        # a configuration is left out when none of its rows can be placed: only those with
        # some row that cannot are grouped (most jobs fit almost everywhere: few rows)
        placed = placed.cache()
        refused = placed.filter(pl.col("placement_reason").is_not_null()).select("config_id")
        placed_reasons = (
            placed.join(refused.unique(), on="config_id", how="semi")
            .group_by("config_id")
            .agg(
                pl.col("provider").first(),
                pl.col("gpu_raw_name").first(),
                pl.col("gpu_model").first(),
                reason=pl.col("placement_reason").sort_by("term").first(),
                placed=pl.col("placement_reason").is_null().any(),
            )
            .filter(~pl.col("placed"))
            .select(keys)
        )
        parts.append(placed_reasons)
    return (
        pl.concat(parts)
        .group_by(keys)
        .agg(offers=pl.len())
        .sort(["offers", *keys], descending=[True, False, False, False, False], nulls_last=True)
        .collect()
    )


def left_out_note(
    frame: pl.DataFrame,
    requirement: Requirement | None = None,
    now: datetime | None = None,
    *,
    precision: Precision = Precision.BF16,
    job: Job | None = None,
) -> str | None:
    """One line for people naming every offer :func:`left_out` lists, with its reason (with
    ``job``: the configurations it cannot be placed on, by reason and count)."""
    return note_of(left_out(frame, requirement, now, precision=precision, job=job))


def note_of(left: pl.DataFrame) -> str | None:
    """:func:`left_out_note` of a :func:`left_out` table already at hand."""
    if left.is_empty():
        return None
    placing = pl.col("reason").is_in(PLACEMENT_REASONS)
    lines = []
    gaps = left.filter(~placing)
    if not gaps.is_empty():
        parts = []
        for provider, raw, model, reason, n in gaps.iter_rows():
            name = raw if raw is not None else model
            parts.append(f"{name!r} ({provider}, {n}: {reason})")
        lines.append(f"{int(gaps['offers'].sum())} offer(s) not ranked: " + ", ".join(parts))
    unplaced = (
        left.filter(placing)
        .group_by("reason")
        .agg(pl.col("offers").sum(), pl.col("provider").unique().sort())
        .sort(["offers", "reason"], descending=[True, False])
    )
    if not unplaced.is_empty():
        parts = [
            f"{reason}: {n} ({', '.join(providers)})"
            for reason, n, providers in unplaced.iter_rows()
        ]
        total = int(unplaced["offers"].sum())
        lines.append(f"{total} configuration(s) cannot run the job: " + "; ".join(parts))
    return "; ".join(lines)


def _set_constraints(requirement: Requirement) -> list[str]:
    """The constraints ``requirement`` sets (fields away from their default), sorted."""
    return sorted(
        name
        for name in requirement.model_fields_set
        if getattr(requirement, name) != Requirement.model_fields[name].default and name not in _WHO
    )


#: Fields that choose whose offers to consider (applied first), not what they must have.
_WHO = frozenset({"allow_unknown", "providers", "exclude_providers"})


def binding_constraints(
    frame: pl.DataFrame,
    requirement: Requirement,
    now: datetime | None = None,
    *,
    precision: Precision = Precision.BF16,
) -> pl.DataFrame:
    """The configurations (with a rankable GPU) closest to ``requirement``: those missing
    the fewest of its constraints, grouped by the constraints they miss. Columns
    ``missed`` (constraint names), ``configurations``, ``providers``, ``offers`` (a few
    instance names); empty when some configuration meets every constraint."""
    at = now or datetime.now(UTC)
    catalog = catalog_frame().select("gpu_model", *_CATALOG_COLUMNS, peak=peak_tflops(precision))
    names = _set_constraints(requirement)
    base = {name: getattr(requirement, name) for name in _WHO}
    met = {
        name: qualifies(Requirement.model_validate({**base, name: getattr(requirement, name)}), at)
        for name in names
    }
    failed = [pl.when(~cond).then(pl.lit(name)) for name, cond in met.items()]
    rows = (
        frame.lazy()
        .join(catalog.lazy(), on="gpu_model", how="inner")
        .filter(pl.col("peak").is_not_null() & qualifies(Requirement.model_validate(base), at))
        .with_columns(
            missed=pl.concat_list(failed).list.drop_nulls()
            if failed
            else pl.lit([], pl.List(pl.String))
        )
        .with_columns(misses=pl.col("missed").list.len())
        .sort("misses", "term")
        .group_by("config_id")
        .agg(pl.all().first())
        .collect()
    )
    schema: dict[str, pl.DataType] = {
        "missed": pl.List(pl.String),
        "configurations": pl.UInt32(),
        "providers": pl.List(pl.String),
        "offers": pl.List(pl.String),
    }
    if rows.is_empty() or rows["misses"].min() == 0:
        return pl.DataFrame(schema=schema)
    fewest = rows.filter(pl.col("misses") == pl.col("misses").min())
    return (
        fewest.group_by("missed")
        .agg(
            configurations=pl.len(),
            providers=pl.col("provider").unique().sort(),
            offers=pl.coalesce("instance_name", "offer_id").unique().sort().head(3),
        )
        .sort("configurations", descending=True)
        .select(list(schema))
        .cast(pl.Schema(schema))
    )


def binding_note(
    frame: pl.DataFrame,
    requirement: Requirement,
    now: datetime | None = None,
    *,
    precision: Precision = Precision.BF16,
    name: Callable[[str], str] = str,
) -> str | None:
    """Why nothing qualifies, in one line: which constraints the closest offers miss
    (None when some offer meets them all). ``name`` words a constraint for the surface
    showing the note: the API shows the field (``min_gpus``), the CLI its option
    (``--min-gpus``)."""
    table = binding_constraints(frame, requirement, now, precision=precision)
    if table.is_empty():
        return None
    parts = [
        f"{n} configuration(s) from {', '.join(providers)} (e.g. {', '.join(offers)})"
        f" miss only {', '.join(name(m) for m in missed)}"
        for missed, n, providers, offers in table.iter_rows()
    ]
    return "no offer meets the requirement; the closest: " + "; ".join(parts)
