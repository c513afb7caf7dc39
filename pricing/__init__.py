"""Pricing: which offer gives the most useful compute per dollar for a job.

``rank(offers, requirement, job, RankOptions(...))`` returns a polars frame, one row per
configuration with its cheapest term, ordered by USD per effective TFLOP-hour (or another
:data:`pricing.rank.SortKey`).
"""

from .efficiency import Efficiency, default_efficiency, load_efficiency
from .estimate import Estimate, estimate
from .frame import catalog_frame, offers_to_frame
from .job import Job, JobKind
from .rank import RESULT_COLUMNS, RankOptions, rank, rank_plan
from .requirement import PRESETS, Requirement, preset

__all__ = [
    "PRESETS",
    "RESULT_COLUMNS",
    "Efficiency",
    "Estimate",
    "Job",
    "JobKind",
    "RankOptions",
    "Requirement",
    "catalog_frame",
    "default_efficiency",
    "estimate",
    "load_efficiency",
    "offers_to_frame",
    "preset",
    "rank",
    "rank_plan",
]
