"""The ``offers`` table at 80 and 120 columns, its folding (``--group-by``) and columns."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime

import polars as pl
import pytest
from rich.console import Console

from adapters.schema import default_fx
from pricing import Job, RankOptions, Requirement, rank
from service.commands.offers_table import COLUMNS, GroupBy
from service.commands.pricing import print_table
from service.current import load_sample

NOW = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def h100() -> pl.DataFrame:
    """The README's first query on the offline sample."""
    frame = load_sample(default_fx()).frame
    options = RankOptions(limit=None, now=NOW)
    return rank(frame, Requirement(gpus=("H100",)), Job(hours=100), options)


def render(ranked: pl.DataFrame, width: int, **kwargs: object) -> list[str]:
    out = io.StringIO()
    console = Console(width=width, file=out, color_system=None, legacy_windows=False)
    options = {"title": "offers (sample)", "limit": 20, "group_by": [GroupBy.CONFIG], **kwargs}
    print_table(ranked, console, **options)  # type: ignore[arg-type]
    return out.getvalue().splitlines()


def body(lines: list[str]) -> list[str]:
    """The table's rows: the lines between the header rule and the notes beneath."""
    start = next(i for i, line in enumerate(lines) if set(line.strip()) == {"─"}) + 1
    rows = []
    for line in lines[start:]:
        if not line.strip() or line.startswith("  #"):
            break
        rows.append(line)
    return rows


@pytest.mark.parametrize("width", [80, 120])
def test_fits_the_width_and_no_figure_is_split(h100: pl.DataFrame, width: int) -> None:
    lines = render(h100, width)
    assert max(len(line) for line in lines) <= width
    rows = body(lines)
    folded = h100.height - 5  # lambda's 8x (3 regions), 4x, 2x and 1x SXM5 (2 each) fold
    assert len(rows) == min(20, folded)
    # one line per row: each starts with its rank, and every figure is whole on it
    ranks = [int(r.split()[0]) for r in rows]
    assert ranks == sorted(ranks) and ranks[0] == 1
    for row in rows:
        figures = re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w.])", row)
        assert figures, row
        assert not row.rstrip().endswith((".", ","))
    # $/eff. TFLOP-h of the first row, three significant digits
    assert re.search(r"(?<![\d.])0\.00[1-9]\d\d(?![\d])", rows[0]), rows[0]


def test_the_widths_choose_more_columns_at_120_than_at_80(h100: pl.DataFrame) -> None:
    narrow, wide = render(h100, 80)[1], render(h100, 120)[1]
    for header in ("#", "provider", "GPUs", "term", "$/eff.TFLOP-h", "job $"):
        assert header in narrow.split() or header in narrow
    assert "age" in wide.split() and "$/h" in wide.split()
    assert len(wide.split()) > len(narrow.split())


def test_regions_fold_into_one_row(h100: pl.DataFrame) -> None:
    rows = body(render(h100, 200))
    lambda_8x = [r for r in rows if "lambda" in r and "8× H100-SXM5" in r]
    assert len(lambda_8x) == 1
    assert "us-south-2, us-south-3 +1" in lambda_8x[0]
    assert re.search(r"\s3\s", lambda_8x[0])  # n: three offers folded


def test_group_by_region_keeps_one_row_per_region(h100: pl.DataFrame) -> None:
    rows = body(render(h100, 200, group_by=[GroupBy.NONE]))
    assert sum("lambda" in r and "8× H100-SXM5" in r for r in rows) == 3


def test_group_by_gpu_gives_one_row_per_model_with_the_price_range(h100: pl.DataFrame) -> None:
    rows = body(render(h100, 200, group_by=[GroupBy.GPU]))
    models = {m for r in rows for m in re.findall(r"H100-\w+-80GB", r)}
    assert len(rows) == len(models) == h100.get_column("gpu_model").n_unique()
    assert any(re.search(r"\d\.\d\d-\d+\.\d\d", r) for r in rows)  # e.g. 1.70-98.32


def test_group_by_provider_and_gpu_combine(h100: pl.DataFrame) -> None:
    rows = body(render(h100, 200, group_by=[GroupBy.PROVIDER, GroupBy.GPU]))
    pairs = h100.select("provider", "seller", "gpu_model").unique().height
    assert len(rows) == pairs


def test_wide_shows_every_column_and_columns_picks(h100: pl.DataFrame) -> None:
    header = render(h100, 80, wide=True)[1]
    assert "offer" in header.split() and "billed" in header and "…" not in header
    assert len(header) > 80
    picked = render(h100, 80, columns=["rank", "provider_label", "usd_per_hour", "age"])[1]
    assert picked.split() == ["#", "provider", "$/h", "age"]


def test_every_column_is_a_column_of_the_labelled_ranking(h100: pl.DataFrame) -> None:
    known = {*h100.columns, "provider_label", "gpus_label", "regions", "offers"}
    known |= {"checklist", "id"}  # added by the offers command where shown (_with_checklist)
    assert {c.name for c in COLUMNS} <= known
