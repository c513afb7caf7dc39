"""The GPU alias tables as data: adapters/gpu_aliases.csv loads, and a bad row is refused."""

from __future__ import annotations

import csv
from importlib import resources

import pytest

from gpuscout.adapters import gpus

HEADER = "table,match,becomes,source"


def _rows() -> list[dict[str, str]]:
    text = resources.files("gpuscout.adapters").joinpath("gpu_aliases.csv").read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def test_the_file_loads_into_the_module_tables() -> None:
    rows = _rows()
    assert {r["table"] for r in rows} == {"exact", "rewrite", "pattern"}
    assert len(gpus.EXACT_ALIASES) == sum(r["table"] == "exact" for r in rows)
    assert len(gpus.ALIAS_PATTERNS) == sum(r["table"] == "pattern" for r in rows)
    assert all(r["source"].strip() for r in rows)


def test_rows_keep_their_file_order() -> None:
    patterns = [r["match"] for r in _rows() if r["table"] == "pattern"]
    assert [a.pattern.pattern for a in gpus.ALIAS_PATTERNS] == patterns
    # a specific name comes before the generic one it contains
    assert patterns.index(r"\bh100 ?nvl\b") < patterns.index(r"\bh100\b")


def test_a_header_alone_gives_empty_tables() -> None:
    tables = gpus._load_aliases(HEADER + "\n")
    assert (tables.exact, tables.rewrites, tables.patterns) == ({}, (), ())


def test_an_empty_rewrite_becomes_a_word_break() -> None:
    tables = gpus._load_aliases(f"{HEADER}\nrewrite,nvidia,,brand word\n")
    [(pattern, replacement)] = tables.rewrites
    assert pattern.sub(replacement, "nvidiah100") == " h100"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("pattern,\\bh100\\b,H100-SXM5-80GB,", "source are required"),
        ("pattern,(h100,H100-SXM5-80GB,src", "missing \\)"),
        ("exact,NVIDIA-L4,L4,src", "not lower-case"),
        ("exact,nvidia-l4,,src", "unmapped"),
        ("alias,\\bh100\\b,H100-SXM5-80GB,src", "unknown table 'alias'"),
        ("pattern,\\bh100\\b", "required"),
        ("pattern,\\bh20\\b,H20-96GB* H20-141GB*,src", "at most one starred"),
    ],
)
def test_a_bad_row_is_refused_with_its_line(row: str, message: str) -> None:
    text = f"{HEADER}\nexact,nvidia-l4,L4,src\n{row}\n"
    with pytest.raises(ValueError, match=f"gpu_aliases.csv line 3: .*{message}"):
        gpus._load_aliases(text)


def test_a_repeated_exact_name_is_refused() -> None:
    with pytest.raises(ValueError, match="line 3: .*repeated"):
        gpus._load_aliases(f"{HEADER}\nexact,nvidia-l4,L4,src\nexact,nvidia-l4,T4,src\n")


def test_a_starred_candidate_is_read_apart() -> None:
    tables = gpus._load_aliases(f"{HEADER}\npattern,\\bh20\\b,H20-96GB* H20-141GB,src\n")
    [alias] = tables.patterns
    assert alias.candidates == ("H20-96GB", "H20-141GB")
    assert alias.unstated_memory == "H20-96GB"
