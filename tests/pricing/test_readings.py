"""Readings of published text: versions, chassis height, PSU redundancy, OS images,
framework names, CPU class."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import pytest

from gpuscout.pricing import readings


def _read(reading: Callable[[pl.Expr], pl.Expr], values: list[str | None]) -> list[object]:
    frame = pl.DataFrame({"x": values}, schema={"x": pl.String})
    return frame.select(reading(pl.col("x")).alias("x"))["x"].to_list()


def test_versions_compare_part_by_part() -> None:
    keys = _read(readings.version_key, ["12.4", "12.10", "12", "11.8", "535.183.01", "CUDA 12.2"])
    twelve_four, twelve_ten, twelve, eleven_eight, driver, stated = keys
    assert isinstance(twelve_four, int) and isinstance(twelve_ten, int)
    assert eleven_eight < twelve < twelve_four < twelve_ten  # type: ignore[operator]
    assert driver == 535 * 10**8 + 183 * 10**4 + 1
    assert stated == 12 * 10**8 + 2 * 10**4


def test_unreadable_versions_are_null() -> None:
    assert _read(readings.version_key, ["latest", "", None, "10000.1"]) == [None] * 4


def test_chassis_units() -> None:
    text = ["4U", "2 U", "4U rack server", "10U", "1u", "Tower", "USB", "4 GPUs", None]
    assert _read(readings.chassis_units, text) == [4.0, 2.0, 4.0, 10.0, 1.0, *[None] * 4]


def test_psu_redundancy() -> None:
    text = ["2+2", "N+1", "1+1", "2N", "n + n", "2+0", "N", "4 x 2000 W", None]
    assert _read(readings.psu_redundant, text) == [
        True, True, True, True, True, False, False, None, None,
    ]  # fmt: skip


def test_os_image_keys_and_matching() -> None:
    names = [
        "ubuntu-22.04",
        "Ubuntu 22.04 LTS (Jammy)",
        "Ubuntu 22.04.3",
        "ubuntu22.04-cuda12",
        "ubuntu-22-04",
        "lambda-stack-22-04",
        "Ubuntu 22.10",
        "ubuntu-20.04",
    ]
    keys = pl.DataFrame({"k": [[n] for n in names]}).select(
        pl.col("k").list.eval(readings.os_image_key(pl.element()))
    )
    assert keys["k"][0].to_list() == [" ubuntu 22.04 "]
    matched = keys.select(readings.os_image_matches(pl.col("k"), "Ubuntu 22.04").alias("k"))["k"]
    assert matched.to_list() == [True, True, True, True, True, False, False, False]


def test_framework_names_lose_their_versions() -> None:
    text = ["PyTorch", "pytorch 2.3", "TensorFlow-2.15", "jax[cuda]", "2.1", None]
    assert _read(readings.framework_key, text) == [
        "pytorch", "pytorch", "tensorflow", "jax", None, None,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "server"),
    [
        ("AMD EPYC 7702 64-Core Processor", True),
        ("EPYC-Rome", True),
        ("Intel(R) Xeon(R) Platinum 8480+", True),
        ("Platinum 8480+", True),
        ("Cascadelake-Server-noTSX", True),
        ("AWS Graviton3", True),
        ("NVIDIA Grace", True),
        ("Ampere Altra Max", True),
        ("Intel Core i9-13900K", False),
        ("13th Gen Intel(R) Core(TM) i7-13700", False),
        ("AMD Ryzen 9 7950X", False),
        ("AMD Ryzen Threadripper PRO 5995WX", False),
        ("Skylake", None),
        ("2.5 GHz", None),
    ],
)
def test_server_cpu(model: str, server: bool | None) -> None:
    assert _read(readings.server_cpu, [model]) == [server]
