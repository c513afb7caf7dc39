"""The filters of the seed's groups, on hand-built offers: a match, a miss, an offer that
does not say (excluded), and the same admitted with ``allow_unknown``."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from pydantic import ValidationError

from gpuscout.adapters.schema import Offer
from gpuscout.pricing.expressions import qualifies
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.pricing.requirement import Requirement

from .factories import NOW, make_offer


def _passing(offers: list[Offer], **constraints: Any) -> list[str]:
    frame = offers_to_frame(offers)
    chosen = frame.filter(qualifies(Requirement.model_validate(constraints), NOW))
    return sorted(chosen["offer_id"].to_list())


#: constraint, a matching offer's fields, a missing offer's fields. A third offer states
#: none of them.
CASES: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    ({"min_cpu_sockets": 2}, {"cpu_sockets": 2}, {"cpu_sockets": 1}),
    ({"server_cpu": True}, {"cpu_model": "AMD EPYC 7702 64-Core"}, {"cpu_model": "Ryzen 9"}),
    ({"server_cpu": False}, {"cpu_model": "Intel Core i9-13900K"}, {"cpu_model": "Xeon 8480+"}),
    ({"min_psu_watts": 2000}, {"psu_watts": 8000.0}, {"psu_watts": 1600.0}),
    ({"psu_redundant": True}, {"psu_redundancy": "2+2"}, {"psu_redundancy": "2+0"}),
    ({"psu_redundant": True}, {"psu_redundancy": "N+1"}, {"psu_redundancy": "N"}),
    ({"psu_redundant": False}, {"psu_redundancy": "4+0"}, {"psu_redundancy": "1+1"}),
    ({"min_chassis_u": 4}, {"chassis_form_factor": "4U"}, {"chassis_form_factor": "2U"}),
    ({"min_chassis_u": 4}, {"chassis_form_factor": "8U rack"}, {"chassis_form_factor": "1U"}),
    (
        {"os_images": ("Ubuntu 22.04",)},
        {"os_images": ("Ubuntu 22.04 LTS (Jammy)", "debian-12")},
        {"os_images": ("ubuntu-20.04", "lambda-stack-22-04")},
    ),
    (
        {"os_images": ("ubuntu 22.04", "Ubuntu 24.04")},
        {"os_images": ("ubuntu-24.04-cuda-12.4",)},
        {"os_images": ("Ubuntu 22.10",)},
    ),
    ({"min_cuda_version": "12.4"}, {"cuda_version": "12.10"}, {"cuda_version": "12.2"}),
    ({"min_cuda_version": "12"}, {"cuda_version": "12.0"}, {"cuda_version": "11.8"}),
    (
        {"min_driver_version": "535.104"},
        {"driver_version": "535.183.01"},
        {"driver_version": "535.54.03"},
    ),
    (
        {"frameworks": ("PyTorch",)},
        {"frameworks": ("pytorch 2.3", "jax")},
        {"frameworks": ("tensorflow",)},
    ),
    (
        {"frameworks": ("pytorch", "TensorFlow")},
        {"frameworks": ("TensorFlow-2.15",)},
        {"frameworks": ("jax",)},
    ),
    ({"backup_service": True}, {"backup_service": True}, {"backup_service": False}),
    (
        {"support_tiers": ("enterprise", "Business")},
        {"support_tier": "Enterprise"},
        {"support_tier": "basic"},
    ),
    (
        {"min_disk_bandwidth_mbps": 1000},
        {"disk_bandwidth_mbps": 3500.0},
        {"disk_bandwidth_mbps": 800.0},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("constraint", "match", "miss"), CASES)
def test_match_miss_unknown(
    constraint: dict[str, Any], match: dict[str, Any], miss: dict[str, Any]
) -> None:
    offers = [
        make_offer(offer_id="match", **match),
        make_offer(offer_id="miss", **miss),
        make_offer(offer_id="unstated"),
    ]
    assert _passing(offers, **constraint) == ["match"]
    assert _passing(offers, **constraint, allow_unknown=True) == ["match", "unstated"]


def test_unparsed_text_is_unknown_not_a_miss() -> None:
    """A chassis or redundancy the readings cannot parse counts as unstated."""
    offers = [
        make_offer(offer_id="tower", chassis_form_factor="tower"),
        make_offer(offer_id="words", psu_redundancy="redundant hot-swap"),
        make_offer(offer_id="codename", cpu_model="Skylake"),
        make_offer(offer_id="odd-cuda", cuda_version="latest"),
    ]
    for constraint in (
        {"min_chassis_u": 1},
        {"psu_redundant": True},
        {"server_cpu": True},
        {"min_cuda_version": "1"},
    ):
        assert _passing(offers, **constraint) == []
        assert len(_passing(offers, **constraint, allow_unknown=True)) == 4


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"min_cuda_version": "12.x"}, "not a version: '12.x'"),
        ({"min_driver_version": "535.104.05.1"}, "give major[.minor[.patch]]"),
        ({"min_cuda_version": "12345.1"}, "at most 4 digits"),
        ({"os_images": ("--",)}, "names need a letter or digit"),
        ({"min_cpu_sockets": 0}, "min_cpu_sockets"),
        ({"min_psu_watts": -5}, "min_psu_watts"),
    ],
)
def test_bad_values_are_named(data: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError) as info:
        Requirement.model_validate(data)
    assert says in str(info.value)


def test_the_filters_read_precomputed_columns() -> None:
    """The per-query filter compares the frame's readings; it never parses text itself."""
    frame = offers_to_frame([make_offer(cuda_version="12.10", chassis_form_factor="4U")])
    assert frame.select("cuda_version_key", "chassis_u").row(0) == (1_200_100_000, 4.0)
    assert frame.schema["os_image_keys"] == pl.List(pl.String)
