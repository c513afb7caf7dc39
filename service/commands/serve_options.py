"""``gpuscout offers --serve MODEL``: the offers ranked by USD per million tokens.

The options are the fields of :class:`~pricing.serve_rank.ServeRequest` (``--serve``,
``--scenario``, ``--tokens-per-day``, ``--input-tokens``, ``--output-tokens``, ``--ttft-s``,
``--tpot-s``), named as the API's parameters of ``/v1/offers?serve=``, with the field's
description as help; ``--precision`` is the offers command's own (it takes ``fp4`` here).
The requirement's filters and ``--hours`` (the service's duration; default a month) are the
offers command's. ``--format json|jsonl|csv`` prints the API's answer
(:func:`service.serving_answer.serving_answer`); the table shows the same rows.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich import box
from rich.table import Table

from gpuscout.pricing.display import figure_text
from gpuscout.pricing.serve_rank import DEFAULT_SERVICE_HOURS, ServeRanking, ServeRequest

from .console import wide_console
from .offer_options import option_name

__all__ = ["SERVE_PANEL", "serve_command", "serve_options"]

SERVE_PANEL = "Serving a model"


def serve_options() -> dict[str, tuple[Any, Any]]:
    """Every :class:`ServeRequest` field but ``precision``, as an option of ``offers``."""
    options: dict[str, tuple[Any, Any]] = {}
    for name, info in ServeRequest.model_fields.items():
        if name == "precision":
            continue
        base: Any = info.annotation
        if isinstance(base, type) and issubclass(base, enum.Enum):
            annotation: Any = base | None
        elif name == "serve":
            annotation = str | None
        else:
            annotation = float | None
        option = typer.Option(
            option_name(name), help=info.description or "", rich_help_panel=SERVE_PANEL
        )
        options[name] = (Annotated[annotation, option], None)
    return options


def _request(options: dict[str, Any]) -> ServeRequest:
    from .pricing import _fail

    precision = str(options["precision"])
    if precision not in ("bf16", "fp8", "fp4"):
        _fail(f"--precision: serving takes bf16, fp8 or fp4, not {precision}")
    data = {n: options[n] for n in ServeRequest.model_fields if options.get(n) is not None}
    data["precision"] = precision
    try:
        return ServeRequest.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = option_name(str(error["loc"][0])) if error["loc"] else "--serve"
        _fail(f"{where}: {str(error['msg']).removeprefix('Value error, ')}")


def _money(value: float | None) -> str:
    return "" if value is None else "$" + figure_text(value, significant=3, decimals=2)


#: Below this console width the table keeps the columns a choice rests on.
WIDE = 150


def _table(ranking: ServeRanking, limit: int, title: str, width: int) -> tuple[Table, list[str]]:
    """The ranking as a table that fits ``width`` columns, and the notes beneath it: each
    throughput source in full, numbered as the rows cite it, and what ``*`` means."""
    demand = ranking.request.tokens_per_day is not None
    wide = width >= WIDE
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    headers = ["#", "provider"] + (["region"] if wide else [])
    headers += ["GPUs", "term"] + (["$/h"] if wide else []) + ["repl."]
    headers += (["batch", "tok/s/GPU"] if wide else []) + ["src", "$/Mtok"]
    headers += ["$/Mtok in"] if wide else []
    headers += ["offers", "$/Mtok at demand"] if demand else []
    for header in headers:
        right = header.startswith(("$", "#", "tok", "batch", "offers"))
        keep = header in ("GPUs", "term")  # whole words; the region folds first
        table.add_column(
            header, overflow="fold", justify="right" if right else "left", no_wrap=keep
        )
    sources: list[str] = []
    risky = False
    for row in ranking.rows.head(limit).iter_rows(named=True):
        source = str(row["throughput_source"])
        if source not in sources:
            sources.append(source)
        risky = risky or bool(row["restart_risk"])
        cells = [str(row["rank"]), row["provider"]]
        if wide:
            cells.append(row["region"] or "")
        cells += [
            f"{row['gpu_count']}x {row['gpu_model']}",
            row["term"] + ("*" if row["restart_risk"] else ""),
        ]
        cells += [_money(row["usd_per_service_hour"])] if wide else []
        cells.append(f"{row['replicas']}x{row['gpus_per_replica']}")
        if wide:
            cells += [str(row["batch"]), f"{row['tokens_per_s_per_gpu']:,.0f}"]
        cells += [f"[{sources.index(source) + 1}]", _money(row["usd_per_m_tokens"])]
        cells += [_money(row["usd_per_m_input_tokens"])] if wide else []
        if demand:
            cells += [str(row["instances_needed"]), _money(row["usd_per_m_tokens_at_demand"])]
        table.add_row(*cells)
    notes = [f"[{i}] {source}" for i, source in enumerate(sources, 1)]
    notes += ["repl.: replicas x GPUs each, in one offer; $/Mtok: USD per million output tokens"]
    notes += ["* interruptible: a restart risk for a live service"] if risky else []
    notes += ["each offer's id and every figure: --format json"]
    if not wide:
        notes += [f"wider than {WIDE} columns: region, $/h, batch, tok/s/GPU, $/Mtok in"]
    return table, notes


def serve_command(options: dict[str, Any]) -> None:
    """Rank the current offers by USD per million tokens of serving ``--serve``."""
    from ..serving_answer import LEFT_OUT_WORDS, THROUGHPUT_NOTE, serving_answer
    from .pricing import (
        OutputFormat,
        _check_providers,
        _emit_answer,
        _load,
        _models,
        err,
    )

    request = _request(options)
    requirement, job, _query = _models(options)
    hours = DEFAULT_SERVICE_HOURS if options.get("hours") is None else float(job.hours or 0)
    current = _load(bool(options["sample"]))
    requirement = _check_providers(requirement, current)
    from gpuscout.pricing.serve_rank import rank_serving

    ranking = rank_serving(current.frame, request, requirement, hours, datetime.now(UTC))
    limit = int(options["limit"])
    fmt = OutputFormat(options["fmt"])
    if fmt is not OutputFormat.TABLE:
        _emit_answer(serving_answer(ranking, current, limit), fmt)
        return
    for reason, count in sorted(ranking.left_out.items()):
        example = ranking.examples.get(reason)
        err.print(
            f"[yellow]left out:[/] {count} configuration(s): {LEFT_OUT_WORDS[reason]}"
            + (f" (e.g. {example})" if example else ""),
            highlight=False,
            soft_wrap=True,
        )
    if ranking.rows.is_empty():
        err.print(f"no offer can serve {request.serve}", highlight=False)
        return
    w = ranking.workload
    model = request.model_entry()
    title = (
        f"{model.title} at {request.precision.name}, {request.scenario.value}:"
        f" {w.input_tokens:g} tokens in, {w.output_tokens:g} out a request;"
        f" terms for {hours:g} h of service"
        f" ({'sample' if current.sample else current.source})"
    )
    console = wide_console()
    table, notes = _table(ranking, limit, title, console.width)
    console.print(table)
    for note in notes:
        err.print(f"[dim]{note}[/]", highlight=False)
    err.print(f"[dim]{THROUGHPUT_NOTE}[/]", highlight=False, soft_wrap=True)
