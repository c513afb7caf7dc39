"""Price sheets: offers that have no API, written by hand in YAML or CSV.

Bare-metal hosts, long-term contracts, quotes in CNY by the month: anything a user can rent
but no API lists. The format is documented in ``docs/price-sheets.md``; in short, every
entry is a flat mapping (a YAML list item or a CSV row) whose keys are the
:class:`~adapters.schema.Offer` field names, plus:

* ``id`` (required): the configuration's stable id within its seller. Entries that price
  one configuration at several terms (hourly and monthly, on-demand and spot) share the id,
  so that the pricing engine compares those terms; two entries with the same seller, id,
  region, term, price basis and ``term_variant`` are one offer twice, and the later one is
  skipped (:data:`~adapters.base.DUPLICATE_REASON`, its ref naming the earlier);
* ``seller`` (required): who rents it out, the offer's ``seller`` (``offer_id`` becomes
  ``"<seller>/<id>"``, since every sheet offer has ``provider="sheet"``);
* ``source`` (required): where the price comes from (a URL, a quote, a file);
* ``gpu_name`` (required): the seller's GPU name, resolved through the GPU catalog
  (``gpu_model`` stays ``None`` when the catalog does not know it);
* ``example`` and ``notes`` (optional): flags and free text, not in the offer;
* ``price_date`` (optional, ``YYYY-MM-DD``): the day the price is from (a quote's date,
  the day a list price was read); the offer's ``fetched_at`` is its midnight UTC, so the
  price's age counts from it. Without it, the offer is as old as the reading of the sheet;
  a date after that is refused;
* ``illustrative`` (optional, ``true``/``false``): ``true`` marks an entry whose price is
  made up to show the format, not a quote. Such an entry is never an offer: it is skipped
  with :data:`ILLUSTRATIVE_REASON` (so it never ranks, and the skip says why). In a YAML
  sheet's ``defaults`` it marks the whole sheet.

A size or a power may be written as a spec sheet gives it (:func:`sheet_quantity`): a disk
or RAM key (``*_gb``) as ``"50 GiB"`` or ``"22 TiB"``, ``psu_watts`` as ``"4 x 2000 W"``
(all PSUs together, the schema's unit), so that copying a host's data sheet needs no
arithmetic; a bare number is in the key's own unit.

A YAML sheet is ``{"offers": [...], "defaults": {...}}``; ``defaults`` fill keys an entry
leaves out. A CSV sheet has one entry per row; an empty cell means "not given" and list
fields (``os_images``, ``frameworks``) are separated by ``;``.

:meth:`SheetAdapter.fetch` reads the files named in the ``price_sheet_paths`` setting (no
HTTP); :meth:`SheetAdapter.parse` is pure over the decoded sheets. A bad entry is skipped
with a reason naming the file, the entry (YAML ``offers[3]`` / CSV ``row 4``, the line
number) and the field; a file that is not a sheet at all is a :class:`ResponseFormatError`.
The rules every provider shares, the price floor and one offer per key, are
:meth:`ParseResult.add_offer`'s: their reasons are the common ones, the entry is in the ref.
"""

from __future__ import annotations

import asyncio
import csv
import io
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pydantic
import yaml

from .base import (
    Adapter,
    MissingCredentials,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    gpu_fields,
)
from .billing_rules import billing_fields, billing_rule
from .declarations import ProviderSetting
from .schema import Offer, RentalTerm
from .skip_summary import ILLUSTRATIVE
from .units import lenient_float, to_decimal, value_at

__all__ = ["ILLUSTRATIVE_REASON", "SHEET_KEYS", "SheetAdapter", "entry_offer", "sheet_quantity"]

#: Keys of a sheet entry that are not Offer fields.
EXTRA_KEYS = frozenset(
    {"id", "source", "gpu_name", "example", "illustrative", "notes", "price_date"}
)
#: Why an ``illustrative: true`` entry is skipped (after its place in the sheet).
ILLUSTRATIVE_REASON = f"{ILLUSTRATIVE}: not an offer"
#: How a sheet writes ``true`` and ``false`` (YAML booleans, or CSV cells).
_TRUE, _FALSE = frozenset({"true", "yes", "1"}), frozenset({"false", "no", "0"})
#: Offer fields a sheet cannot set: filled by the adapter, derived from ``gpu_name``, or
#: the provenance of a published catalog (a sheet is the user's own, not a catalog's).
MANAGED_FIELDS = frozenset(
    {"provider", "offer_id", "fetched_at", "raw_ref", "gpu_model", "gpu_raw_name", "gpu_vendor"}
    | {"via_catalog", "catalog_version", "catalog_licence"}
)
#: Every key a sheet entry may carry.
SHEET_KEYS = frozenset(set(Offer.model_fields) - MANAGED_FIELDS) | EXTRA_KEYS
#: Fields holding a list; in CSV their items are separated by this.
LIST_FIELDS = frozenset({"os_images", "frameworks"})
CSV_LIST_SEPARATOR = ";"
#: Keys whose value may carry a unit (:func:`sheet_quantity`): sizes in GB, power in W.
SIZE_FIELDS = frozenset({"ram_gb", "storage_gb", "storage_included_gb", "boot_disk_min_gb"})
POWER_FIELDS = frozenset({"psu_watts"})
#: Bytes per unit a size may be written in (decimal GB/TB as disks are sold, binary GiB/TiB
#: as operating systems and some clouds count).
_SIZE_UNITS = {"gb": 1000**3, "tb": 1000**4, "gib": 1024**3, "tib": 1024**4}
_SIZE = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[GT]i?B)\b", re.IGNORECASE)
_POWER = re.compile(
    r"^\s*(?:(?P<count>\d+)\s*[x×]\s*)?(?P<watts>\d+(?:\.\d+)?)\s*W\s*$", re.IGNORECASE
)


class SheetAdapter(Adapter):
    """Offers from user-maintained price sheets (YAML or CSV files)."""

    name: ClassVar[str] = "sheet"
    title: ClassVar[str] = "Price sheets"
    source_url: ClassVar[str] = "local: files in GPUSCOUT_PRICE_SHEET_PATHS (docs/price-sheets.md)"
    other_settings: ClassVar[tuple[ProviderSetting, ...]] = (
        ProviderSetting(
            name="price_sheet_paths",
            description="price-sheet files read by the `sheet` adapter (comma-separated or a"
            " JSON list)",
            required=True,
            paths=True,
        ),
    )

    def __init__(
        self,
        credentials: Mapping[str, Any] | None = None,
        *,
        paths: Iterable[str | os.PathLike[str]] | None = None,
        **kwargs: Any,
    ) -> None:
        """``paths`` (or ``credentials["price_sheet_paths"]``: a list of paths, or one string
        of paths joined by the OS path separator, as in ``PATH``) name the sheets to read."""
        super().__init__(None, **kwargs)
        configured = (credentials or {}).get("price_sheet_paths") if paths is None else paths
        self.paths: tuple[Path, ...] = _as_paths(configured)

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Read and decode every configured sheet (``client`` is unused: no HTTP here)."""
        if not self.paths:
            raise MissingCredentials(self.name, self.needed_settings())
        return [await asyncio.to_thread(self._read, path) for path in self.paths]

    def _read(self, path: Path) -> Any:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ProviderError(self.name, f"cannot read price sheet {path}: {exc}") from None
        return self.decode(data, str(path))

    def decode(self, data: bytes, filename: str) -> Any:
        """``{"file", "format", "content"}``: YAML as loaded, CSV as (line, row) pairs."""
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ResponseFormatError(self.name, f"{filename}: not UTF-8 ({exc})") from None
        suffix = Path(filename).suffix.lower()
        if suffix in (".yaml", ".yml"):
            try:
                content = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise ResponseFormatError(self.name, f"{filename}: not valid YAML: {exc}") from None
            return {"file": filename, "format": "yaml", "content": content}
        if suffix == ".csv":
            reader = csv.DictReader(io.StringIO(text))
            rows = [[reader.line_num, row] for row in reader]
            if reader.fieldnames is None:
                raise ResponseFormatError(self.name, f"{filename}: empty CSV (no header)")
            return {"file": filename, "format": "csv", "content": rows}
        raise ResponseFormatError(
            self.name, f"{filename}: a price sheet must end in .yaml, .yml or .csv"
        )

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult()
        for payload in payloads:
            for where, entry in _entries(payload):
                where = _labelled(where, entry)
                offer = entry_offer(where, entry, fetched_at)
                if isinstance(offer, str):
                    result.skip(f"{where}: {offer}", where)
                else:
                    result.add_offer(offer, where)
        return result


def _as_paths(value: Any) -> tuple[Path, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(Path(p) for p in value.split(os.pathsep) if p.strip())
    if isinstance(value, os.PathLike):
        return (Path(value),)
    return tuple(Path(p) for p in value)


def _entries(payload: Any) -> list[tuple[str, dict[str, Any]]]:
    """(where, entry) pairs of one decoded sheet, defaults applied; raises on a bad sheet."""
    if not isinstance(payload, Mapping) or payload.get("format") not in ("yaml", "csv"):
        raise ResponseFormatError("sheet", "not a decoded price sheet")
    file, content = str(payload.get("file")), payload.get("content")
    if payload["format"] == "csv":
        if not isinstance(content, list):
            raise ResponseFormatError("sheet", f"{file}: CSV content is not a list of rows")
        return [(f"{file} row {line}", _from_csv(row)) for line, row in content]
    if not isinstance(content, Mapping) or not isinstance(content.get("offers"), list):
        raise ResponseFormatError("sheet", f"{file}: a YAML sheet needs an 'offers' list")
    defaults = content.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise ResponseFormatError("sheet", f"{file}: 'defaults' must be a mapping")
    unknown = set(content) - {"offers", "defaults", "format_version", "title", "notes"}
    if unknown:
        raise ResponseFormatError("sheet", f"{file}: unknown top-level keys {sorted(unknown)}")
    return [
        (f"{file} offers[{i}]", {**defaults, **entry} if isinstance(entry, Mapping) else entry)
        for i, entry in enumerate(content["offers"], start=1)
    ]


def _from_csv(row: Mapping[str | None, Any]) -> dict[str, Any]:
    """A CSV row as an entry: empty cells dropped, list cells split."""
    entry: dict[str, Any] = {}
    for key, value in row.items():
        if key is None:  # more cells than header columns
            entry["<extra cells>"] = value
            continue
        text = value.strip() if isinstance(value, str) else value
        if text in ("", None):
            continue
        if key in LIST_FIELDS:
            entry[key] = [v.strip() for v in str(text).split(CSV_LIST_SEPARATOR) if v.strip()]
        else:
            entry[key] = text
    return entry


def _labelled(where: str, entry: Any) -> str:
    """Where an entry stands, with its id when it has one: ``q.yaml offers[2] (id b)``."""
    ident = value_at(entry, "id")
    return where if ident is None else f"{where} (id {ident})"


def entry_offer(
    where: str, entry: Any, fetched_at: datetime, *, provider: str | None = None
) -> Offer | str:
    """The entry's offer, or why it is skipped (the reason after ``where``, the entry's label
    of :func:`_labelled`, which its ``raw_ref`` names).

    ``provider``: the entry is a line of that provider's own published price list
    (:mod:`adapters.price_list`), not of a user's sheet: it names no ``seller`` (the provider
    rents it out itself), its id is the offer's, and the offer is that provider's.
    """
    if not isinstance(entry, Mapping):
        return f"an entry must be a mapping, not {type(entry).__name__}"
    ident = entry.get("id")
    allowed = SHEET_KEYS if provider is None else SHEET_KEYS - {"seller"}
    unknown = sorted(str(k) for k in set(entry) - allowed)
    if unknown:
        return f"unknown field {unknown[0]!r}"
    illustrative = _flag(entry.get("illustrative", False))
    if illustrative is None:
        return "field 'illustrative': must be true or false"
    if illustrative:
        return ILLUSTRATIVE_REASON
    required = ("id", "source", "gpu_name", "gpu_count", "price_amount")
    for key in required if provider is not None else ("seller", *required):
        if entry.get(key) in (None, ""):
            return f"field {key!r} is required"
    fields = {k: v for k, v in entry.items() if k not in EXTRA_KEYS}
    for key in (SIZE_FIELDS | POWER_FIELDS) & set(fields):
        value = sheet_quantity(key, fields[key])
        if isinstance(value, str):
            return f"field {key!r}: {value}"
        fields[key] = value
    try:
        fields["price_amount"] = to_decimal(entry["price_amount"])
        for key in (
            "storage_price_per_gb_month",
            "ipv4_price_per_hour",
            "boot_disk_price_per_hour",
            "egress_price_per_gb",
        ):
            if key in fields:
                fields[key] = to_decimal(fields[key])
    except ValueError as exc:
        return f"field 'price_amount' or a price: {exc}"
    priced_at = _price_date(entry.get("price_date"), fetched_at)
    if isinstance(priced_at, str):
        return f"field 'price_date': {priced_at}"
    raw_gpu = str(entry["gpu_name"]).strip()
    seller = ""
    if provider is None:
        seller = str(entry["seller"]).strip()
        fields.update(provider="sheet", seller=seller, offer_id=f"{seller}/{str(ident).strip()}")
    else:
        fields.update(provider=provider, offer_id=str(ident).strip())
    fields.update(fetched_at=priced_at, raw_ref=f"{provider or 'sheet'}:{where}")
    fields.update(gpu_raw_name=raw_gpu)
    # the GPU fields of its name, the lookup helped by its memory and form factor (Offer names
    # a bad value); what the entry gives itself overrides them
    memory, form = lenient_float(fields.get("gpu_memory_gb")), fields.get("gpu_form_factor")
    gpu = gpu_fields(raw_gpu, memory_gb=memory, form_factor=str(form) if form else None)
    # the billing increment and minimum the seller (else the provider, else any sheet)
    # documents, unless the entry gives its own (adapters.billing_rules)
    ruled = seller if provider is None and billing_rule(seller) is not None else None
    billing = billing_fields(ruled or provider or "sheet", fields.get("term"))
    try:
        offer = Offer.model_validate({**gpu, **billing, **fields})
    except pydantic.ValidationError as exc:
        return _field_error(exc)
    if offer.gpu_count == 0:
        return "field 'gpu_count': a sheet offer needs at least one GPU"
    if offer.term is RentalTerm.INTERRUPTIBLE and offer.prepaid:
        return "field 'prepaid': an interruptible offer cannot be prepaid"
    return offer


def sheet_quantity(key: str, value: Any) -> Any:
    """A size (``*_gb``) or power (``psu_watts``) as the schema counts it, from a number or a
    spec sheet's text; a text that is neither is returned as why (a ``str``).

    >>> sheet_quantity("storage_gb", "50 GiB"), sheet_quantity("ram_gb", "2 TB")
    (53.687091, 2000.0)
    >>> sheet_quantity("psu_watts", "4 x 2000 W"), sheet_quantity("psu_watts", "3000")
    (8000.0, 3000.0)
    """
    if not isinstance(value, str):
        return value  # a number, in the key's own unit (or what the schema then refuses)
    if re.fullmatch(r"\s*[-+]?\d+(?:\.\d*)?\s*", value):
        return float(value)  # a CSV cell's number
    if key in POWER_FIELDS:
        power = _POWER.match(value)
        if power is None:
            return f'{value[:40]!r} is not watts (3000, "3000 W" or "4 x 2000 W")'
        return int(power["count"] or 1) * float(power["watts"])
    size = _SIZE.match(value)
    if size is None:
        return f"{value[:40]!r} is not a size (GB, or a number with GB, TB, GiB or TiB)"
    return round(float(size["n"]) * _SIZE_UNITS[size["unit"].lower()] / 1000**3, 6)


def _price_date(value: Any, read_at: datetime) -> datetime | str:
    """The offer's ``fetched_at`` for an entry's ``price_date`` (``read_at`` without one),
    or why the value is refused."""
    if value in (None, ""):
        return read_at
    if isinstance(value, datetime):
        value = value.date()
    if not isinstance(value, date):
        try:
            value = date.fromisoformat(str(value).strip())
        except ValueError:
            return f"{str(value)[:40]!r} is not a date (YYYY-MM-DD)"
    at = datetime.combine(value, time(0, 0), tzinfo=UTC)
    if at > read_at:
        return f"{value.isoformat()} is after the sheet was read ({read_at.date().isoformat()})"
    return at


def _flag(value: Any) -> bool | None:
    """A yes/no key as YAML (a boolean) or CSV (text) gives it; ``None``: neither."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in _TRUE else False if text in _FALSE else None


def _field_error(exc: pydantic.ValidationError) -> str:
    """``field 'x': message`` for the first error, also for whole-offer checks.

    A whole-offer check has no location; its message starts with the field it is about
    (``"Value error, price_unit: a per-term price needs a commitment"``).
    """
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    message = str(first["msg"])
    if not loc:
        text = message.removeprefix("Value error, ")
        name, sep, rest = text.partition(": ")
        if sep and name in Offer.model_fields:
            loc, message = name, rest
        else:
            loc, message = "entry", text
    return f"field {loc!r}: {message}"
