"""Named unit conversions for parsing provider payloads.

Providers mix MB, MiB, GB and GiB freely; every conversion in an adapter goes through one of
these helpers, so a reader sees which unit the provider used. GB here is the decimal
gigabyte the GPU datasheets and cloud price pages use, except where a name says GiB.
"""

from __future__ import annotations

import csv
import functools
import io
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from importlib import resources
from typing import Any

from .base import Adapter, ParseResult, ResponseFormatError
from .schema import HOURS_PER_MONTH, OfferFields, Vendor

__all__ = [
    "add_per_region",
    "cents_to_units",
    "data_rows",
    "gbps_to_mbps",
    "gib_to_gb",
    "google_money_to_decimal",
    "gpu_vendor",
    "key_headers",
    "kib_to_gb",
    "lenient_decimal",
    "lenient_float",
    "mb_to_gb",
    "mbps_to_gbps",
    "mib_to_gb",
    "nominal_gpu_memory_gb",
    "non_negative",
    "payload_list",
    "per_gb_hour_to_per_gb_month",
    "per_gib_hour_to_per_gb_month",
    "positive",
    "positive_price",
    "read_table",
    "region_countries",
    "text",
    "to_decimal",
    "to_float",
    "whole_count",
]

_GIB = 1024**3
_GB = 1000**3


def mb_to_gb(mb: float) -> float:
    """Decimal megabytes to gigabytes."""
    return mb / 1000


def mib_to_gb(mib: float) -> float:
    """Mebibytes (as nvidia-smi reports GPU memory) to decimal gigabytes."""
    return mib * 1024**2 / _GB


def gib_to_gb(gib: float) -> float:
    """Gibibytes to decimal gigabytes."""
    return gib * _GIB / _GB


def kib_to_gb(kib: float) -> float:
    return kib * 1024 / _GB


def mbps_to_gbps(mbps: float) -> float:
    return mbps / 1000


def gbps_to_mbps(gbps: float) -> float:
    """Gigabits per second to megabits per second (link speeds quoted in Gbps)."""
    return gbps * 1000


def to_decimal(value: Any) -> Decimal | None:
    """A price as an exact Decimal from a JSON number or numeric string; None if absent.

    Floats go through ``str`` so that 0.1 stays 0.1. Raises ValueError on garbage.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    try:
        result = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"not a number: {value!r}") from None
    if not result.is_finite():
        raise ValueError(f"not a finite number: {value!r}")
    return result


def to_float(value: Any) -> float | None:
    """A quantity from a JSON number or numeric string; None if absent; ValueError on garbage."""
    dec = to_decimal(value)
    return None if dec is None else float(dec)


def cents_to_units(cents: Any) -> Decimal | None:
    """Hundredths of a currency unit (Lambda's ``price_cents_per_hour``) to units, exactly.

    >>> cents_to_units(2392)
    Decimal('23.92')
    """
    dec = to_decimal(cents)
    return None if dec is None else dec / 100


def nominal_gpu_memory_gb(size: float) -> float:
    """A GPU's memory size as quoted (\"80GB\", \"gpuMemoryGib: 80\"), kept as the nominal figure.

    GPU memory is sold by nominal size: an "80 GB" H100 holds 80 GiB, and providers label that
    same 80 as GB or GiB at random. The GPU catalog keys on the nominal number, so it is kept
    as is rather than converted; this helper names that decision.
    """
    return float(size)


def per_gb_hour_to_per_gb_month(price_per_gb_hour: Decimal) -> Decimal:
    """A storage price per GB-hour to per GB per 730-hour month (the schema's month).

    >>> per_gb_hour_to_per_gb_month(Decimal("0.00005"))
    Decimal('0.03650')
    """
    return price_per_gb_hour * HOURS_PER_MONTH


def per_gib_hour_to_per_gb_month(price_per_gib_hour: Decimal) -> Decimal:
    """A storage price per GiB-hour to per decimal-GB per 730-hour month.

    >>> per_gib_hour_to_per_gb_month(Decimal("0.0001"))
    Decimal('0.06798655')
    """
    per_gb_hour = price_per_gib_hour * Decimal(_GB) / Decimal(_GIB)
    return (per_gb_hour * HOURS_PER_MONTH).quantize(Decimal("0.00000001"))


def google_money_to_decimal(units: Any, nanos: Any) -> Decimal:
    """A ``google.type.Money`` amount (whole ``units`` as a string, ``nanos`` = 1e-9) as Decimal.

    The Cloud Billing Catalog sends ``{"units": "2", "nanos": 933908000}`` for 2.933908;
    either part may be absent (zero). Raises ValueError on garbage or mixed signs.

    >>> google_money_to_decimal("2", 933908000)
    Decimal('2.933908000')
    """
    whole = to_decimal(units) or Decimal(0)
    frac = to_decimal(nanos) or Decimal(0)
    if whole != whole.to_integral_value() or frac != frac.to_integral_value():
        raise ValueError(f"units/nanos must be integers: {units!r}, {nanos!r}")
    if abs(frac) >= 10**9 or (whole > 0 > frac) or (whole < 0 < frac):
        raise ValueError(f"bad nanos {nanos!r} for units {units!r}")
    return whole + frac.scaleb(-9)


def lenient_float(value: Any) -> float | None:
    """An optional quantity; garbage becomes ``None`` (one bad field must not drop an offer)."""
    try:
        return to_float(value)
    except ValueError:
        return None


def whole_count(value: Any) -> int | None:
    """A whole, positive count (``2``, ``2.0`` or ``"2"``), else ``None``."""
    number = lenient_float(value)
    if number is None or number < 1 or number != int(number):
        return None
    return int(number)


def positive(value: float | None) -> float | None:
    """``value`` if it is above zero, else ``None`` (a 0 GB disk means "not published")."""
    return value if value is not None and value > 0 else None


# --- small clouds ---
# Shared by the small clouds' adapters (DigitalOcean, Vast.ai, JarvisLabs, Shadeform, Lambda,
# FluidStack): reading optional payload values, the shape of a list response, the one-key
# auth headers, offers per region, and the data tables in ``adapters/data/``.


def text(value: Any) -> str | None:
    """A non-empty string, stripped; anything else (``None``, a number, ``"  "``) is ``None``."""
    return value.strip() or None if isinstance(value, str) else None


def non_negative(value: float | None) -> float | None:
    """``value`` if it is zero or more, else ``None`` (a 0 GB disk is a real figure here)."""
    return value if value is not None and value >= 0 else None


def lenient_decimal(value: Any) -> Decimal | None:
    """An optional exact amount (a storage or egress price); garbage becomes ``None``."""
    try:
        return to_decimal(value)
    except ValueError:
        return None


def gpu_vendor(name: Any) -> Vendor | None:
    """The GPU vendor a provider names in a field of its own (``"NVIDIA"``, ``"amd"``).

    Used for a GPU the catalog does not know; any other word is ``None``, not ``OTHER``.
    """
    return _GPU_VENDORS.get(name.strip().lower()) if isinstance(name, str) else None


_GPU_VENDORS = {v.value: v for v in (Vendor.NVIDIA, Vendor.AMD, Vendor.INTEL)}


def payload_list(payload: Any, key: str, provider: str) -> list[Any]:
    """The list under ``key`` of a JSON-object response (``{"sizes": [...]}``).

    Any other shape is a :class:`~adapters.base.ResponseFormatError` naming what was wrong.
    """
    if not isinstance(payload, Mapping):
        raise ResponseFormatError(provider, f"expected a JSON object, got {type(payload).__name__}")
    if key not in payload:
        raise ResponseFormatError(provider, f"response has no '{key}' list")
    items = payload[key]
    if not isinstance(items, list):
        raise ResponseFormatError(provider, f"'{key}' is {type(items).__name__}, not a list")
    return items


def key_headers(
    adapter: Adapter, header: str = "Authorization", scheme: str = "Bearer"
) -> dict[str, str]:
    """JSON request headers carrying the adapter's one required key in ``header``.

    ``scheme`` prefixes the key (``"Bearer <key>"``); ``""`` sends the bare key (Shadeform's
    ``X-API-KEY``). A key that is not configured raises
    :class:`~adapters.base.MissingCredentials`, which skips the provider.
    """
    [name] = adapter.credential_names
    key = adapter.require_credentials()[name]
    return {header: f"{scheme} {key}" if scheme else key, "Accept": "application/json"}


def add_per_region(
    result: ParseResult, ref: str, fields: OfferFields, regions: Sequence[OfferFields]
) -> None:
    """Add one offer per region an instance type is listed in (each entry of ``regions`` holds
    that region's ``region``, ``country``, ``available_now``).

    A type listed in no region is still priced: one region-less offer, ``available_now=False``.
    """
    unlisted: OfferFields = {"available_now": False}
    for region in regions or [unlisted]:
        merged: OfferFields = {**fields, **region}
        result.add(ref, **merged)


@functools.cache
def data_rows(filename: str) -> tuple[dict[str, str], ...]:
    """The rows of the CSV table ``adapters/data/<filename>``, read once (:func:`read_table`)."""
    package = __package__ or "adapters"
    content = resources.files(package).joinpath("data", filename).read_text("utf-8")
    return read_table(content, f"data/{filename}")


def read_table(content: str, filename: str) -> tuple[dict[str, str], ...]:
    """The rows of a CSV data table; every row names its ``source``.

    A row without one, or with a cell missing, is a ValueError naming the file and line: a
    fact from elsewhere carries where it comes from.
    """
    rows = tuple(csv.DictReader(io.StringIO(content)))
    for line, row in enumerate(rows, start=2):
        if None in row or None in row.values() or not (row.get("source") or "").strip():
            raise ValueError(f"{filename} line {line}: a cell too many or too few, or no source")
    return rows


@functools.cache
def region_countries(provider: str) -> Mapping[str, str]:
    """``provider``'s region words -> ISO 3166-1 country, from ``data/region_countries.csv``."""
    return {
        row["name"]: row["country"]
        for row in data_rows("region_countries.csv")
        if row["provider"] == provider
    }


def positive_price(
    result: ParseResult,
    value: Any,
    name: str,
    ref: str | None,
    *,
    convert: Callable[[Any], Decimal | None] = to_decimal,
    required: bool = True,
) -> Decimal | None:
    """``value`` (the record's ``name`` field) as a positive exact price, else ``None`` with
    the record skipped and why: ``bad <name>: ...`` for garbage, ``no positive <name>
    (<value>)`` for a zero, a negative or, when ``required``, a missing one.

    An optional price that is absent (a spot price the provider does not sell) is ``None``
    without a skip. ``convert`` reads the number (:func:`cents_to_units` for cents).
    """
    try:
        price = convert(value)
    except ValueError as exc:
        result.skip(f"bad {name}: {exc}", ref)
        return None
    if price is None and not required:
        return None
    if price is None or price <= 0:
        result.skip(f"no positive {name} ({value!r})", ref)
        return None
    return price
