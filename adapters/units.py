"""Named unit conversions for parsing provider payloads.

Providers mix MB, MiB, GB and GiB freely; every conversion in an adapter goes through one of
these helpers, so a reader sees which unit the provider used. GB here is the decimal
gigabyte the GPU datasheets and cloud price pages use, except where a name says GiB.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, TypedDict, Unpack

from .schema import HOURS_PER_MONTH, Vendor

__all__ = [
    "NO_POSITIVE_PRICE",
    "PriceReading",
    "cents_to_units",
    "cpu_vendor",
    "gbps_to_mbps",
    "gib_to_gb",
    "google_money_to_decimal",
    "gpu_share",
    "gpu_vendor",
    "lenient_decimal",
    "lenient_float",
    "memory_gb_in_name",
    "mib_to_gb",
    "nominal_gpu_memory_gb",
    "nominal_memory_gb",
    "non_negative",
    "per_gb_hour_to_per_gb_month",
    "per_gib_hour_to_per_gb_month",
    "positive",
    "positive_decimal",
    "positive_quantity",
    "power_of_two_counts",
    "price_or_reason",
    "read_price",
    "size_text_to_gb",
    "strings",
    "text",
    "to_decimal",
    "to_float",
    "value_at",
    "whole_count",
]

_GIB = 1024**3
_GB = 1000**3


def mib_to_gb(mib: float) -> float:
    """Mebibytes (as nvidia-smi reports GPU memory) to decimal gigabytes."""
    return mib * 1024**2 / _GB


def gib_to_gb(gib: float) -> float:
    """Gibibytes to decimal gigabytes."""
    return gib * _GIB / _GB


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


def nominal_memory_gb(value: Any) -> float | None:
    """A provider's GPU memory field (``"24"``, ``80``) as the nominal GB per GPU
    (:func:`nominal_gpu_memory_gb`); ``None`` unless it is a number above zero."""
    size = positive_quantity(value)
    return nominal_gpu_memory_gb(size) if size is not None else None


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


def whole_count(value: Any, least: int = 1) -> int | None:
    """A whole count of ``least`` or more (``2``, ``2.0`` or ``"2"``), else ``None``."""
    number = lenient_float(value)
    if number is None or number < least or number != int(number):
        return None
    return int(number)


def positive(value: float | None) -> float | None:
    """``value`` if it is above zero, else ``None`` (a 0 GB disk means "not published")."""
    return value if value is not None and value > 0 else None


# --- readings shared by several adapters ---------------------------------------------


def positive_decimal(value: Any) -> Decimal | None:
    """A price above zero, else ``None``: providers fill a price that does not apply with 0.

    Raises ValueError on garbage, like :func:`to_decimal`.

    >>> positive_decimal("0"), positive_decimal("2.5")
    (None, Decimal('2.5'))
    """
    amount = to_decimal(value)
    return amount if amount is not None and amount > 0 else None


def text(value: Any) -> str | None:
    """A string field, stripped; ``None`` when absent, empty or not a string."""
    return value.strip() if isinstance(value, str) and value.strip() else None


def strings(value: Any) -> tuple[str, ...] | None:
    """The non-empty strings of a JSON list (OS image names); ``None`` for none or no list."""
    if not isinstance(value, list):
        return None
    return tuple(v for v in value if isinstance(v, str) and v) or None


def value_at(obj: Any, *keys: str) -> Any:
    """The value at ``keys`` down nested JSON objects (``page["links"]["pages"]["next"]``);
    ``None`` where a key is missing or a level is not an object."""
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def non_negative(value: float | None) -> float | None:
    """``value`` if it is zero or more, else ``None`` (a 0 GB local disk is a real 0)."""
    return value if value is not None and value >= 0 else None


def positive_quantity(value: Any) -> float | None:
    """An optional quantity above zero (``positive(lenient_float(value))``): vCPUs, GB."""
    return positive(lenient_float(value))


def memory_gb_in_name(pattern: re.Pattern[str], name: str) -> float | None:
    """Nominal per-GPU memory that ``pattern``'s first group finds in a provider's GPU name
    (``H100-80G-PCIe``, ``h100-sxm5-80gb``), or ``None``."""
    match = pattern.search(name)
    return nominal_gpu_memory_gb(float(match.group(1))) if match else None


def power_of_two_counts(high: int, low: int = 1) -> list[int]:
    """GPU counts to offer when a provider sells any count up to ``high``: the powers of two
    from ``low`` up to ``high``, and ``high`` itself (one offer per count would flood the
    ranking with near-copies).

    >>> power_of_two_counts(10)
    [1, 2, 4, 8, 10]
    >>> power_of_two_counts(6, low=2)
    [2, 4, 6]
    """
    counts = [2**i for i in range(high.bit_length()) if low <= 2**i <= high]
    return counts if high < low or high in counts else [*counts, high]


def lenient_decimal(value: Any) -> Decimal | None:
    """An optional exact amount (a storage or egress price); garbage becomes ``None``."""
    try:
        return to_decimal(value)
    except ValueError:
        return None


def cpu_vendor(name: Any) -> str | None:
    """The CPU's maker by the brand word its name starts with (``"AMD EPYC 7642"``,
    ``"Xeon® Platinum 8480+"``, ``"AWS Graviton3"``); ``None`` for any other name.

    >>> cpu_vendor("Xeon® Platinum 8480+"), cpu_vendor("AMD EPYC 7543"), cpu_vendor("?")
    ('intel', 'amd', None)
    """
    words = re.split(r"[\s®™(]", name.strip(), maxsplit=1) if isinstance(name, str) else [""]
    return _CPU_BRANDS.get(words[0].lower())


#: Brand words -> maker; "aws" is Graviton ("AWS Graviton2 Processor" in the EC2 price list).
_CPU_BRANDS = dict.fromkeys(("amd", "epyc", "ryzen"), "amd") | {"intel": "intel", "xeon": "intel"}
_CPU_BRANDS["aws"] = "aws"


def gpu_vendor(name: Any) -> Vendor | None:
    """The GPU vendor a provider names in a field of its own (``"NVIDIA"``, ``"amd"``).

    Used for a GPU the catalog does not know; any other word is ``None``, not ``OTHER``.
    """
    return _GPU_VENDORS.get(name.strip().lower()) if isinstance(name, str) else None


_GPU_VENDORS = {v.value: v for v in (Vendor.NVIDIA, Vendor.AMD, Vendor.INTEL)}


def price_or_reason(value: Any) -> Decimal | str:
    """A raw price as an exact Decimal, or the reason to skip its record.

    >>> price_or_reason("3.673")
    Decimal('3.673')
    >>> price_or_reason("abc"), price_or_reason(None)
    ("price is not a number: 'abc'", 'no price')
    """
    try:
        price = to_decimal(value)
    except ValueError:
        return f"price is not a number: {value!r}"
    return "no price" if price is None else price


#: What :func:`read_price` says of a price that reads as nothing, zero or less, unless told
#: otherwise (a template of the field's ``name`` and its raw ``value``).
NO_POSITIVE_PRICE = "no positive {name} ({value!r})"


class PriceReading(TypedDict, total=False):
    """How :func:`read_price` reads a price: ``convert`` reads the number (:func:`to_decimal`
    unless told); the others are skip reasons (templates of ``name``, the raw ``value``, the
    ``price`` and the ``error``), or ``None`` where a case is no offer, not a broken record:
    ``bad`` garbage (``bad {name}: {error}``), ``absent``, ``negative`` (both
    :data:`NO_POSITIVE_PRICE`) and ``zero`` (as ``negative`` unless told)."""

    convert: Callable[[Any], Decimal | None]
    bad: str
    absent: str | None
    zero: str | None
    negative: str | None


def read_price(value: Any, name: str, **how: Unpack[PriceReading]) -> Decimal | str | None:
    """``value`` (a record's ``name`` field) as a positive exact price, else the reason to
    skip its record in the words ``how`` gives (pinned per provider), else ``None``: no
    price, and nothing to skip.

    >>> read_price("2.5", "price"), read_price(0, "price"), read_price("x", "price")
    (Decimal('2.5'), 'no positive price (0)', "bad price: not a number: 'x'")
    >>> print(read_price(0, "bid", zero=None), read_price(-1, "bid", negative="{price} bid"))
    None -1 bid
    """
    try:
        price = how.get("convert", to_decimal)(value)
    except ValueError as exc:
        return how.get("bad", "bad {name}: {error}").format(name=name, value=value, error=exc)
    if price is not None and price > 0:
        return price
    negative = how.get("negative", NO_POSITIVE_PRICE)
    if price is None:
        reason = how.get("absent", NO_POSITIVE_PRICE)
    else:
        reason = how.get("zero", negative) if price == 0 else negative
    return None if reason is None else reason.format(name=name, value=value, price=price)


_SIZE_TEXT = re.compile(r"^\s*([\d.,]+)\s*(GiB|GB|TiB|TB)?\s*$", re.IGNORECASE)


def size_text_to_gb(text: str) -> float | None:
    """A size written with its unit (``"2048 GiB"``, ``"640 GB"``, ``"1 TB"``) in decimal GB;
    a bare number is GB. ``None`` if absent or not a size (``"NA"``).

    >>> size_text_to_gb("640 GB"), size_text_to_gb("1 TiB"), size_text_to_gb("NA")
    (640.0, 1099.511627776, None)
    """
    match = _SIZE_TEXT.match(text or "")
    if not match:
        return None
    value = float(match.group(1).replace(",", ""))
    unit = (match.group(2) or "GB").lower()
    if unit in ("gib", "tib"):
        return gib_to_gb(value * 1024 if unit == "tib" else value)
    return value * 1000 if unit == "tb" else value


def gpu_share(gpus: float) -> tuple[int, float | None]:
    """``(gpu_count, gpu_fraction)`` of a GPU count that may be a slice of one GPU.

    >>> gpu_share(8), gpu_share(0.125)
    ((8, None), (1, 0.125))
    """
    return (1, float(gpus)) if gpus < 1 else (int(gpus), None)
