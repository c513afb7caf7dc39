from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from sqlalchemy.engine import Engine

from gpuscout.db.history import INDEX_SCHEMA, daily_index, week_over_week
from gpuscout.db.snapshots import store_snapshot

from .factories import at, offer, ok

D1 = date(2025, 3, 3)


def snap(engine: Engine, when, *runs) -> None:
    store_snapshot(engine, runs, started_at=when, finished_at=when + timedelta(minutes=1))


@pytest.fixture
def index_history(engine: Engine) -> Engine:
    """D1 10:00: alpha a1=1 a2=2 a3=3, beta b1=8 for 2 GPUs (4/GPU) b2=10, plus noise;
    D2 10:00: a1 -> 1.5, a3 gone. Nothing later: the open prices carry on."""
    noise = [
        offer("alpha", "other-gpu", "0.10", gpu_model="A100-SXM4-80GB"),
        offer("alpha", "spot", "0.20", term="interruptible"),
        offer("alpha", "no-gpu", "0.05", gpu_model=None, gpu_count=0),
    ]
    d1, d2 = at(-2), at(22)  # T0 is D1 12:00
    snap(
        engine,
        d1,
        ok(
            "alpha",
            [
                offer("alpha", "a1", "1"),
                offer("alpha", "a2", "2"),
                offer("alpha", "a3", "3"),
                *noise,
            ],
            d1,
        ),
        ok("beta", [offer("beta", "b1", "8", gpu_count=2), offer("beta", "b2", "10")], d1),
    )
    snap(
        engine,
        d2,
        ok("alpha", [offer("alpha", "a1", "1.5"), offer("alpha", "a2", "2"), *noise], d2),
        ok("beta", [offer("beta", "b1", "8", gpu_count=2), offer("beta", "b2", "10")], d2),
    )
    return engine


def test_daily_index_matches_hand_computed_figures(index_history: Engine) -> None:
    got = daily_index(
        index_history,
        gpu="H100-SXM5-80GB",
        start=D1 - timedelta(days=1),
        end=D1 + timedelta(days=2),
    )
    # per day (sorted prices), quantiles with linear interpolation at (n - 1) * q:
    # D1 [1, 2, 3, 4, 10]: p10 at 0.4 -> 1.4; p90 at 3.6 -> 4 + 0.6 * 6 = 7.6
    # D2 [1.5, 2, 3, 4, 10]: a1's last price that day is 1.5; a3 was valid until 10:00
    #    p10 -> 1.5 + 0.4 * 0.5 = 1.7
    # D3 [1.5, 2, 4, 10]: median (2 + 4) / 2 = 3; p10 at 0.3 -> 1.65; p90 at 2.7 -> 8.2
    want = pl.DataFrame(
        {
            "day": [D1 - timedelta(days=1), D1, D1 + timedelta(days=1), D1 + timedelta(days=2)],
            "median_usd_per_gpu_hour": [None, 3.0, 3.0, 3.0],
            "p10_usd_per_gpu_hour": [None, 1.4, 1.7, 1.65],
            "p90_usd_per_gpu_hour": [None, 7.6, 7.6, 8.2],
            "min_usd_per_gpu_hour": [None, 1.0, 1.5, 1.5],
            "offers": [0, 5, 5, 4],
            "providers": [0, 2, 2, 2],
            "sample_offers": [0, 0, 0, 0],
        },
        schema=INDEX_SCHEMA,
    )
    assert_frame_equal(got, want)


def test_daily_index_matches_a_gpu_family_and_a_term(index_history: Engine) -> None:
    family = daily_index(index_history, gpu="h100", start=D1, end=D1)
    assert family["offers"].to_list() == [5]
    spot = daily_index(index_history, gpu="H100", term="interruptible", start=D1, end=D1)
    assert spot["min_usd_per_gpu_hour"].to_list() == [0.2]
    assert daily_index(index_history, gpu="H1", start=D1, end=D1)["offers"].to_list() == [0]
    with pytest.raises(ValueError, match="before"):
        daily_index(index_history, gpu="H100", start=D1, end=D1 - timedelta(days=1))


def test_daily_index_reads_a_gpu_name_as_the_offers_do(index_history: Engine) -> None:
    """Every spelling a requirement's ``gpus`` takes, meaning the same models: a provider's
    (``H100 SXM``), a memory size naming two A100s, a vendor (five H100s and the A100)."""

    def offers(gpu: str) -> list[int]:
        return daily_index(index_history, gpu=gpu, start=D1, end=D1)["offers"].to_list()

    model = daily_index(index_history, gpu="H100-SXM5-80GB", start=D1, end=D1)
    assert_frame_equal(daily_index(index_history, gpu="H100 SXM", start=D1, end=D1), model)
    assert offers("h100 sxm5") == offers("H100-SXM5-80GB") == [5]
    assert offers("A100 80GB") == offers("A100-SXM4-80GB") == [1]
    assert offers("nvidia") == [6]
    assert offers("H9000") == [0]


def test_a_model_is_only_itself_not_a_model_its_name_begins(engine: Engine) -> None:
    """``RTX-4080`` is one model; ``RTX-4080-SUPER`` another, as the offers read them."""
    rtx = [
        offer("alpha", "plain", "0.5", gpu_model="RTX-4080"),
        offer("alpha", "super", "0.7", gpu_model="RTX-4080-SUPER"),
    ]
    snap(engine, at(-2), ok("alpha", rtx, at(-2)))

    def prices(gpu: str) -> list[tuple[int, float | None]]:
        frame = daily_index(engine, gpu=gpu, start=D1, end=D1)
        return list(frame.select("offers", "median_usd_per_gpu_hour").iter_rows())

    assert prices("RTX-4080") == prices("4080") == [(1, 0.5)]
    assert prices("RTX 4080 SUPER") == [(1, 0.7)]


@pytest.fixture
def weekly(engine: Engine) -> Engine:
    first, later = at(0), at(days=5)
    snap(
        engine,
        first,
        ok(
            "alpha",
            [
                offer(offer_id="x", price="2"),
                offer(offer_id="y", price="3"),
                offer(offer_id="z", price="4"),
            ],
            first,
        ),
    )
    snap(
        engine,
        later,
        ok(
            "alpha",
            [
                offer(offer_id="x", price="1.5"),
                offer(offer_id="y", price="3.3"),
                offer(offer_id="w", price="5"),
            ],
            later,
        ),
    )
    return engine


def test_week_over_week_changes(weekly: Engine) -> None:
    wow = week_over_week(weekly, until=at(days=8))
    assert wow.since == at(days=1)
    assert [(c.offer.offer_id, c.old_usd_per_hour, c.new_usd_per_hour) for c in wow.cheaper] == [
        ("x", Decimal("2.000000"), Decimal("1.500000"))
    ]
    assert wow.cheaper[0].change_ratio == pytest.approx(-0.25)
    assert [c.offer.offer_id for c in wow.dearer] == ["y"]
    assert [(c.offer.offer_id, c.old_usd_per_hour) for c in wow.new] == [("w", None)]
    assert [(c.offer.offer_id, c.new_usd_per_hour) for c in wow.gone] == [("z", None)]
    assert wow.gone[0].offer.price_amount == 4  # as last seen


def test_week_over_week_filters_by_keys_and_predicate(weekly: Engine) -> None:
    keys = {offer(offer_id="x").key, offer(offer_id="w").key}
    by_keys = week_over_week(weekly, until=at(days=8), keys=keys)
    assert [c.offer.offer_id for c in by_keys.cheaper + by_keys.new] == ["x", "w"]
    assert by_keys.dearer == by_keys.gone == []
    cheap = week_over_week(
        weekly, until=at(days=8), qualifies=lambda o: o.price_amount < Decimal("3.2")
    )
    assert [c.offer.offer_id for c in cheap.cheaper] == ["x"]
    assert cheap.dearer == [] and cheap.new == []
    # nothing changed within the last week of an unchanged history
    assert week_over_week(weekly, until=at(days=20)).cheaper == []
