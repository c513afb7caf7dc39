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

import math
import re
from collections.abc import Callable
from datetime import UTC, datetime

import polars as pl

from gpuscout.adapters.gpus import Precision

from .display import figure_text
from .expressions import (
    ALWAYS,
    NO_FIGURE,
    NO_FIT,
    NOT_IN_CATALOG,
    PLACEMENT_REASONS,
    REASON,
    UNIDENTIFIED,
    peak_tflops,
    qualifies,
    where,
)
from .frame import FORM_FACTOR_DTYPE, catalog_frame
from .job import Job
from .rank import RankOptions, placement_plan
from .requirement import Requirement
from .unplaced import unplaced_configurations

__all__ = [
    "NOT_IN_CATALOG",
    "NO_FIGURE",
    "UNIDENTIFIED",
    "Unrankable",
    "binding_constraints",
    "binding_note",
    "left_out",
    "left_out_note",
    "left_out_plan",
    "misfits",
    "note_of",
]


#: What loose matching ignores: case, and everything but letters and digits.
_NOT_ALNUM = r"[^0-9a-z]"

_CATALOG_COLUMNS = ("catalog_memory_gb", "catalog_form_factor", "form_factor_varies")


def _squash(text: str) -> str:
    return re.sub(_NOT_ALNUM, "", text.lower())


def _loosely_named(req: Requirement) -> pl.Expr:
    """The raw name (or, failing that, the stored model name) contains a wanted GPU name;
    reads the ``squashed_name`` column :class:`Unrankable` adds."""
    wanted = [w for w in (_squash(g) for g in req.gpu_names()) if w]
    if not wanted:
        return ALWAYS
    squashed = pl.col(_SQUASHED)
    return pl.any_horizontal([squashed.str.contains(w, literal=True) for w in wanted])


_SQUASHED = "squashed_name"
_IN_CATALOG = pl.col("form_factor_varies").is_not_null()
#: The catalog columns of a GPU the catalog does not hold: unknown.
_BLANK = (
    pl.lit(None, dtype=pl.Float64).alias("catalog_memory_gb"),
    pl.lit(None, dtype=FORM_FACTOR_DTYPE).alias("catalog_form_factor"),
    pl.lit(None, dtype=pl.Boolean).alias("form_factor_varies"),
)


class Unrankable:
    """The offers of one frame no ranking can rank at some precision, found once per frame.

    Whether an offer's GPU is a catalog model with a figure does not depend on the query,
    so the API finds these rows once per snapshot (:class:`service.api.state.ApiState`)
    and each query filters only them: on 100k offers the loose name match over every raw
    GPU name was most of a query's time (the filters around it run on all rows, the
    lowercase-and-regex pass with them). Holds the offers whose GPU is not in the catalog
    (with a raw name or a model name) or lacks a figure at some precision, with their
    catalog columns, each precision's peak (``peak_<p>``) and the squashed name, split by
    reason, so that a query plans no filter for a reason no offer has (a plan's every
    expression is planned anew on every query, rows or none).
    """

    __slots__ = ("no_figure", "not_known")

    def __init__(self, frame: pl.DataFrame) -> None:
        peaks = {f"peak_{p.value}": peak_tflops(p) for p in Precision}
        catalog = catalog_frame().select("gpu_model", *_CATALOG_COLUMNS, **peaks)
        lacking = pl.any_horizontal([pl.col(c).is_null() for c in peaks])
        models = catalog.get_column("gpu_model")
        in_catalog = pl.col("gpu_model").is_in(models.implode()).fill_null(False)
        named = pl.col("gpu_raw_name").is_not_null() | pl.col("gpu_model").is_not_null()
        short = catalog.filter(lacking).get_column("gpu_model").implode()
        name = pl.coalesce(pl.col("gpu_raw_name"), pl.col("gpu_model"))
        # the few rows of models outside the catalog or short of a figure are picked off
        # the frame before the catalog joins them: joining every row first held a second
        # frame's width for 100k offers (~40 MB more resident after a load)
        rows = (
            frame.lazy()
            .filter((~in_catalog & named) | pl.col("gpu_model").is_in(short).fill_null(False))
            .join(catalog.lazy(), on="gpu_model", how="left", maintain_order="left")
            .with_columns(name.str.to_lowercase().str.replace_all(_NOT_ALNUM, "").alias(_SQUASHED))
            .collect()
        )
        #: The rows whose GPU is not in the catalog, its columns blank (unknown).
        self.not_known: pl.DataFrame = rows.filter(~_IN_CATALOG).with_columns(_BLANK)
        #: Per precision, the rows of a catalog GPU without a figure at it: one frame for
        #: the precisions that leave out the same rows (fp64, fp32 and tf32 mostly do).
        self.no_figure: dict[Precision, pl.DataFrame] = {}
        parts: list[tuple[pl.Series, pl.DataFrame]] = []
        for p in Precision:
            mask = rows.select(_IN_CATALOG & pl.col(f"peak_{p.value}").is_null()).to_series()
            same = next((part for seen, part in parts if seen.equals(mask)), None)
            if same is None:
                same = rows if mask.all() else rows.filter(mask)
                parts.append((mask, same))
            self.no_figure[p] = same


def left_out(
    frame: pl.DataFrame,
    requirement: Requirement | None = None,
    now: datetime | None = None,
    *,
    precision: Precision = Precision.BF16,
    job: Job | None = None,
    unrankable: Unrankable | None = None,
    unplaced: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Offers ``requirement`` would want that a ranking at ``precision`` cannot rank: one row
    per (provider, raw GPU name, model, reason) with its number of offers, most first. With
    ``job``, also the configurations it cannot be placed on, by placement reason.

    ``unrankable`` is ``frame``'s, when the caller keeps it (found here otherwise);
    ``unplaced`` is the ranking's :attr:`~pricing.rank.RankedPage.unplaced` for the same
    query and job, when the caller has it (placed here otherwise)."""
    return left_out_plan(
        frame, requirement, now, precision=precision, job=job, unrankable=unrankable,
        unplaced=unplaced,
    ).collect()  # fmt: skip


def left_out_plan(
    frame: pl.DataFrame,
    requirement: Requirement | None = None,
    now: datetime | None = None,
    *,
    precision: Precision = Precision.BF16,
    job: Job | None = None,
    unrankable: Unrankable | None = None,
    unplaced: pl.DataFrame | pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """:func:`left_out` as a lazy plan, for a caller that collects it with others: the API
    collects it with the ranking (:func:`pricing.rank.rank_page`'s ``also``), reading the
    ranking's unplaced configurations as they are grouped, so that a page pays one collect's
    fixed cost, not two."""
    req = requirement or Requirement()
    at = now or datetime.now(UTC)
    unrankable = unrankable or Unrankable(frame)
    parts = []
    if unrankable.not_known.height:
        unknown_gpu = req.model_copy(update={"gpus": (), "allow_unknown": True})
        matching = where(unrankable.not_known.lazy(), qualifies(unknown_gpu, at))
        not_known = where(matching, _loosely_named(req)).with_columns(
            reason=pl.when(pl.col("gpu_model").is_null())
            .then(pl.lit(UNIDENTIFIED, dtype=REASON))
            .otherwise(pl.lit(NOT_IN_CATALOG, dtype=REASON))
        )
        parts.append(not_known.select(_KEYS))
    no_figure = unrankable.no_figure[precision]
    if no_figure.height:
        parts.append(
            where(no_figure.lazy(), qualifies(req, at)).select(*_KEYS[:3], reason=_NO_FIGURE)
        )
    if unplaced is None and job is not None:
        options = RankOptions(precision=precision, now=at, limit=None)
        unplaced = _unplaced(frame, req, job, options)
    # an empty table (a job no row refuses: :func:`pricing.rank.rank_page`) adds nothing
    if unplaced is not None and not (isinstance(unplaced, pl.DataFrame) and unplaced.is_empty()):
        parts.append(unplaced.lazy().select(_KEYS))
    if not parts:
        return pl.LazyFrame(schema=_LEFT_OUT_SCHEMA)
    return (
        pl.concat(parts)
        .group_by(_KEYS)
        .agg(offers=pl.len())
        .with_columns(pl.col("reason").cast(pl.String))  # its text orders the table
        .sort(["offers", *_KEYS], descending=[True, False, False, False, False], nulls_last=True)
    )


#: What :func:`left_out` counts by, and its columns.
_KEYS = ["provider", "gpu_raw_name", "gpu_model", "reason"]
_LEFT_OUT_SCHEMA = pl.Schema({**dict.fromkeys(_KEYS, pl.String()), "offers": pl.get_index_type()})
#: Every reason :func:`left_out` counts is one enum (a placement reason is one already)
#: until the rows are counted.
_NO_FIGURE = pl.lit(NO_FIGURE, dtype=REASON)


def _unplaced(
    frame: pl.DataFrame, req: Requirement, job: Job, options: RankOptions
) -> pl.LazyFrame:
    """The configurations ``job`` cannot be placed on at all, placed here (a caller
    holding the ranking's :attr:`pricing.rank.RankedPage.unplaced` passes that instead)."""
    return unplaced_configurations(placement_plan(frame, req, job, options))


def misfits(
    frame: pl.DataFrame,
    left: pl.DataFrame,
    requirement: Requirement | None = None,
    now: datetime | None = None,
    *,
    precision: Precision = Precision.BF16,
    job: Job | None = None,
    unplaced: pl.DataFrame | None = None,
) -> pl.DataFrame | None:
    """The figures behind :data:`~pricing.expressions.NO_FIT` among ``left`` (the
    :func:`left_out` of the same query, with the same ``unplaced`` if it had one), None
    when it does not occur: one row per
    (GPU memory, job GPUs), the nearest to fitting first, with the GB each GPU needs, the
    configurations, and what would fit by the job's memory model (:class:`Job`):
    ``fits_on_gpus`` (GPUs of that memory) and ``fits_at_bytes_per_param`` (on as many
    GPUs as now); null where activations alone overflow the GPU."""
    if job is None or left.is_empty() or not (left["reason"] == NO_FIT).any():
        return None
    at = now or datetime.now(UTC)
    options = RankOptions(precision=precision, now=at, limit=None)
    configurations = (
        unplaced.lazy()
        if unplaced is not None
        else _unplaced(frame, requirement or Requirement(), job, options)
    )
    rows = (
        configurations.filter(pl.col("reason") == NO_FIT)
        .group_by("gpu_memory_gb", "job_gpus")
        .agg(pl.col("memory_per_gpu_gb").max(), configurations=pl.len())
        .sort("gpu_memory_gb", "job_gpus", descending=True)
        .collect()
    )
    memory, gpus = rows["gpu_memory_gb"].to_list(), rows["job_gpus"].to_list()
    on_gpus = [job.min_gpus_to_fit(m, precision.value) for m in memory]
    at_bytes = [job.max_bytes_per_param_to_fit(m, g) for m, g in zip(memory, gpus, strict=True)]
    return rows.with_columns(
        fits_on_gpus=pl.Series(on_gpus, dtype=pl.Int64),
        fits_at_bytes_per_param=pl.Series(at_bytes, dtype=pl.Float64),
    )


def left_out_note(
    frame: pl.DataFrame,
    requirement: Requirement | None = None,
    now: datetime | None = None,
    *,
    precision: Precision = Precision.BF16,
    job: Job | None = None,
    name: Callable[[str], str | None] = str,
    unplaced: pl.DataFrame | None = None,
    unrankable: Unrankable | None = None,
) -> str | None:
    """One line for people naming every offer :func:`left_out` lists, with its reason (with
    ``job``: the configurations it cannot be placed on, by reason and count, and for a job
    that does not fit the GPUs' memory the figures and what would fit, see :func:`note_of`).
    ``unplaced``: the ranking's, as :func:`left_out` takes it (placed here once
    otherwise, for both the list and the misfits); ``unrankable``: ``frame``'s, when the
    caller keeps it (found here otherwise: ~100 ms for 100k offers)."""
    at = now or datetime.now(UTC)
    if unplaced is None and job is not None:
        options = RankOptions(precision=precision, now=at, limit=None)
        unplaced = _unplaced(frame, requirement or Requirement(), job, options).collect()
    left = left_out(
        frame, requirement, at, precision=precision, job=job, unrankable=unrankable,
        unplaced=unplaced,
    )  # fmt: skip
    fits = misfits(frame, left, requirement, at, precision=precision, job=job, unplaced=unplaced)
    return note_of(left, fits, name=name)


def _at_most(value: float) -> str:
    """``value`` rounded down to what reads (``8``, ``2.6``, ``0.41``): a bound kept."""
    places = 0 if value >= 10 else 1 if value >= 1 else 2
    return f"{math.floor(value * 10**places) / 10**places:g}"


def _fit_text(fits: pl.DataFrame, name: Callable[[str], str | None]) -> str:
    """The nearest misfit in words: what each GPU needs and has, and what would fit, each
    remedy with the surface's own name for its setting (none where ``name`` gives None)."""
    row = fits.row(0, named=True)
    has, gpus = f"{round(row['gpu_memory_gb'], 1):g}", f"{row['job_gpus']:g}"
    largest = " (the largest left out)" if fits.height > 1 else ""
    need = figure_text(row["memory_per_gpu_gb"], decimals=1)
    text = f"{need} GB per GPU needed on {gpus} GPUs of {has} GB{largest}"
    more, leaner = row["fits_on_gpus"], row["fits_at_bytes_per_param"]
    if more is None or leaner is None:
        return text + ": its activations alone overflow one GPU"
    option = name("job_gpus")
    remedies = [f"it fits on {more} of those GPUs" + (f" ({option} {more})" if option else "")]
    bound = _at_most(leaner)
    option = name("bytes_per_param")
    lean = f"{option} {bound}, " if option else ""
    remedies.append(
        f"on {gpus} at {bound} bytes per parameter or less ({lean}e.g. LoRA: about 2 for"
        " frozen bf16 weights)"
    )
    return f"{text}: " + ", or ".join(remedies)


def note_of(
    left: pl.DataFrame,
    fits: pl.DataFrame | None = None,
    *,
    name: Callable[[str], str | None] = str,
) -> str | None:
    """:func:`left_out_note` of a :func:`left_out` table already at hand, with the
    :func:`misfits` of the same query. ``name`` words a job setting for the surface
    showing the note, as in :func:`binding_note` (the API's ``job_gpus``, the CLI's
    ``--job-gpus``; None: the surface has no such setting, the remedy is told without)."""
    if left.is_empty():
        return None
    placing = pl.col("reason").is_in(PLACEMENT_REASONS)
    lines = []
    gaps = left.filter(~placing)
    if not gaps.is_empty():
        parts = []
        for provider, raw, model, reason, n in gaps.iter_rows():
            gpu = raw if raw is not None else model
            parts.append(f"{gpu!r} ({provider}, {n}: {reason})")
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
            + (f", {_fit_text(fits, name)}" if reason == NO_FIT and fits is not None else "")
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
