"""The price-index chart of a digest: one PNG, drawn with matplotlib's Agg backend.

No ``pyplot``: a :class:`~matplotlib.figure.Figure` on an Agg canvas holds no global state,
so charts can be drawn from scheduler threads. The output is deterministic for the same
input (no timestamps in the PNG metadata), which keeps :func:`build_digest` pure.
"""

from __future__ import annotations

import dataclasses
import io
from collections import defaultdict
from collections.abc import Sequence
from datetime import date

__all__ = ["CHART_HEIGHT_PX", "CHART_WIDTH_PX", "IndexPoint", "render_price_chart"]

CHART_WIDTH_PX = 640
CHART_HEIGHT_PX = 280
_DPI = 100


@dataclasses.dataclass(frozen=True, slots=True)
class IndexPoint:
    """The daily price index of one GPU model and term: median USD per GPU-hour."""

    day: date
    gpu_model: str
    term: str
    usd_per_gpu_hour: float


def render_price_chart(points: Sequence[IndexPoint], *, title: str) -> bytes:
    """A PNG line chart, one line per (GPU model, term); a short note when there is no data."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # heavy: imported on use
    from matplotlib.figure import Figure

    fig = Figure(figsize=(CHART_WIDTH_PX / _DPI, CHART_HEIGHT_PX / _DPI), dpi=_DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    series: dict[tuple[str, str], list[IndexPoint]] = defaultdict(list)
    for p in points:
        series[(p.gpu_model, p.term)].append(p)
    for (model, term), pts in sorted(series.items()):
        pts.sort(key=lambda p: p.day)
        ax.plot(
            [p.day for p in pts],  # type: ignore[arg-type]  # matplotlib plots dates
            [p.usd_per_gpu_hour for p in pts],
            marker="o",
            markersize=3,
            linewidth=1.6,
            label=f"{model} · {term}",
        )
    if series:
        ax.legend(fontsize=7, loc="upper left", frameon=False)
        fig.autofmt_xdate(rotation=0, ha="center")
    else:
        ax.text(0.5, 0.5, "no price history yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks([])
    ax.set_title(title, fontsize=10, loc="left")
    ax.set_ylabel("USD per GPU-hour", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, linewidth=0.4, alpha=0.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
