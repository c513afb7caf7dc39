"""The GPU catalog and the mapping from providers' raw GPU names to catalog models.

Ranking offers by cost per effective TFLOP-hour needs one datasheet figure per model, so every
offer must point at exactly one catalog row. Providers name the same part in a dozen ways
(``"H100 SXM"``, ``"NVIDIA H100 80GB HBM3"``, ``"gpu_8x_h100_sxm5"``,
``"Standard_ND96isr_H100_v5"``) and sometimes leave out what tells two parts apart (AWS says
``"A100"`` for both the 40 and the 80 GB part). This module therefore:

* loads the catalog from ``gpus_data.csv`` beside it, lazily, on first use;
* resolves raw names through data tables (:data:`EXACT_ALIASES`, :data:`ALIAS_PATTERNS`) plus the
  memory and form-factor hints a provider gives, and returns ``None`` rather than guess when a
  name is unknown or still ambiguous. Unresolved names are counted
  (:func:`unknown_gpu_names`) and logged once each on the ``gpuscout.gpus`` logger.

Canonical names are short, upper-case and hyphenated: ``<MODEL>[-<FORM>][-<MEMORY>GB]``, with the
form factor and memory only where the model exists in several of them (``H100-SXM5-80GB``,
``H100-PCIE-80GB``, ``H100-NVL-94GB``, ``A100-SXM4-40GB``, ``V100-PCIE-32GB``) and plain otherwise
(``L40S``, ``B200``, ``MI300X``, ``GAUDI2``, ``RTX-4090``, ``RTX-6000-ADA``,
``QUADRO-RTX-6000``). ``family`` is what a user types to mean "any of them" (``H100``,
``A100``, ``V100``); single-SKU models are their own family.

All TFLOPS figures are DENSE (NVIDIA's sparse tensor figures halved) peak rates per GPU; INT8 is
in TOPS. GeForce BF16/FP16 figures are the FP32-accumulate tensor rate. An empty cell means the
part lacks the precision or no source was found: it is never filled in by inference.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import functools
import io
import logging
import re
import threading
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources

from adapters.schema import GpuFormFactor, OfferFields, Vendor

__all__ = [
    "ALIAS_PATTERNS",
    "EXACT_ALIASES",
    "GpuSpec",
    "Precision",
    "catalog",
    "find_gpus",
    "get_gpu",
    "resolve_gpu_name",
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
    source: str

    def peak_tflops(self, precision: Precision) -> float | None:
        """Dense peak TFLOPS (TOPS for INT8) at ``precision``; ``None`` if absent or unsourced."""
        value: float | None = getattr(self, f"tflops_{Precision(precision).value}")
        return value


# --- loading -----------------------------------------------------------------------------

_FLOAT_FIELDS = frozenset(
    f.name for f in dataclasses.fields(GpuSpec) if f.type in ("float | None",)
)


def _optional_float(text: str) -> float | None:
    text = text.strip()
    return float(text) if text else None


def _parse_row(row: dict[str, str], line: int) -> GpuSpec:
    try:
        values: dict[str, object] = {}
        for field in dataclasses.fields(GpuSpec):
            raw = row[field.name]
            if field.name in _FLOAT_FIELDS:
                values[field.name] = _optional_float(raw)
            elif field.name == "release_year":
                values[field.name] = int(raw) if raw.strip() else None
            elif field.name == "vendor":
                values[field.name] = Vendor(raw.strip())
            elif field.name == "form_factor":
                values[field.name] = GpuFormFactor(raw.strip())
            elif field.name == "memory_type":
                values[field.name] = raw.strip() or None
            else:
                values[field.name] = raw.strip()
        spec = GpuSpec(**values)  # type: ignore[arg-type]
    except (KeyError, ValueError) as exc:
        raise ValueError(f"{_DATA_FILE} line {line}: {exc}") from None
    if not spec.name or not spec.family or not spec.source:
        raise ValueError(f"{_DATA_FILE} line {line}: name, family and source are required")
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
    package = __package__ or "adapters"
    return _load(resources.files(package).joinpath(_DATA_FILE).read_text("utf-8"))


@functools.cache
def _by_name() -> dict[str, GpuSpec]:
    return {spec.name.upper(): spec for spec in catalog()}


def get_gpu(name: str) -> GpuSpec | None:
    """The model with canonical ``name`` (case-insensitive), or ``None``."""
    return _by_name().get(name.strip().upper())


def _key(text: str) -> str:
    """Letters and digits only, lower-case: ``"RTX 4090"`` and ``"RTX-4090"`` compare equal."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def find_gpus(query: str) -> tuple[GpuSpec, ...]:
    """Models matching a canonical name, else a family (``"H100"``), else a vendor (``"amd"``).

    Spaces, hyphens and case are ignored, so ``"rtx 4090"`` finds ``RTX-4090``.
    """
    key = _key(query)
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

#: Whole raw names (lower-cased, trimmed) whose meaning is fixed by one provider's convention
#: and not by the words in them. GCP accelerator types: gpuhunt gcp.py and the GCP GPU docs
#: (A2 Standard = A100 40GB SXM, A2 Ultra = A100 80GB, A3 = H100 SXM, A3 Ultra = H200 SXM).
#: GCP SKU descriptions ("Nvidia Tesla A100 GPU running in Americas") are rewritten to these.
EXACT_ALIASES: dict[str, str] = {
    "nvidia-tesla-a100": "A100-SXM4-40GB",
    "nvidia-a100-80gb": "A100-SXM4-80GB",
    "nvidia-tesla-a100-80gb": "A100-SXM4-80GB",
    "nvidia-h100-80gb": "H100-SXM5-80GB",
    "nvidia-h100-mega-80gb": "H100-SXM5-80GB",
    "nvidia-h100-80gb-mega": "H100-SXM5-80GB",
    "nvidia-h100-80gb-plus": "H100-SXM5-80GB",
    "nvidia-h200-141gb": "H200-SXM-141GB",
    "nvidia-b200": "B200",
    "nvidia-gb200": "GB200",
    "nvidia-l4": "L4",
    "nvidia-tesla-t4": "T4",
    "nvidia-tesla-p4": "P4",
    "nvidia-rtx-pro-6000": "RTX-PRO-6000",
}

#: GCP billing SKU descriptions -> the accelerator type they price.
_GCP_DESCRIPTION = re.compile(
    r"^(?:spot preemptible |preemptible )?(?:commitment v\d+: )?nvidia (?P<model>[a-z0-9 ]+?) gpu\b"
)

#: Rewrites applied to the lower-cased raw name before pattern matching, in order. They remove
#: what never tells two GPUs apart: vendor and brand words, instance counts, MIG slice suffixes.
_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        # a MIG slice names its parent GPU; the slice itself is the adapter's business
        (r"\bmig \d+g\.\d+gb\b", " "),
        # "NVIDIA GH200 480GB": 480 GB is the whole superchip (Grace LPDDR + HBM), not the GPU
        (r"\bgh200[ _-]480gb\b", "gh200"),
        (r"[_\-/,;:()\[\].+]", " "),
        (r"geforce|tesla|nvidia", " "),
        (r"\b(?:amd|instinct|radeon|intel|habana|oci|compute)\b", " "),
        (r"\b(?:standard|virtual machines|series|windows|spot|low priority)\b", " "),
        (r"\b(?:blackwell|server edition|workstation edition|max q|edition)\b", " "),
        (r"\bgpus?\b", " "),
        # counts: "8x", "gpu_8x_", "n3-H100x8"
        (r"\b\d+x\b", " "),
        (r"(?<=[a-z0-9])x\d{1,2}\b", " "),
        (r"\s+", " "),
    )
)


@dataclass(frozen=True, slots=True)
class _Alias:
    pattern: re.Pattern[str]
    candidates: tuple[str, ...]  # empty: a known part that has no catalog row


def _alias(pattern: str, *candidates: str) -> _Alias:
    return _Alias(re.compile(pattern), candidates)


def _geforce(number: str, *candidates: str) -> _Alias:
    """A GeForce number, with or without "RTX", but never its D/Ti/SUPER/S siblings."""
    return _alias(
        rf"(?<![a-z0-9])(?:rtx ?)?{number}(?![a-z0-9])(?! ?(?:d|ti|super|s)\b)", *candidates
    )


#: Patterns over the normalised name, tried in order; the first match names the candidates,
#: which memory and form-factor hints must then narrow to exactly one. Specific names (Azure
#: VM series, "H100 NVL", "3090 Ti") come before the generic ones they contain.
ALIAS_PATTERNS: tuple[_Alias, ...] = (
    # known parts without a catalog row: answer "unknown" rather than match a sibling
    _alias(r"\bvgpu\b"),  # AutoDL virtual slices
    _alias(r"(?<![a-z0-9])(?:rtx ?)?(?:4090|5090) ?d\b"),  # China-only 4090D / 5090 D
    _alias(r"\brtx ?6000 ?d\b"),
    _alias(r"\ba100x\b"),  # A100 converged accelerator (A100 + BlueField)
    _alias(r"\bv100 fhhl\b"),  # 150 W single-slot V100
    _alias(r"\brtx ?5000 ?ada\b"),
    # Azure VM sizes, meter and product names (gpuhunt azure.py; learn.microsoft.com)
    _alias(r"\bnd\w* ?h100 ?v5\b", "H100-SXM5-80GB"),
    _alias(r"\bnc\w* ?h100 ?v5\b", "H100-NVL-94GB"),
    _alias(r"\bnd\w* ?h200 ?v5\b", "H200-SXM-141GB"),
    _alias(r"\bnd\d*amsr ?a100 ?v4\b|\bndm ?a100 ?v4\b", "A100-SXM4-80GB"),
    _alias(r"\bnd\d*asr ?(?:a100 ?)?v4\b", "A100-SXM4-40GB"),
    _alias(r"\bnc\w* ?a100 ?v4\b", "A100-PCIE-80GB"),
    _alias(r"\b(?:nc|nv)\w* ?a10 ?v[45]\b", "A10"),
    _alias(r"\bnc\w* ?t4 ?v3\b", "T4"),
    _alias(r"\bnd40rs ?v2\b", "V100-SXM2-32GB"),
    _alias(r"\bnc\d+r?s ?v3\b", "V100-PCIE-16GB"),
    _alias(r"\bnd\w* ?mi300x ?v5\b", "MI300X"),
    _alias(r"\bnd\w* ?gb200 ?v6\b", "GB200"),
    _alias(r"\bnd\w* ?gb300 ?v6\b", "GB300"),
    # Hopper and Blackwell. A bare "H200" is the SXM part: the NVL card always says NVL.
    _alias(r"\bh100 ?nvl\b", "H100-NVL-94GB"),
    _alias(r"\bh100\b.*\bhbm3\b", "H100-SXM5-80GB"),  # nvidia-smi: HBM3 = SXM5
    _alias(r"\bh100\b.*\bhbm2e\b", "H100-PCIE-80GB"),
    _alias(r"\bh100\b", "H100-SXM5-80GB", "H100-PCIE-80GB"),
    _alias(r"\bh200 ?nvl\b", "H200-NVL-141GB"),
    _alias(r"\bh200\b", "H200-SXM-141GB"),
    _alias(r"\bh800\b", "H800-SXM5-80GB", "H800-PCIE-80GB"),
    _alias(r"\bh20\b", "H20-96GB"),
    _alias(r"\bgh200\b", "GH200-96GB"),
    _alias(r"\bgb200\b", "GB200"),
    _alias(r"\bgb300\b", "GB300"),
    _alias(r"\bb100\b", "B100"),
    _alias(r"\bb200\b", "B200"),
    _alias(r"\bb300\b", "B300"),
    # Ampere data centre
    _alias(r"\ba100\b", "A100-SXM4-40GB", "A100-SXM4-80GB", "A100-PCIE-40GB", "A100-PCIE-80GB"),
    _alias(r"\ba800\b", "A800-SXM4-80GB", "A800-PCIE-80GB", "A800-PCIE-40GB"),
    _alias(r"\ba10g\b", "A10G"),
    _alias(r"\ba10\b", "A10"),
    _alias(r"\ba16\b", "A16"),
    _alias(r"\ba30\b", "A30"),
    _alias(r"\ba40\b", "A40"),
    # Ada / Turing data centre
    _alias(r"\bl40 ?s\b", "L40S"),
    _alias(r"\bl40\b", "L40"),
    _alias(r"\bl20\b", "L20"),
    _alias(r"\bl4\b", "L4"),
    _alias(r"\bt4\b", "T4"),
    # Volta / Pascal
    _alias(r"\bv100s\b", "V100S-PCIE-32GB"),
    _alias(r"\bv100 ?sxm3\b", "V100-SXM3-32GB"),
    _alias(r"\bv100\b", "V100-SXM2-16GB", "V100-SXM2-32GB", "V100-PCIE-16GB", "V100-PCIE-32GB"),
    _alias(r"\bp100\b", "P100-SXM2-16GB", "P100-PCIE-16GB", "P100-PCIE-12GB"),
    _alias(r"\bp40\b", "P40"),
    _alias(r"\bp4\b", "P4"),
    _alias(r"\btitan ?v\b", "TITAN-V"),
    # professional cards; a bare "RTX 6000" is the 2018 Quadro (Lambda gpu_1x_rtx6000, 24 GB)
    _alias(r"\brtx ?pro ?(?:server ?)?6000\b", "RTX-PRO-6000"),
    _alias(r"\brtx ?6000 ?ada\b", "RTX-6000-ADA"),
    _alias(r"\brtx ?4000 ?ada\b", "RTX-4000-ADA"),
    _alias(r"\brtx ?2000 ?ada\b", "RTX-2000-ADA"),
    _alias(r"\b(?:quadro ?|q ?)?rtx ?6000\b", "QUADRO-RTX-6000"),
    _alias(r"\b(?:quadro ?|q ?)?rtx ?8000\b", "QUADRO-RTX-8000"),
    _alias(r"\b(?:quadro ?|q ?)rtx ?5000\b", "QUADRO-RTX-5000"),
    _alias(r"\b(?:quadro ?|q ?)rtx ?4000\b", "QUADRO-RTX-4000"),
    _alias(r"(?<![a-z0-9])(?:rtx ?)?a6000\b", "RTX-A6000"),
    _alias(r"(?<![a-z0-9])(?:rtx ?)?a5000\b", "RTX-A5000"),
    _alias(r"(?<![a-z0-9])(?:rtx ?)?a4500\b", "RTX-A4500"),
    _alias(r"(?<![a-z0-9])(?:rtx ?)?a4000\b", "RTX-A4000"),
    # GeForce
    _alias(r"(?<![a-z0-9])(?:rtx ?)?3090 ?ti\b", "RTX-3090-TI"),
    _alias(r"(?<![a-z0-9])(?:rtx ?)?2080 ?ti\b", "RTX-2080-TI"),
    _alias(r"(?<![a-z0-9])(?:rtx ?)?4070 ?ti\b(?! ?super)", "RTX-4070-TI"),
    _alias(r"(?<![a-z0-9])(?:rtx ?)?4080 ?(?:super|s)\b", "RTX-4080-SUPER"),
    _geforce("5090", "RTX-5090"),
    _geforce("4090", "RTX-4090"),
    _geforce("4080", "RTX-4080"),
    _geforce("4070", "RTX-4070"),
    _geforce("3090", "RTX-3090"),
    _geforce("3080", "RTX-3080"),
    _geforce("3070", "RTX-3070"),
    # AMD Instinct, Intel Gaudi
    _alias(r"\bmi355x\b", "MI355X"),
    _alias(r"\bmi350x\b", "MI350X"),
    _alias(r"\bmi325x\b", "MI325X"),
    _alias(r"\bmi300x\b", "MI300X"),
    _alias(r"\bmi300a\b", "MI300A"),
    _alias(r"\bmi250x\b", "MI250X"),
    _alias(r"\bmi250\b", "MI250"),
    _alias(r"\bmi210\b", "MI210"),
    _alias(r"\bmi100\b", "MI100"),
    _alias(r"\bgaudi ?2\b|\bhl ?225\w*\b", "GAUDI2"),
    _alias(r"\bgaudi ?3\b|\bhl ?325\w*\b", "GAUDI3"),
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


def _narrow(
    candidates: tuple[GpuSpec, ...],
    memory_gbs: tuple[float | None, ...],
    form_factors: tuple[GpuFormFactor | None, ...],
) -> GpuSpec | None:
    for memory in memory_gbs:
        if memory is not None:
            candidates = tuple(c for c in candidates if _same_memory(c, memory))
    for form in form_factors:
        if form is not None:
            candidates = tuple(c for c in candidates if c.form_factor is form)
    return candidates[0] if len(candidates) == 1 else None


def _candidates(raw: str, text: str) -> tuple[GpuSpec, ...] | None:
    """Catalog models the name may mean; ``None`` when no table knows it."""
    lowered = raw.strip().lower()
    gcp = _GCP_DESCRIPTION.match(lowered)
    exact = EXACT_ALIASES.get(
        lowered if gcp is None else "nvidia-" + "-".join(gcp["model"].split())
    )
    if exact is not None:
        return (_by_name()[exact],)
    for alias in ALIAS_PATTERNS:
        if alias.pattern.search(text):
            return tuple(_by_name()[name] for name in alias.candidates)
    return None


def spec_fields(
    spec: GpuSpec | None,
    *,
    form_factor: GpuFormFactor | None = None,
    vendor: Vendor | None = None,
) -> OfferFields:
    """The Offer fields a resolved catalog model fills: ``gpu_model``, ``gpu_vendor``,
    ``gpu_form_factor``; all ``None`` for an unknown GPU.

    ``form_factor`` is what the provider states (it wins over the catalog's); ``vendor`` is the
    provider's word for an unknown GPU (the catalog's wins when the model is known).
    """
    return {
        "gpu_model": spec.name if spec else None,
        "gpu_vendor": spec.vendor if spec else vendor,
        "gpu_form_factor": form_factor or (spec.form_factor if spec else None),
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
    a wrong model would mis-rank an offer, an unmapped one is only left out.
    """
    spec = get_gpu(raw)
    if spec is not None:
        return spec
    form_hint = _form_factor_hint(form_factor)
    text = _normalise(raw)
    candidates = _candidates(raw, text) if text else None
    found = None
    if candidates:
        found = _narrow(
            candidates,
            (_memory_from_name(text), _gb(memory_gb)),
            (_form_factor_from_name(text), form_hint),
        )
    if found is None:
        _record_unknown(raw, memory_gb, form_factor)
    return found
