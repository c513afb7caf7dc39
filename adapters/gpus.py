"""The GPU catalog and the mapping from providers' raw GPU names to catalog models.

Ranking offers by cost per effective TFLOP-hour needs one datasheet figure per model, so every
offer must point at exactly one catalog row. Providers name the same part in a dozen ways
(``"H100 SXM"``, ``"NVIDIA H100 80GB HBM3"``, ``"gpu_8x_h100_sxm5"``,
``"Standard_ND96isr_H100_v5"``) and sometimes leave out what tells two parts apart (AWS says
``"A100"`` for both the 40 and the 80 GB part). This module therefore:

* loads the catalog from ``gpus_data.csv`` beside it, lazily, on first use;
* resolves raw names through the alias tables in ``gpu_aliases.csv`` beside it
  (:data:`EXACT_ALIASES`, :data:`ALIAS_PATTERNS`) plus the memory and form-factor hints a
  provider gives, and returns ``None`` rather than guess when a name is unknown or still
  ambiguous. Unresolved names are counted (:func:`unknown_gpu_names`) and logged once each on
  the ``gpuscout.gpus`` logger.

Canonical names are short, upper-case and hyphenated: ``<MODEL>[-<FORM>][-<MEMORY>GB]``, with the
form factor and memory only where the model exists in several of them (``H100-SXM5-80GB``,
``H100-PCIE-80GB``, ``H100-NVL-94GB``, ``A100-SXM4-40GB``, ``V100-PCIE-32GB``) and plain otherwise
(``L40S``, ``B200``, ``MI300X``, ``GAUDI2``, ``RTX-4090``, ``RTX-6000-ADA``,
``QUADRO-RTX-6000``). ``family`` is what a user types to mean "any of them" (``H100``,
``A100``, ``V100``); single-SKU models are their own family.

All TFLOPS figures are DENSE (NVIDIA's sparse tensor figures halved) peak rates per GPU; INT8 is
in TOPS. BF16/FP16 figures are the tensor rate with FP32 accumulate (what mixed-precision
training runs at): GeForce cards run it at half the rate of the professional cards of the same
die. An empty cell means the part lacks the precision or no source was found: it is never
filled in by inference.

The ranking needs a figure at the precision a job runs at even where a datasheet lacks one.
:meth:`GpuSpec.figure` answers with a :class:`Figure` that says how it was had: from the
datasheet; ``derived`` by a rule of ``gpu_figure_rules.csv`` beside this module (each rule with
its text and its sources, e.g. "Ampere and later run BF16 at the FP16 rate"; a rule may name
the models it holds for, such as the GeForce rate); or, where no rule applies, a visible
``fallback`` to the nearest wider precision that has a figure (:data:`FALLBACK_PRECISIONS`: a
V100 asked for BF16 is ranked at its FP16 tensor rate). Every catalog row has a BF16 or FP16
tensor figure (datasheet or rule), or says in ``no_tensor_figure`` why it has none (a Pascal
card without tensor cores, a part whose published figures contradict each other): a card
never falls back to FP32 unexplained, which would rank it several times too low.

A family name whose variant the provider does not state (``"H100"`` with 80 GB, SXM or PCIe)
resolves to the family's slower variant, by the catalog's own figures
(:func:`conservative_variant`), marked ``variant_assumed``; :func:`spec_fields` then leaves the
offer's form factor unset, since the provider did not state it.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import difflib
import functools
import io
import logging
import re
import threading
from dataclasses import dataclass
from enum import StrEnum

from gpuscout.adapters.schema import GpuFormFactor, OfferFields, Vendor
from gpuscout.adapters.tables import package_text, typed_row

__all__ = [
    "ALIAS_PATTERNS",
    "EXACT_ALIASES",
    "FALLBACK_PRECISIONS",
    "FIGURE_RULES",
    "Figure",
    "FigureBasis",
    "FigureRule",
    "GpuSpec",
    "Precision",
    "catalog",
    "conservative_variant",
    "find_gpus",
    "get_gpu",
    "gpu_named",
    "gpus_named",
    "resolve_gpu_name",
    "similar_gpu_names",
    "sold_memory_gb",
    "spec_fields",
    "unknown_gpu_names",
]

_LOG = logging.getLogger("gpuscout.gpus")
_DATA_FILE = "gpus_data.csv"

#: Two memory sizes closer than this fraction are "the same" (81559 MiB vs 80 GB, 143 vs 141 GB,
#: 22888 MiB vs 24 GB for an A10G). Sizes inside one family differ by >= 17% (80 vs 94 GB).
MEMORY_TOLERANCE = 0.10
#: A memory hint above this many units is taken to be MiB/MB, not GB (no GPU has 2 TB).
_MIB_THRESHOLD = 2048.0
_MIB_PER_GIB = 1024.0


class Precision(StrEnum):
    """Arithmetic precision of a peak-throughput figure."""

    FP64 = "fp64"
    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"


class FigureBasis(StrEnum):
    """How a figure of :meth:`GpuSpec.figure` was had."""

    DATASHEET = "datasheet"  # the catalog row's sourced figure at the requested precision
    DERIVED = "derived"  # from another sourced figure by a rule of gpu_figure_rules.csv
    FALLBACK = "fallback"  # the figure at another (wider) precision: the job runs at that one


#: Where a GPU without a figure at a precision is ranked instead, nearest first: only wider
#: precisions a job can actually run at (a part without BF16 trains in FP16 mixed precision,
#: one without FP8 at BF16), never a narrower one. FP32 and FP64 have no fallback.
FALLBACK_PRECISIONS: dict[Precision, tuple[Precision, ...]] = {
    Precision.BF16: (Precision.FP16, Precision.TF32, Precision.FP32),
    Precision.FP16: (Precision.BF16, Precision.TF32, Precision.FP32),
    Precision.FP8: (Precision.BF16, Precision.FP16, Precision.TF32, Precision.FP32),
    Precision.INT8: (Precision.BF16, Precision.FP16, Precision.TF32, Precision.FP32),
    Precision.TF32: (Precision.FP32,),
    Precision.FP32: (),
    Precision.FP64: (),
}


@dataclass(frozen=True, slots=True)
class FigureRule:
    """One row of ``gpu_figure_rules.csv``: each of ``precisions`` = ``factor x
    from_precision`` on the listed architectures, with its text and its sources. A rule that
    names ``models`` holds for those alone (a rate that depends on the product line, such as
    the GeForce tensor rate, not on the architecture)."""

    rule: str
    precisions: frozenset[Precision]
    from_precision: Precision
    factor: float
    architectures: frozenset[str]
    models: frozenset[str]
    text: str
    source: str

    def applies_to(self, spec: GpuSpec) -> bool:
        """Whether this rule may derive ``spec``'s figures."""
        named = not self.models or spec.name in self.models
        return named and spec.architecture in self.architectures


@dataclass(frozen=True, slots=True)
class Figure:
    """A peak figure for ranking, and how it was had.

    ``precision`` is the precision the figure is at (the requested one, or the fallback's);
    ``rule`` the derivation rule, if any (a fallback figure may itself be derived).
    """

    tflops: float
    precision: Precision
    basis: FigureBasis
    rule: FigureRule | None = None

    def note(self, requested: Precision) -> str | None:
        """What a ranking shows beside the figure; ``None`` for a datasheet figure."""
        derived = f"derived by rule {self.rule.rule}: {self.rule.text}" if self.rule else None
        if self.basis is FigureBasis.FALLBACK:
            text = f"ranked at {self.precision.name}: no {Precision(requested).name} figure"
            return f"{text} ({self.precision.name} figure {derived})" if derived else text
        if self.basis is FigureBasis.DERIVED:
            return f"{Precision(requested).name} figure {derived}"
        return None


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One catalog row: datasheet figures for one GPU model, per GPU.

    Units: ``memory_gb`` GB, ``mem_bandwidth_gbs`` GB/s, ``tflops_*`` dense peak TFLOPS
    (``tflops_int8`` in TOPS), ``tdp_w`` watts, ``nvlink_gbs`` bidirectional GB/s per GPU.
    ``None`` means not applicable or not sourced; ``source`` says where the figures come from.
    """

    name: str
    family: str
    vendor: Vendor
    form_factor: GpuFormFactor
    architecture: str
    memory_gb: float | None
    memory_type: str | None
    mem_bandwidth_gbs: float | None
    tflops_fp64: float | None
    tflops_fp32: float | None
    tflops_tf32: float | None
    tflops_bf16: float | None
    tflops_fp16: float | None
    tflops_fp8: float | None
    tflops_int8: float | None
    tdp_w: float | None
    nvlink_gbs: float | None
    release_year: int | None
    #: Why the part has no BF16 or FP16 tensor figure, from its datasheet or a rule; ``None``
    #: when it has one (the loader refuses a row with neither, or with both).
    no_tensor_figure: str | None
    source: str
    #: True when a raw name left the variant unstated and this is the family's slower one
    #: (:func:`conservative_variant`); never read from the CSV.
    variant_assumed: bool = dataclasses.field(default=False, compare=False)

    def peak_tflops(self, precision: Precision) -> float | None:
        """Dense peak TFLOPS (TOPS for INT8) at ``precision``; ``None`` if absent or unsourced."""
        value: float | None = getattr(self, f"tflops_{Precision(precision).value}")
        return value

    def derived_figure(self, precision: Precision) -> Figure | None:
        """The datasheet figure at ``precision``, else one derived by the first rule of
        :data:`FIGURE_RULES` that applies to this part (rules read datasheet figures only)."""
        precision = Precision(precision)
        sourced = self.peak_tflops(precision)
        if sourced is not None:
            return Figure(sourced, precision, FigureBasis.DATASHEET)
        for rule in FIGURE_RULES:
            base = self.peak_tflops(rule.from_precision)
            if precision in rule.precisions and base and rule.applies_to(self):
                return Figure(round(base * rule.factor, 4), precision, FigureBasis.DERIVED, rule)
        return None

    def tensor_figure(self) -> Figure | None:
        """The dense BF16 figure (datasheet or derived), else the FP16 one: what a training
        job ranks this part by; ``None`` for a part without tensor figures."""
        return self.derived_figure(Precision.BF16) or self.derived_figure(Precision.FP16)

    def figure(self, precision: Precision) -> Figure | None:
        """The figure to rank this part at for a job at ``precision``, and how it was had:
        :meth:`derived_figure`, else the first of :data:`FALLBACK_PRECISIONS` that has one;
        ``None`` when the part has no figure to rank by."""
        precision = Precision(precision)
        found = self.derived_figure(precision)
        if found is not None:
            return found
        for wider in FALLBACK_PRECISIONS[precision]:
            other = self.derived_figure(wider)
            if other is not None:
                return dataclasses.replace(other, basis=FigureBasis.FALLBACK)
        return None


# --- loading -----------------------------------------------------------------------------


def _parse_row(row: dict[str, str], line: int) -> GpuSpec:
    try:
        spec = typed_row(GpuSpec, row)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{_DATA_FILE} line {line}: {exc}") from None
    if not spec.name or not spec.family or not spec.source or not spec.architecture:
        raise ValueError(
            f"{_DATA_FILE} line {line}: name, family, architecture and source are required"
        )
    has_figure = spec.tensor_figure() is not None
    if not has_figure and not spec.no_tensor_figure:
        raise ValueError(
            f"{_DATA_FILE} line {line}: {spec.name} has no BF16 or FP16 tensor figure"
            " (datasheet or a rule of gpu_figure_rules.csv): give one, or say why not in"
            " no_tensor_figure"
        )
    if has_figure and spec.no_tensor_figure:
        raise ValueError(
            f"{_DATA_FILE} line {line}: {spec.name} has a tensor figure, yet no_tensor_figure"
            " says why it has none"
        )
    return spec


def _load(text: str) -> tuple[GpuSpec, ...]:
    reader = csv.DictReader(io.StringIO(text))
    specs = tuple(_parse_row(row, line) for line, row in enumerate(reader, start=2))
    seen: set[str] = set()
    for spec in specs:
        key = spec.name.upper()
        if key in seen:
            raise ValueError(f"{_DATA_FILE}: duplicate name {spec.name!r}")
        seen.add(key)
    return specs


@functools.cache
def catalog() -> tuple[GpuSpec, ...]:
    """Every GPU model in the catalog, in file order; read from ``gpus_data.csv`` on first use."""
    return _load(package_text(_DATA_FILE))


_RULES_FILE = "gpu_figure_rules.csv"


def _load_rules(text: str) -> tuple[FigureRule, ...]:
    """The rules of ``gpu_figure_rules.csv``; a bad row is a ValueError naming its line."""
    rules: list[FigureRule] = []
    for line, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        try:
            read = typed_row(FigureRule, row)
            rule = dataclasses.replace(
                read, precisions=frozenset(Precision(p) for p in read.precisions)
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{_RULES_FILE} line {line}: {exc}") from None
        if not (rule.rule and rule.text and rule.source and rule.architectures):
            raise ValueError(f"{_RULES_FILE} line {line}: rule, text, source and architectures")
        if not rule.precisions or rule.factor <= 0 or rule.from_precision in rule.precisions:
            raise ValueError(f"{_RULES_FILE} line {line}: a rule maps one precision to others")
        rules.append(rule)
    return tuple(rules)


#: The derivation rules, in file order (the first that applies wins).
FIGURE_RULES: tuple[FigureRule, ...] = _load_rules(package_text(_RULES_FILE))


@functools.cache
def _by_name() -> dict[str, GpuSpec]:
    return {spec.name.upper(): spec for spec in catalog()}


def get_gpu(name: str) -> GpuSpec | None:
    """The model with canonical ``name`` (case-insensitive), or ``None``."""
    return _by_name().get(name.strip().upper())


def _key(text: str) -> str:
    """Letters and digits only, lower-case: ``"RTX 4090"`` and ``"RTX-4090"`` compare equal."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def sold_memory_gb(usable_mib: float, model: str | None) -> float:
    """The size a GPU is sold by (the catalog's nominal GB, really GiB: 24 for an RTX 4090)
    from the usable MiB its driver reports (24564 for that 4090, 81559 for an 80 GB H100,
    46068 for a 48 GB L40S with ECC on: up to ~6% is kept back): ``model``'s nominal size
    when the usable one is at most :data:`MEMORY_TOLERANCE` below it, else the usable GiB.
    In decimal GB the 4090 would read 25.76 beside every other provider's 24."""
    gib = usable_mib / _MIB_PER_GIB
    spec = get_gpu(model) if model else None
    nominal = spec.memory_gb if spec is not None else None
    if nominal and nominal * (1 - MEMORY_TOLERANCE) <= gib <= nominal:
        return nominal
    return round(gib, 2)


def find_gpus(query: str) -> tuple[GpuSpec, ...]:
    """Models matching a canonical name, else a family (``"H100"``), else a vendor (``"amd"``).

    Spaces, hyphens and case are ignored, so ``"rtx 4090"`` finds ``RTX-4090``.
    """
    return _find(_key(query))


@functools.lru_cache(maxsize=1024)
def _find(key: str) -> tuple[GpuSpec, ...]:
    """:func:`find_gpus` of a :func:`_key`, kept: every requirement validates its GPUs with
    it (an alert evaluation reads thousands), and the catalog is fixed per process."""
    if not key:
        return ()
    for matches in (
        tuple(s for s in catalog() if _key(s.name) == key),
        tuple(s for s in catalog() if _key(s.family) == key),
        tuple(s for s in catalog() if s.vendor.value == key),
    ):
        if matches:
            return matches
    return ()


# --- raw-name resolution: the data -------------------------------------------------------
#
# The alias tables are data, in ``gpu_aliases.csv`` beside this module, one row per alias with
# the source or reason of each. Its ``table`` column says which table a row belongs to:
#
# * ``exact``: a whole raw name (lower-cased, trimmed) whose meaning is fixed by one
#   provider's convention and not by the words in it (GCP accelerator types; GCP SKU
#   descriptions, "Nvidia Tesla A100 GPU running in Americas", are rewritten to these by
#   :data:`_GCP_DESCRIPTION`); ``becomes`` is the catalog model;
# * ``rewrite``: a regular expression applied to the lower-cased raw name before pattern
#   matching, in file order, to remove what never tells two GPUs apart (vendor and brand words,
#   instance counts, MIG slice suffixes); ``becomes`` is the replacement, empty for a space;
# * ``pattern``: a regular expression over the rewritten name, tried in file order (specific
#   names before the generic ones they contain); ``becomes`` lists the candidate models,
#   which memory and form-factor hints must narrow to one, or is empty for a known part
#   without a catalog row (answered "unknown" rather than matched to a sibling). One candidate
#   may be starred (``RTX-4090* RTX-4090-48GB``): a name that states no memory means a model
#   of the starred one's memory size (a plain "RTX 4090" is NVIDIA's 24 GB card; the 48 GB
#   rework is always sold by its memory). Without a star, memory left unstated is not guessed.
#
# The tables are module constants (:data:`EXACT_ALIASES`, :data:`ALIAS_PATTERNS`), read and
# compiled once when the module is imported, as the patterns were compiled before.

_ALIAS_FILE = "gpu_aliases.csv"


@dataclass(frozen=True, slots=True)
class _Alias:
    pattern: re.Pattern[str]
    candidates: tuple[str, ...]  # empty: a known part that has no catalog row
    unstated_memory: str | None = None  # starred: a name stating no memory means its size


@dataclass(frozen=True, slots=True)
class _AliasTables:
    exact: dict[str, str]
    rewrites: tuple[tuple[re.Pattern[str], str], ...]
    patterns: tuple[_Alias, ...]


def _load_aliases(text: str) -> _AliasTables:
    """The alias tables of ``gpu_aliases.csv``; a bad row is a ValueError naming its line."""
    exact: dict[str, str] = {}
    rewrites: list[tuple[re.Pattern[str], str]] = []
    patterns: list[_Alias] = []
    for line, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        try:
            table, match, becomes = row["table"], row["match"], row["becomes"]
            if not match or not (row["source"] or "").strip():
                raise ValueError("match and source are required")
            if table == "exact":
                if match != match.strip().lower() or not becomes or match in exact:
                    raise ValueError(f"exact name {match!r} not lower-case, unmapped or repeated")
                exact[match] = becomes
            elif table == "rewrite":
                rewrites.append((re.compile(match), becomes or " "))
            elif table == "pattern":
                names = becomes.split()
                starred = [n.removesuffix("*") for n in names if n.endswith("*")]
                if len(starred) > 1:
                    raise ValueError("at most one starred candidate")
                default = starred[0] if starred else None
                candidates = tuple(n.removesuffix("*") for n in names)
                patterns.append(_Alias(re.compile(match), candidates, default))
            else:
                raise ValueError(f"unknown table {table!r}")
        except (KeyError, TypeError, ValueError, re.error) as exc:
            raise ValueError(f"{_ALIAS_FILE} line {line}: {exc}") from None
    return _AliasTables(exact, tuple(rewrites), tuple(patterns))


_ALIASES = _load_aliases(package_text(_ALIAS_FILE))
#: Whole raw names -> catalog model, by one provider's convention (``gpu_aliases.csv``).
EXACT_ALIASES: dict[str, str] = _ALIASES.exact
#: Patterns over the rewritten name, tried in order; the first match names the candidates.
ALIAS_PATTERNS: tuple[_Alias, ...] = _ALIASES.patterns
_REWRITES = _ALIASES.rewrites

#: GCP billing SKU descriptions -> the accelerator type they price.
_GCP_DESCRIPTION = re.compile(
    r"^(?:spot preemptible |preemptible )?(?:commitment v\d+: )?nvidia (?P<model>[a-z0-9 ]+?) gpu\b"
)

_MEMORY_IN_NAME = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?) ?(?:gb|gib|g)\b")
_VRAM_IN_NAME = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?) ?(?:gb ?)?vram\b")
_SXM_IN_NAME = re.compile(r"\bsxm\d?\b|\bhgx\b")
_NVLINK_IN_NAME = re.compile(r"\bnvlink\b")
_PCIE_IN_NAME = re.compile(r"\bpci ?e\b|\bpcie\d?\b")
_OAM_IN_NAME = re.compile(r"\boam\b")

# --- raw-name resolution: the logic ------------------------------------------------------

_unknown: collections.Counter[str] = collections.Counter()
_unknown_lock = threading.Lock()


def unknown_gpu_names() -> collections.Counter[str]:
    """How often each raw name failed to resolve since start-up (a copy)."""
    with _unknown_lock:
        return collections.Counter(_unknown)


def _record_unknown(raw: str, memory_gb: float | None, form_factor: object) -> None:
    with _unknown_lock:
        first = raw not in _unknown
        _unknown[raw] += 1
    if first:
        _LOG.info(
            "GPU name %r (memory_gb=%s, form_factor=%s) is unknown or ambiguous; not mapped",
            raw,
            memory_gb,
            form_factor,
        )


def _normalise(raw: str) -> str:
    text = raw.strip().lower()
    for pattern, replacement in _REWRITES:
        text = pattern.sub(replacement, text)
    return text.strip()


def _gb(value: float | None) -> float | None:
    """A memory hint in GB; values above 2048 are read as MiB (nvidia-smi, Vast ``gpu_ram``)."""
    if value is None or value <= 0:
        return None
    return value / _MIB_PER_GIB if value > _MIB_THRESHOLD else float(value)


def _memory_from_name(text: str) -> float | None:
    vram = {float(m) for m in _VRAM_IN_NAME.findall(text)}
    if len(vram) == 1:
        return vram.pop()
    sizes = {float(m) for m in _MEMORY_IN_NAME.findall(text)}
    return sizes.pop() if len(sizes) == 1 else None


def _form_factor_from_name(text: str) -> GpuFormFactor | None:
    pcie = bool(_PCIE_IN_NAME.search(text))
    sxm = bool(_SXM_IN_NAME.search(text))
    if pcie and sxm:
        return None
    if pcie:
        return GpuFormFactor.PCIE
    if sxm or _NVLINK_IN_NAME.search(text):
        return GpuFormFactor.SXM
    if _OAM_IN_NAME.search(text):
        return GpuFormFactor.OAM
    return None


def _form_factor_hint(value: GpuFormFactor | str | None) -> GpuFormFactor | None:
    if value is None or isinstance(value, GpuFormFactor):
        return value
    text = value.strip().lower()
    if not text:
        return None
    if text.startswith("sxm"):
        return GpuFormFactor.SXM
    if text.startswith("pci"):
        return GpuFormFactor.PCIE
    try:
        return GpuFormFactor(text)
    except ValueError:
        raise ValueError(f"unknown form factor {value!r}") from None


def _same_memory(spec: GpuSpec, memory_gb: float) -> bool:
    if spec.memory_gb is None:  # unknown size cannot rule a model out
        return True
    return abs(spec.memory_gb - memory_gb) <= MEMORY_TOLERANCE * spec.memory_gb


def _hinted(
    candidates: tuple[GpuSpec, ...],
    memory_gbs: tuple[float | None, ...],
    form_factors: tuple[GpuFormFactor | None, ...],
) -> tuple[GpuSpec, ...]:
    """The candidates every stated memory size and form factor leaves (all of them)."""
    for memory in memory_gbs:
        if memory is not None:
            candidates = tuple(c for c in candidates if _same_memory(c, memory))
    for form in form_factors:
        if form is not None:
            candidates = tuple(c for c in candidates if c.form_factor is form)
    return candidates


def _narrow(
    candidates: tuple[GpuSpec, ...],
    memory_gbs: tuple[float | None, ...],
    form_factors: tuple[GpuFormFactor | None, ...],
) -> GpuSpec | None:
    """The one candidate the hints leave; with several left of one memory size whose variant
    nothing states, the slower one marked assumed; else ``None``."""
    candidates = _hinted(candidates, memory_gbs, form_factors)
    stated = [form for form in form_factors if form is not None]
    if len(candidates) == 1:
        return candidates[0]
    return conservative_variant(candidates) if len(candidates) > 1 and not stated else None


def _comparable_tflops(candidates: tuple[GpuSpec, ...]) -> tuple[float, ...] | None:
    """Each candidate's dense BF16 figure (datasheet or derived), else each one's FP16."""
    for precision in (Precision.BF16, Precision.FP16):
        figures = [c.derived_figure(precision) for c in candidates]
        if all(f is not None for f in figures):
            return tuple(f.tflops for f in figures if f is not None)
    return None


def conservative_variant(candidates: tuple[GpuSpec, ...]) -> GpuSpec | None:
    """Of variants of one memory size (that differ in form factor, as H100 SXM and PCIe, or in
    clock, as Ascend 910B1-B3), the slower one, marked ``variant_assumed``: the one no faster
    than every other in dense BF16 (else FP16) TFLOPs, in memory bandwidth and in NVLink
    bandwidth (none counts as 0), by the catalog's figures. ``None`` when the memory sizes
    differ, a figure is missing, or no variant is the slower on every count.

    >>> conservative_variant(find_gpus("H100")[:2]).name
    'H100-PCIE-80GB'
    """
    if len(candidates) < 2:
        return None
    first = candidates[0]
    if first.memory_gb is None or not all(_same_memory(c, first.memory_gb) for c in candidates):
        return None
    tflops = _comparable_tflops(candidates)
    if tflops is None or any(c.mem_bandwidth_gbs is None for c in candidates):
        return None
    counts = [
        (t, c.mem_bandwidth_gbs or 0.0, c.nvlink_gbs or 0.0)
        for t, c in zip(tflops, candidates, strict=True)
    ]
    for spec, mine in zip(candidates, counts, strict=True):
        if all(all(a <= b for a, b in zip(mine, other, strict=True)) for other in counts):
            return dataclasses.replace(spec, variant_assumed=True)
    return None


def _candidates(raw: str, text: str) -> tuple[tuple[GpuSpec, ...], GpuSpec | None] | None:
    """Catalog models the name may mean, and the one whose memory size a name that states
    none means (a starred candidate of ``gpu_aliases.csv``); ``None`` when no table knows it."""
    lowered = raw.strip().lower()
    gcp = _GCP_DESCRIPTION.match(lowered)
    exact = EXACT_ALIASES.get(
        lowered if gcp is None else "nvidia-" + "-".join(gcp["model"].split())
    )
    if exact is not None:
        return (_by_name()[exact],), None
    for alias in ALIAS_PATTERNS:
        if alias.pattern.search(text):
            found = tuple(_by_name()[name] for name in alias.candidates)
            default = _by_name()[alias.unstated_memory] if alias.unstated_memory else None
            return found, default
    return None


def _of_unstated_memory(
    candidates: tuple[GpuSpec, ...], default: GpuSpec | None, memory_gbs: tuple[float | None, ...]
) -> tuple[GpuSpec, ...]:
    """``candidates`` of the starred candidate's memory size when no memory is stated."""
    if default is None or default.memory_gb is None or any(m is not None for m in memory_gbs):
        return candidates
    return tuple(c for c in candidates if c.memory_gb == default.memory_gb)


def spec_fields(
    spec: GpuSpec | None,
    *,
    form_factor: GpuFormFactor | None = None,
    vendor: Vendor | None = None,
) -> OfferFields:
    """The Offer fields a resolved catalog model fills: ``gpu_model``, ``gpu_vendor``,
    ``gpu_form_factor``; all ``None`` for an unknown GPU.

    ``form_factor`` is what the provider states (it wins over the catalog's); ``vendor`` is the
    provider's word for an unknown GPU (the catalog's wins when the model is known). A spec
    whose variant was assumed (:func:`conservative_variant`) names the slower variant but
    leaves the form factor unset: the provider did not state it, and nothing is invented.
    """
    from_catalog = spec.form_factor if spec and not spec.variant_assumed else None
    return {
        "gpu_model": spec.name if spec else None,
        "gpu_vendor": spec.vendor if spec else vendor,
        "gpu_form_factor": form_factor or from_catalog,
    }


def resolve_gpu_name(
    raw: str,
    *,
    memory_gb: float | None = None,
    form_factor: GpuFormFactor | str | None = None,
) -> GpuSpec | None:
    """The catalog model a provider's raw GPU name means, or ``None`` if unknown or ambiguous.

    ``memory_gb`` (GB per GPU; values above 2048 are taken as MiB) and ``form_factor`` (enum or
    text such as ``"SXM5"``/``"PCIe"``) narrow names that several models share, as do memory and
    form-factor words inside the name itself. A hint that contradicts the name gives ``None``:
    a wrong model would mis-rank an offer, an unmapped one is only left out. A family name
    whose form factor nothing states (``"H100"``, ``"Tesla V100 (16 GB)"``) gives the slower
    variant marked ``variant_assumed`` (:func:`conservative_variant`).
    """
    spec = get_gpu(raw)
    if spec is not None:
        return spec
    form_hint = _form_factor_hint(form_factor)
    text = _normalise(raw)
    known = _candidates(raw, text) if text else None
    found = None
    if known and known[0]:
        memory_gbs = (_memory_from_name(text), _gb(memory_gb))
        found = _narrow(
            _of_unstated_memory(*known, memory_gbs),
            memory_gbs,
            (_form_factor_from_name(text), form_hint),
        )
    if found is None:
        _record_unknown(raw, memory_gb, form_factor)
    return found


# --- a renter's GPU name -----------------------------------------------------------------


def gpus_named(query: str) -> tuple[GpuSpec, ...]:
    """The catalog models a renter's GPU name means (a requirement's ``gpus``).

    A canonical name, family or vendor means what :func:`find_gpus` says (``"H100"`` is
    every H100). Any other name is read as the adapters read a provider's raw name, by the
    alias tables and the memory and form-factor words in it, and means every model those
    leave: ``"H100 SXM"`` is ``H100-SXM5-80GB``, ``"A100 80GB"`` both 80 GB A100s (where
    :func:`resolve_gpu_name` picks the slower one to rank one offer, a renter who did not
    name the form factor accepts either). Empty when neither knows the name; a renter's
    name is not counted among the providers' unknown ones (:func:`unknown_gpu_names`).
    """
    found = find_gpus(query)
    return found if found else _resolved(query.strip().lower())


@functools.lru_cache(maxsize=1024)
def _resolved(raw: str) -> tuple[GpuSpec, ...]:
    """:func:`gpus_named` of a name no catalog name, family or vendor is, kept (a
    requirement validates its GPUs on every parse)."""
    text = _normalise(raw)
    known = _candidates(raw, text) if text else None
    if not known:
        return ()
    return _hinted(known[0], (_memory_from_name(text),), (_form_factor_from_name(text),))


def gpu_named(query: str) -> GpuSpec | None:
    """The one model a renter's GPU name means where one is needed (an estimate's GPU): a
    canonical name; a family or vendor of one model; else a name as providers write it whose
    memory and form-factor words, or its alias's starred candidate, leave one model (``"4090"``
    is ``RTX-4090``, the 24 GB card; ``"4090 48G"`` the rework). ``None`` when the name means
    none or several (``"H100"``, ``"A800 80G"``): no variant is assumed for a renter."""
    found = find_gpus(query)
    if found:
        return found[0] if len(found) == 1 else None
    raw = query.strip().lower()
    text = _normalise(raw)
    known = _candidates(raw, text) if text else None
    if not known:
        return None
    memory_gbs = (_memory_from_name(text),)
    left = _hinted(
        _of_unstated_memory(*known, memory_gbs), memory_gbs, (_form_factor_from_name(text),)
    )
    return left[0] if len(left) == 1 else None


def _spelling(text: str) -> str:
    """Lower-case, separators as hyphens: how names are compared for a "did you mean"."""
    return re.sub(r"[\s_-]+", "-", text.strip().lower())


@functools.cache
def _vocabulary() -> dict[str, str]:
    """Every GPU name a renter may give, by :func:`_spelling`: models, families, vendors
    and the providers' whole-name aliases (``nvidia-tesla-t4``)."""
    names = [s.name for s in catalog()] + [s.family for s in catalog()]
    names += [v.value for v in Vendor] + list(EXACT_ALIASES)
    words: dict[str, str] = {}
    for name in names:
        words.setdefault(_spelling(name), name)
    return words


def similar_gpu_names(query: str, limit: int = 3) -> tuple[str, ...]:
    """Up to ``limit`` GPU names close to ``query`` (difflib's ratio), closest first: the
    "did you mean" of a refused GPU name."""
    words = _vocabulary()
    close = difflib.get_close_matches(_spelling(query), words, n=limit, cutoff=0.6)
    return tuple(words[w] for w in close)
