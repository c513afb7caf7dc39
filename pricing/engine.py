"""The polars engine gpuscout's plans are collected on: the user's setting, else in memory.

polars chooses its engine from ``POLARS_ENGINE_AFFINITY`` (or
:meth:`polars.Config.set_engine_affinity`, which sets it); unset, polars 2 collects on its
streaming engine. gpuscout's plans read a few thousand to a million rows and answer in
tens of milliseconds, where the streaming engine took up to twice the in-memory one's
time (8x H100 over 100k offers: 24 ms against 13, ``benchmarks/rank.py``), so without
the setting they collect in memory. Every engine gives the same answers; the streaming
one ranks a million offers that all qualify faster (280 ms against 530).
"""

from __future__ import annotations

import os
from typing import Literal

__all__ = ["engine"]


def engine() -> Literal["auto", "in-memory"]:
    """``"auto"`` (polars' engine affinity) when ``POLARS_ENGINE_AFFINITY`` is set, else
    ``"in-memory"``: what to pass as ``collect(engine=...)``."""
    return "auto" if os.environ.get("POLARS_ENGINE_AFFINITY") else "in-memory"
