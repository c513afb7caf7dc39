"""The ``offers`` table at 80 and 120 columns, its folding (``--group-by``) and columns."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime

import polars as pl
import pytest
from rich.console import Console

from gpuscout.adapters.schema import default_fx
from gpuscout.pricing import Job, RankOptions, Requirement, rank
from gpuscout.pricing.display import figure_text
from gpuscout.service.commands.offers_table import COLUMNS, GroupBy
from gpuscout.service.commands.pricing import _cost_parts, print_table, ranks_text
from gpuscout.service.current import load_sample

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
    # lambda's 8x (3 regions), 4x, 2x and 1x SXM5 (2 each) fold (jarvislabs' unknown-region
    # row is skipped: a region it does not provision)
    folded = h100.height - 5
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


def test_an_offer_id_naming_its_region_folds_with_the_same_offer_elsewhere(
    h100: pl.DataFrame,
) -> None:
    """JarvisLabs names the region in its offer ids (``europe-01:H100:1x``): its 1x H100 in
    two regions is one row of the table, not two rows that read the same; an id that only
    contains a region's name elsewhere, or a row without a region, is not changed."""
    [europe] = h100.filter(pl.col("provider") == "jarvislabs").iter_rows(named=True)
    noida = {**europe, "region": "india-noida-01", "offer_id": "india-noida-01:H100:1x"}
    noida["config_id"] = int(h100.get_column("config_id").max()) + 1  # type: ignore[arg-type]
    jarvis = pl.DataFrame([europe, noida], schema=h100.schema)
    others = h100.filter(pl.col("provider") != "jarvislabs")
    both = pl.concat([others, jarvis]).sort("rank", maintain_order=True)
    both = both.with_columns(  # each row its own place, as the ranking gives them
        rank=pl.int_range(1, pl.len() + 1).cast(h100.schema["rank"])
    )
    rows = [r for r in body(render(both, 200, limit=200)) if "jarvislabs" in r]
    assert len(rows) == 1
    assert re.search(r"\s2\s", rows[0])  # n: two offers folded
    unfolded = body(render(both, 200, limit=200, group_by=[GroupBy.NONE]))
    assert sum("jarvislabs" in r for r in unfolded) == 2
    odd = jarvis.with_columns(
        offer_id=pl.Series(["H100:europe-01:1x", "x"]),
        region=pl.Series(["europe-01", None]),
        rank=pl.Series([1, 2]).cast(h100.schema["rank"]),
    )
    assert len(body(render(odd, 200))) == 2


def test_group_by_region_keeps_one_row_per_region(h100: pl.DataFrame) -> None:
    rows = body(render(h100, 200, group_by=[GroupBy.NONE]))
    assert sum("lambda" in r and "8× H100-SXM5" in r for r in rows) == 3


def test_group_by_gpu_gives_one_row_per_model_with_the_price_range(h100: pl.DataFrame) -> None:
    rows = body(render(h100, 200, group_by=[GroupBy.GPU]))
    models = {m for r in rows for m in re.findall(r"H100-\w+-\d+GB", r)}
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
    known = {*h100.columns, "provider_label", "gpus_label", "job_usd_per_hour", "regions"}
    known |= {"published_price"}  # label_rows: the price as published, where not in USD
    known |= {"offers"}
    known |= {"checklist", "id"}  # added by the offers command where shown (_with_checklist)
    known |= {"rent"}  # added by the offers command when asked for (_with_rent)
    assert {c.name for c in COLUMNS} <= known


def notes(lines: list[str]) -> str:
    """The lines beneath the table, before the rows' own ``#N`` lines, joined (they wrap)."""
    start = next(i for i, line in enumerate(lines) if set(line.strip()) == {"─"}) + 1
    start += len(body(lines))
    beneath = []
    for line in lines[start:]:
        if line.startswith("  #"):
            break
        beneath.append(line.strip())
    return " ".join(beneath)


@pytest.fixture(scope="module")
def multi_node() -> pl.DataFrame:
    """A 512-GPU training run of H100s on the sample: 64 nodes of 8."""
    frame = load_sample(default_fx()).frame
    job = Job.training(70e9, 2e12, gpus=512)
    return rank(frame, Requirement(gpus=("H100",)), job, RankOptions(limit=None, now=NOW))


def test_a_multi_node_row_shows_its_nodes_and_the_jobs_hourly_cost(
    multi_node: pl.DataFrame,
) -> None:
    first = multi_node.row(0, named=True)
    assert first["nodes"] == 64 and first["gpus"] == 8
    rows = body(render(multi_node, 120))
    assert "64 × 8× H100-SXM5-80GB *" in rows[0]
    hourly = figure_text(first["usd_per_hour"] * 64)  # 1,638: all 64 nodes an hour
    assert re.search(rf"\s{re.escape(hourly)}\s", rows[0]), rows[0]
    assert not re.search(rf"\s{re.escape(figure_text(first['usd_per_hour']))}\s", rows[0])
    said = notes(render(multi_node, 120))
    assert (
        "64 × 8× H100-SXM5-80GB: 64 nodes of 8 GPUs rented together; $/h and job $ are for"
        f" all 64 nodes ({figure_text(first['usd_per_hour'])} an hour a node)" in said
    )
    narrow = render(multi_node, 80)
    assert max(len(line) for line in narrow) <= 80
    assert "64 × 8× H100-SXM5-80GB *" in body(narrow)[0]
    assert "64 nodes of 8 GPUs rented together" in notes(narrow)


def test_a_job_on_part_of_its_nodes_says_how_many_gpus_it_uses(h100: pl.DataFrame) -> None:
    frame = load_sample(default_fx()).frame
    twelve = rank(frame, Requirement(gpus=("H100",)), Job(hours=10, gpus=12), RankOptions(now=NOW))
    rows = body(render(twelve, 120))
    assert any("2 × 8× H100-SXM5-80GB" in r for r in rows)
    assert "(the job uses 12 of the 16)" in notes(render(twelve, 120))


def test_one_node_rows_keep_their_labels_and_no_nodes_line(h100: pl.DataFrame) -> None:
    rows = body(render(h100, 120))
    assert any(re.search(r"\s8× H100-SXM5-80GB\s", r) for r in rows)
    assert not any(" × " in r for r in rows)
    assert "nodes of" not in notes(render(h100, 120))
    # one node: $/h is the instance's price, as before (lambda's 8x H100 SXM at 23.92)
    assert any("lambda" in r and "8× H100-SXM5-80GB" in r and " 23.92 " in r for r in rows)


def test_the_caveat_mark_is_explained_when_a_marked_row_is_shown(h100: pl.DataFrame) -> None:
    legend = "*: the row's figures carry a caveat, named on its #N line below"
    for width in (80, 120):
        lines = render(h100, width)
        assert any(r.rstrip().endswith("*") or " * " in r for r in body(lines))
        assert legend in notes(lines)
    plain = h100.filter(pl.col("provider") == "lambda")
    assert not any("*" in r for r in body(render(plain, 120)))
    assert legend not in notes(render(plain, 120))


def test_a_cut_table_says_how_many_rows_the_limit_left_out(h100: pl.DataFrame) -> None:
    rows = h100.height - 5  # lambda's regions fold (test_fits_the_width...)
    said = notes(render(h100, 120, limit=3))
    assert (
        f"3 of {rows} rows shown ({h100.height} configurations, regions folded);"
        f" --limit {rows} to see all" in said
    )
    assert "shown" not in notes(render(h100, 120, limit=rows))
    gpus = h100.get_column("gpu_model").n_unique()
    by_gpu = notes(render(h100, 120, limit=1, group_by=[GroupBy.GPU]))
    assert f"1 of {gpus} GPU models shown ({h100.height} configurations)" in by_gpu
    # every configuration its own row: the ranking is cut, the command passes its total
    page = notes(render(h100.head(3), 120, limit=3, group_by=[GroupBy.NONE], total=40))
    assert "3 of 40 configurations shown; --limit 40 to see all" in page


@pytest.mark.parametrize("width", [80, 120])
def test_skipped_ranks_are_explained_at_every_width(h100: pl.DataFrame, width: int) -> None:
    lines = render(h100, width)
    header, rows = lines[1].split(), body(lines)
    ranks = [int(r.split()[0]) for r in rows]
    assert ranks != list(range(1, len(ranks) + 1))  # folded rows skip ranks
    said = notes(lines)
    if "n" in header:
        assert "n: offers folded into the row (the same configuration in several regions);" in said
        assert "# is the best rank among them, so the others' ranks are skipped" in said
    else:
        assert "# skips the ranks of offers folded into a row above" in said
        assert "--wide counts them (n), --group-by none gives each its own row" in said
    unfolded = notes(render(h100, width, group_by=[GroupBy.NONE]))
    assert "folded" not in unfolded


def test_the_hourly_column_still_answers_to_usd_per_hour(h100: pl.DataFrame) -> None:
    lines = render(h100, 80, columns=["rank", "usd_per_hour"])
    rule = next(i for i, line in enumerate(lines) if set(line.strip()) == {"─"})
    assert lines[rule - 1].split() == ["#", "$/h"]
    assert any(r.split()[1] == "23.92" for r in body(lines))  # lambda's 8x H100 SXM


def test_the_bill_beneath_the_table_reads_as_money() -> None:
    """``job $ = ...`` in cents, a billed part under a cent as ``<$0.01`` (it read
    ``$0.0``), a part not billed left out."""
    frame = pl.DataFrame(
        {
            "job_cost_usd": [0.2, 1858.499],
            "required_extras_usd": [0.004, 0.0],
            "storage_cost_usd": [0.0, 12.3456],
            "egress_cost_usd": [None, 0.0],
        }
    )
    said = frame.select(_cost_parts(frame)).to_series().to_list()
    assert said == [
        "job $ = compute $0.20 + boot disk and IPv4 <$0.01",
        "job $ = compute $1858.50 + disk $12.35",
    ]


def test_ranks_text_joins_runs_of_consecutive_ranks() -> None:
    assert ranks_text([3]) == "#3"
    assert ranks_text([1, 4, 5, 9, 10, 11, 13]) == "#1, #4-#5, #9-#11, #13"


def test_a_note_said_of_several_rows_is_printed_once_naming_them(h100: pl.DataFrame) -> None:
    """The caveats beneath the table: each text once, after the ranks it is said of."""
    notes = [line for line in render(h100, 200) if line.startswith("  #")]
    texts = [line.split(": ", 1)[1] for line in notes]
    assert len(texts) == len(set(texts)), notes
    assert any(line.split(": ", 1)[0].count("#") > 1 for line in notes), notes
