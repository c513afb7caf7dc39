"""``gpuscout offers`` and ``gpuscout estimate``: rank current offers, price a training run.

``offers`` takes every filter of ``GET /v1/offers`` under the same name
(:mod:`service.commands.offer_options` generates them from the engine's models) and
answers in one of four forms: a table folded and fitted to the terminal
(:mod:`service.commands.offers_table`), or the API's own answer: ``json`` the envelope
``/v1/offers`` sends (source, sample flag, notes, warnings, snapshot time, query, offers),
``jsonl`` its offers one per line, ``csv`` its offers flattened to one row each. Those
three are built by the API's code (:func:`service.api.answers.ranked_page`), so the CLI
and the API cannot drift apart; the table path does not import the web framework.

Errors name the option the user typed (``error: --gpus: unknown GPU model ...``).
"""

from __future__ import annotations

import csv
import inspect
import io
import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from textwrap import shorten
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, cast

import typer
from pydantic import BaseModel, ValidationError
from rich import box
from rich.console import Console
from rich.table import Table

from gpuscout.adapters.gpus import Precision
from gpuscout.adapters.schema import Fabric
from gpuscout.pricing.display import figure_text
from gpuscout.pricing.job import Job
from gpuscout.pricing.requirement import PRESET_ALIASES, PRESETS, Requirement, preset

from ..current import load_current
from .console import wide_console
from .deprecated import deprecated_option, note_deprecated, resolve_deprecated
from .offer_options import (
    OptionSpec,
    field_options,
    fields_from_options,
    model_options,
    option_name,
    spelled_providers,
)
from .offers_table import (
    COLUMN_ALIASES,
    COLUMNS,
    MAX_LIMIT,
    GroupBy,
    fold,
    footnotes,
    group_count,
    label_rows,
    offers_table,
    print_wide,
)
from .serve_options import serve_options

if TYPE_CHECKING:
    import polars as pl

    from gpuscout.db.current import CurrentState

__all__ = ["EXTRA_OPTIONS", "OutputFormat", "SortKey", "offers_command", "register"]

err = Console(stderr=True)
#: The width of a note line that must stay on one line of a terminal.
NOTE_COLUMNS = 80

#: Most GPUs ``estimate --count`` prices (as ``POST /v1/estimate``).
MAX_ESTIMATE_GPUS = 100_000


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    JSONL = "jsonl"
    CSV = "csv"


class PrecisionChoice(StrEnum):
    """``--precision``: a job's precisions (:class:`~adapters.gpus.Precision`), and FP4,
    which only serving a model (``--serve``) takes."""

    FP64 = "fp64"
    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    FP4 = "fp4"


class SortKey(StrEnum):
    """The orders of an answer (as the API's ``sort``, :data:`pricing.rank.SortKey`)."""

    USD_PER_EFFECTIVE_TFLOP_HOUR = "usd_per_effective_tflop_hour"
    JOB_COST_USD = "job_cost_usd"
    ALL_IN_COST_USD = "all_in_cost_usd"
    USD_PER_HOUR = "usd_per_hour"
    USD_PER_GPU_HOUR = "usd_per_gpu_hour"


#: The options of ``offers`` that are not model fields: the API's presentation parameters
#: (same names) and the CLI's own (``--sample``, ``--format``, the table's layout).
EXTRA_OPTIONS: dict[str, tuple[Any, Any]] = {
    "preset": (
        Annotated[
            str | None,
            typer.Option(
                "--preset",
                rich_help_panel="The answer",
                help="a named requirement; other parameters refine it. One of: "
                + ", ".join(PRESETS),
            ),
        ],
        None,
    ),
    "precision": (
        Annotated[
            PrecisionChoice,
            typer.Option(
                "--precision",
                rich_help_panel="The answer",
                help="arithmetic precision of the job (serving: bf16, fp8 or fp4)",
            ),
        ],
        PrecisionChoice.BF16,
    ),
    "mfu": (
        Annotated[
            float | None,
            typer.Option(
                "--mfu",
                rich_help_panel="The answer",
                min=0.0,
                max=1.0,
                help="replace the modelled mfu",
            ),
        ],
        None,
    ),
    "scaling": (
        Annotated[
            float | None,
            typer.Option(
                "--scaling",
                rich_help_panel="The answer",
                min=0.0,
                max=1.0,
                help="replace the modelled scaling",
            ),
        ],
        None,
    ),
    "sort": (
        Annotated[
            SortKey,
            typer.Option("--sort", rich_help_panel="The answer", help="order of the answer"),
        ],
        SortKey.USD_PER_EFFECTIVE_TFLOP_HOUR,
    ),
    "limit": (
        Annotated[
            int,
            typer.Option(
                "--limit",
                rich_help_panel="The answer",
                min=1,
                max=MAX_LIMIT,
                help="offers in one page of the answer",
            ),
        ],
        20,
    ),
    "sample": (
        Annotated[
            bool,
            typer.Option(
                "--sample", rich_help_panel="The answer", help="use the bundled offline sample"
            ),
        ],
        False,
    ),
    "fmt": (
        Annotated[
            OutputFormat,
            typer.Option(
                "--format",
                rich_help_panel="The answer",
                help="table; json: the API's answer; jsonl: one offer a line; csv: one a row",
            ),
        ],
        OutputFormat.TABLE,
    ),
    "group_by": (
        Annotated[
            list[GroupBy] | None,
            typer.Option(
                "--group-by",
                rich_help_panel="The answer",
                help="table: one row per config (default: its regions folded), gpu, provider,"
                " region (repeatable), or none",
            ),
        ],
        None,
    ),
    "wide": (
        Annotated[
            bool,
            typer.Option(
                "--wide",
                rich_help_panel="The answer",
                help="table: every column, whatever the width",
            ),
        ],
        False,
    ),
    "columns": (
        Annotated[
            str | None,
            typer.Option(
                "--columns",
                rich_help_panel="The answer",
                help="table: these columns, comma-separated (field names or headers)",
            ),
        ],
        None,
    ),
}

EXTRA_OPTIONS.update(serve_options())

_SPECS: list[OptionSpec] = model_options()


def _fail(message: str) -> NoReturn:
    err.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def cli_message(exc: ValidationError, model: type[BaseModel]) -> str:
    """A model's refusal naming the CLI options: ``--gpus: unknown GPU model ...``; a
    model-level rule is prefixed with the option of the field it starts with."""
    names = field_options(_SPECS).get(model, {})
    parts = []
    for error in exc.errors(include_url=False):
        loc = [str(p) for p in error["loc"]]
        message = str(error["msg"]).removeprefix("Value error, ").splitlines()[0]
        if not loc:
            head = message.split(":", 1)[0].split(" ", 1)[0]
            loc = [head] if head in names else []
            message = message.removeprefix(f"{head}: ")
        where = names.get(loc[0], loc[0]) if loc else ""
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def _load(sample: bool) -> CurrentState:
    if not sample:
        from gpuscout.db.head import sqlite_file

        from ..first_snapshot import first_snapshot, nothing_stored
        from ..settings import get_settings

        settings = get_settings()
        file = sqlite_file(settings.database_url)
        if file is not None and file.is_file():  # no SQLAlchemy import without a database
            from gpuscout.db.migrate import upgrade_embedded

            was = upgrade_embedded(settings.database_url)
            if was is not None:
                err.print(f"note: upgraded the embedded database from {was}", highlight=False)
        if settings.fetch_when_empty and nothing_stored(settings):
            first_snapshot(settings, lambda line: err.print(line, highlight=False))
    current = load_current(sample=sample)
    if current.note:
        err.print(f"[yellow]note:[/] {current.note}", highlight=False)
    if current.fx_note:
        err.print(f"[yellow]note:[/] {current.fx_note}", highlight=False)
    if current.stale_providers:
        err.print(
            f"[yellow]stale:[/] {', '.join(current.stale_providers)} (last good prices)",
            highlight=False,
        )
    if current.catalog_providers:
        err.print(
            f"[yellow]from published catalogs:[/] {', '.join(current.catalog_providers)}"
            " (gpuhunt, SkyPilot; `gpuscout providers` gives their age)",
            highlight=False,
        )
    for line in current.skipped_lines:  # not ranked: one short line per provider
        err.print(shorten(line, NOTE_COLUMNS, placeholder=" …"), highlight=False, markup=False)
    return current


def _models(options: dict[str, Any]) -> tuple[Requirement, Job, dict[str, Any]]:
    """The requirement and job the options ask for, and the query in the API's names."""
    req, job, query = fields_from_options(options, _SPECS)
    name = options.get("preset")
    if name in PRESET_ALIASES:
        note_deprecated(f"--preset {name}", f"--preset {PRESET_ALIASES[name]}")
        name = PRESET_ALIASES[name]
    try:
        base = preset(name) if name else Requirement()
    except KeyError as exc:
        _fail(f"--preset: {exc.args[0]}")
    if name:
        query["preset"] = name
    try:
        requirement = base.merged(**req)
    except ValidationError as exc:
        _fail(cli_message(exc, Requirement))
    if not {"hours", "gpu_hours", "params", "tokens"} & job.keys():
        job["hours"] = 1.0
    try:
        return requirement, Job(**job), query
    except ValidationError as exc:
        _fail(cli_message(exc, Job))


def _caveat_expr(frame: pl.DataFrame) -> pl.Expr:
    """What a row's figures rest on, in words: "ranked at FP16: no BF16 figure", the cost's
    caveats ("form factor not stated: ranked as the slower variant (H100-PCIE-80GB)"); null
    when nothing needs saying."""
    import polars as pl

    parts: list[pl.Expr] = []
    if "peak_note" in frame.columns:
        parts.append(pl.col("peak_note"))
    if "caveats" in frame.columns:
        parts.append(pl.col("caveats"))
    if "interruptible_risk" in frame.columns:
        parts.append(pl.col("interruptible_risk"))
    if "availability" in frame.columns:
        parts.append(
            pl.when(pl.col("availability") == "not available now").then(
                pl.lit("not available now: ranked after the available offers")
            )
        )
    if not parts:
        return pl.lit(None, dtype=pl.String)
    return pl.concat_str(parts, separator="; ", ignore_nulls=True).replace("", None)


def print_table(
    ranked: pl.DataFrame,
    console: Console,
    *,
    title: str,
    limit: int,
    group_by: list[GroupBy],
    wide: bool = False,
    columns: list[str] | None = None,
    total: int | None = None,
) -> None:
    """The ranking folded and fitted to ``console``; beneath it what its marks and figures
    mean (:func:`footnotes`), then each row's term and caveats. ``total``: the rows there
    are when ``ranked`` is already cut to the limit (default: ``ranked``'s groups)."""
    import polars as pl

    caveat = _caveat_expr(ranked)
    labelled = label_rows(ranked.with_columns(caveat.alias("_caveat")), caveat)
    folded = fold(labelled, group_by, limit)
    table = offers_table(folded, console.width, title=title, wide=wide, names=columns)
    print_wide(console, table) if wide else console.print(table)
    headers = [str(c.header) for c in table.columns]
    configurations = labelled.height if total is None else total
    count = group_count(labelled, group_by) if total is None else total
    notes = footnotes(
        folded, headers, total=count, configurations=configurations, group_by=group_by
    )
    if notes:
        console.print()
    for line in notes:
        console.print(line, highlight=False, markup=False)
    # the term's reason where there is a choice to explain (not "on-demand; no commitment")
    explained = (pl.col("term") != "on_demand") | pl.col("break_even_hours").is_not_null()
    reasons = folded.select(
        "rank", pl.when(explained).then("break_even"), _cost_parts(folded), "_caveat"
    )
    said: dict[str, list[int]] = {}  # each text once, with every row it is said of
    for rank, *texts in reasons.iter_rows():
        for text in texts:
            if text:
                said.setdefault(text, []).append(rank)
    for text, ranks in said.items():
        console.print(f"  {ranks_text(ranks)}: {text}", highlight=False)


def ranks_text(ranks: list[int]) -> str:
    """``[5, 7, 9, 10, 11]`` as ``#5, #7, #9-#11``: the rows a note beneath the table is
    said of, runs of consecutive ranks joined."""
    runs: list[list[int]] = []
    for rank in ranks:
        if runs and rank == runs[-1][-1] + 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    return ", ".join(f"#{r[0]}" if len(r) == 1 else f"#{r[0]}-#{r[-1]}" for r in runs)


#: The parts of the all-in cost, named beneath the table where any beyond compute is billed.
_COST_PARTS: tuple[tuple[str, str], ...] = (
    ("job_cost_usd", "compute"),
    ("required_extras_usd", "boot disk and IPv4"),
    ("storage_cost_usd", "disk"),
    ("egress_cost_usd", "egress"),
)


def _dollars(amount: pl.Expr) -> pl.Expr:
    """``amount`` as money reads: ``$0.20``, ``$1858.00``; a billed amount under a cent as
    ``<$0.01`` (not ``$0.0``)."""
    import polars as pl

    cents = (amount * 100).round().cast(pl.Int64)
    text = pl.format("${}.{}", cents // 100, (cents % 100).cast(pl.String).str.zfill(2))
    return pl.when((cents == 0) & (amount > 0)).then(pl.lit("<$0.01")).otherwise(text)


def _cost_parts(frame: pl.DataFrame) -> pl.Expr:
    """``job $ = compute $X + disk $Y`` where the bill has parts beyond compute, else null."""
    import polars as pl

    if not all(c in frame.columns for c, _ in _COST_PARTS):
        return pl.lit(None, dtype=pl.String)
    money = [
        pl.format(f"{name} {{}}", _dollars(pl.col(c)))
        if i == 0
        else pl.when(pl.col(c) > 0).then(pl.format(f"{name} {{}}", _dollars(pl.col(c))))
        for i, (c, name) in enumerate(_COST_PARTS)
    ]
    extras = pl.any_horizontal([pl.col(c).fill_null(0) > 0 for c, _ in _COST_PARTS[1:]])
    return pl.when(extras).then(
        pl.concat_str(
            [pl.lit("job $ = "), pl.concat_str(money, separator=" + ", ignore_nulls=True)]
        )
    )


def _api_answer(
    current: CurrentState,
    query: dict[str, Any],
    requirement: Requirement,
    job: Job,
    options: dict[str, Any],
    now: datetime,
) -> dict[str, Any]:
    """The answer ``GET /v1/offers`` gives for this query, built by the API's own code."""
    from ..api.answers import ranked_page
    from ..api.engine_inputs import ParsedQuery
    from ..api.offers_query import OffersQuery, canonical_key
    from ..api.state import build_state

    extras = {k: options[k] for k in ("precision", "sort", "limit", "mfu", "scaling")}
    shown = {k: (v.value if isinstance(v, StrEnum) else v) for k, v in extras.items()}
    parsed = ParsedQuery(
        requirement=requirement,
        job=job,
        precision=options["precision"],
        sort=str(shown["sort"]),
        limit=int(options["limit"]),
        mfu=options["mfu"],
        scaling=options["scaling"],
        key=canonical_key(OffersQuery.model_construct(None, **query, **shown)),
    )
    page = ranked_page(build_state(current, cache_entries=1), parsed, now)
    return cast(dict[str, Any], json.loads(page.body))


def flat_offer(offer: Mapping[str, Any]) -> dict[str, Any]:
    """An answer's offer as one flat row: each group's fields at the top (their names are
    unique across groups); nested values as JSON text."""
    row: dict[str, Any] = {}
    for key, value in offer.items():
        if isinstance(value, Mapping):
            row.update(flat_offer(value) if key != "links" else {key: json.dumps(value)})
        elif isinstance(value, list):
            row[key] = json.dumps(value)
        else:
            row[key] = value
    return row


def _emit_answer(answer: dict[str, Any], fmt: OutputFormat) -> None:
    offers = answer.get("offers", [])
    if fmt is OutputFormat.JSON:
        typer.echo(json.dumps(answer, indent=1, ensure_ascii=False))
    elif fmt is OutputFormat.JSONL:
        for offer in offers:
            sys.stdout.write(json.dumps(offer, ensure_ascii=False) + "\n")
    else:
        rows = [flat_offer(o) for o in offers]
        out = io.StringIO()
        if rows:
            writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        typer.echo(out.getvalue(), nl=False)


def _with_checklist(frame: pl.DataFrame, ranked: pl.DataFrame) -> pl.DataFrame:
    """The ranking with each row's ``checklist`` summary (the checklist's items, counted) and its
    API ``id`` (what ``gpuscout offer`` takes): the table's ``--wide`` columns."""
    import polars as pl

    from gpuscout.pricing.offer_checklist import OFFER_KEY_COLUMNS, summaries

    from ..api.offer_ids import offer_id, offer_key

    rows = ranked.select(OFFER_KEY_COLUMNS).iter_rows(named=True)
    ids = pl.Series("id", [offer_id(offer_key(r)) for r in rows], dtype=pl.String)
    return ranked.with_columns(summaries(frame, ranked), ids)


def _with_rent(ranked: pl.DataFrame) -> pl.DataFrame:
    """The ranking with each row's ``rent`` link (:func:`adapters.rent.rent_link`): the
    table's ``rent`` column, shown when asked for (``--columns ...,rent``)."""
    import polars as pl

    from gpuscout.adapters.rent import rent_link

    parts = ("provider", "seller", "offer_id", "instance_name", "region")
    links = [
        rent_link(
            r["provider"],
            seller=r["seller"],
            offer_id=r["offer_id"],
            instance_name=r["instance_name"],
            region=r["region"],
        )
        for r in ranked.select(parts).iter_rows(named=True)
    ]
    return ranked.with_columns(pl.Series("rent", links, dtype=pl.String))


def _check_providers(requirement: Requirement, current: CurrentState) -> Requirement:
    """``requirement`` with its providers spelled as known; refuse a
    ``--providers``/``--exclude-providers`` name neither an adapter nor the offers being
    ranked have (:func:`.offer_options.spelled_providers`)."""
    from gpuscout.pricing.names import UnknownName

    try:
        return spelled_providers(requirement, lambda: current.frame)
    except UnknownName as exc:
        _fail(exc.message)


def offers_command(**options: Any) -> None:
    """Rank the current offers by USD per effective TFLOP-hour for a job.

    Every filter of GET /v1/offers is an option of the same name (:data:`OFFERS_HELP`).
    With ``--serve MODEL``, by USD per million tokens of serving that model instead.
    """
    if options.get("serve"):
        from .serve_options import serve_command

        serve_command(options)
        return
    if options["precision"] == PrecisionChoice.FP4:
        _fail("--precision: fp4 prices serving a model only (with --serve)")
    options["precision"] = Precision(options["precision"])
    requirement, job, query = _models(options)
    from gpuscout.pricing.coverage import binding_note, left_out_note
    from gpuscout.pricing.rank import RankOptions, rank_page

    current = _load(bool(options["sample"]))
    requirement = _check_providers(requirement, current)
    now = datetime.now(UTC)
    fmt = OutputFormat(options["fmt"])
    if fmt is not OutputFormat.TABLE:
        answer = _api_answer(current, query, requirement, job, options, now)
        for warning in answer.get("warnings", []):
            if warning not in (current.note, current.skipped_note):  # said by _load
                err.print(f"[yellow]note:[/] {warning}", highlight=False)
        if not answer.get("offers"):
            err.print("no offer meets the requirement", highlight=False)
        _emit_answer(answer, fmt)
        return
    group_by = list(options["group_by"] or [GroupBy.CONFIG])
    limit = int(options["limit"])
    rank_options = RankOptions(
        precision=options["precision"],
        limit=None if group_by != [GroupBy.NONE] else limit,
        sort=cast(Any, str(options["sort"])),
        now=now,
        mfu=options["mfu"],
        scaling=options["scaling"],
    )
    # with the configurations the job cannot be placed on, from the ranking's own placement
    page = rank_page(current.frame, requirement, job, rank_options, unplaced=True)
    ranked = page.rows
    # every configuration its own row, cut by the ranking: it counts the rest
    total = page.total if rank_options.limit is not None else None
    left_out = left_out_note(
        current.frame,
        requirement,
        now,
        precision=options["precision"],
        job=job,
        name=option_name,
        unplaced=page.unplaced,
    )
    if ranked.is_empty():
        why = binding_note(
            current.frame, requirement, precision=options["precision"], name=option_name
        )
        nothing = "no offer meets the requirement and can run the job"
        err.print(why or (f"{nothing} (see the note)" if left_out else nothing), highlight=False)
    if left_out:
        err.print(f"[yellow]note:[/] {left_out}", highlight=False)
    names = [c.strip() for c in options["columns"].split(",")] if options["columns"] else None
    known = {c.name for c in COLUMNS} | {c.header for c in COLUMNS} | set(COLUMN_ALIASES)
    unknown = [n for n in names or () if n not in known]
    if unknown:
        _fail(
            f"--columns: unknown {', '.join(unknown)}; known: {', '.join(c.name for c in COLUMNS)}"
        )
    if ranked.is_empty():
        return  # said above: a table of no rows is only a header
    if options["wide"] or {"checklist", "id"} & set(names or ()):
        ranked = _with_checklist(current.frame, ranked)
    if "rent" in (names or ()):
        ranked = _with_rent(ranked)
    print_table(
        ranked,
        wide_console(),
        title=f"offers ({'sample' if current.sample else current.source})",
        limit=limit,
        group_by=group_by,
        wide=bool(options["wide"]),
        columns=names,
        total=total,
    )


def _signature() -> inspect.Signature:
    params = [spec.parameter() for spec in _SPECS]
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
        for name, (ann, default) in EXTRA_OPTIONS.items()
    ]
    return inspect.Signature(params)


offers_command.__signature__ = _signature()  # type: ignore[attr-defined]
offers_command.__annotations__ = {
    p.name: p.annotation
    for p in offers_command.__signature__.parameters.values()  # type: ignore[attr-defined]
}


#: What each quantity of an estimate means, shown beside it in the table. The two wall
#: clocks differ: the estimate's is the run at its effective rate on its topology (the
#: offer's, else the reference: the GPUs asked for, 8 a node); the offer's adds what its
#: term costs in time (restarts on an interruptible term), which is what its cost pays for.
ESTIMATE_NOTES: dict[str, str] = {
    "total_flops": "6 x params x tokens",
    "peak_tflops_per_gpu": "dense peak at the precision",
    "effective_tflops": "all GPUs x peak x mfu x scaling",
    "gpu_hours": "GPU-hours of compute at that rate",
    "wall_clock_hours": "total_flops / effective_tflops",
    "memory_needed_gb": "weights + gradients + optimizer state",
    "memory_available_gb": "usable memory of all the GPUs",
    "cost_usd": "the run on the offer below",
    "offer.wall_clock_hours": "on this offer's nodes and term (what its cost pays for)",
    "offer.billed_hours": "hours billed (whole periods of a commitment)",
    "offer.billing_rounding_hours": "billed beyond the expected wall clock (increment, minimum)",
    "offer.job_cost_usd": "the run on this offer",
}
#: A text value longer than this is printed beneath the table, wrapped, not in a cell.
_CELL_TEXT = 28


def _estimate_text(key: str, value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, int | float):
        name = key.rsplit(".", 1)[-1]
        if "usd" in name or "cost" in name:
            return figure_text(value, significant=3, decimals=2)
        if float(value).is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        if abs(value) < 1:
            return f"{value:.3g}"
        return figure_text(value, significant=3, decimals=1)
    return str(value)


#: The option of each input :func:`pricing.estimate.estimate` refuses (its error's field).
_ESTIMATE_OPTION = {
    "gpu_model": "--gpu-model",
    "job_gpus": "--job-gpus",
    "precision": "--precision",
    "fabric": "--fabric",
    "fabric_gbps_per_gpu": "--fabric-gbps-per-gpu",
}


def estimate_command(
    gpu_model: Annotated[
        str | None, typer.Option(help='one GPU model, e.g. A100-SXM4-80GB or "H100 SXM" (required)')
    ] = None,
    job_gpus: Annotated[
        int | None, typer.Option(min=1, max=MAX_ESTIMATE_GPUS, help="total GPUs (required)")
    ] = None,
    params: Annotated[
        float | None, typer.Option("--model-params", "--params", help="model parameters, e.g. 7e9")
    ] = None,
    tokens: Annotated[float | None, typer.Option(help="training tokens, e.g. 2e12")] = None,
    active_params: Annotated[
        float | None,
        typer.Option(
            help="a mixture of experts' active parameters, e.g. 37e9 (FLOPs; --model-params"
            " is then the total, for memory)"
        ),
    ] = None,
    old_gpu: Annotated[str | None, deprecated_option("--gpu", "--gpu-model")] = None,
    old_count: Annotated[
        int | None, deprecated_option("--count", "--job-gpus", min=1, max=MAX_ESTIMATE_GPUS)
    ] = None,
    precision: Annotated[Precision, typer.Option(help="arithmetic precision of the job")] = (
        Precision.BF16
    ),
    fabric: Annotated[
        Fabric | None,
        typer.Option(
            help="assume this fabric between nodes, whatever the offers state"
            " [default: the offer's, else infiniband]"
        ),
    ] = None,
    fabric_gbps_per_gpu: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            max=1e5,
            help="assume this fabric bandwidth per GPU, Gbit/s, whatever the offers state"
            " [default: the offer's, else 400]",
        ),
    ] = None,
    layers: Annotated[
        int | None,
        typer.Option(min=1, max=10_000, help="transformer layers (attention FLOPs, activations)"),
    ] = None,
    hidden_size: Annotated[
        int | None,
        typer.Option(min=1, max=1_000_000, help="model width d (attention FLOPs, activations)"),
    ] = None,
    context_tokens: Annotated[
        int | None,
        typer.Option(min=1, max=10_000_000, help="sequence length in training, tokens"),
    ] = None,
    sample: Annotated[bool, typer.Option(help="use the bundled offline sample")] = False,
    fmt: Annotated[
        OutputFormat,
        typer.Option("--format", help="table; json: the API's answer"),
    ] = OutputFormat.TABLE,
) -> None:
    """GPU-hours, wall clock, memory and cost of a training run (FLOPs = 6 x params x tokens,
    plus 12 x layers x hidden x context per token when the model shape is given)."""
    from gpuscout.pricing.estimate import EstimateInputError, estimate

    gpu = resolve_deprecated(gpu_model, old_gpu, "--gpu", "--gpu-model")
    count = resolve_deprecated(job_gpus, old_count, "--count", "--job-gpus")
    missing = [o for v, o in ((gpu, "--gpu-model"), (count, "--job-gpus")) if v is None]
    missing += [o for v, o in ((params, "--model-params"), (tokens, "--tokens")) if v is None]
    if missing or params is None or tokens is None:
        _fail(f"{', '.join(missing)}: required")
    if params <= 0 or tokens <= 0:
        _fail("--model-params and --tokens must be > 0")
    from gpuscout.pricing.names import one_gpu_model

    try:  # before the offers load: the name alone decides
        gpu = one_gpu_model(gpu).name
    except ValueError as exc:
        _fail(f"{'--gpu-model' if gpu_model is not None else '--gpu'}: {exc}")
    current = _load(sample)
    try:
        result = estimate(
            gpu,
            count,
            params,
            tokens,
            offers=current.frame,
            precision=precision,
            fabric=fabric,
            fabric_gbps_per_gpu=fabric_gbps_per_gpu,
            layers=layers,
            hidden_size=hidden_size,
            context_tokens=context_tokens,
            active_params=active_params,
        )
    except ValidationError as exc:  # the job's own bounds (--params, --tokens)
        _fail(cli_message(exc, Job))
    except EstimateInputError as exc:
        _fail(f"{_ESTIMATE_OPTION.get(exc.field, exc.field)}: {exc}")
    if fmt is not OutputFormat.TABLE:
        answer = _estimate_answer(current, result)
        if fmt is OutputFormat.JSON:
            typer.echo(json.dumps(answer, indent=1, ensure_ascii=False))
        else:
            data = answer["estimate"]
            offer = data.pop("offer") or {}
            data.update({f"offer_{k}": v for k, v in flat_offer(offer).items()})
            _emit_answer({"offers": [data]}, fmt)
        return
    data = result.model_dump(mode="json")
    offer = data.pop("offer") or {}
    rows: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, dict):  # factor_sources: one row per factor
            rows += [(f"{key}.{k}", v) for k, v in value.items()]
        elif isinstance(value, list):  # warnings
            rows += [(key, v) for v in value]
        else:
            rows.append((key, value))
    rows += [(f"offer.{k}", v) for k, v in offer.items() if not isinstance(v, dict)]
    console = wide_console()
    table = Table(
        title=f"estimate: {params:g} params x {tokens:g} tokens on {count} {result.gpu_model}",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("quantity", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("what it is", overflow="fold", ratio=1)
    long_texts = []
    for key, value in rows:
        if isinstance(value, str) and len(value) > _CELL_TEXT:
            long_texts.append((key, value))
            continue
        table.add_row(key, _estimate_text(key, value), ESTIMATE_NOTES.get(key, ""))
    console.print(table)
    for key, value in long_texts:
        console.print(f"{key}: {value}", highlight=False)


def _estimate_answer(current: CurrentState, result: Any) -> dict[str, Any]:
    """The answer ``POST /v1/estimate`` gives with ``gpu_model`` (the API's models)."""
    from ..api.answer_schema import Provenance
    from ..api.answers import page_header
    from ..api.routers.estimate import EstimateAnswer
    from ..api.state import build_state

    header = page_header(build_state(current, cache_entries=1), datetime.now(UTC))
    head = {name: header[name] for name in Provenance.model_fields}
    answer = EstimateAnswer(**head, mode="model", estimate=result)
    return cast(dict[str, Any], answer.model_dump(mode="json"))


#: ``offers --help``: one paragraph per line (typer keeps a docstring's line breaks).
OFFERS_HELP = "\n\n".join(
    (
        "Rank the current offers by USD per effective TFLOP-hour for a job.",
        "Every filter of GET /v1/offers is an option of the same name. A job is --hours,"
        " --gpu-hours, or --params with --tokens (default: one hour).",
    )
)


def register(app: typer.Typer) -> None:
    app.command("offers", help=OFFERS_HELP)(offers_command)
    app.command("estimate")(estimate_command)
