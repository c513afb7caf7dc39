"""What the published-catalog sources share: the catalog's name and licence on every offer,
a CSV read into rows, and one offer per priced term of a row.

A published catalog is another project's collection of many providers' prices, refreshed
on a schedule and published as files anyone can fetch without an account (SkyPilot's
``vms.csv`` per cloud, :mod:`adapters.skypilot_catalog`; gpuhunt's zip per provider,
:mod:`adapters.gpuhunt_catalog`). Its offers name the real provider (``aws``, not the
catalog) and say the catalog they came through (``via_catalog``), its version
(``catalog_version``) and its licence (``catalog_licence``); :mod:`adapters.precedence`
ranks them below the provider's own adapter and any keyless feed. Each offer's ``country``
is its provider's region looked up as that provider's own adapter would
(:func:`adapters.regions.region_country`), ``None`` where no source names it.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from .base import (
    FailedCall,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    failed_calls_payload,
    gpu_fields,
    price_fields,
)
from .schema import OfferFields, PriceBasis, RentalTerm
from .units import positive_decimal, text

#: Reads one CSV row of a catalog into offers: (result, row, provider, version, ref).
RowParser = Callable[[ParseResult, Mapping[str, str], str, str | None, str], None]

__all__ = [
    "PublishedCatalog",
    "add_catalog_offers",
    "csv_rows",
    "form_factor_in_name",
    "gathered_payloads",
    "parse_catalog_files",
]


@dataclasses.dataclass(frozen=True, slots=True)
class PublishedCatalog:
    """One published catalog: its name as offers carry it, its licence and where its
    format is documented."""

    name: str
    licence: str
    """an SPDX identifier, ``NOASSERTION`` where the catalog states none"""

    def fields(self, version: str | None) -> OfferFields:
        """The provenance fields of every offer read from this catalog at ``version``."""
        return {
            "via_catalog": self.name,
            "catalog_version": version or None,
            "catalog_licence": self.licence,
        }


def csv_rows(
    text: str, required: tuple[str, ...], *, adapter: str, what: str
) -> list[dict[str, str]]:
    """The rows of a catalog CSV, each a column -> text mapping.

    A header without a ``required`` column is a :class:`ResponseFormatError` naming it and
    ``what`` (the file): the catalog changed its format, and guessing would misread prices.
    """
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in required if c not in header]
    if missing:
        raise ResponseFormatError(adapter, f"{what}: no column {', '.join(missing)}")
    return [dict(row) for row in reader]


def add_catalog_offers(
    result: ParseResult,
    ref: str,
    fields: OfferFields,
    prices: Mapping[RentalTerm, object],
    *,
    gpu_name: str,
    gpu_memory_gb: float | None = None,
    form_factor: str | None = None,
) -> None:
    """Add one offer per term of ``prices`` that has a positive price: USD per hour for the
    whole instance, as both catalogs publish it. An empty or zero price is a term not sold
    (no spot price), not an error; a price that is not a number skips the record.

    ``fields`` holds the offer's identity, machine and provenance fields; ``form_factor``
    is a text hint the catalog's instance type gives (``"SXM"`` in ``gpu-h100-sxm_...``).
    """
    priced: list[tuple[RentalTerm, Decimal]] = []
    for term, raw in prices.items():
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            continue
        try:
            amount = positive_decimal(raw)
        except ValueError:
            result.skip(f"bad {term.value} price {raw!r}", ref)
            return
        if amount is not None:  # a zero price is a term not sold (SkyPilot's Vast rows)
            priced.append((term, amount))
    if not priced:
        result.skip("no price", ref)
        return
    gpu = gpu_fields(gpu_name, memory_gb=gpu_memory_gb, form_factor=form_factor)
    for term, amount in priced:
        offer: OfferFields = {**fields, **gpu, **price_fields(amount, PriceBasis.INSTANCE, term)}
        result.add(ref, **offer)


def form_factor_in_name(instance_type: str) -> str | None:
    """The GPU form factor an instance type's name states (``gpu-h100-sxm_8gpu``,
    ``n3-H100-SXM5x8``, ``A100_PCIE_80GB``), as a text hint for the GPU lookup; ``None``
    where it states none (the lookup then assumes nothing better than the name says)."""
    lowered = instance_type.lower()
    if "sxm" in lowered:
        return "SXM"
    if "pcie" in lowered:
        return "PCIe"
    return None


def gathered_payloads(adapter: str, parts: Sequence[str], answers: Sequence[Any]) -> list[Any]:
    """The payloads of a catalog's parts fetched together (``answers``: each part's payload
    or the exception it raised, in the order of ``parts``): a part that failed becomes a
    :class:`FailedCall` for parse to report; every part failing is the catalog's error (the
    first one's), so that no network fails the source instead of storing nothing as ok.

    Anything but a :class:`ProviderError` (a bug, a cancellation) is raised as it is.
    """
    payloads: list[Any] = []
    failed: list[FailedCall] = []
    errors: list[ProviderError] = []
    for part, answer in zip(parts, answers, strict=True):
        if isinstance(answer, ProviderError):
            errors.append(answer)
            failed.append(FailedCall(f"{adapter}:{part}", answer.reason))
        elif isinstance(answer, BaseException):
            raise answer
        else:
            payloads.append(answer)
    if not payloads and errors:
        raise errors[0]
    return [*payloads, failed_calls_payload(failed)] if failed else payloads


def parse_catalog_files(
    adapter: Any,
    payloads: Sequence[Any],
    *,
    fetched_at: datetime,
    key: str,
    providers: Mapping[str, str],
    required: tuple[str, ...],
    file_name: Callable[[str], str],
    parse_row: RowParser,
    ref: str,
) -> ParseResult:
    """The offers of a catalog's files, each payload ``{key, version, csv}`` naming the
    file's provider as the catalog spells it (``key``: ``provider`` or ``cloud``); a file
    of a provider gpuscout does not list (``providers``: catalog name -> gpuscout's) is
    skipped with its reason, a call that failed is a skipped record too."""
    rest, failed = adapter.split_failed_calls(payloads)
    result = ParseResult(provider=adapter.name, fetched_at=fetched_at)
    result.skip_failed(failed)
    for payload in rest:
        if not isinstance(payload, Mapping) or not isinstance(payload.get("csv"), str):
            raise ResponseFormatError(adapter.name, f"expected a {{{key}, version, csv}} payload")
        source = str(payload.get(key))
        provider = providers.get(source)
        if provider is None:
            result.skip(f"{key} {source!r} is not a provider gpuscout lists", source)
            continue
        name = file_name(source)
        rows = csv_rows(payload["csv"], required, adapter=adapter.name, what=name)
        version = text(payload.get("version"))
        for number, row in enumerate(rows, start=2):
            parse_row(result, row, provider, version, f"{ref}:{name}:{number}")
    return result
