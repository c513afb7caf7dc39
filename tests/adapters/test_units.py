"""The shared readings and unit helpers of ``adapters/units.py``."""

from __future__ import annotations

import doctest
from decimal import Decimal

import pytest

from gpuscout.adapters import units
from gpuscout.adapters.units import gpu_share, price_or_reason, size_text_to_gb


def test_docstring_examples_hold() -> None:
    failed, attempted = doctest.testmod(units)
    assert attempted > 0 and failed == 0


# --- hyperscalers ---


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("55.0400000000", Decimal("55.0400000000")),
        (3.673, Decimal("3.673")),
        ("", "no price"),
        (None, "no price"),
        ("abc", "price is not a number: 'abc'"),
        (True, "price is not a number: True"),
    ],
)
def test_price_or_reason(raw: object, expected: Decimal | str) -> None:
    assert price_or_reason(raw) == expected


@pytest.mark.parametrize(
    ("text", "gb"),
    [
        ("640 GB", 640.0),
        ("2048 GiB", 2048 * 1024**3 / 1e9),
        ("1 TiB", 1024**4 / 1e9),
        ("2 TB", 2000.0),
        ("1,152 GiB", 1152 * 1024**3 / 1e9),
        ("24", 24.0),
        ("NA", None),
        ("", None),
        ("8 x 3840 SSD", None),
    ],
)
def test_size_text_to_gb(text: str, gb: float | None) -> None:
    assert size_text_to_gb(text) == (pytest.approx(gb) if gb is not None else None)


def test_gpu_share() -> None:
    assert gpu_share(8) == (8, None)
    assert gpu_share(1.0) == (1, None)
    assert gpu_share(0.125) == (1, 0.125)
