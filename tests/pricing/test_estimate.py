from __future__ import annotations

from decimal import Decimal

import pytest

from pricing import estimate

from .factories import NOW, make_offer

# Llama 2 paper (Touvron et al. 2023, arXiv:2307.09288), Table 2 ("CO2 emissions during
# pretraining"): Llama 2 7B took 184,320 A100-80GB GPU-hours for 2.0T tokens; 13B 368,640,
# 70B 1,720,320 (3,311,616 in total). Verified via the `search` tool against
# ai-papers.xuzou.cn/papers/llama2_2023 and aiportalx.com/meta-ai/llama-2-7b.
LLAMA2_7B_GPU_HOURS = 184_320


def test_llama2_7b_gpu_hours_within_25_percent() -> None:
    result = estimate("A100-SXM4-80GB", 64, 7e9, 2e12, now=NOW)
    assert result.gpu_hours == pytest.approx(LLAMA2_7B_GPU_HOURS, rel=0.25)
    assert result.memory_needed_gb == pytest.approx(112.0)
    assert result.memory_fits
    assert result.cost_usd is None and result.cost_reason


def test_cost_at_cheapest_offer_making_the_count() -> None:
    a100 = {"gpu_model": "A100-SXM4-80GB", "fabric": "infiniband", "fabric_gbps": 3200}
    offers = [
        make_offer(offer_id="cheap", price_amount=Decimal("10"), **a100),
        make_offer(offer_id="dear", price_amount=Decimal("20"), **a100),
    ]
    result = estimate("A100-SXM4-80GB", 16, 1e9, 1e11, offers=offers, now=NOW)
    assert result.offer is not None
    assert result.offer.offer_id == "cheap"
    assert result.offer.nodes == 2
    assert result.cost_usd == pytest.approx(result.offer.billed_hours * 10 * 2)


def test_no_offer_gives_a_reason() -> None:
    result = estimate("B200", 8, 1e9, 1e11, offers=[make_offer()], now=NOW)
    assert result.cost_usd is None
    assert result.cost_reason is not None and "B200" in result.cost_reason


def test_unknown_gpu_raises() -> None:
    with pytest.raises(ValueError, match="unknown GPU"):
        estimate("NOPE", 8, 1e9, 1e9)
