"""Readings of the free-text offer fields as values a filter can compare.

Providers publish a CUDA version as ``"12.4"``, a chassis as ``"4U"``, PSU redundancy as
``"2+2"``, OS images as ``"ubuntu-22.04"`` or ``"Ubuntu 22.04 LTS (Jammy)"``. Each function
here is a polars expression turning such text into something comparable: the frame builds
the readings once per snapshot (:mod:`pricing.frame`), the requirement's filter applies the
same expression to the renter's value (a literal), so each rule lives once. A reading that
does not parse is null: unknown, never guessed.

* :func:`version_key`: ``major.minor.patch`` as one sortable integer, so ``12.4 < 12.10``
  (each part below 10,000; the first version number in the text);
* :func:`chassis_units`: rack units from ``"4U"``, ``"2 U"``, ``"4U rack"``;
* :func:`psu_redundant`: ``X+Y`` with ``Y`` > 0 or ``N``, and ``2N``, are redundant;
  ``X+0`` and a bare ``N`` are not;
* :func:`os_image_key`: an image name as space-separated lowercase words, digit groups
  joined by ``.`` (``ubuntu-22-04`` -> `` ubuntu 22.04 ``); a renter's ``"Ubuntu 22.04"``
  matches an image whose name holds those words side by side, a version matching itself
  or its point releases (``22.04.3``), never a name that does not state it
  (``lambda-stack-22-04`` does not say Ubuntu);
* :func:`framework_key`: a framework's name without its version, lowercase
  (``"PyTorch 2.1"`` -> ``pytorch``);
* :func:`server_cpu`: true for the CPU lines the seed means by server-class (Xeon, EPYC and
  the other server lines), false for desktop and workstation lines, null for a name that
  says neither (``"2.5 GHz"``, a bare codename shared by both).
"""

from __future__ import annotations

import polars as pl

__all__ = [
    "VERSION_PATTERN",
    "chassis_units",
    "framework_key",
    "os_image_key",
    "os_image_matches",
    "psu_redundant",
    "server_cpu",
    "version_key",
]

#: What a renter may give as a version: ``major[.minor[.patch]]``, each part 1-4 digits.
VERSION_PATTERN = r"^\d{1,4}(\.\d{1,4}){0,2}$"
_VERSION = r"(\d+)(?:\.(\d+))?(?:\.(\d+))?"
_PART = 10_000

_CHASSIS = r"(?i)(?:^|[^0-9a-z.])(\d+(?:\.\d+)?)\s?u(?:$|[^0-9a-z])"
_REDUNDANCY = r"(?i)(\d+|n)\s*\+\s*(\d+|n)"
_DOUBLED = r"(?i)(?:^|[^0-9a-z])2n(?:$|[^0-9a-z])"

#: Server CPU lines: Intel Xeon (its Scalable tiers are often named without the brand,
#: "Platinum 8480+"), AMD EPYC and Opteron, Arm server parts, IBM POWER, the server-only
#: codenames, and QEMU's "<codename>-Server" CPU models (as marketplaces report them).
_SERVER = (
    r"xeon|epyc|opteron|\b(?:platinum|gold|silver|bronze)\s*\d{4}|-server\b|ampere ?one|altra"
    r"|graviton|nvidia grace|\bgrace\b|neoverse|\bpower ?\d+\b|sapphire ?rapids|emerald ?rapids"
    r"|granite ?rapids|sierra ?forest|cascade ?lake|cooper ?lake|\b(?:naples|rome|milan|genoa"
    r"|bergamo|siena|turin)\b"
)
#: Desktop and workstation lines: not what the seed calls server-class.
_CLIENT = r"\bcore\b|\bcore\(tm\)|\bi[3579]-\d|ryzen|threadripper|celeron|pentium|athlon|apple m\d"


def version_key(text: pl.Expr) -> pl.Expr:
    """The first ``major[.minor[.patch]]`` in ``text`` as ``major x 10^8 + minor x 10^4 +
    patch`` (Int64; a missing part is 0, a part of 10,000 or more: null)."""
    parts = text.str.extract_groups(_VERSION)
    major, minor, patch = (
        parts.struct.field(str(i)).cast(pl.Int64, strict=False) for i in (1, 2, 3)
    )
    minor, patch = minor.fill_null(0), patch.fill_null(0)
    fits = (major < _PART) & (minor < _PART) & (patch < _PART)
    return pl.when(fits).then(major * _PART * _PART + minor * _PART + patch)


def chassis_units(text: pl.Expr) -> pl.Expr:
    """Rack units of a chassis form factor (``"4U"`` -> 4.0); null without one."""
    return text.str.extract(_CHASSIS, 1).cast(pl.Float64, strict=False)


def psu_redundant(text: pl.Expr) -> pl.Expr:
    """True for a spare supply (``2+2``, ``N+1``, ``1+1``, ``2N``), false for ``X+0`` or a
    bare ``N``, null for anything else."""
    spare = text.str.extract(_REDUNDANCY, 2).str.to_lowercase()
    return (
        pl.when(text.str.contains(_DOUBLED))
        .then(pl.lit(True))
        .when(spare.is_not_null())
        .then((spare == "n") | (spare.cast(pl.Int64, strict=False) > 0))
        .when(text.str.strip_chars().str.to_lowercase() == "n")
        .then(pl.lit(False))
    )


def os_image_key(name: pl.Expr) -> pl.Expr:
    """An image name as `` word word `` (lowercase, letters apart from digits, digit groups
    joined by ``.``, everything else a space), padded with one space each side."""
    lower = name.str.to_lowercase().str.replace_all(r"([a-z])(\d)", "${1} ${2}")
    joined = lower.str.replace_all(r"(\d)[-_ ](\d)", "${1}.${2}")
    joined = joined.str.replace_all(r"(\d)[-_ ](\d)", "${1}.${2}")  # overlapping: 22-04-1
    words = joined.str.replace_all(r"[^a-z0-9.]+", " ").str.strip_chars()
    return pl.concat_str([pl.lit(" "), words, pl.lit(" ")])


def os_image_matches(keys: pl.Expr, wanted: str) -> pl.Expr:
    """Whether any of an offer's image ``keys`` (a list of :func:`os_image_key`) states the
    image ``wanted``: its words side by side, the last one whole or followed by a point
    release."""
    query = pl.select(os_image_key(pl.lit(wanted))).item().rstrip()
    element = pl.element()
    return keys.list.eval(
        element.str.contains(query + " ", literal=True)
        | element.str.contains(query + ".", literal=True)
    ).list.any()


def framework_key(name: pl.Expr) -> pl.Expr:
    """A framework's name, lowercase, without version or extras (``"TensorFlow-2.15"`` ->
    ``tensorflow``)."""
    return name.str.to_lowercase().str.extract(r"^\s*([a-z][a-z0-9_+]*)", 1)


def server_cpu(model: pl.Expr) -> pl.Expr:
    """True: a server CPU line; false: a desktop or workstation line; null: neither said."""
    lower = model.str.to_lowercase()
    return (
        pl.when(lower.str.contains(_SERVER))
        .then(pl.lit(True))
        .when(lower.str.contains(_CLIENT))
        .then(pl.lit(False))
    )
