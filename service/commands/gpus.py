"""``gpuscout gpus``: print the GPU catalog, or show what a provider's raw GPU name maps to.

The catalog is what every ranking is computed from, so it must be easy to inspect: which
figures a model has, which are missing, and where they come from. ``--resolve`` runs one raw
name through the same resolver the adapters use, to check a new provider's spelling; a name
with a count, as ``--gpus`` takes it (``H100:8``, dstack's spelling), answers what that
requirement selects: every model the name means, and how many GPUs per offer.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from gpuscout.adapters.gpus import (
    FigureBasis,
    GpuSpec,
    Precision,
    catalog,
    gpus_named,
    resolve_gpu_name,
    similar_gpu_names,
)
from gpuscout.adapters.schema import GpuFormFactor, Vendor
from gpuscout.pricing.names import did_you_mean
from gpuscout.pricing.requirement import GpuChoice, gpu_choice

__all__ = ["OutputFormat", "register"]

#: Field names of :class:`GpuSpec`, in catalog (and CSV/JSON output) order.
FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(GpuSpec))

#: Columns of the human-readable table: identity, memory, then throughput.
_TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("name", "name"),
    ("family", "family"),
    ("vendor", "vendor"),
    ("form_factor", "form"),
    ("memory_gb", "mem GB"),
    ("mem_bandwidth_gbs", "GB/s"),
    ("tflops_fp32", "fp32"),
    ("tflops_tf32", "tf32"),
    ("tflops_bf16", "bf16"),
    ("tflops_fp16", "fp16"),  # Turing, Volta, Ascend: no BF16, ranked at this
    ("tflops_fp8", "fp8"),
    ("tdp_w", "W"),
)


#: Width of the table when stdout is not a terminal (a file, a pipe, a test runner).
_PIPED_WIDTH = 160


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"


def _record(spec: GpuSpec) -> dict[str, Any]:
    """A JSON-able dict with the catalog's field names (enums as their values)."""
    return {
        name: (value.value if isinstance(value, StrEnum) else value)
        for name, value in ((f, getattr(spec, f)) for f in FIELDS)
    }


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _as_csv(specs: tuple[GpuSpec, ...]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    for spec in specs:
        writer.writerow({k: _cell(v) for k, v in _record(spec).items()})
    return buffer.getvalue()


#: What marks a figure derived by a rule in the table (JSON and CSV keep the datasheet cells).
_DERIVED_MARK = "*"


def _figure_cell(spec: GpuSpec, field: str) -> tuple[str, bool]:
    """A TFLOPS cell: the datasheet figure, else one a rule derives, marked; and whether
    it is derived."""
    precision = Precision(field.removeprefix("tflops_"))
    figure = spec.derived_figure(precision)
    if figure is None or figure.basis is FigureBasis.DATASHEET:
        return _cell(spec.peak_tflops(precision)), False
    return f"{figure.tflops:g}{_DERIVED_MARK}", True


def _as_table(specs: tuple[GpuSpec, ...], title: str | None = None) -> Table:
    table = Table(title=title)
    for field, header in _TABLE_COLUMNS:
        numeric = field.startswith(("tflops_", "memory_gb", "mem_", "tdp_"))
        table.add_column(header, justify="right" if numeric else "left", no_wrap=field == "name")
    derived = False
    for spec in specs:
        record = _record(spec)
        cells = []
        for field, _ in _TABLE_COLUMNS:
            if field.startswith("tflops_"):
                cell, by_rule = _figure_cell(spec, field)
                derived = derived or by_rule
                cells.append(cell)
            else:
                cells.append(_cell(record[field]))
        table.add_row(*cells)
    if derived:
        table.caption = f"{_DERIVED_MARK} derived by a sourced rule (gpu_figure_rules.csv)"
    return table


def _emit(specs: tuple[GpuSpec, ...], output: OutputFormat, title: str | None = None) -> None:
    match output:
        case OutputFormat.JSON:
            typer.echo(json.dumps([_record(s) for s in specs], indent=2))
        case OutputFormat.CSV:
            typer.echo(_as_csv(specs), nl=False)
        case OutputFormat.TABLE:
            console = Console()
            if not console.is_terminal:  # piped: do not squeeze the table into 80 columns
                console = Console(width=_PIPED_WIDTH)
            console.print(_as_table(specs, title))


def _vendor(value: str | None) -> Vendor | None:
    if value is None:
        return None
    try:
        return Vendor(value.strip().lower())
    except ValueError:
        known = ", ".join(v.value for v in Vendor)
        raise typer.BadParameter(f"unknown vendor {value!r}; known: {known}") from None


def _unresolved(raw: str, hinted: bool) -> str:
    """Why ``raw`` resolves to no model, in one line: no model matches (with the closest
    names), or several do, or the hints rule out those the name may be."""
    models = ", ".join(s.name for s in gpus_named(raw))
    if not models:
        close = did_you_mean(similar_gpu_names(raw))
        return f"unknown GPU name {raw!r}: no catalog model matches{close}"
    if hinted:
        return f"unknown GPU name {raw!r}: the hints rule out what it may be ({models})"
    return (
        f"unknown GPU name {raw!r}: it may be any of {models}"
        " (give --memory-gb / --form-factor to tell them apart)"
    )


#: A colon with no space beside it: a count (``H100:8``), not a provider's own colon
#: (GCP's "Commitment v1: Nvidia Tesla A100 GPU").
_COUNT_COLON = re.compile(r"(?<!\s):(?!\s)")


def _per_offer(choice: GpuChoice) -> str:
    """How many GPUs per offer a choice asks for, in words."""
    low, high = choice.min_gpus, choice.max_gpus
    if low is not None and low == high:
        return f"{low} GPU{'s' if low != 1 else ''} per offer"
    if low is not None and high is not None:
        return f"{low} to {high} GPUs per offer"
    if low is not None:
        return f"at least {low} GPUs per offer"
    return f"at most {high} GPUs per offer" if high is not None else "any number per offer"


def _resolve_choice(text: str, output: OutputFormat) -> None:
    """What ``--gpus TEXT`` selects: every model the name means, and the count per offer."""
    try:
        choice = gpu_choice(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--resolve") from None
    models = gpus_named(choice.name)
    if not models:
        close = did_you_mean(similar_gpu_names(choice.name))
        typer.echo(f"error: unknown GPU name {choice.name!r}: no catalog model matches{close}")
        raise typer.Exit(code=1)
    per_offer = _per_offer(choice)
    match output:
        case OutputFormat.JSON:
            answer = {
                "query": text,
                "name": choice.name,
                "min_gpus": choice.min_gpus,
                "max_gpus": choice.max_gpus,
                "models": [_record(s) for s in models],
            }
            typer.echo(json.dumps(answer, indent=2))
        case _:
            names = ", ".join(s.name for s in models)
            _emit(models, output, title=f"{text!r} -> any of {names}; {per_offer}")


def _resolve(
    raw: str,
    memory_gb: float | None,
    form_factor: str | None,
    output: OutputFormat,
) -> None:
    if _COUNT_COLON.search(raw):
        _resolve_choice(raw, output)
        return
    try:
        spec = resolve_gpu_name(raw, memory_gb=memory_gb, form_factor=form_factor)
    except ValueError as exc:  # an unknown --form-factor
        raise typer.BadParameter(str(exc), param_hint="--form-factor") from None
    if spec is None:
        typer.echo(
            f"error: {_unresolved(raw, memory_gb is not None or bool(form_factor))}", err=True
        )
        raise typer.Exit(code=1)
    match output:
        case OutputFormat.JSON:
            typer.echo(json.dumps(_record(spec), indent=2))
        case _:
            _emit((spec,), output, title=f"{raw!r} -> {spec.name}")
    if spec.variant_assumed:  # as the adapters map it; the offers' --gpus takes them all
        variants = [s for s in gpus_named(raw) if s.memory_gb == spec.memory_gb]
        others = ", ".join(s.name for s in variants if s.name != spec.name)
        typer.echo(
            f"note: {raw!r} does not say which of {spec.name}, {others} it is: the slower,"
            f" {spec.name}, is assumed (an offer under this name ranks by its figures and"
            " shows no form factor); `offers --gpus` with this name takes all of them",
            err=True,
        )


def gpus(
    output: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="table, json or csv.")
    ] = OutputFormat.TABLE,
    vendor: Annotated[
        str | None, typer.Option(help="Only this vendor: nvidia, amd, intel, huawei.")
    ] = None,
    family: Annotated[
        str | None, typer.Option(help='Only this family, e.g. "H100" or "RTX-4090".')
    ] = None,
    resolve: Annotated[
        str | None,
        typer.Option(
            help='Show the catalog model a raw provider name maps to, e.g. "H100 SXM",'
            ' "4090D", "昇腾910B"; with a count, as --gpus takes it ("H100:8"), the models'
            " and GPUs per offer that selects."
        ),
    ] = None,
    memory_gb: Annotated[
        float | None,
        typer.Option(help="Memory hint for --resolve: GB per GPU (values > 2048 read as MiB)."),
    ] = None,
    form_factor: Annotated[
        str | None,
        typer.Option(
            help="Form-factor hint for --resolve: " + ", ".join(f.value for f in GpuFormFactor)
        ),
    ] = None,
) -> None:
    """List the GPU catalog (dense peak TFLOPS per GPU), or resolve one raw GPU name."""
    if resolve is not None:
        _resolve(resolve, memory_gb, form_factor, output)
        return
    wanted_vendor = _vendor(vendor)
    family_key = family.strip().upper().replace(" ", "-") if family else None
    specs = tuple(
        s
        for s in catalog()
        if (wanted_vendor is None or s.vendor is wanted_vendor)
        and (family_key is None or s.family.upper() == family_key)
    )
    _emit(specs, output)


def register(app: typer.Typer) -> None:
    """Add the ``gpus`` command to the CLI."""
    app.command("gpus")(gpus)
