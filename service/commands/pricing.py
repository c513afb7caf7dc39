"""``gpuscout offers`` and ``gpuscout estimate``: rank current offers, price a training run."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, NoReturn

import polars as pl
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from adapters.gpus import Precision
from adapters.schema import Fabric, RentalTerm
from db.current import CurrentState
from pricing import Job, RankOptions, Requirement, estimate, preset, rank
from pricing.coverage import binding_note, left_out_note
from pricing.display import for_display, provider_label_expr
from pricing.requirement import preset_names

from ..current import load_current
from .errors import validation_message
from .providers import wide_console

__all__ = ["register"]

err = Console(stderr=True)

#: The options of ``offers`` a job field is given by (errors name the option).
JOB_OPTIONS = {"gpu_hours": "--gpu-hours", "gpus": "--job-gpus"}
#: Most offers ``offers --limit`` prints.
MAX_LIMIT = 10_000
#: Most GPUs ``estimate --count`` prices (as ``POST /v1/estimate``).
MAX_ESTIMATE_GPUS = 100_000


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"


#: Columns shown by ``--format table`` with their short headers (json and csv carry every
#: column under its full name).
TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "#"),
    ("provider", "provider"),
    ("offer_id", "offer"),
    ("region", "region"),
    ("gpus_label", "GPUs"),
    ("term", "term"),
    ("usd_per_hour", "$/h"),
    ("usd_per_gpu_hour", "$/GPU-h"),
    ("effective_tflops", "eff. TFLOPs"),
    ("usd_per_effective_tflop_hour", "$/eff. TFLOP-h"),
    ("wall_clock_hours", "wall h"),
    ("all_in_cost_usd", "job $ all-in"),
)

#: The parts of the all-in cost, named beneath the table where any beyond compute is billed.
_COST_PARTS: tuple[tuple[str, str], ...] = (
    ("job_cost_usd", "compute"),
    ("required_extras_usd", "boot disk and IPv4"),
    ("storage_cost_usd", "disk"),
    ("egress_cost_usd", "egress"),
)


def _fail(message: str) -> NoReturn:
    err.print(f"[red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)


def _load(sample: bool, fmt: OutputFormat) -> CurrentState:
    current = load_current(sample=sample)
    if current.note:
        err.print(f"[yellow]note:[/] {current.note}", highlight=False)
    if current.fx_note:
        err.print(f"note: {current.fx_note}", highlight=False)
    if current.stale_providers:
        err.print(
            f"[yellow]stale:[/] {', '.join(current.stale_providers)} (last good prices)",
            highlight=False,
        )
    return current


def _job(
    hours: float | None,
    gpu_hours: float | None,
    params: float | None,
    tokens: float | None,
    job_gpus: int | None,
) -> Job:
    if hours is None and gpu_hours is None and params is None and tokens is None:
        hours = 1.0
    try:
        return Job(hours=hours, gpu_hours=gpu_hours, params=params, tokens=tokens, gpus=job_gpus)
    except ValidationError as exc:
        _fail(validation_message(exc, JOB_OPTIONS))


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _count_label(count: pl.Expr) -> pl.Expr:
    """``8`` for whole GPU counts, ``0.25`` for a slice."""
    whole = count == count.round(0)
    return (
        pl.when(whole)
        .then(count.cast(pl.Int64).cast(pl.String))
        .otherwise(count.round(2).cast(pl.String))
    )


def _print_table(frame: pl.DataFrame, title: str) -> None:
    """A compact table; the break-even of each row's chosen term is listed beneath it."""
    console = wide_console()
    table = Table(title=title, header_style="bold")
    caveat = _caveat_expr(frame)
    label = pl.format("{}× {}", _count_label(pl.col("total_gpus")), pl.col("gpu_model"))
    labelled = frame.with_columns(
        pl.when(caveat.is_not_null())
        .then(pl.concat_str([label, pl.lit(" *")]))
        .otherwise(label)
        .alias("gpus_label")
    )
    if "seller" in labelled.columns:
        labelled = labelled.with_columns(provider=provider_label_expr())
    cols = [(c, h) for c, h in TABLE_COLUMNS if c in labelled.columns]
    for col, header in cols:
        numeric = labelled.schema[col].is_numeric()
        table.add_column(header, justify="right" if numeric else "left", overflow="fold")
    for row in labelled.select(c for c, _ in cols).iter_rows():
        table.add_row(*(_fmt(v) for v in row))
    console.print(table)
    if "break_even" in frame.columns:
        for rank, text in frame.select("rank", "break_even").iter_rows():
            if text:
                console.print(f"  #{rank}: {text}", highlight=False)
    if all(c in frame.columns for c, _ in _COST_PARTS):
        costs = frame.select("rank", *(c for c, _ in _COST_PARTS))
        for rank, compute, *extras in costs.iter_rows():
            if any(extras):
                parts = [f"compute ${_fmt(compute)}"] + [
                    f"{name} ${_fmt(value)}"
                    for (_, name), value in zip(_COST_PARTS[1:], extras, strict=True)
                    if value
                ]
                console.print(f"  #{rank} $: {' + '.join(parts)}", highlight=False)
    for rank, text in frame.select("rank", caveat).iter_rows():
        if text:
            console.print(f"  #{rank} *: [yellow]{text}[/]", highlight=False)


def _caveat_expr(frame: pl.DataFrame) -> pl.Expr:
    """What a row's figures rest on, in words: "form factor not stated (ranked as the slower
    H100-PCIE-80GB)", "ranked at FP16: no BF16 figure"; null when nothing needs saying."""
    parts: list[pl.Expr] = []
    if "form_factor_stated" in frame.columns:
        parts.append(
            pl.when(~pl.col("form_factor_stated")).then(
                pl.format("form factor not stated (ranked as the slower {})", pl.col("gpu_model"))
            )
        )
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


def _emit(frame: pl.DataFrame, fmt: OutputFormat, title: str) -> None:
    if fmt is OutputFormat.TABLE:
        _print_table(frame, title)
    elif fmt is OutputFormat.CSV:
        typer.echo(for_display(frame).write_csv(), nl=False)
    else:
        typer.echo(json.dumps(for_display(frame).to_dicts(), default=_json_default, indent=1))


def _json_default(value: Any) -> str:
    """Datetimes in ISO 8601 (``2025-10-01T00:00:00+00:00``); anything else as text."""
    return value.isoformat() if isinstance(value, datetime) else str(value)


def offers_command(
    gpu: Annotated[
        list[str] | None, typer.Option("--gpu", help="GPU model, family (H100) or vendor")
    ] = None,
    preset_name: Annotated[
        str | None, typer.Option("--preset", help=f"one of: {', '.join(preset_names())}")
    ] = None,
    min_gpus: Annotated[float | None, typer.Option(help="GPUs per offer, at least")] = None,
    max_gpus: Annotated[float | None, typer.Option(help="GPUs per offer, at most")] = None,
    min_gpu_memory_gb: Annotated[float | None, typer.Option()] = None,
    provider: Annotated[list[str] | None, typer.Option("--provider")] = None,
    exclude_provider: Annotated[list[str] | None, typer.Option("--exclude-provider")] = None,
    region: Annotated[list[str] | None, typer.Option("--region", help="region prefix")] = None,
    country: Annotated[list[str] | None, typer.Option("--country", help="ISO code")] = None,
    term: Annotated[list[RentalTerm] | None, typer.Option("--term")] = None,
    max_usd_per_hour: Annotated[float | None, typer.Option()] = None,
    fabric: Annotated[
        list[Fabric] | None, typer.Option("--fabric", "--interconnect", help="cluster fabric")
    ] = None,
    hours: Annotated[float | None, typer.Option(help="job: wall-clock hours")] = None,
    gpu_hours: Annotated[float | None, typer.Option(help="job: GPU-hours")] = None,
    params: Annotated[float | None, typer.Option(help="job: model parameters, e.g. 7e9")] = None,
    tokens: Annotated[float | None, typer.Option(help="job: training tokens, e.g. 2e12")] = None,
    job_gpus: Annotated[
        int | None, typer.Option(help="job: total GPUs (spans several instances)")
    ] = None,
    precision: Annotated[Precision, typer.Option()] = Precision.BF16,
    limit: Annotated[int, typer.Option(min=1, max=MAX_LIMIT)] = 20,
    sample: Annotated[bool, typer.Option(help="use the bundled offline sample")] = False,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.TABLE,
) -> None:
    """Rank the current offers by USD per effective TFLOP-hour for a job."""
    try:
        base = preset(preset_name) if preset_name else Requirement()
    except KeyError as exc:
        _fail(f"--preset: {exc.args[0]}")
    try:
        requirement = base.merged(
            gpus=tuple(gpu or ()),
            min_gpus=min_gpus,
            max_gpus=max_gpus,
            min_gpu_memory_gb=min_gpu_memory_gb,
            providers=tuple(provider or ()),
            exclude_providers=tuple(exclude_provider or ()),
            regions=tuple(region or ()),
            countries=tuple(country or ()),
            terms=tuple(term or ()),
            max_usd_per_hour=max_usd_per_hour,
            fabrics=tuple(fabric or ()),
        )
    except ValidationError as exc:
        _fail(validation_message(exc))
    job = _job(hours, gpu_hours, params, tokens, job_gpus)
    current = _load(sample, fmt)
    frame = current.frame
    options = RankOptions(precision=precision, limit=limit, now=datetime.now(UTC))
    ranked = rank(frame, requirement, job, options)
    if ranked.is_empty():
        why = binding_note(frame, requirement, precision=precision)
        err.print(
            why or "no offer meets the requirement and can run the job (see the note)",
            highlight=False,
        )
    left_out = left_out_note(frame, requirement, precision=precision, job=job)
    if left_out:
        err.print(f"[yellow]note:[/] {left_out}", highlight=False)
    _emit(ranked, fmt, f"offers ({'sample' if current.sample else current.source})")


def estimate_command(
    gpu: Annotated[str, typer.Option("--gpu", help="canonical GPU model, e.g. A100-SXM4-80GB")],
    count: Annotated[int, typer.Option(min=1, max=MAX_ESTIMATE_GPUS, help="total GPUs")],
    params: Annotated[float, typer.Option(help="model parameters, e.g. 7e9")],
    tokens: Annotated[float, typer.Option(help="training tokens, e.g. 2e12")],
    precision: Annotated[Precision, typer.Option()] = Precision.BF16,
    fabric: Annotated[Fabric, typer.Option(help="fabric between nodes")] = Fabric.INFINIBAND,
    fabric_gbps_per_gpu: Annotated[float, typer.Option(min=0.001, max=1e5)] = 400.0,
    sample: Annotated[bool, typer.Option(help="use the bundled offline sample")] = False,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.TABLE,
) -> None:
    """GPU-hours, wall clock, memory and cost of a training run (FLOPs = 6 x params x tokens)."""
    if params <= 0 or tokens <= 0:
        _fail("--params and --tokens must be > 0")
    current = _load(sample, fmt)
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
        )
    except ValidationError as exc:  # the job's own bounds (--params, --tokens)
        _fail(validation_message(exc))
    except ValueError as exc:
        _fail(f"--gpu/--precision: {exc}")
    data = result.model_dump(mode="json")
    if fmt is OutputFormat.JSON:
        typer.echo(json.dumps(data, indent=1))
        return
    if fmt is OutputFormat.CSV:
        offer = data.pop("offer") or {}
        data.update({f"offer_{k}": v for k, v in offer.items()})
        typer.echo(pl.DataFrame([data]).write_csv(), nl=False)
        return
    table = Table(title=f"estimate: {params:g} params x {tokens:g} tokens on {count} {gpu}")
    table.add_column("quantity")
    table.add_column("value", overflow="fold")
    offer = data.pop("offer")
    for key, value in data.items():
        table.add_row(key, _fmt(value))
    for key, value in (offer or {}).items():
        table.add_row(f"offer.{key}", _fmt(value))
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("offers")(offers_command)
    app.command("estimate")(estimate_command)
