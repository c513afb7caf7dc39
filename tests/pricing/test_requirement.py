from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from gpuscout.adapters.schema import RentalTerm
from gpuscout.pricing import PRESETS, Requirement, preset
from gpuscout.pricing.requirement import PRESET_ALIASES, GpuChoice, gpu_choice, preset_names


def test_every_preset_validates() -> None:
    for name in PRESETS:
        assert isinstance(preset(name), Requirement)


def test_former_preset_names_are_taken_but_not_listed() -> None:
    for old, new in PRESET_ALIASES.items():
        assert preset(old) == preset(new)
        assert old not in preset_names()
    assert PRESET_ALIASES["seed-8xa100"] == "8xa100-pretrain"


def test_example_server_preset_matches_the_example_server() -> None:
    seed = preset("8xa100-pretrain")
    assert seed.min_gpus == seed.max_gpus == 8
    assert seed.min_cpu_cores == 128 and seed.min_ram_gb == 512
    assert seed.min_storage_gb == 15000 and seed.min_fabric_gbps == 400
    assert set(seed.gpu_models()) == {"A100-SXM4-80GB", "A100-PCIE-80GB"}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"gpus": ("NOPE-9000",)}, "gpus"),
        ({"min_gpus": -1}, "min_gpus"),
        ({"countries": ("USA",)}, "countries"),
        ({"colour": "red"}, "colour"),
        ({"min_gpus": 4, "max_gpus": 2}, "max_gpus"),
        ({"providers": ("a",), "exclude_providers": ("a",)}, "exclude_providers"),
    ],
)
def test_errors_name_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        Requirement.model_validate(data)
    assert field in str(info.value)


def test_family_and_vendor_queries_resolve() -> None:
    assert "H100-SXM5-80GB" in Requirement(gpus=("H100",)).gpu_models()
    assert "MI300X" in Requirement(gpus=("amd",)).gpu_models()


def test_allowed_terms_respect_max_commitment() -> None:
    req = Requirement(max_commitment_hours=730)
    assert RentalTerm.COMMIT_1MO in req.allowed_terms()
    assert RentalTerm.COMMIT_3MO not in req.allowed_terms()
    assert RentalTerm.ON_DEMAND in req.allowed_terms()


def test_unknown_preset_lists_known() -> None:
    with pytest.raises(KeyError, match="8xa100-pretrain"):
        preset("nope")


def test_merged_overrides_preset() -> None:
    merged = preset("1xh100").merged(max_usd_per_hour=3.0, gpus=())
    assert merged.max_usd_per_hour == 3.0
    assert merged.gpus == ("H100",)


@pytest.mark.parametrize(
    ("query", "models"),
    [
        ("H100 SXM", ("H100-SXM5-80GB",)),
        ("H100-SXM", ("H100-SXM5-80GB",)),
        ("A100-80GB", ("A100-SXM4-80GB", "A100-PCIE-80GB")),
        ("4090", ("RTX-4090", "RTX-4090-48GB")),  # either memory: a renter did not say
        ("4090 48G", ("RTX-4090-48GB",)),
    ],
)
def test_gpu_names_as_providers_write_them_resolve(query: str, models: tuple[str, ...]) -> None:
    requirement = Requirement(gpus=(query,))
    assert requirement.gpus == (query,)  # kept as typed: the loose coverage match reads it
    assert requirement.gpu_models() == models


def test_a_family_still_means_every_variant() -> None:
    assert Requirement(gpus=("H100",)).gpu_models() == (
        "H100-SXM5-80GB",
        "H100-PCIE-80GB",
        "H100-NVL-94GB",
    )


def test_an_unknown_gpu_name_gets_a_did_you_mean() -> None:
    with pytest.raises(ValidationError) as info:
        Requirement(gpus=("H100", "MI300"))
    (error,) = info.value.errors()
    assert error["loc"] == ("gpus",)
    assert "unknown GPU model, family or vendor: 'MI300' (did you mean 'MI300X'" in error["msg"]


@pytest.mark.parametrize(
    ("text", "name", "low", "high"),
    [
        ("H100", "H100", None, None),
        ("H100:8", "H100", 8, 8),
        ("A100:2..8", "A100", 2, 8),
        ("A100:2..", "A100", 2, None),
        ("L4:..4", "L4", None, 4),
        ("A100:80GB:8", "A100 80GB", 8, 8),  # dstack's name:memory:count
        ("A100:8:80GB", "A100 80GB", 8, 8),
        ("H100 SXM : 8", "H100 SXM", 8, 8),
    ],
)
def test_a_gpu_entry_reads_as_dstack_spells_it(
    text: str, name: str, low: int | None, high: int | None
) -> None:
    assert gpu_choice(text) == GpuChoice(name, low, high)
    assert gpu_choice(text).counted is (low is not None or high is not None)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("H100:", "no GPU count after ':'"),
        (":8", "no GPU name before ':'"),
        ("H100:x", "bad GPU count 'x'"),
        ("H100:..", "bad GPU count '..'"),
        ("H100:8.5", "bad GPU count '8.5'"),
        ("H100:0", "at least 1 GPU"),
        ("H100:0..4", "at least 1 GPU"),
        ("H100:8..2", "the range is empty (8 > 2)"),
        ("H100:8:4", "two GPU counts"),
    ],
)
def test_a_bad_gpu_entry_is_refused_by_name(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        gpu_choice(text)
    with pytest.raises(ValidationError, match=re.escape(said)):
        Requirement(gpus=(text,))


def test_a_count_does_not_change_which_models_a_name_means() -> None:
    counted = Requirement(gpus=("H100:8", "A100:2..8"))
    assert counted.gpu_models() == Requirement(gpus=("H100", "A100")).gpu_models()
    assert counted.gpu_names() == ("H100", "A100")
    assert counted.gpus == ("H100:8", "A100:2..8")  # kept as typed
    # not the raw-name resolver's reading of "h100 8": every H100 variant
    assert "H100-NVL-94GB" in counted.gpu_models()


def test_a_count_filters_only_its_own_names_offers() -> None:
    from datetime import UTC, datetime

    import polars as pl

    from gpuscout.pricing.expressions import qualifies

    rows = pl.DataFrame(
        {
            "gpu_model": ["H100-SXM5-80GB", "H100-PCIE-80GB", "H100-SXM5-80GB", "RTX-4090"],
            "gpus": [8.0, 8.0, 1.0, 2.0],
            "term": pl.Series(["on_demand"] * 4),
        }
    )
    req = Requirement(gpus=("H100:8", "4090"), terms=tuple(RentalTerm))
    kept = rows.filter(qualifies(req, datetime.now(UTC)))
    assert kept["gpus"].to_list() == [8.0, 8.0, 2.0]
