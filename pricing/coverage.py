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
state counting as met (its GPU is unknown, so are the facts the catalog would add). What the
job itself rules out (a model that does not fit, a configuration that cannot span nodes) is
the query's choice, not a gap, and is not listed.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import polars as pl

from adapters.gpus import Precision

from .expressions import peak_tflops, qualifies
from .frame import catalog_frame
from .requirement import Requirement

__all__ = ["NOT_IN_CATALOG", "NO_FIGURE", "UNIDENTIFIED", "left_out", "left_out_note"]

UNIDENTIFIED = "GPU not identified"
NOT_IN_CATALOG = "GPU model not in the catalog"
NO_FIGURE = "no TFLOPs figure at this or a wider precision"

#: What loose matching ignores: case, and everything but letters and digits.
_NOT_ALNUM = r"[^0-9a-z]"

_CATALOG_COLUMNS = ("catalog_memory_gb", "catalog_form_factor", "form_factor_varies")


def _squash(text: str) -> str:
    return re.sub(_NOT_ALNUM, "", text.lower())


def _loosely_named(req: Requirement) -> pl.Expr:
    """The raw name (or, failing that, the stored model name) contains a wanted GPU name."""
    wanted = [w for w in (_squash(g) for g in req.gpus) if w]
    if not wanted:
        return pl.lit(True)
    name = pl.coalesce(pl.col("gpu_raw_name"), pl.col("gpu_model"))
    squashed = name.str.to_lowercase().str.replace_all(_NOT_ALNUM, "")
    return pl.any_horizontal([squashed.str.contains(w, literal=True) for w in wanted])


def left_out(
    frame: pl.DataFrame,
    requirement: Requirement | None = None,
    now: datetime | None = None,
    *,
    precision: Precision = Precision.BF16,
) -> pl.DataFrame:
    """Offers ``requirement`` would want that a ranking at ``precision`` cannot rank: one row
    per (provider, raw GPU name, model, reason) with its number of offers, most first."""
    req = requirement or Requirement()
    at = now or datetime.now(UTC)
    catalog = catalog_frame().select("gpu_model", *_CATALOG_COLUMNS, peak=peak_tflops(precision))
    rows = frame.lazy().join(catalog.lazy(), on="gpu_model", how="left")
    in_catalog = pl.col("form_factor_varies").is_not_null()
    unknown_gpu = req.model_copy(update={"gpus": (), "allow_unknown": True})
    blank = [pl.lit(None, dtype=pl.Float64).alias("catalog_memory_gb")]
    blank += [pl.lit(None, dtype=pl.String).alias("catalog_form_factor")]
    blank += [pl.lit(None, dtype=pl.Boolean).alias("form_factor_varies")]
    not_known = (
        rows.filter(
            ~in_catalog & (pl.col("gpu_raw_name").is_not_null() | pl.col("gpu_model").is_not_null())
        )
        .with_columns(blank)
        .filter(qualifies(unknown_gpu, at) & _loosely_named(req))
        .with_columns(
            reason=pl.when(pl.col("gpu_model").is_null())
            .then(pl.lit(UNIDENTIFIED))
            .otherwise(pl.lit(NOT_IN_CATALOG))
        )
    )
    no_figure = (
        rows.filter(in_catalog & pl.col("peak").is_null())
        .filter(qualifies(req, at))
        .with_columns(reason=pl.lit(NO_FIGURE))
    )
    keys = ["provider", "gpu_raw_name", "gpu_model", "reason"]
    return (
        pl.concat([not_known.select(keys), no_figure.select(keys)])
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
) -> str | None:
    """One line for people naming every offer :func:`left_out` lists, with its reason."""
    left = left_out(frame, requirement, now, precision=precision)
    if left.is_empty():
        return None
    total = int(left["offers"].sum())
    parts = []
    for provider, raw, model, reason, n in left.iter_rows():
        name = raw if raw is not None else model
        parts.append(f"{name!r} ({provider}, {n}: {reason})")
    return f"{total} offer(s) not ranked: " + ", ".join(parts)
