"""A frame's offers in runs of one GPU model: the rows a ranking that names models reads.

A requirement that names GPUs (``gpus=H100``: three catalog models) qualifies only offers
of those models (:func:`pricing.expressions.qualifies` keeps ``gpu_model`` in
:meth:`~pricing.requirement.Requirement.gpu_models`), yet a ranking over the whole frame
filters every row: the predicate, then each column it keeps. :class:`ByModel` holds the
frame sorted by model and where each model's run starts, so a ranking reads the named
models' runs alone: zero-copy slices, each row keeping its place in the sorted frame
(:data:`~pricing.frame.OFFER_ROW`). Measured in process, the 35 model-naming queries of
``benchmarks/api.py`` over 100k offers: 16.0 ms a ranking over the runs, 17.5 over the
frame as stored; gathering the models' rows from the unsorted frame took 21.0. The
database's frames come sorted (:func:`db.current.load_current_offers` frames them so), so
neither an API start nor its resident memory pays for a sorted copy: one cost ~35 ms and,
by the allocator's fragmentation, ~30 MB of RSS that stayed.

Within a model the rows are sorted by configuration, then term, stably: the rows of one
configuration and term keep their order, and the ranking compares ``config_id`` and
``term`` before the frame row wherever it breaks a tie, so every tie breaks as in the frame
as stored. A configuration (provider, offer, region, basis) is one offer's hardware, so
its every term (its break-even against on-demand) is in the run, its rows together, in
term order. A frame where some configuration's rows name different models (inconsistent
stored data) is read whole, as if no model were named: exact before fast.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping

import polars as pl

from .frame import OFFER_ROW

__all__ = ["LAYOUT", "ByModel", "in_model_runs"]


#: The order of a frame in runs: by GPU model (unidentified last), then configuration, then
#: term (the Enum's order), stable.
LAYOUT = ("gpu_model", "config_id", "term")


def in_model_runs(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` sorted by :data:`LAYOUT`, stable, unidentified GPUs last; as it is when it
    already is (no copy). Each configuration's rows are then together, in term order:
    :func:`pricing.unplaced.unplaced_configurations` reads a configuration's first row and
    whether any of its rows is placed off its neighbours, with no group-by."""
    if _laid_out(frame):
        return frame
    return frame.sort(list(LAYOUT), maintain_order=True, nulls_last=True)


def _laid_out(frame: pl.DataFrame) -> bool:
    """Whether ``frame`` is in :data:`LAYOUT` order: the models sorted, and each row of a
    model after the one before it by configuration, then term (~1 ms for 100k rows)."""
    if not frame.get_column("gpu_model").is_sorted(nulls_last=True):
        return False
    config, term = pl.col("config_id"), pl.col("term").to_physical()
    same_model = pl.col("gpu_model").eq_missing(pl.col("gpu_model").shift(1))
    before = (config.shift(1) < config) | ((config.shift(1) == config) & (term.shift(1) <= term))
    return bool(frame.select((~same_model | before).fill_null(True).all()).item())


@dataclasses.dataclass(frozen=True)
class ByModel:
    """``frame`` in :data:`LAYOUT` order (stable, unidentified GPUs last) and, per model,
    the ``(offset, length)`` of its run; or, where some configuration spans models, the
    frame as given and ``runs`` ``None`` (every row is read). Build it with :meth:`of`."""

    frame: pl.DataFrame
    runs: Mapping[str, tuple[int, int]] | None
    #: The most rows one configuration has in :attr:`frame`
    #: (:func:`~pricing.frame.most_rows_per_configuration`, counted once per frame here).
    most_rows: int
    #: :meth:`joined`'s frames, by their key.
    _joined: dict[object, ByModel] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def of(cls, frame: pl.DataFrame) -> ByModel:
        """``frame`` (with ``config_id``) in runs of one model: ~40 ms for 100k offers to
        sort, ~10 to check that every configuration is one model and the frame sorted (the
        database's frames are in runs already: :func:`in_model_runs`)."""
        per_config = frame.group_by("config_id").agg(
            spans=pl.col("gpu_model").n_unique() > 1, rows=pl.len()
        )
        most_rows = int(per_config.get_column("rows").max() or 0)  # type: ignore[arg-type]
        if per_config.get_column("spans").any():
            return cls(frame, None, most_rows)
        ordered = in_model_runs(frame)
        runs = (
            ordered.select("gpu_model")
            .with_row_index("_start")
            .group_by("gpu_model")
            .agg(pl.col("_start").min(), pl.len().alias("_length"))
            .drop_nulls("gpu_model")
        )
        return cls(
            ordered,
            {model: (start, length) for model, start, length in runs.iter_rows()},
            most_rows,
        )

    @property
    def together(self) -> bool:
        """Whether each configuration's rows are next to each other in term order (the
        frame in :data:`LAYOUT` order): so whenever it is in runs."""
        return self.runs is not None

    def joined(self, key: object, table: pl.DataFrame) -> ByModel:
        """These rows with the columns of ``table`` (one row per ``gpu_model``; a model it
        does not hold gets nulls), in the same runs: joined on the first call for ``key``,
        then kept (the same ``key`` must name the same table). A column both hold is an
        error. What a query reads per GPU model is then a column of the rows it reads, not
        a join on the model name in every query's plan."""
        kept = self._joined.get(key)
        if kept is not None:
            return kept
        both = (set(table.columns) - {"gpu_model"}) & set(self.frame.columns)
        if both:
            raise ValueError(f"columns in the frame already: {sorted(both)}")
        frame = self.frame.join(table, on="gpu_model", how="left", maintain_order="left")
        if frame.height != self.frame.height:
            raise ValueError("the table holds some gpu_model more than once")
        kept = ByModel(frame, self.runs, self.most_rows)
        self._joined[key] = kept  # a race computes it twice and keeps one: harmless
        return kept

    def height_of(self, models: Collection[str]) -> int:
        """How many rows :meth:`rows` of ``models`` holds (every row when the frame is read
        whole)."""
        if self.runs is None:
            return self.frame.height
        return sum(self.runs[m][1] for m in set(models) if m in self.runs)

    def rows(self, models: Collection[str] | None = None) -> pl.LazyFrame:
        """The rows of ``models`` (``None``: every row), in frame order, with
        :data:`~pricing.frame.OFFER_ROW`: the row's place in :attr:`frame`."""
        if models is None or self.runs is None:
            return self.frame.lazy().with_row_index(OFFER_ROW)
        spans: list[tuple[int, int]] = []
        for start, length in sorted(self.runs[m] for m in set(models) if m in self.runs):
            if spans and sum(spans[-1]) == start:  # adjacent runs (H100 NVL, PCIe, SXM5)
                spans[-1] = (spans[-1][0], spans[-1][1] + length)
            else:
                spans.append((start, length))
        if not spans:
            return self.frame.clear().lazy().with_row_index(OFFER_ROW)
        parts = [
            self.frame.slice(start, length).lazy().with_row_index(OFFER_ROW, offset=start)
            for start, length in spans
        ]
        return parts[0] if len(parts) == 1 else pl.concat(parts, rechunk=False)
