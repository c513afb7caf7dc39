"""The GPU catalog's consistency and the raw-name resolver, over real provider names."""

from __future__ import annotations

import csv
import dataclasses
import logging
from pathlib import Path

import pytest

import gpuscout.adapters.gpus as gpus
from gpuscout.adapters.gpus import (
    GpuSpec,
    Precision,
    catalog,
    find_gpus,
    get_gpu,
    resolve_gpu_name,
    sold_memory_gb,
    unknown_gpu_names,
)
from gpuscout.adapters.schema import GpuFormFactor, Vendor

RAW_NAMES = Path(__file__).with_name("gpu_raw_names.csv")
HOPPER_FAMILIES = {"H100", "H200", "H800", "GH200"}


def _raw_names() -> list[tuple[str, float | None, str | None, bool, str]]:
    with RAW_NAMES.open(encoding="utf-8", newline="") as handle:
        return [
            (
                row["raw"],
                float(row["memory_gb"]) if row["memory_gb"] else None,
                row["expected"] or None,
                row["assumed"] == "yes",
                row["seen_in"],
            )
            for row in csv.DictReader(handle)
        ]


@pytest.mark.parametrize(
    ("usable_mib", "model", "sold"),
    [
        (24564, "RTX-4090", 24),  # nvidia-smi's figure for a 24 GB card
        (81559, "H100-SXM5-80GB", 80),
        (46068, "L40S", 48),  # ECC on keeps ~6% back
        (81920, "H100-SXM5-80GB", 80),  # the nominal size itself
        (40960, "H100-SXM5-80GB", 40.0),  # not this model's size: the usable GiB
        (24564, None, 23.99),  # no model: the usable GiB
        (24564, "NOT-A-GPU", 23.99),
    ],
)
def test_sold_memory_is_the_nominal_size_of_the_usable_one(
    usable_mib: float, model: str | None, sold: float
) -> None:
    assert sold_memory_gb(usable_mib, model) == sold


def test_spec_fields_prefer_the_stated_form_factor_and_the_catalog_vendor() -> None:
    from gpuscout.adapters.schema import GpuFormFactor, Vendor

    h100 = gpus.resolve_gpu_name("H100 SXM5 80GB")
    assert gpus.spec_fields(h100) == {
        "gpu_model": "H100-SXM5-80GB",
        "gpu_vendor": Vendor.NVIDIA,
        "gpu_form_factor": GpuFormFactor.SXM,
    }
    unknown = gpus.spec_fields(None, form_factor=GpuFormFactor.PCIE, vendor=Vendor.AMD)
    assert unknown == {
        "gpu_model": None,
        "gpu_vendor": Vendor.AMD,
        "gpu_form_factor": GpuFormFactor.PCIE,
    }
    assert gpus.spec_fields(h100, vendor=Vendor.AMD)["gpu_vendor"] is Vendor.NVIDIA


# --- catalog consistency ----------------------------------------------------------------


def test_catalog_size_and_unique_names() -> None:
    names = [s.name for s in catalog()]
    assert len(names) >= 50
    assert len({n.upper() for n in names}) == len(names)


def test_every_row_has_a_source_family_and_enums() -> None:
    for spec in catalog():
        assert spec.source.strip(), spec.name
        assert spec.family, spec.name
        assert isinstance(spec.vendor, Vendor)
        assert isinstance(spec.form_factor, GpuFormFactor)


def test_every_vendor_present() -> None:
    assert {s.vendor for s in catalog()} >= {Vendor.NVIDIA, Vendor.AMD, Vendor.INTEL}


def test_figures_are_positive() -> None:
    for spec in catalog():
        for precision in Precision:
            value = spec.peak_tflops(precision)
            assert value is None or value > 0, (spec.name, precision)
        for value in (spec.memory_gb, spec.mem_bandwidth_gbs, spec.tdp_w, spec.nvlink_gbs):
            assert value is None or value > 0, spec.name


def test_hopper_fp8_is_twice_bf16() -> None:
    checked = 0
    for spec in catalog():
        if spec.family in HOPPER_FAMILIES and spec.tflops_fp8 and spec.tflops_bf16:
            assert spec.tflops_fp8 == pytest.approx(2 * spec.tflops_bf16), spec.name
            checked += 1
    assert checked >= 5


@pytest.mark.parametrize(
    ("name", "bf16"),
    [
        ("H100-SXM5-80GB", 989.5),  # datasheet 1979 is with sparsity
        ("H100-PCIE-80GB", 756.5),
        ("H200-SXM-141GB", 989.5),
        ("A100-SXM4-80GB", 312),  # datasheet 624 is with sparsity
        ("A100-PCIE-40GB", 312),
        ("L40S", 362.05),
        ("MI300X", 1307.4),
    ],
)
def test_dense_not_sparse(name: str, bf16: float) -> None:
    spec = get_gpu(name)
    assert spec is not None
    assert spec.tflops_bf16 == pytest.approx(bf16)
    assert spec.peak_tflops(Precision.BF16) == pytest.approx(bf16)


def test_precision_ordering() -> None:
    for spec in catalog():
        ordered = [v for v in (spec.tflops_tf32, spec.tflops_bf16, spec.tflops_fp8) if v]
        assert ordered == sorted(ordered), spec.name


def test_export_variants_are_distinct_models() -> None:
    h100, h800 = get_gpu("H100-SXM5-80GB"), get_gpu("H800-SXM5-80GB")
    a100, a800 = get_gpu("A100-SXM4-80GB"), get_gpu("A800-SXM4-80GB")
    assert h100 and h800 and a100 and a800
    assert h100.family != h800.family and a100.family != a800.family
    assert h800.nvlink_gbs is not None and h100.nvlink_gbs is not None
    assert h800.nvlink_gbs < h100.nvlink_gbs
    assert a800.nvlink_gbs is not None and a100.nvlink_gbs is not None
    assert a800.nvlink_gbs < a100.nvlink_gbs
    assert get_gpu("H20-96GB") is not None


def test_variants_kept_apart() -> None:
    for name in (
        "H100-SXM5-80GB",
        "H100-PCIE-80GB",
        "H100-NVL-94GB",
        "A100-SXM4-40GB",
        "A100-SXM4-80GB",
        "A100-PCIE-40GB",
        "A100-PCIE-80GB",
        "QUADRO-RTX-6000",
        "RTX-6000-ADA",
    ):
        assert get_gpu(name) is not None, name


def test_peak_tflops_missing_precision() -> None:
    a100 = get_gpu("A100-SXM4-80GB")
    assert a100 is not None and a100.peak_tflops(Precision.FP8) is None
    t4 = get_gpu("t4")  # case-insensitive
    assert t4 is not None and t4.peak_tflops(Precision.BF16) is None


def test_catalog_is_cached_and_frozen() -> None:
    assert catalog() is catalog()
    spec = catalog()[0]
    assert isinstance(spec, GpuSpec)
    with pytest.raises(AttributeError):
        spec.name = "x"  # type: ignore[misc]


def test_find_gpus() -> None:
    assert {s.name for s in find_gpus("H100")} == {
        "H100-SXM5-80GB",
        "H100-PCIE-80GB",
        "H100-NVL-94GB",
    }
    assert [s.name for s in find_gpus("h100-sxm5-80gb")] == ["H100-SXM5-80GB"]
    assert [s.name for s in find_gpus("rtx 4090")] == ["RTX-4090"]
    amd = find_gpus("amd")
    assert amd and all(s.vendor is Vendor.AMD for s in amd)
    assert find_gpus("no-such-gpu") == ()
    assert find_gpus("  ") == ()


_HEADER = ",".join(f.name for f in dataclasses.fields(GpuSpec) if f.name != "variant_assumed")
#: name ... fp32, tf32, bf16, fp16, fp8, int8, tdp, nvlink, year, no_tensor_figure, source
_ROW = "X,X,nvidia,sxm,hopper,80,HBM3,1,1,1,1,1,1,1,1,1,,2020,,src"


def test_loader_rejects_bad_rows() -> None:
    header, row = _HEADER, _ROW
    with pytest.raises(ValueError, match="duplicate"):
        gpus._load(f"{header}\n{row}\n{row}\n")
    with pytest.raises(ValueError, match="line 2"):
        gpus._load(f"{header}\n{row.replace('nvidia', 'acme')}\n")
    with pytest.raises(ValueError, match="required"):
        gpus._load(f"{header}\n{row.removesuffix('src')}\n")


def test_a_row_that_would_rank_at_fp32_unexplained_is_refused() -> None:
    # FP32 alone: the ranking would fall back to it, several times below the tensor rate
    fp32_only = "X,X,nvidia,pcie,ada,24,GDDR6,1,,40,,,,,,1,,2020,,src"
    with pytest.raises(ValueError, match="line 2: X has no BF16 or FP16 tensor figure"):
        gpus._load(f"{_HEADER}\n{fp32_only}\n")
    stated = fp32_only.replace(",,src", ",no tensor cores,src")
    (spec,) = gpus._load(f"{_HEADER}\n{stated}\n")
    assert spec.no_tensor_figure == "no tensor cores"
    assert spec.figure(Precision.BF16) == gpus.Figure(
        40.0, Precision.FP32, gpus.FigureBasis.FALLBACK
    )
    # a reason beside a figure is refused too: one of the two is wrong
    with pytest.raises(ValueError, match="has a tensor figure, yet no_tensor_figure"):
        gpus._load(f"{_HEADER}\n{_ROW.replace(',,src', ',no tensor cores,src')}\n")
    # a rule that derives a tensor figure counts (the part is one the rule names)
    geforce = fp32_only.replace("X,X,", "RTX-3080-TI,X,").replace(",ada,", ",ampere,")
    (derived,) = gpus._load(f"{_HEADER}\n{geforce}\n")
    assert derived.tensor_figure() is not None


# --- raw-name resolution ----------------------------------------------------------------


def test_raw_name_table_is_large_and_covers_providers() -> None:
    rows = _raw_names()
    assert len(rows) >= 100
    seen = " ".join(r[4] for r in rows).lower()
    for provider in (
        "vastai",
        "runpod",
        "lambda",
        "aws",
        "azure",
        "gcp",
        "tensordock",
        "verda",
        "vultr",
        "oci",
        "cudo",
        "jarvislabs",
        "digitalocean",
        "hyperstack",
        "shadeform",
    ):
        assert provider in seen, provider
    for _, _, expected, _, _ in rows:
        assert expected is None or get_gpu(expected) is not None, expected


@pytest.mark.parametrize(
    ("raw", "memory_gb", "expected", "assumed", "seen_in"),
    _raw_names(),
    ids=lambda v: str(v) if not isinstance(v, float) else f"{v:g}",
)
def test_resolve_raw_names(
    raw: str, memory_gb: float | None, expected: str | None, assumed: bool, seen_in: str
) -> None:
    spec = resolve_gpu_name(raw, memory_gb=memory_gb)
    assert (spec.name if spec else None) == expected, seen_in
    assert (spec is not None and spec.variant_assumed) is assumed, seen_in


@pytest.mark.parametrize(
    ("raw", "memory_gb", "form_factor", "expected"),
    [
        ("A100", 40960, "sxm", "A100-SXM4-40GB"),  # AWS p4d
        ("A100", 80, GpuFormFactor.SXM, "A100-SXM4-80GB"),  # AWS p4de
        ("H100", 81920, "SXM5", "H100-SXM5-80GB"),  # AWS p5
        ("H100", 80, "PCIe", "H100-PCIE-80GB"),
        ("Tesla V100", 16384, "sxm", "V100-SXM2-16GB"),
        ("NVIDIA_A100", 40, "pcie", "A100-PCIE-40GB"),
        ("H100 SXM", None, "pcie", None),  # the hint contradicts the name
        ("H200", None, "pcie", None),
        ("RTX 4090", 24, None, "RTX-4090"),
        ("H100 NVL", 80, None, None),  # 80 GB is not the 94 GB NVL
        ("H800", 80, "sxm", "H800-SXM5-80GB"),
    ],
)
def test_form_factor_hints(
    raw: str, memory_gb: float | None, form_factor: GpuFormFactor | str | None, expected: str | None
) -> None:
    spec = resolve_gpu_name(raw, memory_gb=memory_gb, form_factor=form_factor)
    assert (spec.name if spec else None) == expected


def test_bad_form_factor_hint_is_an_error() -> None:
    with pytest.raises(ValueError, match="form factor"):
        resolve_gpu_name("H100", form_factor="socket")


# --- an unstated form factor: the family's slower variant, assumed ------------------------


@pytest.mark.parametrize(
    ("raw", "memory_gb", "slower"),
    [
        ("nvidia_h100", 80, "H100-PCIE-80GB"),  # DigitalOcean gpu_info model
        ("H100", None, "H100-PCIE-80GB"),  # JarvisLabs gpu_type: the one H100 memory size
        ("A100-80GB", 80, "A100-PCIE-80GB"),  # JarvisLabs: same TFLOPs, less bandwidth
        ("NVIDIA_A100", 80, "A100-PCIE-80GB"),  # Vultr cloud GPU
        ("Tesla V100 (16 GB)", None, "V100-PCIE-16GB"),  # Lambda: 112 vs 125 TFLOPs FP16
        ("1x Tesla V100 16GB", None, "V100-PCIE-16GB"),  # Verda
        ("A100", 40, "A100-PCIE-40GB"),  # equal figures but no NVLink: the PCIe card
    ],
)
def test_unstated_form_factor_gives_the_slower_variant(
    raw: str, memory_gb: float | None, slower: str
) -> None:
    spec = resolve_gpu_name(raw, memory_gb=memory_gb)
    assert spec is not None and spec.name == slower and spec.variant_assumed
    assert get_gpu(slower) == spec  # the catalog's row, only marked
    fields = gpus.spec_fields(spec)
    assert fields["gpu_model"] == slower and fields["gpu_form_factor"] is None
    # stated by the provider, the form factor is kept
    assert gpus.spec_fields(spec, form_factor=GpuFormFactor.SXM)["gpu_form_factor"] is (
        GpuFormFactor.SXM
    )


def test_the_slower_variant_comes_from_the_catalog_figures() -> None:
    sxm, pcie = get_gpu("H100-SXM5-80GB"), get_gpu("H100-PCIE-80GB")
    assert sxm and pcie
    assert gpus.conservative_variant((sxm, pcie)) == pcie
    faster_pcie = dataclasses.replace(pcie, tflops_bf16=2000.0)
    # faster in TFLOPs, slower in bandwidth: neither is the slower on every count
    assert gpus.conservative_variant((sxm, faster_pcie)) is None
    # different memory sizes are not variants of one offer
    assert gpus.conservative_variant((sxm, dataclasses.replace(pcie, memory_gb=40.0))) is None
    assert gpus.conservative_variant((sxm,)) is None


def test_memory_left_unstated_is_not_guessed() -> None:
    assert resolve_gpu_name("A100") is None  # 40 or 80 GB
    assert resolve_gpu_name("Tesla V100") is None  # 16 or 32 GB
    assert resolve_gpu_name("RTX PRO 5000") is None  # 48 or 72 GB


@pytest.mark.parametrize(
    ("raw", "memory_gb", "expected"),
    [
        # a starred alias: a name that states no memory means the maker's own card
        ("RTX 4090", None, "RTX-4090"),
        ("RTX 4090", 48, "RTX-4090-48GB"),  # the third-party rework, by its memory
        ("H20", None, "H20-96GB"),
        ("H20", 141, "H20-141GB"),
        ("RTX 5090 D", None, "RTX-5090D"),
        ("RTX 5090 D", 24, "RTX-5090D-V2"),
        ("4090D", 48, "RTX-4090D-48GB"),
        ("RTX 4090", 32, None),  # a stated memory no variant has is not rounded to one
    ],
)
def test_a_starred_variant_is_what_an_unstated_memory_means(
    raw: str, memory_gb: float | None, expected: str | None
) -> None:
    spec = resolve_gpu_name(raw, memory_gb=memory_gb)
    assert (spec.name if spec else None) == expected
    assert spec is None or not spec.variant_assumed


def test_the_slower_of_variants_that_differ_in_clock_is_assumed() -> None:
    # Ascend 910B1-B3 share 64 GB and a module; the name alone does not say which
    spec = resolve_gpu_name("Ascend 910B")
    assert spec is not None and spec.name == "ASCEND-910B3" and spec.variant_assumed
    assert resolve_gpu_name("Ascend 910B", memory_gb=32) == get_gpu("ASCEND-910B4")
    assert resolve_gpu_name("Ascend 910B2") == get_gpu("ASCEND-910B2")


# --- figures: datasheet, derived by a rule, or a visible fallback -------------------------


def test_every_rule_has_text_sources_and_maps_one_precision_to_others() -> None:
    assert {r.rule for r in gpus.FIGURE_RULES} == {
        "bf16-at-fp16-rate",
        "fp8-twice-bf16",
        "bf16-half-fp8",
        "geforce-tensor-rate",
        "pro-tensor-rate",
        "turing-tensor-rate",
        "turing-geforce-tensor-rate",
        "volta-tensor-rate",
    }
    for rule in gpus.FIGURE_RULES:
        assert rule.text and rule.source and rule.architectures and rule.precisions
        assert rule.from_precision not in rule.precisions


def test_a_rule_that_names_models_names_catalog_parts_of_its_architectures() -> None:
    for rule in gpus.FIGURE_RULES:
        for name in rule.models:
            spec = get_gpu(name)
            assert spec is not None, (rule.rule, name)
            assert spec.architecture in rule.architectures, (rule.rule, name)
            # the rule fills a gap: the datasheet gives none of its precisions
            assert all(spec.peak_tflops(p) is None for p in rule.precisions), (rule.rule, name)


@pytest.mark.parametrize(
    ("rule", "holds_on"),
    [
        # every catalog part of those architectures with both figures bears the rule out
        ("bf16-at-fp16-rate", ("A100-SXM4-80GB", "A40", "L40S", "H100-SXM5-80GB", "B200")),
        ("fp8-twice-bf16", ("H100-SXM5-80GB", "L40S", "L4", "B200", "RTX-4090", "RTX-PRO-6000")),
        ("bf16-half-fp8", ("H100-PCIE-80GB", "L40", "GB200")),
    ],
)
def test_each_rule_holds_where_the_datasheet_gives_both_figures(
    rule: str, holds_on: tuple[str, ...]
) -> None:
    (found,) = [r for r in gpus.FIGURE_RULES if r.rule == rule]
    assert not found.models
    checked = set()
    for spec in catalog():
        for precision in found.precisions:
            target, base = spec.peak_tflops(precision), spec.peak_tflops(found.from_precision)
            if spec.architecture in found.architectures and target and base:
                # within 3%: datasheets round (L40S: FP8 733 against BF16 362.05)
                assert target == pytest.approx(found.factor * base, rel=0.03), spec.name
                checked.add(spec.name)
    assert checked >= set(holds_on)


@pytest.mark.parametrize(
    ("rule", "read_from"),
    [
        # a rule for named models: the parts its source reads the ratio from bear it out
        (
            "geforce-tensor-rate",
            ("RTX-3090", "RTX-3090-TI", "RTX-3080", "RTX-3070", "RTX-3060", "RTX-4090",
             "RTX-4080", "RTX-4070-TI", "RTX-4070", "RTX-5090", "RTX-5080", "RTX-5070-TI",
             "RTX-4090D"),
        ),
        (
            "pro-tensor-rate",
            ("RTX-A6000", "RTX-A5000", "RTX-A4500", "A40", "A10", "L40S", "L4",
             "RTX-4000-ADA", "RTX-PRO-6000", "RTX-PRO-5000-48GB", "RTX-PRO-4500"),
        ),
        ("turing-tensor-rate", ("T4", "QUADRO-RTX-5000", "QUADRO-RTX-6000")),
        ("volta-tensor-rate", ("V100-SXM2-16GB", "V100-PCIE-16GB", "V100S-PCIE-32GB")),
    ],
)  # fmt: skip
def test_a_named_models_rule_holds_on_the_parts_it_is_read_from(
    rule: str, read_from: tuple[str, ...]
) -> None:
    (found,) = [r for r in gpus.FIGURE_RULES if r.rule == rule]
    for name in read_from:
        spec = get_gpu(name)
        assert spec is not None and spec.architecture in found.architectures, name
        base = spec.peak_tflops(found.from_precision)
        for precision in found.precisions:
            target = spec.peak_tflops(precision)
            assert target and base, (name, precision)
            # within 4%: tables round (RTX PRO 5000: 258 against 4 x 65)
            assert target == pytest.approx(found.factor * base, rel=0.04), (name, precision)


@pytest.mark.parametrize(
    ("name", "precision", "tflops", "at", "basis", "rule"),
    [
        ("A100-SXM4-80GB", Precision.BF16, 312, Precision.BF16, "datasheet", None),
        ("A16", Precision.BF16, 17.9, Precision.BF16, "derived", "bf16-at-fp16-rate"),
        ("RTX-A4000", Precision.BF16, 76.7, Precision.BF16, "derived", "bf16-at-fp16-rate"),
        ("RTX-6000-ADA", Precision.BF16, 364.25, Precision.BF16, "derived", "bf16-half-fp8"),
        ("H20-96GB", Precision.FP8, 296, Precision.FP8, "derived", "fp8-twice-bf16"),
        ("L20", Precision.FP8, 239, Precision.FP8, "derived", "fp8-twice-bf16"),
        ("H100-NVL-94GB", Precision.FP8, 1671, Precision.FP8, "derived", "fp8-twice-bf16"),
        # Volta and Turing have no BF16: ranked at their FP16 tensor rate, visibly
        ("V100-SXM2-32GB", Precision.BF16, 125, Precision.FP16, "fallback", None),
        ("T4", Precision.BF16, 65, Precision.FP16, "fallback", None),
        # Ampere has no FP8: ranked at BF16
        ("A100-SXM4-80GB", Precision.FP8, 312, Precision.BF16, "fallback", None),
        # the GeForce and Turing rates, by rules that name their parts
        ("A10G", Precision.BF16, 63.0, Precision.BF16, "derived", "geforce-tensor-rate"),
        ("RTX-3080-TI", Precision.FP16, 68.2, Precision.FP16, "derived", "geforce-tensor-rate"),
        (
            "QUADRO-RTX-8000",
            Precision.BF16,
            130.4,
            Precision.FP16,
            "fallback",
            "turing-tensor-rate",
        ),
        ("RTX-A5000", Precision.BF16, 111, Precision.BF16, "datasheet", None),
        # no tensor cores (Pascal): ranked at FP32, visibly, and the row says why
        ("P40", Precision.BF16, 11.76, Precision.FP32, "fallback", None),
        # a fallback's own figure may be derived (A16: no FP8, BF16 derived from FP16)
        ("A16", Precision.FP8, 17.9, Precision.BF16, "fallback", "bf16-at-fp16-rate"),
    ],
)
def test_figure_says_how_it_was_had(
    name: str,
    precision: Precision,
    tflops: float,
    at: Precision,
    basis: str,
    rule: str | None,
) -> None:
    spec = get_gpu(name)
    assert spec is not None
    figure = spec.figure(precision)
    assert figure is not None
    assert figure.tflops == pytest.approx(tflops)
    assert (figure.precision, figure.basis.value) == (at, basis)
    assert (figure.rule.rule if figure.rule else None) == rule
    note = figure.note(precision)
    if basis == "datasheet":
        assert note is None
    elif basis == "fallback":
        assert note is not None
        assert note.startswith(f"ranked at {at.name}: no {precision.name} figure")
    else:
        assert note is not None and rule is not None and rule in note


def test_every_row_ranks_by_a_tensor_figure_or_says_why_not() -> None:
    """A card without a BF16/FP16 tensor figure would rank at FP32, several times too low
    (Quadro RTX 6000 ~8x, RTX A5000 ~4x, A10G ~2x): each row has one, or states why not."""
    unexplained = []
    for spec in catalog():
        figure = spec.figure(Precision.BF16)
        if spec.no_tensor_figure:
            assert spec.tensor_figure() is None, spec.name
            assert figure is None or figure.precision is Precision.FP32, spec.name
        elif figure is None or figure.precision not in (Precision.BF16, Precision.FP16):
            unexplained.append(spec.name)
    assert unexplained == []
    reasons = {s.name for s in catalog() if s.no_tensor_figure}
    assert reasons == {"P40", "P4", "A100X"}


@pytest.mark.parametrize(
    ("name", "times_fp32"),
    [
        ("QUADRO-RTX-6000", 8),  # was ranked at FP32: ~8x too low
        ("QUADRO-RTX-8000", 8),
        ("RTX-A5000", 4),  # ~4x
        ("RTX-A4500", 4),
        ("A10G", 2),  # ~2x
        ("RTX-2080-TI", 4),
        ("RTX-4070", 2),
        ("RTX-5080", 2),
        ("TITAN-V", 8),
    ],
)
def test_cards_that_ranked_at_fp32_rank_at_their_tensor_rate(name: str, times_fp32: float) -> None:
    spec = get_gpu(name)
    assert spec is not None and spec.tflops_fp32
    figure = spec.figure(Precision.BF16)
    assert figure is not None and figure.precision in (Precision.BF16, Precision.FP16)
    assert figure.tflops == pytest.approx(times_fp32 * spec.tflops_fp32, rel=0.05)


def test_the_rtx_pro_blackwell_rows_share_one_basis() -> None:
    """The same die and product line: one accumulate rate for all three (the full rate,
    4x FP32, as NVIDIA's FP4 figures and the RTX PRO 6000 table say), not the PRO 6000 at
    the full rate beside the PRO 5000 and 4500 at the GeForce half rate."""
    names = ("RTX-PRO-6000", "RTX-PRO-5000-48GB", "RTX-PRO-5000-72GB", "RTX-PRO-4500")
    for name in names:
        spec = get_gpu(name)
        assert spec is not None and spec.tflops_bf16 and spec.tflops_fp32
        assert spec.tflops_bf16 == spec.tflops_fp16
        assert spec.tflops_bf16 / spec.tflops_fp32 == pytest.approx(4, rel=0.04), name
        assert spec.tflops_fp8 == pytest.approx(2 * spec.tflops_bf16, rel=0.01), name
        basis = "same for RTX PRO 6000, 5000 and 4500"
        assert basis in spec.source or spec.source.startswith("As RTX-PRO-5000-48GB"), name


def test_h800_pcie_has_the_h100_pcie_compute() -> None:
    h800, h100 = get_gpu("H800-PCIE-80GB"), get_gpu("H100-PCIE-80GB")
    assert h800 is not None and h100 is not None
    for precision in (Precision.BF16, Precision.FP16, Precision.FP8, Precision.TF32):
        assert h800.peak_tflops(precision) == h100.peak_tflops(precision)
    assert h800.memory_gb == 80 and h800.tflops_fp64 is None  # FP64 cut for export: unsourced


def test_china_d_cards_are_their_own_models() -> None:
    d, full = get_gpu("RTX-4090D"), get_gpu("RTX-4090")
    five_d, five = get_gpu("RTX-5090D"), get_gpu("RTX-5090")
    assert d and full and five_d and five
    assert d.tflops_bf16 and full.tflops_bf16 and d.tflops_bf16 < full.tflops_bf16
    # the 5090 D keeps the 5090's FP32 but NVIDIA caps its tensor rate (2375 vs 3352 AI TOPS)
    assert five_d.tflops_fp32 == five.tflops_fp32
    assert five_d.tflops_bf16 == pytest.approx(five.tflops_bf16 * 2375 / 3352, rel=0.01)  # type: ignore[operator]
    reworked = get_gpu("RTX-4090-48GB")
    assert reworked and reworked.memory_gb == 48 and reworked.tflops_bf16 == full.tflops_bf16


def test_no_figure_at_all_is_none_and_datasheet_cells_are_not_filled() -> None:
    a100x = get_gpu("A100X")
    assert a100x is not None and a100x.figure(Precision.BF16) is None
    assert a100x.no_tensor_figure
    a16 = get_gpu("A16")
    assert a16 is not None and a16.tflops_bf16 is None  # derived figures stay out of the row
    fp64 = get_gpu("A16")
    assert fp64 is not None and fp64.figure(Precision.FP64) is None  # no fallback to narrower


def test_rules_loader_rejects_bad_rows() -> None:
    header = "rule,precisions,from_precision,factor,architectures,models,text,source"
    with pytest.raises(ValueError, match="line 2"):
        gpus._load_rules(f"{header}\nr,bf16,fp99,1,ampere,,t,s\n")
    with pytest.raises(ValueError, match="line 2"):
        gpus._load_rules(f"{header}\nr,bf16 fp99,fp32,1,ampere,,t,s\n")
    with pytest.raises(ValueError, match="one precision to others"):
        gpus._load_rules(f"{header}\nr,bf16 fp16,bf16,1,ampere,,t,s\n")
    with pytest.raises(ValueError, match="one precision to others"):
        gpus._load_rules(f"{header}\nr,,fp32,1,ampere,,t,s\n")
    with pytest.raises(ValueError, match="source"):
        gpus._load_rules(f"{header}\nr,bf16,fp16,1,ampere,,t,\n")
    (rule,) = gpus._load_rules(f"{header}\nr,bf16 fp16,fp32,2,ampere ada,RTX-3060,t,s\n")
    assert rule.precisions == {Precision.BF16, Precision.FP16}
    assert rule.models == {"RTX-3060"}
    assert rule.applies_to(get_gpu("RTX-3060"))  # type: ignore[arg-type]
    assert not rule.applies_to(get_gpu("RTX-3090"))  # type: ignore[arg-type]


# --- the models #13 added ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "memory_gb", "expected"),
    [
        ("A100X", None, "A100X"),
        ("NVIDIA GeForce RTX 5080", 16, "RTX-5080"),
        ("RTX 5080", None, "RTX-5080"),
        ("NVIDIA RTX PRO 4500 Blackwell", 32, "RTX-PRO-4500"),
        ("RTX PRO 4500 Blackwell Server Edition", None, "RTX-PRO-4500"),
        ("NVIDIA RTX PRO 5000 Blackwell", 48, "RTX-PRO-5000-48GB"),
        ("RTX PRO 5000 72GB", None, "RTX-PRO-5000-72GB"),
        ("RTX PRO 5000", None, None),  # 48 or 72 GB
    ],
)
def test_new_models_resolve(raw: str, memory_gb: float | None, expected: str | None) -> None:
    spec = resolve_gpu_name(raw, memory_gb=memory_gb)
    assert (spec.name if spec else None) == expected
    assert spec is None or spec.source


def test_canonical_names_resolve_to_themselves() -> None:
    for spec in catalog():
        assert resolve_gpu_name(spec.name) is spec
        assert resolve_gpu_name(spec.name.lower()) is spec


def test_every_alias_target_is_in_the_catalog() -> None:
    for target in gpus.EXACT_ALIASES.values():
        assert get_gpu(target) is not None, target
    for alias in gpus.ALIAS_PATTERNS:
        for target in alias.candidates:
            assert get_gpu(target) is not None, (alias.pattern.pattern, target)


def test_unknown_names_are_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    raw = "Totally Unknown Accelerator 7"
    before = unknown_gpu_names()[raw]
    with caplog.at_level(logging.INFO, logger="gpuscout.gpus"):
        assert resolve_gpu_name(raw) is None
        assert resolve_gpu_name(raw) is None
    assert unknown_gpu_names()[raw] == before + 2
    assert sum(raw in r.getMessage() for r in caplog.records) == (1 if before == 0 else 0)
    # the counter handed out is a copy
    unknown_gpu_names()[raw] += 100
    assert unknown_gpu_names()[raw] == before + 2


def test_empty_name_is_unknown() -> None:
    assert resolve_gpu_name("   ") is None


# --- a renter's GPU name -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "models"),
    [
        ("H100 SXM", {"H100-SXM5-80GB"}),
        ("H100-SXM", {"H100-SXM5-80GB"}),
        ("h100 pcie", {"H100-PCIE-80GB"}),
        ("4090", {"RTX-4090", "RTX-4090-48GB"}),  # a renter accepts either memory
        ("4090 48G", {"RTX-4090-48GB"}),
        ("4090D", {"RTX-4090D", "RTX-4090D-48GB"}),
        ("A800 80G", {"A800-SXM4-80GB", "A800-PCIE-80GB"}),
        ("H20 96G", {"H20-96GB"}),
        ("昇腾910B", {"ASCEND-910B1", "ASCEND-910B2", "ASCEND-910B3", "ASCEND-910B4"}),
        ("H800 80G", {"H800-SXM5-80GB", "H800-PCIE-80GB"}),
        # the name leaves the form factor open: either 80 GB part, not the resolver's pick
        ("A100-80GB", {"A100-SXM4-80GB", "A100-PCIE-80GB"}),
        ("nvidia-tesla-t4", {"T4"}),  # a provider's whole-name alias
    ],
)
def test_gpus_named_reads_a_raw_name_as_the_resolver(query: str, models: set[str]) -> None:
    assert not find_gpus(query)
    assert {s.name for s in gpus.gpus_named(query)} == models


@pytest.mark.parametrize("query", ["H100", "A100", "amd", "RTX-4090", "rtx 4090", "MI300X"])
def test_gpus_named_keeps_model_family_and_vendor_semantics(query: str) -> None:
    assert gpus.gpus_named(query) == find_gpus(query) != ()


@pytest.mark.parametrize(
    ("query", "model"),
    [
        ("4090", "RTX-4090"),  # the starred candidate: memory unstated
        ("RTX 4090 48G", "RTX-4090-48GB"),
        ("4090D", "RTX-4090D"),
        ("H20", None),  # a family of two
        ("H20 141G", "H20-141GB"),
        ("A800 80G", None),  # SXM4 or PCIe: no variant is assumed for a renter
        ("昇腾910B4", "ASCEND-910B4"),
        ("GH200", "GH200-96GB"),
        ("no such gpu", None),
    ],
)
def test_gpu_named_is_one_model_or_none(query: str, model: str | None) -> None:
    found = gpus.gpu_named(query)
    assert (found.name if found else None) == model


def test_gpus_named_does_not_count_a_renter_name_as_a_provider_one() -> None:
    raw = "Renter Typo 9000 SXM"
    before = unknown_gpu_names()[raw]
    assert gpus.gpus_named(raw) == ()
    assert unknown_gpu_names()[raw] == before


@pytest.mark.parametrize(
    ("query", "close"),
    [("H1000", "H100"), ("MI300", "MI300X"), ("RTX 4090X", "RTX-4090"), ("nvidai", "nvidia")],
)
def test_similar_gpu_names(query: str, close: str) -> None:
    found = gpus.similar_gpu_names(query)
    assert close in found and len(found) <= 3


def test_no_similar_name_for_gibberish() -> None:
    assert gpus.similar_gpu_names("blah") == ()
