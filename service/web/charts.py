"""Line charts as SVG, drawn on the server: no JavaScript, no charting library, no fetch.

:func:`line_chart` is pure: series of (time, value) points in, SVG markup out. The chart
is an image with a title and a description for screen readers; each page also gives its
numbers as a table.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence
from datetime import UTC, date, datetime, time

from markupsafe import Markup

__all__ = ["Series", "line_chart"]

Instant = datetime | date


@dataclasses.dataclass(frozen=True)
class Series:
    """One line: ``points`` in time order; ``step``: the value holds until the next point."""

    name: str
    points: Sequence[tuple[Instant, float]]
    step: bool = False


def _ts(x: Instant) -> float:
    if isinstance(x, datetime):
        return x.timestamp()
    return datetime.combine(x, time(12), tzinfo=UTC).timestamp()


def _label(x: float, days: float, years: bool = False) -> str:
    """A date on the time axis: with the hour for a span under 3 days, with the year for
    an axis that crosses a new year (a sample's prices can be years old)."""
    when = datetime.fromtimestamp(x, UTC)
    if days < 3:
        return when.strftime("%d %b %H:%M")
    return when.strftime("%d %b %Y" if years else "%d %b")


def _nice_step(span: float) -> float:
    raw = span / 4
    magnitude = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1.0
    while magnitude > raw and magnitude > 1e-6:
        magnitude /= 10
    for m in (1, 2, 2.5, 5, 10):
        if magnitude * m >= raw:
            return magnitude * m
    return magnitude * 10


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    unit: str = "$/GPU-h",
    width: int = 900,
    height: int = 280,
) -> Markup:
    """``series`` as one SVG line chart (an empty chart says there is nothing to draw)."""
    left, right, top, bottom = 64, 16, 36, 32
    pts = [(s, [(_ts(x), float(y)) for x, y in s.points]) for s in series]
    xs = [x for _s, p in pts for x, _y in p]
    ys = [y for _s, p in pts for _x, y in p]
    label = html.escape(title)
    head = (
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{label}" xmlns="http://www.w3.org/2000/svg"><title>{label}</title>'
    )
    if not xs:
        return Markup(
            head + f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle">'
            "no prices to draw</text></svg>"
        )
    x0, x1 = min(xs), max(xs)
    if x1 - x0 < 3600:
        x0, x1 = x0 - 1800, x1 + 1800
    top_y = max(ys) * 1.1 or 1.0
    step = _nice_step(top_y)
    y_max = step * (int(top_y / step) + 1)
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * plot_w

    def py(y: float) -> float:
        return top + plot_h - y / y_max * plot_h

    parts = [head]
    tick = 0.0
    while tick <= y_max + 1e-9:
        y = py(tick)
        parts.append(
            f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>'
        )
        tick += step
    days = (x1 - x0) / 86400
    years = datetime.fromtimestamp(x0, UTC).year != datetime.fromtimestamp(x1, UTC).year
    for frac, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
        x = x0 + frac * (x1 - x0)
        parts.append(
            f'<text x="{px(x):.1f}" y="{height - 4}" text-anchor="{anchor}">'
            f"{_label(x, days, years)}</text>"
        )
    parts.append(f'<text x="{left}" y="{top - 10}">{html.escape(unit)}</text>')
    for i, (s, p) in enumerate(pts):
        coords: list[tuple[float, float]] = []
        for j, (x, y) in enumerate(p):
            if s.step and j:
                coords.append((px(x), coords[-1][1]))
            coords.append((px(x), py(y)))
        if s.step and p:
            coords.append((px(x1), coords[-1][1]))
        d = " ".join(f"{'M' if k == 0 else 'L'}{a:.1f},{b:.1f}" for k, (a, b) in enumerate(coords))
        css = f"line s{i % 4}"
        parts.append(f'<path class="{css}" d="{d}"><title>{html.escape(s.name)}</title></path>')
        if len(p) == 1:
            parts.append(
                f'<circle class="dot" cx="{coords[0][0]:.1f}" cy="{coords[0][1]:.1f}" r="4"/>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))
