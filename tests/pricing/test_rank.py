"""rank(): term choice, break-even, ordering, filters, and a golden set of real offers."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from gpuscout.adapters.gpus import Precision
from gpuscout.adapters.sample import replay_sample
from gpuscout.adapters.schema import Fabric, Offer, PriceBasis, PriceUnit, RentalTerm
from gpuscout.pricing import RESULT_COLUMNS, Job, RankOptions, Requirement, offers_to_frame, rank
from gpuscout.pricing import expressions as ex
from gpuscout.pricing.efficiency import default_efficiency
from gpuscout.pricing.engine import engine
from gpuscout.pricing.offer_facts import with_offer_facts
from gpuscout.pricing.rank import KEY, costed_plan, placement_plan, rank_page
from gpuscout.pricing.unplaced import unplaced_configurations

from .factories import AT_NOW, NOW, make_offer

ON_DEMAND = make_offer(price_amount=Decimal("2"), gpu_count=1, offer_id="1x")
MONTHLY = make_offer(
    price_amount=Decimal("876"),  # 1.2 USD/h over 730 h
    price_unit=PriceUnit.MONTH,
    term=RentalTerm.COMMIT_1MO,
    gpu_count=1,
    offer_id="1x",
)


def test_columns_are_documented() -> None:
    out = rank(offers_to_frame([ON_DEMAND]), options=AT_NOW)
    assert tuple(out.columns) == RESULT_COLUMNS


def test_commitment_loses_for_a_short_job() -> None:
    out = rank(offers_to_frame([ON_DEMAND, MONTHLY]), job=Job.for_hours(100), options=AT_NOW)
    row = out.row(0, named=True)
    assert out.height == 1
    assert row["term"] == "on_demand"
    assert row["job_cost_usd"] == pytest.approx(200.0)
    assert row["break_even_hours"] == pytest.approx(438.0)  # 730 x 1.2 / 2
    assert row["break_even"] == "on-demand; a 1-month commitment would beat it after 438 h"


def test_commitment_wins_for_a_long_job() -> None:
    out = rank(offers_to_frame([ON_DEMAND, MONTHLY]), job=Job.for_hours(1000), options=AT_NOW)
    row = out.row(0, named=True)
    assert row["term"] == "commit_1mo"
    assert row["billed_hours"] == 1460.0
    assert row["job_cost_usd"] == pytest.approx(1460 * 1.2)
    assert row["break_even"] == "a 1-month commitment beats on-demand after 438 h"


def test_interruptible_pays_restart_overhead() -> None:
    spot = make_offer(
        price_amount=Decimal("1"), gpu_count=1, offer_id="1x", term=RentalTerm.INTERRUPTIBLE
    )
    out = rank(offers_to_frame([spot]), job=Job.for_hours(10), options=AT_NOW)
    # one node: 3.06e-4 preemptions per hour, each losing 0.5 + 0.5 h
    wall = 10 / (1 - 3.06e-4 * 1.0)
    assert out["wall_clock_hours"][0] == pytest.approx(wall)
    assert out["job_cost_usd"][0] == pytest.approx(wall)
    assert out["interruptions_expected"][0] == pytest.approx(3.06e-4 * wall)
    assert "preemption(s) expected on 1 node(s)" in out["interruptible_risk"][0]
    custom = rank(
        offers_to_frame([spot]), job=Job(hours=10, interruptible_overhead=0.5), options=AT_NOW
    )
    assert custom["job_cost_usd"][0] == pytest.approx(15.0)


def test_per_gpu_and_per_instance_prices_compare_equal() -> None:
    per_gpu = make_offer(offer_id="a", price_amount=Decimal("2"), price_basis=PriceBasis.GPU)
    per_instance = make_offer(offer_id="b", price_amount=Decimal("16"))
    out = rank(offers_to_frame([per_gpu, per_instance]), options=AT_NOW)
    assert out["usd_per_hour"].to_list() == [16.0, 16.0]
    assert out["usd_per_gpu_hour"].to_list() == [2.0, 2.0]
    # equal keys: ties broken by offer_id
    assert out["offer_id"].to_list() == ["a", "b"]


def test_currency_is_converted_and_kept() -> None:
    eur = make_offer(price_amount=Decimal("10"), price_currency="EUR")
    out = rank(offers_to_frame([eur]), options=AT_NOW)
    assert out["price_currency"][0] == "EUR"
    assert out["price_amount"][0] == Decimal("10")
    assert out["usd_per_hour"][0] == pytest.approx(float(eur.usd_per_hour))
    assert out["usd_per_hour"][0] != pytest.approx(10.0)


def test_effective_tflops_factors_and_overrides() -> None:
    out = rank(offers_to_frame([make_offer()]), options=AT_NOW)
    row = out.row(0, named=True)
    assert row["peak_tflops"] == 989.5
    assert row["mfu"] == 0.41
    assert row["scaling"] == 1.0  # the reference topology the MFU was published at
    assert row["effective_tflops"] == pytest.approx(8 * 989.5 * 0.41)
    forced = rank(
        offers_to_frame([make_offer()]), options=RankOptions(now=NOW, mfu=0.5, scaling=1.0)
    )
    assert forced["effective_tflops"][0] == pytest.approx(8 * 989.5 * 0.5)
    fp8 = rank(
        offers_to_frame([make_offer()]), options=RankOptions(now=NOW, precision=Precision.FP8)
    )
    assert fp8["effective_tflops"][0] == pytest.approx(1.3 * row["effective_tflops"])


def test_a_job_without_a_gpu_count_is_costed_at_the_one_node_fabric_factor() -> None:
    """Such a job runs on one instance: the chain takes the fabric factor as 1.0 without
    evaluating the fabric curve, which gives the same on every row (slow, Ethernet, no
    fabric at all)."""
    offers = offers_to_frame(
        [
            make_offer(offer_id="ib", fabric=Fabric.INFINIBAND, fabric_gbps=3200, multi_node=True),
            make_offer(offer_id="eth", fabric=Fabric.ETHERNET, fabric_gbps=10),
            make_offer(offer_id="none", gpu_count=1),
        ]
    )
    s = default_efficiency().scaling
    for job in (Job.for_hours(10), Job.for_gpu_hours(80), Job.training(1e9, 1e10)):
        costed = costed_plan(offers, job=job, options=AT_NOW).collect()
        assert costed.height == 3
        curve = costed.select(ex.inter_node_scaling(s).alias("curve"))["curve"]
        assert costed["scaling_inter_node"].to_list() == curve.to_list() == [1.0] * 3
    multi = costed_plan(offers[:1], job=Job.for_hours(10, gpus=16), options=AT_NOW).collect()
    assert multi["scaling_inter_node"].to_list() == [1.0]  # 400 Gbps/GPU InfiniBand
    slow = make_offer(offer_id="roce", fabric=Fabric.ROCE, fabric_gbps=800, multi_node=True)
    two = costed_plan(
        offers_to_frame([slow]), job=Job.for_hours(10, gpus=16), options=AT_NOW
    ).collect()
    assert two["scaling_inter_node"][0] < 1.0  # 100 Gbps/GPU: the curve applies


def test_multi_node_job_uses_fabric() -> None:
    ib = make_offer(offer_id="ib", fabric=Fabric.INFINIBAND, fabric_gbps=3200, multi_node=True)
    eth = make_offer(offer_id="eth", fabric=Fabric.ETHERNET, fabric_gbps=800, multi_node=True)
    single = make_offer(offer_id="single", multi_node=False, fabric=Fabric.INFINIBAND)
    job = Job.for_hours(10, gpus=16)
    out = rank(offers_to_frame([ib, eth, single]), job=job, options=AT_NOW)
    assert out["offer_id"].to_list() == ["ib"]  # Ethernet only when allowed
    allowed = rank(
        offers_to_frame([ib, eth, single]), Requirement(allow_ethernet=True), job, options=AT_NOW
    )
    assert allowed["offer_id"].to_list() == ["ib", "eth"]
    assert allowed["nodes"].to_list() == [2, 2]
    # Ethernet's 100 Gbps/GPU count half (50): between the 12.5 and 100 points
    at_12, at_100 = 0.71, 0.92
    assert allowed["scaling"].to_list() == pytest.approx([1.0, at_12 + (at_100 - at_12) * 2 / 3])
    assert allowed["job_cost_usd"].to_list() == [320.0, 320.0]
    assert allowed["placement"][0] == "2 node(s) x 8 GPUs, infiniband 400 Gbps/GPU"


def test_training_job_checks_memory() -> None:
    small = make_offer(offer_id="1x", gpu_count=1, price_amount=Decimal("2"))
    job = Job.training(7e9, 1e9)  # 112 GB of training state
    assert rank(offers_to_frame([small]), job=job, options=AT_NOW).is_empty()
    out = rank(offers_to_frame([make_offer()]), job=job, options=AT_NOW)
    assert out["memory_needed_gb"][0] == 112.0
    assert out["total_gpu_memory_gb"][0] == 640.0
    # per GPU: a 14 GB shard, activations of the derived shape, the 3 GB floor
    extra = job.per_gpu_extra_gb()
    assert extra is not None
    assert out["memory_per_gpu_gb"][0] == pytest.approx(14.0 + extra)


def test_requirement_filters_and_unknowns() -> None:
    offers = offers_to_frame(
        [
            make_offer(offer_id="ib", fabric=Fabric.INFINIBAND, fabric_gbps=400),
            make_offer(offer_id="unknown-fabric"),
            make_offer(offer_id="a100", gpu_model="A100-SXM4-80GB", provider="other"),
        ]
    )
    ib = Requirement(fabrics=(Fabric.INFINIBAND,), min_fabric_gbps=400)
    assert rank(offers, ib, options=AT_NOW)["offer_id"].to_list() == ["ib"]
    lax = ib.model_copy(update={"allow_unknown": True})
    assert set(rank(offers, lax, options=AT_NOW)["offer_id"]) == {"ib", "unknown-fabric", "a100"}
    assert rank(offers, Requirement(gpus=("A100",)), options=AT_NOW)["offer_id"].to_list() == [
        "a100"
    ]
    excl = Requirement(exclude_providers=("acme",))
    assert rank(offers, excl, options=AT_NOW)["offer_id"].to_list() == ["a100"]
    stale = Requirement(max_price_age_hours=0.5)
    assert rank(offers, stale, options=AT_NOW).is_empty()


def test_provider_filters_match_the_seller_behind_a_provider_too() -> None:
    offers = offers_to_frame(
        [
            make_offer(provider="sheet", seller="coreweave", offer_id="coreweave/hgx"),
            make_offer(provider="shadeform", seller="lambda", offer_id="lambda:8x"),
            make_offer(provider="lambda", offer_id="gpu_8x_h100_sxm5"),
            make_offer(provider="acme"),
        ]
    )
    want = Requirement(providers=("coreweave", "lambda"))
    got = rank(offers, want, options=AT_NOW)
    assert set(got["offer_id"]) == {"coreweave/hgx", "lambda:8x", "gpu_8x_h100_sxm5"}
    assert set(got["seller"].to_list()) == {"coreweave", "lambda", None}
    not_lambda = rank(offers, Requirement(exclude_providers=("lambda",)), options=AT_NOW)
    assert set(not_lambda["offer_id"]) == {"coreweave/hgx", "8x-h100"}


def test_a_limit_cuts_the_ranking() -> None:
    offers = [make_offer(offer_id=f"o{i}", price_amount=Decimal(10 + i)) for i in range(5)]
    frame = offers_to_frame(offers)
    out = rank(frame, options=RankOptions(limit=3, now=NOW))
    assert out["offer_id"].to_list() == ["o0", "o1", "o2"]
    assert out["rank"].to_list() == [1, 2, 3]


def test_unknown_gpu_is_not_ranked() -> None:
    assert rank(
        offers_to_frame([make_offer(gpu_model=None, gpu_raw_name="Mystery")]), options=AT_NOW
    ).is_empty()


# --- golden: the Lambda sample (verbatim API response) through the real adapter --------------
GOLDEN_COLUMNS = ["provider", "offer_id", "region", "gpu_model", "total_gpus", "term"]


def test_golden_lambda_sample() -> None:
    offers = offers_to_frame([o for run in replay_sample(["lambda"]) for o in run.offers])
    assert offers.height, "the lambda sample should parse"
    job = Job.for_hours(100)
    out = rank(offers, Requirement(gpus=("H100",)), job, options=RankOptions(limit=5, now=NOW))
    expected = pl.DataFrame(
        {
            "provider": ["lambda"] * 5,
            "offer_id": [
                "gpu_8x_h100_sxm5",
                "gpu_8x_h100_sxm5",
                "gpu_8x_h100_sxm5",
                "gpu_4x_h100_sxm5",
                "gpu_4x_h100_sxm5",
            ],
            "region": ["us-south-2", "us-south-3", "us-west-3", "us-south-2", "us-south-3"],
            "gpu_model": ["H100-SXM5-80GB"] * 5,
            "total_gpus": [8.0, 8.0, 8.0, 4.0, 4.0],
            "term": ["on_demand"] * 5,
            "usd_per_hour": [23.92, 23.92, 23.92, 12.36, 12.36],
            # 8 x 989.5 x 0.41 (NVLink nodes: the reference) and 4 x ...
            "effective_tflops": [3245.56] * 3 + [1622.78] * 2,
            "job_cost_usd": [2392.0] * 3 + [1236.0] * 2,
        },
        schema_overrides={"term": out.schema["term"], "region": out.schema["region"]},
    )
    got = out.select(expected.columns)
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-9)


def test_term_variants_are_one_configuration_and_cannot_crowd_out_others() -> None:
    # 20 spot zones of one instance type, all cheaper than the other configuration.
    spots = [
        make_offer(
            offer_id="8x-h100",
            term=RentalTerm.INTERRUPTIBLE,
            term_variant=f"zone-{i:02d}",
            price_amount=Decimal("8") + Decimal(i) / 100,
        )
        for i in range(20)
    ]
    on_demand = make_offer(offer_id="8x-h100")
    other = make_offer(offer_id="other-8x-h100", price_amount=Decimal("15"))
    result = rank(
        offers_to_frame([*spots, on_demand, other]),
        job=Job(hours=10),
        options=RankOptions(limit=2, now=NOW),
    )
    assert result["offer_id"].to_list() == ["8x-h100", "other-8x-h100"]
    best = result.row(0, named=True)
    assert best["term"] == "interruptible" and best["term_variant"] == "zone-00"
    # the spot zones and the on-demand price are one configuration: break-even against it
    assert best["on_demand_usd_per_hour"] == 16.0


def test_equal_variants_rank_deterministically() -> None:
    twins = offers_to_frame(
        [
            make_offer(term=RentalTerm.INTERRUPTIBLE, term_variant=v, price_amount=Decimal("9"))
            for v in ("spot", "low-priority")
        ]
    )
    first = rank(twins, job=Job(hours=10), options=AT_NOW)
    again = rank(twins, job=Job(hours=10), options=AT_NOW)
    assert first.height == 1
    assert_frame_equal(first, again)


def test_crowding_variants_never_cost_a_configuration_its_place() -> None:
    """Three configurations with 30 spot zones each, all cheaper than two others: the top
    five are still five configurations (stage two ranks configurations, not rows)."""
    crowd = [
        make_offer(
            offer_id=f"crowd-{c}",
            term=RentalTerm.INTERRUPTIBLE,
            term_variant=f"zone-{i:02d}",
            price_amount=Decimal("8") + Decimal(i) / 100,
        )
        for c in range(3)
        for i in range(30)
    ]
    others = [make_offer(offer_id=f"other-{c}", price_amount=Decimal(20 + c)) for c in range(2)]
    result = rank(
        offers_to_frame([*crowd, *others]), job=Job(hours=10), options=RankOptions(limit=5, now=NOW)
    )
    assert result["offer_id"].to_list() == [*(f"crowd-{c}" for c in range(3)), "other-0", "other-1"]
    assert result["term_variant"].to_list() == ["zone-00"] * 3 + [None, None]


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="limit must be >= 1, not 0"):
        RankOptions(limit=0)
    with pytest.raises(ValueError, match="sort must be one of"):
        RankOptions(sort="price")  # type: ignore[arg-type]


def test_another_sort_key_orders_the_cheapest_terms() -> None:
    """``sort`` orders configurations by a column of their cheapest term (by the key),
    then by the key: a cheaper hourly price on a worse term does not move a configuration."""
    offers = offers_to_frame(
        [
            make_offer(offer_id="big", price_amount=Decimal("16")),  # 8 GPUs: best per TFLOP
            make_offer(offer_id="small", gpu_count=1, price_amount=Decimal("2.5")),
            make_offer(offer_id="small", gpu_count=1, price_amount=Decimal("3"), region="eu-1"),
        ]
    )
    by_hour = rank(offers, options=RankOptions(sort="usd_per_hour", now=NOW))
    assert by_hour["offer_id"].to_list() == ["small", "small", "big"]
    assert by_hour["usd_per_hour"].to_list() == [2.5, 3.0, 16.0]
    assert by_hour["rank"].to_list() == [1, 2, 3]
    by_key = rank(offers, options=AT_NOW)
    assert by_key["offer_id"].to_list()[0] == "big"


# --- the top-k is exact: randomised frames against the full ranking and a reference -----
_TERMS = (RentalTerm.ON_DEMAND, RentalTerm.INTERRUPTIBLE, RentalTerm.COMMIT_1W)
_TERM_ORDER = {t.value: i for i, t in enumerate(RentalTerm)}


def _random_frame(rng: random.Random) -> pl.DataFrame:
    """A few configurations with several terms and variants each, prices from a short list
    (so keys tie within and across configurations); some prices unknown (null)."""
    offers: dict[str, Offer] = {}
    for _ in range(rng.randint(1, 40)):
        offer = make_offer(
            provider=rng.choice(("a", "b")),
            offer_id=rng.choice(("x", "y", "z")),
            region=rng.choice(("r1", "r2", None)),
            price_basis=rng.choice(tuple(PriceBasis)),
            gpu_count=rng.choice((1, 8)),
            term=rng.choice(_TERMS),
            term_variant=rng.choice((None, "v1", "v2", "v3")),
            price_amount=Decimal(rng.choice(("2", "3", "16", "24"))),
            available_now=rng.choice((None, True, False)),
            available_count=rng.choice((None, None, 1, 4)),
            fabric=rng.choice((None, Fabric.INFINIBAND, Fabric.ETHERNET)),
            fabric_gbps=rng.choice((400, 3200)),
            multi_node=True,
        )
        offers.setdefault(offer.key, offer)
    frame = offers_to_frame(list(offers.values()))
    unknown = pl.Series([rng.random() < 0.1 for _ in range(frame.height)])
    # a price the frame does not know: its facts (the price per GPU-hour, the break-even)
    # follow from the changed column
    return with_offer_facts(
        frame.with_columns(
            usd_per_hour=pl.when(unknown).then(None).otherwise(pl.col("usd_per_hour"))
        )
    )


def _reference(frame: pl.DataFrame, job: Job, sort: str) -> list[tuple[int, str, str | None]]:
    """(config_id, term, term_variant) of the full ranking, computed row by row in Python."""
    costed = costed_plan(frame.with_row_index("row"), job=job, options=AT_NOW)
    best: dict[int, dict[str, Any]] = {}

    def cheapest(r: dict[str, Any]) -> tuple[object, ...]:
        key = r[KEY]
        after = r["available_now"] is False  # not available now: after every other
        return (after, key is None, key or 0.0, _TERM_ORDER[r["term"]], r["row"])

    for r in costed.collect().iter_rows(named=True):
        if r["config_id"] not in best or cheapest(r) < cheapest(best[r["config_id"]]):
            best[r["config_id"]] = r

    def order(r: dict[str, Any]) -> tuple[object, ...]:
        value = r["usd_per_hour"] if sort == "usd_per_gpu_hour" else r[sort]
        if sort == "usd_per_gpu_hour" and value is not None:
            value /= r["gpus"]
        head = () if sort == KEY else (value is None, value or 0.0)
        after, *key = cheapest(r)[:3]
        return (after, *head, *key, r["config_id"])

    return [
        (r["config_id"], r["term"], r["term_variant"]) for r in sorted(best.values(), key=order)
    ]


def test_top_k_equals_the_full_ranking_cut_for_every_limit() -> None:
    """The full ranking equals a reference computed row by row, and the top-k its first
    rows, for every limit and sort, on random frames."""
    rng = random.Random(11)
    for case in range(40):
        frame = _random_frame(rng)
        job = Job.for_hours(rng.choice((1, 100, 1000)), gpus=rng.choice((None, 8, 16)))
        for sort in (KEY, rng.choice(("job_cost_usd", "usd_per_hour", "usd_per_gpu_hour"))):
            full = rank(frame, job=job, options=RankOptions(limit=None, sort=sort, now=NOW))
            expected = _reference(frame, job, sort)
            got = full.select("config_id", "term", "term_variant").rows()
            assert [(c, str(t), v) for c, t, v in got] == expected, (case, sort)
            for limit in {1, 2, 3, max(1, full.height - 1), full.height + 1}:
                options = RankOptions(limit=limit, sort=sort, now=NOW)
                top = rank(frame, job=job, options=options)
                assert_frame_equal(top, full.head(limit), check_exact=True)


def _crowded_frame(rng: random.Random) -> pl.DataFrame:
    """Configurations with 1 to 24 rows each (terms and their variants), prices from a short
    list: the top-k's cut (``limit`` x the most rows of one configuration) at its edge."""
    offers: dict[str, Offer] = {}
    for config in range(rng.randint(2, 12)):
        for _ in range(rng.choice((1, 2, 24))):
            offer = make_offer(
                offer_id=f"c{config}",
                gpu_count=rng.choice((1, 8)),
                term=rng.choice(_TERMS),
                term_variant=f"zone-{rng.randint(0, 7)}",
                price_amount=Decimal(rng.choice(("2", "3", "16"))),
                available_now=rng.choice((None, True, False)),
            )
            offers.setdefault(offer.key, offer)
    return offers_to_frame(list(offers.values()))


def test_top_k_is_exact_when_one_configuration_has_many_rows() -> None:
    """A configuration's rows can fill the first places of the costed order; the top
    ``limit`` configurations are still the full ranking's first ``limit``."""
    rng = random.Random(47)
    for case in range(30):
        frame = _crowded_frame(rng)
        job = Job.for_hours(rng.choice((1, 100)))
        full = rank(frame, job=job, options=RankOptions(limit=None, now=NOW))
        assert [
            (c, str(t), v) for c, t, v in full.select("config_id", "term", "term_variant").rows()
        ] == _reference(frame, job, KEY), case
        for limit in range(1, full.height + 2):
            top = rank(frame, job=job, options=RankOptions(limit=limit, now=NOW))
            assert_frame_equal(top, full.head(limit), check_exact=True)
            page = rank_page(frame, job=job, options=RankOptions(limit=limit, now=NOW))
            assert page.total == full.height, (case, limit)


def test_a_ranked_page_carries_its_rows_offer_rows_and_the_total() -> None:
    """``rank_page`` is ``rank`` plus each row's place in the frame and the number of
    qualifying configurations (all pages), counted in the same pass."""
    rng = random.Random(23)
    keys = ["provider", "offer_id", "region", "term", "price_basis", "term_variant"]
    for case in range(25):
        frame = _random_frame(rng)
        job = Job.for_hours(rng.choice((1, 100)), gpus=rng.choice((None, 8, 16)))
        sort = rng.choice((KEY, "job_cost_usd", "usd_per_gpu_hour"))
        costed = costed_plan(frame, job=job, options=RankOptions(now=NOW)).collect()
        qualifying = costed.get_column("config_id").n_unique()
        for limit in (None, 1, 3, 50):
            options = RankOptions(limit=limit, sort=sort, now=NOW)
            page = rank_page(frame, job=job, options=options)
            assert_frame_equal(page.rows, rank(frame, job=job, options=options), check_exact=True)
            assert page.total == qualifying, (case, limit)
            assert page.offer_rows.len() == page.rows.height
            at_rows = frame[page.offer_rows].select(keys)
            assert at_rows.rows() == page.rows.select(keys).rows(), (case, limit)


def test_a_ranked_page_groups_the_configurations_its_job_cannot_be_placed_on() -> None:
    """``rank_page(unplaced=True)`` reads the unplaced configurations off the rows it
    placed, in the same collect: the same table as placing every row apart, and the same
    ranking as without them."""
    rng = random.Random(31)
    refused = 0
    for _ in range(25):
        frame = _random_frame(rng)
        job = rng.choice((Job.for_hours(10, gpus=16), Job.training(7e10, 1e9, gpus=8)))
        options = RankOptions(limit=rng.choice((None, 3)), now=NOW)
        page = rank_page(frame, job=job, options=options, unplaced=True)
        assert page.unplaced is not None
        apart = unplaced_configurations(placement_plan(frame, job=job, options=options))
        expected = apart.sort("config_id").collect()
        assert_frame_equal(page.unplaced.sort("config_id"), expected, check_exact=True)
        assert_frame_equal(page.rows, rank_page(frame, job=job, options=options).rows)
        refused += page.unplaced.height
    assert refused > 0  # the frames do hold configurations these jobs cannot use
    no_job = rank_page(_random_frame(rng), options=RankOptions(now=NOW), unplaced=True)
    assert no_job.unplaced is None  # no job, nothing to place


def test_a_ranked_page_collects_what_also_plans_beside_the_ranking() -> None:
    """``rank_page(also=...)`` hands its callback the unplaced configurations' plan (None
    without a job) and collects what it returns with the ranking: the same table as the
    callback's plan over the page's own unplaced table, the ranking unchanged."""
    rng = random.Random(37)

    def per_reason(unplaced: pl.LazyFrame | None) -> pl.LazyFrame:
        assert unplaced is not None
        return unplaced.group_by("reason").agg(pl.len()).sort("reason")

    for _ in range(8):
        frame = _random_frame(rng)
        job = Job.training(7e10, 1e9, gpus=8)
        options = RankOptions(limit=rng.choice((None, 3)), now=NOW)
        page = rank_page(frame, job=job, options=options, unplaced=True, also=per_reason)
        assert page.unplaced is not None and page.also is not None
        assert_frame_equal(page.also, per_reason(page.unplaced.lazy()).collect())
        assert_frame_equal(page.rows, rank_page(frame, job=job, options=options).rows)
    seen: list[pl.LazyFrame | None] = []

    def no_unplaced(unplaced: pl.LazyFrame | None) -> pl.LazyFrame:
        seen.append(unplaced)
        return pl.LazyFrame({"n": [1]})

    no_job = rank_page(_random_frame(rng), options=RankOptions(now=NOW), also=no_unplaced)
    assert seen == [None] and no_job.also is not None and no_job.also.height == 1


@pytest.mark.parametrize("affinity", ["streaming", "in-memory"])
def test_the_engine_a_user_sets_ranks_alike(affinity: str) -> None:
    """The chain collects on the engine ``POLARS_ENGINE_AFFINITY`` names (else in memory,
    :func:`pricing.engine.engine`), and answers alike on each: ranks, totals, unplaced."""
    rng = random.Random(41)
    cases = []
    for _ in range(15):
        frame = _random_frame(rng)
        job = rng.choice((Job.for_hours(100), Job.for_hours(10, gpus=16)))
        sort = rng.choice((KEY, "job_cost_usd", "usd_per_gpu_hour"))
        options = RankOptions(limit=rng.choice((None, 1, 3)), sort=sort, now=NOW)
        cases.append(
            (frame, job, options, rank_page(frame, job=job, options=options, unplaced=True))
        )
    with pl.Config(engine_affinity=affinity):
        assert engine() == "auto"
        for frame, job, options, expected in cases:
            page = rank_page(frame, job=job, options=options, unplaced=True)
            assert_frame_equal(page.rows, expected.rows, check_exact=True)
            assert page.total == expected.total
            assert page.offer_rows.to_list() == expected.offer_rows.to_list()
            assert page.unplaced is not None and expected.unplaced is not None
            assert_frame_equal(page.unplaced.sort("config_id"), expected.unplaced.sort("config_id"))
    assert engine() == "in-memory"


def test_a_term_filter_still_compares_with_the_on_demand_price() -> None:
    """Asking for interruptible or committed terms only still hears what the same
    configuration costs on demand (it said "no on-demand price to compare")."""
    offers = offers_to_frame(
        [
            make_offer(offer_id="8x-h100"),  # on demand: 16 USD/h
            make_offer(
                offer_id="8x-h100", term=RentalTerm.INTERRUPTIBLE, price_amount=Decimal("8")
            ),
            make_offer(
                offer_id="8x-h100",
                term=RentalTerm.COMMIT_1MO,
                price_amount=Decimal("9000"),
                price_unit=PriceUnit.MONTH,
            ),
        ]
    )
    for limit in (5, None):
        options = RankOptions(limit=limit, now=NOW)
        spot = rank(offers, Requirement(terms=(RentalTerm.INTERRUPTIBLE,)), options=options)
        assert spot["on_demand_usd_per_hour"].to_list() == [16.0]
        assert spot["break_even"].to_list() == [
            "interruptible: 50% below on-demand per hour, before restarts"
        ]
        committed = Requirement(terms=(RentalTerm.COMMIT_1MO,), max_usd_per_hour=15)
        month = rank(offers, committed, Job(hours=1000), options)
        assert month["term"].to_list() == ["commit_1mo"]
        assert month["break_even_hours"].to_list() == [pytest.approx(9000 / 16)]
