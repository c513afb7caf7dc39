"""The SVG line chart's axes span the data drawn (service/web/charts.py)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from gpuscout.service.web.charts import Series, line_chart


def _axis_labels(svg: str) -> list[str]:
    return re.findall(r'<text x="[\d.]+" y="276" text-anchor="\w+">([^<]+)</text>', svg)


def test_the_time_axis_runs_from_the_first_to_the_last_point() -> None:
    points = [(datetime(2026, 11, 1, tzinfo=UTC), 2.0), (datetime(2026, 11, 29, tzinfo=UTC), 3.0)]
    svg = str(line_chart([Series("price", points, step=True)], title="t"))
    assert _axis_labels(svg) == ["01 Nov", "15 Nov", "29 Nov"]


def test_an_axis_across_years_says_the_years() -> None:
    """A sample's price recorded years ago, held until now: the axis names both years."""
    points = [(datetime(2023, 8, 1, tzinfo=UTC), 0.73), (datetime(2026, 12, 7, tzinfo=UTC), 0.73)]
    svg = str(line_chart([Series("price", points, step=True)], title="t"))
    labels = _axis_labels(svg)
    assert labels[0] == "01 Aug 2023" and labels[-1] == "07 Dec 2026"
