"""Each expression on a tiny frame, against hand-computed values."""

from __future__ import annotations

import itertools
import math

import polars as pl
import pytest
from polars.testing import assert_series_equal

from gpuscout.adapters.gpus import Precision
from gpuscout.pricing import expressions as ex
from gpuscout.pricing import readings
from gpuscout.pricing.efficiency import default_efficiency
from gpuscout.pricing.frame import FABRIC_DTYPE, FORM_FACTOR_DTYPE, INTERCONNECT_DTYPE, TERM_DTYPE
from gpuscout.pricing.job import Job
from gpuscout.pricing.requirement import Requirement


def _eval(frame: dict[str, list[object]], expr: pl.Expr, schema=None) -> list[object]:
    return pl.DataFrame(frame, schema_overrides=schema).select(out=expr)["out"].to_list()


def test_billed_hours_min_rental_and_increments() -> None:
    frame = {
        "wall_clock_hours": [1.5, 1.5, 1.51, 1.234, 100.0, 0.2],
        "compute_hours": [1.5, 1.5, 1.51, 1.234, 100.0, 0.2],
        "min_rental_hours": [None, 10.0, None, None, None, None],
        "billing_increment_s": [3600, 3600, 60, None, 3600, 3600],
        "commitment_hours": [None] * 6,
        "billing_cap_hours_per_month": [None] * 6,
    }
    schema = {"commitment_hours": pl.Float64, "billing_cap_hours_per_month": pl.Float64}
    got = _eval(frame, ex.billed_hours(), schema)
    # 1.5 h per hour -> 2; minimum 10 h; 90.6 min per minute -> 91 min; per second; exact.
    assert got == pytest.approx([2.0, 10.0, 91 / 60, 1.234, 100.0, 1.0])


def test_billed_hours_whole_commitment_periods() -> None:
    frame = {
        "wall_clock_hours": [100.0, 1000.0, 800.0, 730.0],
        "compute_hours": [100.0, 1000.0, 800.0, 730.0],
        "min_rental_hours": [None] * 4,
        "billing_increment_s": [None] * 4,
        "commitment_hours": [730.0, 2190.0, 730.0, 730.0],
        "billing_cap_hours_per_month": [672.0] * 4,
    }
    got = _eval(frame, ex.billed_hours(), {"min_rental_hours": pl.Float64})
    # 1-month for 100 h bills 730; 3-month for 1000 h bills 2190; 800 h needs two months;
    # a monthly cap of hourly billing does not shorten a commitment.
    assert got == [730.0, 2190.0, 1460.0, 730.0]


def _billed_hours_as_written() -> pl.Expr:
    """The billed hours as the rules read (the maxima as horizontal maxima and clips), in
    one expression: what the cheaper forms of :mod:`pricing.expressions` must equal."""
    wall, period = pl.col("wall_clock_hours"), pl.col("commitment_hours")
    compute = pl.col("compute_hours")
    floor = pl.max_horizontal(compute, pl.col("min_rental_hours").fill_null(0.0))
    step = pl.col("billing_increment_s").cast(pl.Float64) / 3600.0
    metered = pl.when(step.is_null()).then(floor).otherwise(ex._round_up(floor, step))
    periods = ex._round_up(wall, period).clip(lower_bound=period)
    expected = metered + (wall - compute).clip(lower_bound=0.0)
    capped = ex.monthly_capped_hours(expected, pl.col("billing_cap_hours_per_month"))
    return pl.when(period.is_not_null()).then(pl.max_horizontal(periods, floor)).otherwise(capped)


def test_billed_hours_in_stages_are_the_billed_hours_to_the_last_bit() -> None:
    """The one expression and the chain's steps (:func:`pricing.expressions.
    billed_hours_stages`) against the rules as written, over every mix of hours (fractions,
    a month's edges, inf, null), minimum rentals, increments, commitments and caps, each
    also unknown."""
    hours = [0.0, 1e-12, 0.2, 1.5, 1.51, 100.0, 671.9, 730.0, 730.3, 1000.0, 5000.0, math.inf]
    hours.append(None)
    values = {
        "wall_clock_hours": hours,
        "restart_share": [0.0, 0.0003],
        "min_rental_hours": [None, 0.0, 10.0, 1000.0],
        "billing_increment_s": [None, 1, 60, 3600, 86400],
        "commitment_hours": [None, 168.0, 730.0, 8760.0],
        "billing_cap_hours_per_month": [None, 10.0, 672.0, 730.0, 740.0],
    }
    rows = list(itertools.product(*values.values()))
    frame = pl.DataFrame(
        {name: [r[i] for r in rows] for i, name in enumerate(values)},
        schema={
            "wall_clock_hours": pl.Float64,
            "restart_share": pl.Float64,
            "min_rental_hours": pl.Float64,
            "billing_increment_s": pl.Int64,
            "commitment_hours": pl.Float64,
            "billing_cap_hours_per_month": pl.Float64,
        },
    )
    # the compute hours before the expected restarts (none: the wall clock itself)
    frame = frame.with_columns(
        compute_hours=pl.col("wall_clock_hours") * (1 - pl.col("restart_share"))
    ).drop("restart_share")
    staged = frame.lazy()
    for stage in ex.billed_hours_stages():
        staged = staged.with_columns(**stage)
    got = staged.drop(ex.BILLING_STAGE_COLUMNS).collect()
    assert got.columns == [*frame.columns, "billed_hours"]
    expected = frame.select(_billed_hours_as_written().alias("billed_hours"))["billed_hours"]
    assert_series_equal(got["billed_hours"], expected, check_exact=True)
    one = frame.select(ex.billed_hours().alias("billed_hours"))["billed_hours"]
    assert_series_equal(one, expected, check_exact=True)
    assert got["billed_hours"].n_unique() > 30  # not one case: many hours are billed


def test_billed_hours_of_nan_hours_are_nan() -> None:
    """No job gives a NaN wall clock; if one did it bills NaN hours (the horizontal maximum
    of the rules as written would bill the minimum rental, as if no hours were run)."""
    frame = {
        "wall_clock_hours": [math.nan, math.nan],
        "compute_hours": [math.nan, math.nan],
        "min_rental_hours": [1.0, None],
        "billing_increment_s": [3600, None],
        "commitment_hours": [None, 730.0],
        "billing_cap_hours_per_month": [None, None],
    }
    schema = {"commitment_hours": pl.Float64, "billing_cap_hours_per_month": pl.Float64}
    assert all(math.isnan(h) for h in _eval(frame, ex.billed_hours(), schema))


def test_billed_hours_monthly_cap() -> None:
    """Vultr bills bare metal hourly up to 672 h a month (its monthly price): the issue's
    730 h job on the 8x H100 machine ($23.92/h, $16,074.24/month, gpuhunt's verbatim plan)
    bills 672 h = $16,074.24, not 730 h = $17,461.60."""
    frame = {
        "wall_clock_hours": [730.0, 100.0, 1000.0, 2000.0, 730.0, 700.5],
        "compute_hours": [730.0, 100.0, 1000.0, 2000.0, 730.0, 700.5],
        "min_rental_hours": [None] * 6,
        "billing_increment_s": [3600] * 6,
        "commitment_hours": [None] * 6,
        "billing_cap_hours_per_month": [672.0, 672.0, 672.0, 672.0, 740.0, None],
    }
    schema = {
        "min_rental_hours": pl.Float64,
        "commitment_hours": pl.Float64,
        "billing_cap_hours_per_month": pl.Float64,
    }
    got = _eval(frame, ex.billed_hours(), schema)
    # under the cap; one month + 270 h; two months + 540 h (1344 + 540); a cap above a
    # month's hours never binds a whole month; no cap: rounded up to the hour only
    assert got == pytest.approx([672.0, 100.0, 942.0, 1884.0, 730.0, 701.0])
    cost = _eval(
        {"billed_hours": [got[0]], "usd_per_hour": [23.92], "nodes": [1]}, ex.job_cost_usd()
    )
    assert cost == pytest.approx([16074.24])


def test_a_published_interruption_band_sets_the_rows_preemption_rate() -> None:
    """An AWS offer's Spot Advisor band is its rate, -ln(1 - share) / 730 h per node-hour
    ("<5%": 5 % a month); a row without one keeps the default (the top band, 20 %)."""
    i = default_efficiency().interruptible
    frame = pl.DataFrame(
        {
            "compute_hours": [10.0, 10.0, 10.0],
            "term": ["interruptible"] * 3,
            "nodes": [1, 1, 1],
            "interruption_band": ["<5%", ">20%", None],
        },
        schema={
            "compute_hours": pl.Float64,
            "term": TERM_DTYPE,
            "nodes": pl.Int64,
            "interruption_band": pl.String,
        },
    ).with_columns(interruption_pct_per_month=readings.band_pct(pl.col("interruption_band")))
    assert frame["interruption_pct_per_month"].to_list() == [5.0, 20.0, None]
    rates = frame.select(r=ex.preemption_rate(i))["r"].to_list()
    default = i.preemptions_per_node_hour
    assert rates == pytest.approx([-math.log(0.95) / 730, -math.log(0.8) / 730, default])
    out = (
        frame.with_columns(wall_clock_hours=ex.wall_clock_hours(i))
        .with_columns(interruptions_expected=ex.interruptions_expected(i))
        .with_columns(billed_hours=pl.col("wall_clock_hours"))  # no rounding here
        .with_columns(risk=ex.interruptible_risk())
    )
    assert (
        out["interruptions_expected"][0] < out["interruptions_expected"][2]
    )  # the low band expects fewer preemptions
    assert "its band <5% of capacity reclaimed a month, AWS Spot Advisor" in out["risk"][0]
    assert "default: AWS Spot Advisor top band" in out["risk"][2]


def test_interruptible_expectation_is_not_rounded() -> None:
    """Vultr spot bills by the hour; a 1-hour 8x H100 job expected to run 1.0003 h with
    restarts bills 1 h (rounded once) + 0.0003 h (expected), not 2 h; 100 h bills 100.03 h,
    not 101. A 1.51 h job on an hourly increment bills 2 h + its expected restarts."""
    frame = {
        "compute_hours": [1.0, 100.0, 1.51],
        "wall_clock_hours": [1.0003, 100.03, 1.5105],
        "min_rental_hours": [None, None, None],
        "billing_increment_s": [3600, 3600, 3600],
        "commitment_hours": [None] * 3,
        "billing_cap_hours_per_month": [None] * 3,
    }
    schema = {
        "min_rental_hours": pl.Float64,
        "commitment_hours": pl.Float64,
        "billing_cap_hours_per_month": pl.Float64,
    }
    billed = _eval(frame, ex.billed_hours(), schema)
    assert billed == pytest.approx([1.0003, 100.03, 2.0005])
    cost = _eval({"billed_hours": billed[:1], "usd_per_hour": [18.40], "nodes": [1]},
                 ex.job_cost_usd())  # fmt: skip
    assert cost == pytest.approx([18.40552])
    rounding = _eval(
        {"billed_hours": billed, "wall_clock_hours": frame["wall_clock_hours"]},
        ex.billing_rounding_hours(),
    )
    assert rounding == pytest.approx([0.0, 0.0, 0.49], abs=1e-9)


def test_wall_clock_adds_modelled_restarts_on_interruptible_only() -> None:
    """wall = compute / (1 - nodes x rate x (interval/2 + restart)): grows with nodes."""
    i = default_efficiency().interruptible
    frame = pl.DataFrame(
        {
            "compute_hours": [10.0, 10.0, 10.0],
            "term": ["on_demand", "interruptible", "interruptible"],
            "nodes": [64, 1, 64],
        },
        schema={"compute_hours": pl.Float64, "term": TERM_DTYPE, "nodes": pl.Int64},
    ).with_columns(interruption_pct_per_month=pl.lit(None, pl.Float64))
    lost = i.preemptions_per_node_hour * (i.checkpoint_interval_hours / 2 + i.restart_hours)
    out = frame.with_columns(wall_clock_hours=ex.wall_clock_hours(i)).with_columns(
        n=ex.interruptions_expected(i)
    )
    assert out["wall_clock_hours"].to_list() == pytest.approx(
        [10.0, 10.0 / (1 - lost), 10.0 / (1 - 64 * lost)]
    )
    assert out["n"].to_list() == pytest.approx(
        [0.0, i.preemptions_per_node_hour * 10 / (1 - lost), 64 * i.preemptions_per_node_hour
         * 10 / (1 - 64 * lost)]
    )  # fmt: skip
    flat = frame.select(ex.wall_clock_hours(i, 0.15))["compute_hours"].to_list()
    assert flat == pytest.approx([10.0, 11.5, 11.5])


def test_job_cost_and_per_gpu_price() -> None:
    frame = {"billed_hours": [10.0], "usd_per_hour": [16.0], "nodes": [2], "gpus": [8.0]}
    assert _eval(frame, ex.job_cost_usd()) == [320.0]
    assert _eval(frame, ex.usd_per_gpu_hour()) == [2.0]


def test_compute_hours_by_job_kind() -> None:
    frame = {"job_gpus": [8.0], "effective_tflops": [1000.0]}
    assert _eval(frame, ex.compute_hours(Job.for_hours(5))) == [5.0]
    assert _eval(frame, ex.compute_hours(Job.for_gpu_hours(80))) == [10.0]
    # 6 x 1e9 x 6e11 = 3.6e21 FLOPs at 1e15 FLOP/s = 3.6e6 s = 1000 h
    assert _eval(frame, ex.compute_hours(Job.training(1e9, 6e11))) == pytest.approx([1000.0])


def test_node_count_rounds_up() -> None:
    frame = {"gpus": [8.0, 8.0, 1.0, 3.0]}
    assert _eval(frame, ex.node_count(16)) == [2, 2, 16, 6]
    ones = pl.DataFrame(frame).with_columns(n=ex.node_count(None))["n"].to_list()
    assert ones == [1, 1, 1, 1]


def _topology(**cols: list[object]) -> pl.DataFrame:
    n = len(next(iter(cols.values())))
    base: dict[str, list[object]] = {
        "gpus": [8.0] * n,
        "nodes": [1] * n,
        "gpu_interconnect": [None] * n,
        "gpu_form_factor": [None] * n,
        "catalog_form_factor": ["sxm"] * n,
        "pcie_no_p2p": [False] * n,
        "fabric": [None] * n,
        "fabric_gbps": [None] * n,
        "job_gpus": [8.0] * n,
    }
    base.update(cols)
    return pl.DataFrame(
        base,
        schema_overrides={
            "gpu_interconnect": INTERCONNECT_DTYPE,
            "gpu_form_factor": FORM_FACTOR_DTYPE,
            "catalog_form_factor": FORM_FACTOR_DTYPE,
            "fabric": FABRIC_DTYPE,
            "fabric_gbps": pl.Float64,
        },
    )


def test_intra_node_scaling_by_link() -> None:
    s = default_efficiency().scaling
    frame = _topology(
        gpus=[1.0, 1.0, 8.0, 8.0, 4.0, 8.0, 4.0, 8.0],
        nodes=[1, 4, 1, 1, 1, 1, 1, 1],
        job_gpus=[1.0, 4.0, 8.0, 8.0, 4.0, 8.0, 4.0, 1.0],
        catalog_form_factor=["sxm", "sxm", "sxm", "pcie", "pcie", "oam", "pcie", "pcie"],
        gpu_interconnect=[None, None, None, None, "nvlink_bridge", None, None, None],
        pcie_no_p2p=[False, False, False, False, False, False, True, False],
    )
    got = frame.select(x=ex.intra_node_scaling(s))["x"].to_list()
    # 4 GPUs without P2P sync through the host: 1 / (1 + r x 2 x 3/4)
    no_p2p = 1 / (1 + s.pcie_no_p2p_sync_ratio * 1.5)
    assert got == pytest.approx(
        [1.0, s.separate_nodes, s.nvlink, s.pcie, s.nvlink_bridge, s.infinity_fabric, no_p2p, 1.0]
    )
    # cortwave.github.io: 4x RTX 4090 DDP 14.0 samples/s against 15.4 on one GPU
    assert 4 * no_p2p == pytest.approx(14.0 / 15.4, rel=0.01)


def test_intra_node_scaling_of_a_whole_instance_equals_the_general_form() -> None:
    # a job without a GPU count runs on every GPU of one instance: job_gpus is gpus
    s = default_efficiency().scaling
    gpus = [1.0, 2.0, 8.0, 8.0, 4.0, 8.0, 4.0, None]
    frame = _topology(
        gpus=gpus,
        nodes=[1] * 8,
        job_gpus=gpus,
        catalog_form_factor=["sxm", "pcie", "sxm", "pcie", "pcie", "oam", "pcie", "pcie"],
        gpu_interconnect=[None, None, None, None, "nvlink_bridge", None, None, None],
        pcie_no_p2p=[False, True, False, False, False, False, True, False],
    )
    whole = frame.select(x=ex.intra_node_scaling(s, whole_instance=True))["x"]
    general = frame.select(x=ex.intra_node_scaling(s))["x"]
    assert whole.to_list() == general.to_list()
    assert whole.to_list()[:4] == pytest.approx(
        [1.0, 1 / (1 + s.pcie_no_p2p_sync_ratio), s.nvlink, s.pcie]
    )


def test_inter_node_scaling_by_fabric_per_gpu() -> None:
    s = default_efficiency().scaling
    frame = _topology(
        nodes=[1, 2, 2, 2, 2, 2],
        fabric=["infiniband", "infiniband", "roce", "efa", "ethernet", "infiniband"],
        fabric_gbps=[400.0, 3200.0, 800.0, 400.0, 1600.0, None],
    )
    got = frame.select(x=ex.inter_node_scaling(s))["x"].to_list()
    # 400/GPU: the reference; 100/GPU: its point; 50/GPU between 12.5 and 100 in log2
    # (2 of 3 octaves); Ethernet 200/GPU counts half: 100; unknown speed: the lowest point
    (_, low), (_, at_12), (_, at_100), _ = s.fabric_points
    between = at_12 + (at_100 - at_12) * 2 / 3
    assert got == pytest.approx([1.0, 1.0, at_100, between, at_100, low])


def test_fabric_factor_never_falls_with_bandwidth() -> None:
    s = default_efficiency().scaling
    gbps = [0.5 * 1.3**k for k in range(40)]
    frame = _topology(nodes=[2] * 40, gpus=[1.0] * 40, fabric=["roce"] * 40, fabric_gbps=gbps)
    got = frame.select(x=ex.inter_node_scaling(s))["x"].to_list()
    assert got == sorted(got) and got[0] == 0.5 and got[-1] == 1.0


def test_placement_reasons() -> None:
    i = default_efficiency().interruptible
    frame = pl.DataFrame(
        {
            "nodes": [1, 64, 64, 64, 64, 64, 4, 1, 64, 2],
            "multi_node": [None, True, None, False, True, True, True, None, True, True],
            "fabric": [None, "efa", "efa", "efa", None, "ethernet", "efa", None, "efa", "efa"],
            "available_count": [None, None, None, None, None, None, 3, 0, None, 0],
            "term": ["on_demand"] * 10,
            "gpu_memory_gb": [80.0] * 10,
            "memory_per_gpu_gb": [10.0] * 8 + [90.0, 10.0],
        },
        schema_overrides={
            "multi_node": pl.Boolean,
            "fabric": pl.String,
            "available_count": pl.Int64,
            "term": TERM_DTYPE,
        },
    ).with_columns(
        catalog_memory_gb=pl.lit(80.0),
        gpu_fraction=pl.lit(None, pl.Float64),
        interruption_pct_per_month=pl.lit(None, pl.Float64),
    )
    got = frame.select(x=ex.placement_reason(Requirement(), True, i))["x"].to_list()
    assert got == [
        None,
        None,
        ex.MULTI_NODE_UNSTATED,
        ex.NOT_MULTI_NODE,
        ex.NO_FABRIC,
        ex.ETHERNET_ONLY,
        ex.TOO_FEW_NODES,  # 4 nodes of a provider with 3
        None,  # sold out: one node later (ranked after), never multiplied
        ex.NO_FIT,
        ex.TOO_FEW_NODES,
    ]
    allowed = frame.select(x=ex.placement_reason(Requirement(allow_ethernet=True), True, i))
    assert allowed["x"][5] is None


def test_mfu_low_precision_credits_speedup_not_peak() -> None:
    frame = {"mfu_bf16": [0.41], "tflops_bf16": [989.5], "tflops_fp8": [1979.0]}
    bf16 = _eval(frame, ex.mfu(Precision.BF16, 1.3))[0]
    fp8 = _eval(frame, ex.mfu(Precision.FP8, 1.3))[0]
    assert bf16 == 0.41
    # fp8 effective = 1.3 x bf16 effective: 1979 x mfu_fp8 == 1.3 x 989.5 x 0.41
    assert 1979.0 * fp8 == pytest.approx(1.3 * 989.5 * 0.41)


def test_effective_tflops_and_cost_per_tflop_hour() -> None:
    frame = pl.DataFrame(
        {
            "job_gpus": [8.0],
            "peak_tflops": [989.5],
            "mfu": [0.41],
            "scaling": [0.9],
            "all_in_cost_usd": [160.0],  # the key divides the whole bill
            "compute_hours": [10.0],
        }
    )
    out = frame.with_columns(effective_tflops=ex.effective_tflops()).with_columns(
        key=ex.usd_per_effective_tflop_hour()
    )
    assert out["effective_tflops"][0] == pytest.approx(8 * 989.5 * 0.41 * 0.9)
    assert out["key"][0] == pytest.approx(160.0 / (8 * 989.5 * 0.41 * 0.9 * 10))


def test_memory_per_gpu_is_a_shard_plus_activations() -> None:
    frame = {"job_gpus": [8.0, 512.0]}
    assert _eval(frame, ex.memory_per_gpu_gb(1120.0, 5.0)) == [145.0, 1120 / 512 + 5.0]
    assert _eval(frame, ex.memory_per_gpu_gb(None, None)) == [None]


def test_break_even_hours() -> None:
    frame = {
        "commitment_hours": [730.0, None],
        "usd_per_hour": [1.2, 2.0],
        "on_demand_usd_per_hour": [2.0, 2.0],
    }
    got = pl.Series(_eval(frame, ex.break_even_hours()), dtype=pl.Float64)
    assert_series_equal(got, pl.Series([438.0, None]), check_names=False)


# --- the all-in cost ---------------------------------------------------------------------
_DISK_SCHEMA = {
    "storage_gb": pl.Float64,
    "storage_included_gb": pl.Float64,
    "boot_disk_min_gb": pl.Float64,
    "storage_usd_per_gb_hour": pl.Float64,
    "ipv4_usd_per_hour": pl.Float64,
    "boot_disk_usd_per_hour": pl.Float64,
    "egress_usd_per_gb": pl.Float64,
}


def _disks() -> pl.DataFrame:
    """Four offers: disk all billed with a boot disk and an IPv4 (a Cudo VM); 50 GB
    included, then billed; a machine with its disks and no price but its network boot disk
    per instance-hour (a hyperscaler); nothing said at all."""
    return pl.DataFrame(
        {
            "storage_gb": [None, 500.0, 2000.0, None],
            "storage_included_gb": [0.0, 50.0, None, None],
            "boot_disk_min_gb": [100.0, 20.0, None, None],
            "storage_usd_per_gb_hour": [0.0002, 0.0001, None, None],
            "ipv4_usd_per_hour": [0.005, None, None, None],
            "boot_disk_usd_per_hour": [None, None, 0.001, None],
            "egress_usd_per_gb": [0.01, None, None, None],
            "billed_hours": [10.0] * 4,
            "nodes": [2, 1, 1, 1],
            "job_cost_usd": [1.0] * 4,
        },
        schema_overrides=_DISK_SCHEMA,
    )


def _costed(frame: pl.DataFrame, storage_gb: float | None, egress_gb: float | None) -> pl.DataFrame:
    return (
        frame.with_columns(job_storage_gb=ex.job_storage_gb(storage_gb))
        .with_columns(
            required_extras_usd=ex.required_extras_usd(),
            storage_cost_usd=ex.storage_cost_usd(),
            egress_cost_usd=ex.egress_cost_usd(egress_gb),
        )
        .with_columns(all_in_cost_usd=ex.all_in_cost_usd())
    )


def test_included_disk_stated_else_the_machine_disk_when_unpriced_else_none() -> None:
    assert _eval(_disks().to_dict(as_series=False), ex.included_storage_gb(), _DISK_SCHEMA) == [
        0.0,
        50.0,
        2000.0,
        0.0,
    ]


def test_default_job_disk_is_the_included_disk_at_least_the_boot_disk() -> None:
    out = _costed(_disks(), None, None)
    assert out["job_storage_gb"].to_list() == [100.0, 50.0, 2000.0, 0.0]
    # boot disk x price + IPv4, over 10 h, on 2 nodes; the 20 GB boot disk fits in 50 GB;
    # the hyperscaler's boot disk at its price per instance-hour, over 10 h
    assert out["required_extras_usd"].to_list() == pytest.approx(
        [(100 * 0.0002 + 0.005) * 10 * 2, 0.0, 0.001 * 10, 0.0]
    )
    assert out["storage_cost_usd"].to_list() == [0.0] * 4
    assert out["all_in_cost_usd"].to_list() == pytest.approx([1.5, 1.0, 1.01, 1.0])


def test_asked_disk_beyond_the_boot_disk_and_included_disk_is_storage() -> None:
    out = _costed(_disks(), 300.0, 1000.0)
    assert out["job_storage_gb"].to_list() == [300.0] * 4
    # 200 GB beyond the boot disk; 250 GB beyond the included 50; none priced beyond
    assert out["storage_cost_usd"].to_list() == pytest.approx(
        [200 * 0.0002 * 10 * 2, 250 * 0.0001 * 10, 0.0, 0.0]
    )
    assert out["egress_cost_usd"].to_list() == pytest.approx([10.0, 0.0, 0.0, 0.0])
    extras = out["required_extras_usd"].to_list()
    assert out["all_in_cost_usd"].to_list() == pytest.approx(
        [1.0 + extras[0] + 0.8 + 10.0, 1.25, 1.0 + 0.001 * 10, 1.0]
    )


def test_caveats_name_a_too_small_machine_and_unpriced_disk_or_egress() -> None:
    frame = _costed(_disks(), 300.0, 1000.0).with_columns(
        vcpus=pl.Series([1.0, 16.0, 8.0, None]),
        ram_gb=pl.Series([1.073741824, 64.0, 4.0, None]),
        gpus=pl.Series([1.0, 2.0, 1.0, 1.0]),
        # a provider with a published increment: no billing caveat (test_billing_rules)
        provider=pl.lit("lambda"),
        billing_increment_s=pl.lit(60, dtype=pl.Int64),
        commitment_hours=pl.lit(None, dtype=pl.Float64),
        # the first names an H100 without its form factor: ranked as the slower PCIe part
        gpu_model=pl.Series(["H100-PCIE-80GB", "A100-SXM4-80GB", "L4", "L4"]),
        gpu_form_factor=pl.Series([None, "sxm", None, None], dtype=pl.String),
        form_factor_varies=pl.Series([True, True, False, None]),
    )
    got = frame.select(c=ex.caveats(1000.0))["c"].to_list()
    assert got == [
        "form factor not stated: ranked as the slower variant (H100-PCIE-80GB); below a"
        " runnable GPU server: 1.0 vCPU and 1.07 GB RAM per GPU (a runnable server has"
        " at least 2 vCPU and 8 GB RAM per GPU)",
        "egress not priced",
        "below a runnable GPU server: 8.0 vCPU and 4.0 GB RAM per GPU (a runnable server has"
        " at least 2 vCPU and 8 GB RAM per GPU); egress not priced",
        "disk beyond the included not priced; egress not priced",
    ]
    assert frame.select(c=ex.caveats(None))["c"].to_list()[1] is None
