"""``gpuscout gpus``: table, JSON and CSV output, filters and ``--resolve``."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from gpuscout.adapters.gpus import catalog
from gpuscout.service.cli import app

runner = CliRunner()


def test_table_lists_the_catalog() -> None:
    result = runner.invoke(app, ["gpus"])
    assert result.exit_code == 0, result.output
    for name in ("H100-SXM5-80GB", "MI300X", "GAUDI2"):
        assert name in result.stdout


def test_json_uses_catalog_field_names() -> None:
    result = runner.invoke(app, ["gpus", "--format", "json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert len(records) == len(catalog())
    first = records[0]
    for field in (
        "name",
        "family",
        "vendor",
        "form_factor",
        "memory_gb",
        "mem_bandwidth_gbs",
        "tflops_bf16",
        "tflops_fp8",
        "tflops_fp32",
        "source",
    ):
        assert field in first
    h100 = next(r for r in records if r["name"] == "H100-SXM5-80GB")
    assert h100["vendor"] == "nvidia"
    assert h100["form_factor"] == "sxm"
    assert h100["tflops_bf16"] == 989.5


def test_csv_output() -> None:
    result = runner.invoke(app, ["gpus", "--format", "csv", "--vendor", "amd"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert rows and all(r["vendor"] == "amd" for r in rows)
    assert {"name", "family", "tflops_bf16", "tflops_fp8", "mem_bandwidth_gbs"} <= set(rows[0])
    mi300x = next(r for r in rows if r["name"] == "MI300X")
    assert float(mi300x["tflops_bf16"]) == 1307.4


def test_family_filter() -> None:
    result = runner.invoke(app, ["gpus", "--family", "h100", "--format", "json"])
    assert result.exit_code == 0, result.output
    names = {r["name"] for r in json.loads(result.stdout)}
    assert names == {"H100-SXM5-80GB", "H100-PCIE-80GB", "H100-NVL-94GB"}


def test_unknown_vendor_is_a_usage_error() -> None:
    result = runner.invoke(app, ["gpus", "--vendor", "acme"])
    assert result.exit_code == 2
    assert "acme" in result.output


def test_invalid_format_is_a_usage_error() -> None:
    result = runner.invoke(app, ["gpus", "--format", "xml"])
    assert result.exit_code == 2
    assert "xml" in result.output


def test_resolve_known_name() -> None:
    result = runner.invoke(app, ["gpus", "--resolve", "NVIDIA A100-SXM4-80GB"])
    assert result.exit_code == 0, result.output
    assert "A100-SXM4-80GB" in result.stdout


def test_resolve_says_when_the_variant_is_assumed() -> None:
    result = runner.invoke(app, ["gpus", "--resolve", "A100-80GB"])
    assert result.exit_code == 0, result.output
    assert "'A100-80GB' -> A100-PCIE-80GB" in result.stdout
    assert "does not say which of A100-PCIE-80GB, A100-SXM4-80GB it is" in result.stderr
    stated = runner.invoke(app, ["gpus", "--resolve", "NVIDIA A100-SXM4-80GB"])
    assert "assumed" not in stated.stderr


def test_resolve_with_memory_hint_as_json() -> None:
    result = runner.invoke(
        app, ["gpus", "--resolve", "A100 SXM4", "--memory-gb", "40960", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["name"] == "A100-SXM4-40GB"
    assert record["tflops_bf16"] == 312


def test_resolve_unknown_name() -> None:
    result = runner.invoke(app, ["gpus", "--resolve", "RTX 4090X"])
    assert result.exit_code == 1
    assert "unknown GPU name 'RTX 4090X'" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["blah"], "error: unknown GPU name 'blah': no catalog model matches\n"),
        (
            ["RTX 4090X"],
            "error: unknown GPU name 'RTX 4090X': no catalog model matches"
            " (did you mean 'RTX-4090', ",
        ),
        (["A100"], "error: unknown GPU name 'A100': it may be any of A100-SXM4-40GB, "),
        (
            ["H100 SXM", "--form-factor", "pcie"],
            "error: unknown GPU name 'H100 SXM': the hints rule out what it may be"
            " (H100-SXM5-80GB)\n",
        ),
    ],
)
def test_resolve_refusal_is_an_error_line(args: list[str], said: str) -> None:
    """As every other CLI error: ``error:`` first, one line, ended."""
    result = runner.invoke(app, ["gpus", "--resolve", *args])
    assert result.exit_code == 1
    assert result.stderr.startswith(said) and result.stderr.endswith("\n")
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_resolve_bad_form_factor() -> None:
    result = runner.invoke(app, ["gpus", "--resolve", "H100", "--form-factor", "socket"])
    assert result.exit_code == 2
    assert "socket" in result.output


@pytest.mark.parametrize(
    ("name", "model"),
    [
        # names as Chinese renters search and Chinese platforms write them
        ("4090D", "RTX-4090D"),
        ("RTX 4090D 48G", "RTX-4090D-48GB"),
        ("RTX 4090 48G", "RTX-4090-48GB"),
        ("A800 80G", "A800-PCIE-80GB"),  # SXM4 or PCIe unstated: the slower, assumed
        ("H20 96G", "H20-96GB"),
        ("H20 141G", "H20-141GB"),
        ("H800 80G", "H800-PCIE-80GB"),
        ("昇腾910B", "ASCEND-910B3"),
        ("Ascend 910B", "ASCEND-910B3"),
        ("昇腾910C", "ASCEND-910C"),
        ("RTX 5090 D", "RTX-5090D"),
        ("MI308X", "MI308X"),
        ("L20", "L20"),
        ("L2", "L2"),
        ("RTX 3060", "RTX-3060"),
        ("RTX 3080 Ti", "RTX-3080-TI"),
        ("RTX 5060 Ti", "RTX-5060-TI"),
        ("RTX 5070 Ti", "RTX-5070-TI"),
        # the issue's own spellings of the names it found refused
        ("RTX 4090D", "RTX-4090D"),
        ("RTX 4090 48GB", "RTX-4090-48GB"),
        ("RTX 5090D", "RTX-5090D"),
        ("H20 141GB", "H20-141GB"),
        ("Ascend 910C", "ASCEND-910C"),
        ("H800 PCIe", "H800-PCIE-80GB"),
    ],
)
def test_resolve_names_as_renters_search_them(name: str, model: str) -> None:
    result = runner.invoke(app, ["gpus", "--resolve", name, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["name"] == model


def test_the_table_shows_fp16_for_parts_without_bf16() -> None:
    result = runner.invoke(app, ["gpus", "--resolve", "Ascend 910B"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "313" in result.stdout  # the 910B3's FP16 figure, which it ranks at
    # the note names the variants of its memory size, not the 32 GB 910B4
    assert "ASCEND-910B1" in result.stderr and "ASCEND-910B4" not in result.stderr


def test_the_table_shows_a_figure_a_rule_derives_marked() -> None:
    result = runner.invoke(app, ["gpus", "--resolve", "RTX 3080 Ti"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "68.2*" in result.stdout  # 2 x FP32 by the GeForce rate, not a datasheet cell
    assert "* derived by a sourced rule (gpu_figure_rules.csv)" in result.stdout
    as_json = runner.invoke(app, ["gpus", "--resolve", "RTX 3080 Ti", "--format", "json"])
    assert json.loads(as_json.stdout)["tflops_bf16"] is None  # the datasheet's cell, empty
