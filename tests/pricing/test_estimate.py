"""estimate(): published training runs reproduced, one topology for every figure, any count."""

from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple

import pytest

from gpuscout.adapters.schema import Fabric, Offer, RentalTerm
from gpuscout.pricing import estimate
from gpuscout.pricing.coverage import Unrankable
from gpuscout.pricing.estimate import EstimateInputError
from gpuscout.pricing.frame import offers_to_frame

from .factories import NOW, make_offer


class Run(NamedTuple):
    """A published pre-training run: model size, tokens, shape, GPUs and GPU-hours."""

    name: str
    gpu_model: str
    gpus: int
    params: float
    tokens: float
    layers: int
    hidden_size: int
    context_tokens: int
    gpu_hours: float
    source: str


_LLAMA1 = (
    "LLaMA (Touvron et al. 2023, arXiv:2302.13971) Table 15 GPU-hours on A100-80GB, Table 2"
    " shapes and tokens (via ai-papers.xuzou.cn/papers/llama_2023, aiportalx.com)"
)
_LLAMA2 = (
    "Llama 2 (Touvron et al. 2023, arXiv:2307.09288) Table 2 GPU-hours on A100-80GB, 2.0T"
    " tokens, 4k context (via ai-papers.xuzou.cn/papers/llama2_2023)"
)
_LLAMA3 = (
    "Llama 3 model card (meta-llama/llama3 MODEL_CARD.md): 70B 6.4M H100-80GB GPU-hours,"
    " 15T+ tokens, 8k context (via aiportalx.com)"
)
_LLAMA31 = (
    "Llama 3.1 model card: 405B 30.84M H100-80GB GPU-hours; tokens 15.6T and shape (126"
    " layers, d=16384) from the Llama 3 paper (arXiv:2407.21783)"
)

_LLAMA31_CARD = (
    "Llama 3.1 model card (meta-llama/llama-models models/llama3_1/MODEL_CARD.md): 8B 1.46M,"
    " 70B 7.0M H100-80GB GPU-hours, 15T+ tokens; shapes from the Llama 3 paper (GPU count"
    " not published: 8192 taken)"
)

#: Llama 2 7B's published GPU-hours (Table 2): the CLI's example run.
LLAMA2_7B_GPU_HOURS = 184_320

#: Runs ``estimate`` reproduces within 25% (on the reference topology: NVLink nodes with
#: 400 Gbps/GPU RDMA, the scale of the published MFU figures).
PUBLISHED = (
    Run("LLaMA 7B", "A100-SXM4-80GB", 2048, 6.7e9, 1.0e12, 32, 4096, 2048, 82_432, _LLAMA1),
    Run("LLaMA 13B", "A100-SXM4-80GB", 2048, 13.0e9, 1.0e12, 40, 5120, 2048, 135_168, _LLAMA1),
    Run("LLaMA 33B", "A100-SXM4-80GB", 2048, 32.5e9, 1.4e12, 60, 6656, 2048, 530_432, _LLAMA1),
    Run("LLaMA 65B", "A100-SXM4-80GB", 2048, 65.2e9, 1.4e12, 80, 8192, 2048, 1_022_362, _LLAMA1),
    Run("Llama 2 7B", "A100-SXM4-80GB", 2048, 6.74e9, 2e12, 32, 4096, 4096, 184_320, _LLAMA2),
    Run("Llama 2 13B", "A100-SXM4-80GB", 2048, 13.0e9, 2e12, 40, 5120, 4096, 368_640, _LLAMA2),
    Run("Llama 2 70B", "A100-SXM4-80GB", 2048, 69e9, 2e12, 80, 8192, 4096, 1_720_320, _LLAMA2),
    Run("Llama 3 70B", "H100-SXM5-80GB", 8192, 70.6e9, 15e12, 80, 8192, 8192, 6.4e6, _LLAMA3),
    Run("Llama 3.1 405B", "H100-SXM5-80GB", 16384, 405e9, 15.6e12, 126, 16384, 8192, 30.84e6,
        _LLAMA31),
    # the MFU of their size band is derived from the Llama 3 8B and 70B cards (efficiency.toml
    # [[mfu.model_scale]]): the 3.1 runs are the same shapes on 15.6T tokens
    Run("Llama 3.1 8B", "H100-SXM5-80GB", 8192, 8.03e9, 15.6e12, 32, 4096, 8192, 1.46e6,
        _LLAMA31_CARD),
    Run("Llama 3.1 70B", "H100-SXM5-80GB", 8192, 70.6e9, 15.6e12, 80, 8192, 8192, 7.0e6,
        _LLAMA31_CARD),
)  # fmt: skip

#: Published GPU-hours the model does not reach: they hold far more than the run's FLOPs
#: at the published MFU (OPT-175B's logbook records many restarts after hardware faults).
#: ``estimate`` stays below them: a lower bound.
BEYOND = (
    Run("OPT-175B", "A100-SXM4-80GB", 992, 175e9, 180e9, 96, 12288, 2048, 809_472,
        "LLaMA paper Table 15 (OPT-175B: 809,472 GPU-hours); OPT paper: 180B tokens"),
)  # fmt: skip


@pytest.mark.parametrize("run", PUBLISHED, ids=lambda r: r.name)
def test_published_gpu_hours_within_25_percent(run: Run) -> None:
    result = estimate(
        run.gpu_model,
        run.gpus,
        run.params,
        run.tokens,
        layers=run.layers,
        hidden_size=run.hidden_size,
        context_tokens=run.context_tokens,
        now=NOW,
    )
    assert result.gpu_hours == pytest.approx(run.gpu_hours, rel=0.25), run.source
    assert result.flops_formula != "6ND"  # attention counted: the shape is given
    assert result.memory_fits
    assert result.basis == "reference" and result.cost_usd is None and result.cost_reason


@pytest.mark.parametrize("run", BEYOND, ids=lambda r: r.name)
def test_runs_beyond_the_model_stay_a_lower_bound(run: Run) -> None:
    result = estimate(run.gpu_model, run.gpus, run.params, run.tokens, now=NOW)
    assert result.gpu_hours < 0.75 * run.gpu_hours, run.source


def test_attention_flops_only_with_a_shape_or_context() -> None:
    plain = estimate("A100-SXM4-80GB", 64, 7e9, 2e12, now=NOW)
    assert plain.flops_formula == "6ND" and plain.flops_per_token == 42e9
    shaped = estimate("A100-SXM4-80GB", 64, 7e9, 2e12, context_tokens=4096, now=NOW)
    # the shape derived from 7e9 params (d = 128 L): 12 x L x d x 4096 more per token
    assert shaped.flops_per_token > plain.flops_per_token
    assert shaped.gpu_hours / plain.gpu_hours == pytest.approx(
        shaped.flops_per_token / plain.flops_per_token
    )


def _ib(**fields: object) -> dict[str, object]:
    return {
        "gpu_model": "A100-SXM4-80GB",
        "fabric": Fabric.INFINIBAND,
        "fabric_gbps": 1600,
        "multi_node": True,
        **fields,
    }


def test_twelve_gpus_are_twelve_and_one_topology() -> None:
    offers = [
        make_offer(offer_id="cheap", price_amount=Decimal("10"), **_ib()),
        make_offer(offer_id="dear", price_amount=Decimal("20"), **_ib()),
    ]
    result = estimate("A100-SXM4-80GB", 12, 1e9, 1e11, offers=offers_to_frame(offers), now=NOW)
    assert result.offer is not None and result.offer.offer_id == "cheap"
    assert result.basis == "offer"
    assert (result.nodes, result.gpus_per_node, result.rented_gpus) == (2, 8.0, 16.0)
    assert result.gpu_hours == pytest.approx(result.wall_clock_hours * 12)
    assert result.effective_tflops_per_gpu <= result.peak_tflops_per_gpu
    assert result.effective_tflops == pytest.approx(12 * 312 * 0.5 * result.scaling)
    # the headline and the cost describe the same rows: the offer's
    assert result.wall_clock_hours == result.offer.wall_clock_hours
    assert result.effective_tflops == result.offer.effective_tflops
    assert result.cost_usd == pytest.approx(result.offer.billed_hours * 10 * 2)
    assert "2 node(s) x 8 GPUs, 12 used" in result.topology


def test_no_offer_that_can_run_it_gives_the_reason() -> None:
    no_fabric = [make_offer(gpu_model="A100-SXM4-80GB")]  # 8 GPUs, no fabric stated
    result = estimate("A100-SXM4-80GB", 16, 1e9, 1e11, offers=offers_to_frame(no_fabric), now=NOW)
    assert result.cost_usd is None and result.basis == "reference"
    assert result.cost_reason is not None and "no cluster fabric stated" in result.cost_reason
    too_big = estimate(
        "H100-SXM5-80GB", 8, 70e9, 1e9, offers=offers_to_frame([make_offer()]), now=NOW
    )
    assert too_big.cost_reason is not None
    # the reason is one text for the CLI and the API: remedies without a setting's name
    assert "it fits on 16 of those GPUs, or on 8 at 8 bytes per parameter" in too_big.cost_reason
    assert "job_gpus" not in too_big.cost_reason and "bytes_per_param" not in too_big.cost_reason
    other = estimate("B200", 8, 1e9, 1e11, offers=offers_to_frame([make_offer()]), now=NOW)
    assert other.cost_reason is not None and "B200" in other.cost_reason


def test_the_reason_reads_the_unrankable_offers_the_caller_keeps() -> None:
    """The API passes the snapshot's Unrankable (found once, not ~100 ms an estimate):
    the reason is the one found here, and it is the one passed that is read."""
    offers = [
        make_offer(gpu_model="A100-SXM4-80GB"),  # 8 GPUs, no fabric: cannot run 16
        make_offer(offer_id="mystery", gpu_model=None, gpu_raw_name="A100 SXM4 80GB (refurb)"),
    ]
    frame = offers_to_frame(offers)
    found = estimate("A100-SXM4-80GB", 16, 1e9, 1e11, offers=frame, now=NOW)
    kept = estimate(
        "A100-SXM4-80GB", 16, 1e9, 1e11, offers=frame, now=NOW, unrankable=Unrankable(frame)
    )
    assert found.cost_reason is not None and "'A100 SXM4 80GB (refurb)'" in found.cost_reason
    assert kept.cost_reason == found.cost_reason
    none_kept = estimate(
        "A100-SXM4-80GB", 16, 1e9, 1e11, offers=frame, now=NOW,
        unrankable=Unrankable(frame.clear()),
    )  # fmt: skip
    assert none_kept.cost_reason is not None and "refurb" not in none_kept.cost_reason
    one = estimate("A100-SXM4-80GB", 1, 70e9, 1e9, offers=frame, now=NOW)  # does not fit one
    assert one.cost_reason is not None
    assert one.cost_reason.startswith("no current offer of A100-SXM4-80GB can run 1 GPU of")


def test_an_interruptible_best_offer_carries_its_restarts() -> None:
    spot = make_offer(price_amount=Decimal("4"), term=RentalTerm.INTERRUPTIBLE, **_ib())
    result = estimate("A100-SXM4-80GB", 16, 1e9, 1e11, offers=offers_to_frame([spot]), now=NOW)
    assert result.offer is not None and result.offer.term == "interruptible"
    compute = 6 * 1e9 * 1e11 / (16 * 312e12 * 0.5 * 3600)
    assert result.wall_clock_hours > compute
    assert result.gpu_hours == pytest.approx(result.wall_clock_hours * 16)


def test_unknown_gpu_raises() -> None:
    with pytest.raises(ValueError, match="unknown GPU"):
        estimate("NOPE", 8, 1e9, 1e9)


def _p5(**fields: object) -> object:
    """An 8x H100 node on EFA at 400 Gbps per GPU that may join others (as AWS p5)."""
    return make_offer(fabric=Fabric.EFA, fabric_gbps=3200, multi_node=True, **fields)


def test_the_offers_fabric_is_named_as_the_offers() -> None:
    result = estimate("H100-SXM5-80GB", 512, 70e9, 2e12, offers=offers_to_frame([_p5()]), now=NOW)
    assert result.basis == "offer" and result.scaling == 1.0
    assert (result.fabric, result.fabric_gbps_per_gpu) == ("efa", 400.0)
    assert result.fabric_source == result.fabric_gbps_source == "offer"
    assert "efa at 400 Gbps per GPU (as the offer states)" in result.topology


@pytest.mark.parametrize(
    ("fabric", "gbps", "scaling"),
    [(Fabric.ETHERNET, 25.0, 0.71), (Fabric.ROCE, 1.0, 0.5), (Fabric.INFINIBAND, 100.0, 0.92)],
)
def test_the_callers_fabric_wins_over_the_offers(
    fabric: Fabric, gbps: float, scaling: float
) -> None:
    """The estimate is "what if I ran on this fabric": the options replace what the offer
    states (they were ignored whenever an offer could run the job)."""
    stated = estimate("H100-SXM5-80GB", 512, 70e9, 2e12, offers=offers_to_frame([_p5()]), now=NOW)
    what_if = estimate(
        "H100-SXM5-80GB",
        512,
        70e9,
        2e12,
        offers=offers_to_frame([_p5()]),
        fabric=fabric,
        fabric_gbps_per_gpu=gbps,
        now=NOW,
    )
    assert what_if.basis == "offer" and what_if.offer is not None
    # ethernet counts half its Gbps (efficiency.toml ethernet_share): 25 -> 12.5 -> 0.71
    assert what_if.scaling == pytest.approx(scaling, abs=0.005)
    assert what_if.wall_clock_hours == pytest.approx(stated.wall_clock_hours / what_if.scaling)
    assert what_if.offer.wall_clock_hours == what_if.wall_clock_hours
    assert what_if.cost_usd is not None and stated.cost_usd is not None
    assert what_if.cost_usd > stated.cost_usd
    assert (what_if.fabric, what_if.fabric_gbps_per_gpu) == (fabric.value, gbps)
    assert what_if.fabric_source == what_if.fabric_gbps_source == "user"
    assert f"{fabric.value} at {gbps:g} Gbps per GPU (as given)" in what_if.topology


def test_each_half_of_the_fabric_says_where_it_came_from() -> None:
    speed = estimate(
        "H100-SXM5-80GB",
        512,
        70e9,
        2e12,
        offers=offers_to_frame([_p5()]),
        fabric_gbps_per_gpu=25,
        now=NOW,
    )
    assert (speed.fabric, speed.fabric_source) == ("efa", "offer")
    assert (speed.fabric_gbps_per_gpu, speed.fabric_gbps_source) == (25.0, "user")
    assert "efa (as the offer states) at 25 Gbps per GPU (as given)" in speed.topology
    kind = estimate(
        "H100-SXM5-80GB",
        512,
        70e9,
        2e12,
        offers=offers_to_frame([_p5()]),
        fabric=Fabric.ETHERNET,
        now=NOW,
    )
    assert (kind.fabric, kind.fabric_source) == ("ethernet", "user")
    assert (kind.fabric_gbps_per_gpu, kind.fabric_gbps_source) == (400.0, "offer")
    reference = estimate("H200-SXM-141GB", 512, 70e9, 2e12, fabric_gbps_per_gpu=25, now=NOW)
    assert reference.basis == "reference" and reference.scaling == pytest.approx(0.78, abs=0.005)
    assert (reference.fabric, reference.fabric_source) == ("infiniband", "default")
    assert reference.fabric_gbps_source == "user"
    default = estimate("H200-SXM-141GB", 512, 70e9, 2e12, now=NOW)
    assert default.fabric_source == default.fabric_gbps_source == "default"
    assert "(the reference default)" in default.topology


@pytest.mark.parametrize(
    ("gpu_model", "count", "params", "offers"),
    [
        ("H200-SXM-141GB", 512, 70e9, []),
        # the README's example: the only A100 offer states no fabric
        ("A100-SXM4-80GB", 64, 7e9, [make_offer(gpu_model="A100-SXM4-80GB")]),
    ],
)
def test_the_callers_ethernet_runs_on_the_reference(
    gpu_model: str, count: int, params: float, offers: list[Offer]
) -> None:
    """``fabric=ethernet`` was refused as "no published peak at bf16" (the reference node
    was dropped as Ethernet-only), though the GPU has a bf16 peak."""
    result = estimate(
        gpu_model,
        count,
        params,
        2e12,
        offers=offers_to_frame(offers),
        fabric=Fabric.ETHERNET,
        now=NOW,
    )
    assert result.basis == "reference" and result.fabric == "ethernet"
    assert (result.fabric_source, result.fabric_gbps_source) == ("user", "default")
    # 400 Gbps of plain Ethernet counts as 200 of RDMA: between the 100 and 400 points
    assert result.scaling == pytest.approx(0.96)


def test_an_offers_own_ethernet_is_still_left_out() -> None:
    ethernet = make_offer(fabric=Fabric.ETHERNET, fabric_gbps=3200, multi_node=True)
    result = estimate("H100-SXM5-80GB", 16, 1e9, 1e11, offers=offers_to_frame([ethernet]), now=NOW)
    assert result.basis == "reference" and result.cost_reason is not None
    assert "Ethernet" in result.cost_reason
    asked = estimate(
        "H100-SXM5-80GB",
        16,
        1e9,
        1e11,
        offers=offers_to_frame([ethernet]),
        fabric=Fabric.ETHERNET,
        now=NOW,
    )
    assert asked.basis == "offer"


def test_an_unstated_speed_is_said_and_scored_as_the_slowest() -> None:
    unstated = make_offer(fabric=Fabric.INFINIBAND, multi_node=True)
    result = estimate("H100-SXM5-80GB", 16, 1e9, 1e11, offers=offers_to_frame([unstated]), now=NOW)
    assert result.basis == "offer" and result.fabric_gbps_per_gpu is None
    assert result.fabric_gbps_source == "offer" and result.scaling == 0.5
    assert "unstated speed (scored as the slowest, 1 Gbps per GPU)" in result.topology


def test_one_node_crosses_no_fabric() -> None:
    result = estimate("H100-SXM5-80GB", 8, 1e9, 1e11, fabric=Fabric.ETHERNET, now=NOW)
    assert result.nodes == 1 and result.fabric is None and result.fabric_source is None
    assert "one node (no fabric between nodes)" in result.topology


def test_no_peak_is_said_only_when_true() -> None:
    from gpuscout.adapters.gpus import Precision, catalog

    spec, precision = next((s, p) for s in catalog() for p in Precision if s.figure(p) is None)
    with pytest.raises(EstimateInputError, match="no published peak") as info:
        estimate(spec.name, 8, 1e9, 1e9, precision=precision)
    assert info.value.field == "precision"
    assert all(p.value in str(info.value) for p in Precision if spec.figure(p) is not None)


def test_unknown_gpu_suggests_close_models() -> None:
    with pytest.raises(EstimateInputError, match=r"did you mean 'H100'\?") as info:
        estimate("H10O", 8, 1e9, 1e9)
    assert info.value.field == "gpu_model"


def test_a_family_is_refused_naming_its_models() -> None:
    with pytest.raises(ValueError, match=r"'H100' is a family: one of H100-SXM5-80GB, H100-PCIE"):
        estimate("H100", 8, 1e9, 1e9)


def test_a_name_meaning_one_model_is_estimated_as_that_model() -> None:
    result = estimate("H100 SXM", 8, 1e9, 1e9)
    assert result.gpu_model == "H100-SXM5-80GB"
    assert result.peak_tflops_per_gpu == estimate("H100-SXM5-80GB", 8, 1e9, 1e9).peak_tflops_per_gpu


def test_the_estimates_wall_clock_is_the_run_at_its_rate_the_offers_adds_restarts() -> None:
    """On a spot offer the estimate's wall clock (and GPU-hours) carried the term's
    expected restarts (+2% here), so total_flops / effective_tflops did not add up."""
    spot = _p5(term=RentalTerm.INTERRUPTIBLE)
    result = estimate("H100-SXM5-80GB", 512, 70e9, 2e12, offers=offers_to_frame([spot]), now=NOW)
    at_rate = result.total_flops / (result.effective_tflops * 1e12) / 3600
    assert result.wall_clock_hours == pytest.approx(at_rate)
    assert result.gpu_hours == pytest.approx(at_rate * 512)
    assert result.offer is not None and result.offer.term == "interruptible"
    assert result.offer.wall_clock_hours > result.wall_clock_hours * 1.001


_DEEPSEEK_V3 = (
    "DeepSeek-V3 Technical Report (arXiv:2412.19437): 671B total, 37B active parameters,"
    " 14.8T tokens, FP8 mixed precision, 2.788M H800 GPU-hours in all, 2048 H800; 61 layers,"
    " hidden 7168, 4k pre-training context"
)


def test_deepseek_v3_a_mixture_of_experts_in_fp8_within_25_percent() -> None:
    """FLOPs of the 37B active parameters, memory of all 671B, FP8 credited as the notes
    say, MFU x the MoE factor: 2.788M H800 GPU-hours within 25%, each factor sourced."""
    from gpuscout.adapters.gpus import Precision

    result = estimate(
        "H800-SXM5-80GB", 2048, 671e9, 14.8e12, active_params=37e9, precision=Precision.FP8,
        layers=61, hidden_size=7168, context_tokens=4096, now=NOW,
    )  # fmt: skip
    assert result.gpu_hours == pytest.approx(2.788e6, rel=0.25), _DEEPSEEK_V3
    assert result.flops_per_token == pytest.approx(6 * 37e9 + 12 * 61 * 7168 * 4096)
    dense = estimate("H800-SXM5-80GB", 2048, 671e9, 14.8e12, precision=Precision.FP8, now=NOW)
    assert result.memory_needed_gb == dense.memory_needed_gb  # memory of all 671B
    assert set(result.factor_sources) >= {"mfu", "flops", "precision", "moe"}
    assert "0.555" in result.factor_sources["moe"] and result.memory_fits
    assert result.active_params == 37e9 and result.warnings == []


def test_active_params_above_the_total_are_refused() -> None:
    with pytest.raises(ValueError, match="active_params"):
        estimate("H100-SXM5-80GB", 8, 7e9, 1e12, active_params=8e9, now=NOW)


def test_a_run_longer_than_a_year_is_warned_of() -> None:
    """An 8B model on 15T tokens on 8 GPUs: ~7 years of wall clock, said in words."""
    result = estimate("H100-SXM5-80GB", 8, 8e9, 15e12, now=NOW)
    assert result.wall_clock_hours > 5 * 8760
    assert len(result.warnings) == 1 and "years of wall clock" in result.warnings[0]
    assert estimate("H100-SXM5-80GB", 1024, 8e9, 15e12, now=NOW).warnings == []
