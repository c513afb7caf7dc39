from __future__ import annotations

from decimal import Decimal

import polars as pl
import pytest
from pydantic import ValidationError

from gpuscout.adapters.schema import PriceUnit, RentalTerm
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.pricing.requirement import Requirement
from gpuscout.pricing.serve_rank import SERVE_COLUMNS, ServeRequest, rank_serving

from .factories import NOW, make_offer


def _frame() -> pl.DataFrame:
    return offers_to_frame(
        [
            make_offer(),  # 8x H100 at 16 USD/h
            make_offer(offer_id="8x-h100-month", term=RentalTerm.COMMIT_1MO,
                       price_amount=Decimal("9000"), price_unit=PriceUnit.MONTH),
            make_offer(provider="cirrus", offer_id="4090", gpu_model="RTX-4090", gpu_count=1,
                       gpu_memory_gb=24.0, price_amount=Decimal("0.3")),
            make_offer(provider="bolt", offer_id="1x-a100", gpu_model="A100-SXM4-80GB",
                       gpu_count=1, price_amount=Decimal("1.2")),
        ]
    )  # fmt: skip


def test_dollars_per_million_tokens_is_price_over_tokens() -> None:
    request = ServeRequest(serve="llama-3.1-70b", precision="fp8")
    ranking = rank_serving(_frame(), request, now=NOW)
    rows = ranking.rows.to_dicts()
    assert ranking.rows.columns == list(SERVE_COLUMNS)
    assert rows, "the H100 offers serve a 70B model at FP8"
    for row in rows:
        per_hour = row["tokens_per_s_per_gpu"] * row["replicas"] * row["gpus_per_replica"] * 3600
        assert row["output_tokens_per_hour"] == pytest.approx(per_hour)
        expected = row["usd_per_service_hour"] / per_hour * 1e6
        assert row["usd_per_m_tokens"] == pytest.approx(expected)
        assert row["throughput_source"].startswith(("measured", "predicted"))
    costs = [r["usd_per_m_tokens"] for r in rows]
    assert costs == sorted(costs)
    # the 4090 cannot hold 70 GB of weights; the A100 has no FP8: both said, not ranked
    assert {r["gpu_model"] for r in rows} == {"H100-SXM5-80GB"}
    assert ranking.left_out == {"does_not_fit": 1, "no_precision": 1}
    assert ranking.examples["does_not_fit"].startswith("1 x RTX-4090 needs ")


def test_a_month_of_service_takes_the_monthly_term() -> None:
    request = ServeRequest(serve="llama-3.1-70b", precision="fp8")
    month = rank_serving(_frame(), request, hours=730, now=NOW).rows
    assert month.row(0, named=True)["term"] == "commit_1mo"  # 9000 < 730 x 16
    ten_hours = rank_serving(_frame(), request, hours=10, now=NOW).rows
    assert ten_hours.row(0, named=True)["term"] == "on_demand"


def test_a_single_24gb_gpu_refuses_405b_with_the_memory_needed() -> None:
    request = ServeRequest(serve="llama-3.1-405b", precision="fp8")
    ranking = rank_serving(_frame(), request, Requirement(gpus=("RTX-4090",)), now=NOW)
    assert ranking.rows.is_empty()
    assert ranking.left_out == {"does_not_fit": 1}
    assert "needs 4" in ranking.examples["does_not_fit"]  # ~450 GB and more


def test_demand_rents_enough_offers_and_pays_for_idle_capacity() -> None:
    request = ServeRequest(serve="llama-3.1-8b", tokens_per_day=1e6)
    row = rank_serving(_frame(), request, now=NOW).rows.row(0, named=True)
    assert row["instances_needed"] == 1
    assert row["usd_per_m_tokens_at_demand"] == pytest.approx(row["usd_per_day"])  # 1 Mtok/day
    assert row["usd_per_m_tokens_at_demand"] > row["usd_per_m_tokens"]


def test_interruptible_terms_carry_their_restart_risk() -> None:
    frame = offers_to_frame(
        [
            make_offer(term=RentalTerm.INTERRUPTIBLE, price_amount=Decimal("4")),
            make_offer(offer_id="on-demand"),  # 16 USD/h
        ]
    )
    batch = rank_serving(frame, ServeRequest(serve="llama-3.1-8b"), now=NOW).rows
    assert batch.row(0, named=True)["restart_risk"].startswith("interruptible: the service")
    # a live service is ranked on the terms that do not stop it first, however cheap
    live = ServeRequest(serve="llama-3.1-8b", scenario="server")
    first = rank_serving(frame, live, now=NOW).rows.row(0, named=True)
    assert first["term"] == "on_demand" and first["restart_risk"] is None


def test_an_unknown_model_is_refused_naming_the_known() -> None:
    with pytest.raises(ValidationError, match="llama-3.1-70b"):
        ServeRequest(serve="llama-9")


def test_a_request_longer_than_the_context_is_refused() -> None:
    with pytest.raises(ValidationError, match="context of 4096"):
        ServeRequest(serve="llama-2-70b", input_tokens=4000, output_tokens=300)
