"""``gpuscout offer ID``: one current offer, every published field by group, and the renter's
checklist for it (met / not met / unknown, with the value behind each item).

``ID`` is the offer's ``id`` in the API's answers (``gpuscout offers --format json``, or the
``id`` column of ``gpuscout offers --columns id``) or its key
(``provider|offer_id|region|term|basis``, as the web page's URL carries it). ``--format
json`` prints what ``GET /v1/offers/{id}`` answers, built by the same code.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from gpuscout.pricing.display import figure_text

from ..current import load_current
from .console import wide_console

__all__ = ["offer_command", "register"]

err = Console(stderr=True)

_STATUS_STYLE = {"met": "green", "not met": "red", "unknown": "yellow"}


class DetailFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


def _fail(message: str) -> NoReturn:
    err.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def offer_key_of(text: str) -> str | None:
    """The offer key ``text`` names: an API id, or a key itself; None if neither."""
    from ..api.offer_ids import decode_offer_id

    key = decode_offer_id(text)
    if key is not None:
        return key
    return text if text.count("|") >= 4 and text.isprintable() else None


def _published(current: Any, key: str, row: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The stored record (a database's current offer, the sample's), as the web page reads
    it; the database engine is opened for this one read."""
    from gpuscout.service.offer_record import published_record

    if current.source != "database":
        return published_record(key, row, source=current.source, engine=None)
    from gpuscout.db.engine import make_engine
    from gpuscout.service.settings import get_settings

    engine = make_engine(get_settings().database_url)
    try:
        return published_record(key, row, source=current.source, engine=engine)
    finally:
        engine.dispose()


def _value(value: Any) -> str:
    if value is True or value is False:
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def usd_text(row: dict[str, Any], fx_as_of: str | None) -> str | None:
    """The offer's price in dollars beside a price published in another currency (a
    Chinese platform's yuan): ``0.374 an hour, 0.374 per GPU-hour (FX table of
    2025-02-28)``; ``None`` for a price published in USD, which the fields say already."""
    if row.get("price_currency") in (None, "USD") or row.get("usd_per_hour") is None:
        return None
    text = f"{figure_text(row['usd_per_hour'], significant=3, decimals=3)} an hour"
    gpus = row.get("gpus") or 1
    per_gpu = row.get("usd_per_gpu_hour") or row["usd_per_hour"] / gpus
    if gpus != 1:
        text += f", {figure_text(per_gpu, significant=3, decimals=3)} per GPU-hour"
    return text + (f" (FX table of {fx_as_of})" if fx_as_of else "")


def _print(detail: dict[str, Any], title: str, usd: str | None = None) -> None:
    out = wide_console()
    out.print(f"[bold]{title}[/]", highlight=False)
    rent = detail["links"]["rent"]
    out.print(
        f"Rent: {rent}" if rent else "Rent: no link (a seller gpuscout does not know)",
        highlight=False,
        soft_wrap=True,
    )
    for group in detail["fields"]:
        table = Table(title=group["group"], show_header=False, title_justify="left")
        table.add_column("field", style="bold")
        table.add_column("value")
        for name, value in group["fields"].items():
            table.add_row(name, _value(value))
        if usd is not None and "price_amount" in group["fields"]:
            table.add_row("in USD", usd)
        if group["not_published"]:
            table.add_row("not published", ", ".join(group["not_published"]), style="dim")
        out.print(table)
    checklist = detail["checklist"]
    table = Table(title=f"The renter's checklist: {checklist['summary']}", title_justify="left")
    for header in ("group", "item", "asks for", "status", "published"):
        table.add_column(header)
    for check in checklist["checks"]:
        status = check["status"]
        table.add_row(
            check["group"],
            check["item"],
            check["threshold"],
            f"[{_STATUS_STYLE[status]}]{status}[/]",
            check["value"],
        )
    out.print(table)


def offer_command(
    offer: Annotated[
        str,
        typer.Argument(
            help="the offer's id (offers[].id of the API's answers) or its key"
            " (provider|offer_id|region|term|basis)",
            show_default=False,
        ),
    ],
    sample: Annotated[
        bool, typer.Option("--sample", help="the bundled sample, not the database")
    ] = False,
    fmt: Annotated[
        DetailFormat, typer.Option("--format", help="table, or json as GET /v1/offers/{id}")
    ] = DetailFormat.TABLE,
) -> None:
    """Show one current offer: every field its provider publishes, and the renter's checklist."""
    from gpuscout.service.offer_record import checklist_of, detail_parts, frame_key

    from ..api.offer_ids import offer_id, offer_links

    key = offer_key_of(offer)
    if key is None:
        _fail(
            f"{offer!r} is neither an offer id nor an offer key; `gpuscout offers --columns"
            " rank,provider,id` lists ids"
        )
    current = load_current(sample=sample)
    hit = current.frame.filter(frame_key() == key)
    checklist = checklist_of(hit, key)
    if checklist is None:
        where = "sample" if current.sample else current.source
        _fail(f"no current offer with key {key!r} ({where}); `gpuscout offers` lists them")
    row = hit.row(0, named=True)
    record, origin = _published(current, key, row)
    detail = {
        "id": offer_id(key),
        "key": key,
        "record_from": origin,
        **detail_parts(record, checklist),
        "links": offer_links(key, row),
    }
    if fmt is DetailFormat.JSON:
        typer.echo(json.dumps(detail, indent=1, ensure_ascii=False, default=str))
        return
    if current.note:
        err.print(f"[yellow]note:[/] {current.note}", highlight=False)
    name = row["instance_name"] or row["offer_id"]
    title = f"{row['provider']} {name} ({row['region'] or 'no region'}, {row['term']})"
    fx = getattr(current, "fx", None)
    _print(detail, title, usd_text(row, str(fx.as_of) if fx is not None else None))


def register(app: typer.Typer) -> None:
    app.command("offer")(offer_command)
