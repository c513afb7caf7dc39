from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from gpuscout.pricing.serving import (
    Refusal,
    RefusalReason,
    Scenario,
    ServePrecision,
    ServingPlan,
    Workload,
    measured_result,
    measured_results,
    plan_serving,
)
from gpuscout.pricing.serving_models import UnknownModelError, serving_model, serving_models

#: MLPerf Inference v5.1 Offline, closed datacenter: best output tokens/s per accelerator,
#: as summary_results.json of ntuhpc/inference_results_v5.1 gives them (the eight of the
#: issue, then two more read from the file). (GPU, model, precision, tokens/s, submission).
MLPERF_OFFLINE = (
    ("H100-SXM5-80GB", "llama-2-70b", "fp8", 3902.47, "5.1-0016 Cisco"),
    ("H200-SXM-141GB", "llama-2-70b", "fp8", 4414.59, "5.1-0026 Dell"),
    ("B200", "llama-2-70b", "fp4", 12863.62, "5.1-0061 Lenovo"),
    ("MI300X", "llama-2-70b", "fp8", 3481.8, "5.1-0066 MangoBoost"),
    ("MI325X", "llama-2-70b", "fp8", 4319.38, "5.1-0003 AMD"),
    ("H100-SXM5-80GB", "llama-3.1-405b", "fp8", 48.95, "5.1-0015 Cisco"),
    ("H200-SXM-141GB", "llama-3.1-405b", "fp8", 69.09, "5.1-0075 Nebius"),
    ("B200", "llama-3.1-405b", "fp4", 207.59, "5.1-0028 Dell"),
    ("RTX-PRO-6000", "llama-2-70b", "fp4", 3275.72, "5.1-0051 HPE"),
    ("GB200", "llama-3.1-405b", "fp4", 213.96, "5.1-0074 Nebius"),
)


def _mlperf_workloads() -> dict[str, Workload]:
    text = resources.files("gpuscout.pricing").joinpath("serving.toml").read_text("utf-8")
    rows = tomllib.loads(text)["mlperf"]
    return {r["model"]: Workload(r["input_tokens"], r["output_tokens"], 2.0, 0.2) for r in rows}


def test_the_table_holds_the_published_figures() -> None:
    for gpu, model, precision, tokens_s, submission in MLPERF_OFFLINE:
        row = measured_result(model, gpu, Scenario.OFFLINE, ServePrecision(precision))
        assert row is not None, (gpu, model)
        assert row.tokens_per_s_per_gpu == pytest.approx(tokens_s, abs=0.01)
        assert row.submission.startswith(submission)


def test_roofline_alone_predicts_mlperf_offline_within_30_percent() -> None:
    workloads = _mlperf_workloads()
    lines = [f"{'GPU':16}{'model':16}{'prec':6}{'MLPerf':>10}{'roofline':>10}{'error':>8}"]
    within = 0
    for gpu, model, precision, tokens_s, _ in MLPERF_OFFLINE:
        plan = plan_serving(
            serving_model(model),
            gpu,
            8,
            None,
            ServePrecision(precision),
            Scenario.OFFLINE,
            workloads[model],
            use_measured=False,
        )
        assert isinstance(plan, ServingPlan)
        assert not plan.measured and plan.source.startswith("predicted")
        error = plan.tokens_per_s_per_gpu / tokens_s - 1
        within += abs(error) <= 0.30
        lines.append(
            f"{gpu:16}{model:16}{precision:6}{tokens_s:10.1f}"
            f"{plan.tokens_per_s_per_gpu:10.1f}{error:+8.0%}"
        )
    lines.append(f"within 30%: {within} of {len(MLPERF_OFFLINE)}")
    print("\n" + "\n".join(lines))
    assert within >= 8


def test_measured_figure_wins_and_names_its_submission() -> None:
    plan = plan_serving(
        serving_model("llama-2-70b"), "H100-SXM5-80GB", 8, 80, ServePrecision.FP8, Scenario.OFFLINE
    )
    assert isinstance(plan, ServingPlan)
    assert plan.measured
    assert plan.tokens_per_s_per_gpu == pytest.approx(3902.47)
    assert "5.1-0016 Cisco" in plan.source


def test_a_model_too_large_is_refused_with_the_memory_it_needs() -> None:
    refusal = plan_serving(
        serving_model("llama-3.1-405b"), "RTX-4090", 1, 24, ServePrecision.FP8, Scenario.OFFLINE
    )
    assert isinstance(refusal, Refusal)
    assert refusal.reason is RefusalReason.DOES_NOT_FIT
    assert refusal.memory_needed_gb is not None
    # 405.9 GB of FP8 weights alone, over 90% usable memory
    assert refusal.memory_needed_gb > 405.9 / 0.9
    assert " needs " in refusal.message


def test_replicas_split_an_offer() -> None:
    plan = plan_serving(
        serving_model("llama-3.1-8b"),
        "H100-SXM5-80GB",
        8,
        80,
        ServePrecision.BF16,
        Scenario.OFFLINE,
    )
    assert isinstance(plan, ServingPlan)
    assert plan.gpus_per_replica * plan.replicas == 8
    assert plan.source.startswith("predicted")  # no BF16 result is published


def test_fp4_only_where_the_gpu_has_it() -> None:
    model = serving_model("llama-3.1-70b")
    refusal = plan_serving(model, "H100-SXM5-80GB", 8, 80, ServePrecision.FP4, Scenario.OFFLINE)
    assert isinstance(refusal, Refusal) and refusal.reason is RefusalReason.NO_PRECISION
    refusal = plan_serving(model, "A100-SXM4-80GB", 8, 80, ServePrecision.FP8, Scenario.OFFLINE)
    assert isinstance(refusal, Refusal) and refusal.reason is RefusalReason.NO_PRECISION
    assert isinstance(
        plan_serving(model, "B200", 8, 180, ServePrecision.FP4, Scenario.OFFLINE), ServingPlan
    )


def test_an_unknown_gpu_is_said_so() -> None:
    refusal = plan_serving(
        serving_model("llama-3.1-8b"), None, 1, None, ServePrecision.BF16, Scenario.OFFLINE
    )
    assert isinstance(refusal, Refusal) and refusal.reason is RefusalReason.GPU_UNKNOWN


def test_latency_targets_bound_the_batch() -> None:
    model = serving_model("llama-3.1-70b")
    args = (model, "H100-SXM5-80GB", 8, 80, ServePrecision.FP8)
    offline = plan_serving(*args, Scenario.OFFLINE)
    server = plan_serving(*args, Scenario.SERVER)
    single = plan_serving(*args, Scenario.SINGLE_STREAM)
    assert isinstance(offline, ServingPlan) and isinstance(server, ServingPlan)
    assert isinstance(single, ServingPlan)
    assert single.batch == 1
    assert 1 <= server.batch <= offline.batch
    assert single.tokens_per_s_per_gpu < server.tokens_per_s_per_gpu
    strict = Workload(input_tokens=1000, output_tokens=300, ttft_s=2.0, tpot_s=0.001)
    refusal = plan_serving(*args, Scenario.SERVER, strict)
    assert isinstance(refusal, Refusal) and refusal.reason is RefusalReason.LATENCY


def test_catalog_models_have_shapes_and_sources() -> None:
    names = {m.name for m in serving_models()}
    for wanted in (
        "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-2-70b", "qwen-2.5-7b",
        "qwen-2.5-14b", "qwen-2.5-32b", "qwen-2.5-72b", "qwen3-8b", "qwen3-32b",
        "qwen3-30b-a3b", "qwen3-235b-a22b", "mixtral-8x7b", "deepseek-v3", "deepseek-r1",
        "gpt-oss-120b",
    ):  # fmt: skip
        assert wanted in names
    assert all(m.source for m in serving_models())
    # MLA caches 576 values per layer per token, not 2 x heads x head_dim
    assert serving_model("deepseek-v3").kv_values_per_token() == 61 * 576
    assert serving_model("llama-3.1-70b").kv_values_per_token() == 80 * 2 * 8 * 128
    assert serving_model("mixtral-8x7b").moe and not serving_model("llama-3.1-8b").moe


def test_an_unknown_model_names_the_known_ones() -> None:
    with pytest.raises(UnknownModelError, match="llama-3.1-70b"):
        serving_model("gpt-5")


def test_measured_rows_name_catalog_models() -> None:
    names = {m.name for m in serving_models()}
    assert {row.model for row in measured_results()} <= names
