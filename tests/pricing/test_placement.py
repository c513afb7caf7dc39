"""The placement rules of #12 on small hand-built offer sets: nodes, fabric, stock,
availability, scaling that never punishes bandwidth or NVLink, memory per GPU and the
interruptible risk."""

from __future__ import annotations

import itertools
from decimal import Decimal

import polars as pl
import pytest

from gpuscout.adapters.schema import Fabric, GpuFormFactor, GpuInterconnect, Offer, RentalTerm
from gpuscout.pricing import Job, Requirement, offers_to_frame, rank
from gpuscout.pricing import expressions as ex
from gpuscout.pricing.coverage import UNIDENTIFIED, left_out, left_out_note, misfits
from gpuscout.pricing.rank import placement_plan

from .factories import AT_NOW, NOW, make_offer

BIG = Job.training(70e9, 2e12, gpus=512)


def _frame(offers: list[Offer]) -> pl.DataFrame:
    return offers_to_frame(offers)


def _cluster(offer_id: str, **fields: object) -> Offer:
    """8x H100 SXM with 400 Gbps/GPU InfiniBand, clusterable, at 16 USD/h."""
    data: dict[str, object] = {
        "offer_id": offer_id,
        "fabric": Fabric.INFINIBAND,
        "fabric_gbps": 3200,
        "multi_node": True,
    }
    data.update(fields)
    return make_offer(**data)


def test_a_512_gpu_job_never_lands_on_nodes_without_a_fabric() -> None:
    cheap_vm = make_offer(offer_id="1x-vm", gpu_count=1, price_amount=Decimal("0.5"), vcpus=1)
    unstated = make_offer(offer_id="no-fabric", price_amount=Decimal("4"), multi_node=True)
    undeclared = _cluster("undeclared", multi_node=None, price_amount=Decimal("4"))
    single = _cluster("single-node-only", multi_node=False, price_amount=Decimal("4"))
    cluster = _cluster("cluster")
    offers = [cheap_vm, unstated, undeclared, single, cluster]
    out = rank(_frame(offers), job=BIG, options=AT_NOW)
    assert out["offer_id"].to_list() == ["cluster"]
    assert out["nodes"][0] == 64 and out["job_gpus"][0] == 512
    # what the job pays an hour: 64 instances, not the one instance's price
    assert out["job_usd_per_hour"][0] == pytest.approx(64 * out["usd_per_hour"][0])
    note = left_out_note(_frame(offers), None, NOW, job=BIG)
    assert note is not None
    assert f"{ex.NO_FABRIC}: 2 (acme)" in note  # the 1-GPU VM and the 8x without a fabric
    assert f"{ex.MULTI_NODE_UNSTATED}: 1" in note and f"{ex.NOT_MULTI_NODE}: 1" in note
    assert note.startswith("4 configuration(s) cannot run the job")


def test_a_sold_out_or_under_stocked_offer_is_not_multiplied() -> None:
    sold_out = _cluster(
        "sold-out", available_now=False, available_count=0, price_amount=Decimal("1")
    )
    few = _cluster("three-left", available_count=3, price_amount=Decimal("2"))
    plenty = _cluster("plenty", available_count=64)
    job = Job.for_hours(10, gpus=512)
    out = rank(_frame([sold_out, few, plenty]), job=job, options=AT_NOW)
    assert out["offer_id"].to_list() == ["plenty"]
    left = left_out(_frame([sold_out, few, plenty]), None, NOW, job=job)
    assert left.filter(reason=ex.TOO_FEW_NODES)["offers"].to_list() == [2]
    # one node: the sold-out offer still ranks, after every available one
    one = rank(_frame([sold_out, few, plenty]), job=Job.for_hours(10, gpus=8), options=AT_NOW)
    assert one["offer_id"].to_list() == ["three-left", "plenty", "sold-out"]
    assert one["availability"].to_list() == ["not stated", "not stated", "not available now"]
    wanted = rank(
        _frame([sold_out, few, plenty]),
        Requirement(available_now=True),
        Job.for_hours(10),
        AT_NOW,
    )
    assert "sold-out" not in wanted["offer_id"].to_list()


def test_nvlink_nodes_beat_the_same_gpus_as_single_vms() -> None:
    """Same GPU, same price per GPU, same fabric per GPU (400 Gbps): the NVLink node wins."""
    node = _cluster("8x-nvlink", gpu_interconnect=GpuInterconnect.NVLINK)
    vm = _cluster("1x-vm", gpu_count=1, fabric_gbps=400, price_amount=Decimal("2"))
    for gpus in (8, 16, 512):
        job = Job.for_gpu_hours(10_000, gpus=gpus)
        out = rank(_frame([vm, node]), job=job, options=AT_NOW)
        assert out["offer_id"].to_list() == ["8x-nvlink", "1x-vm"], gpus
        assert out["scaling"][0] > out["scaling"][1]


def test_pcie_a100_cards_do_not_outrank_sxm_nodes_at_the_same_price_per_gpu() -> None:
    sxm = _cluster("8x-sxm", gpu_model="A100-SXM4-80GB")
    pcie = _cluster(
        "1x-pcie",
        gpu_model="A100-PCIE-80GB",
        gpu_form_factor=GpuFormFactor.PCIE,
        gpu_count=1,
        fabric_gbps=400,
        price_amount=Decimal("2"),
    )
    out = rank(_frame([pcie, sxm]), job=Job.training(7e9, 1e11, gpus=512), options=AT_NOW)
    assert out["offer_id"].to_list() == ["8x-sxm", "1x-pcie"]


@pytest.mark.parametrize("fabric", [Fabric.INFINIBAND, Fabric.ROCE, Fabric.EFA])
def test_more_fabric_bandwidth_never_ranks_lower(fabric: Fabric) -> None:
    speeds = [50, 100, 200, 400, 800, 1600, 3200, 6400]
    offers = [_cluster(f"gbps-{g:05d}", fabric=fabric, fabric_gbps=g) for g in reversed(speeds)]
    out = rank(_frame(offers), job=BIG, options=AT_NOW)
    keys = dict(zip(out["offer_id"], out["usd_per_effective_tflop_hour"], strict=True))
    ordered = [keys[f"gbps-{g:05d}"] for g in speeds]
    assert ordered == sorted(ordered, reverse=True)  # cost per TFLOP-hour never rises
    ranks = dict(zip(out["offer_id"], out["rank"], strict=True))
    # equal keys tie-break by offer id; the fastest never ranks below a slower one of
    # strictly higher cost
    for slow, fast in itertools.pairwise(speeds):
        if keys[f"gbps-{fast:05d}"] < keys[f"gbps-{slow:05d}"]:
            assert ranks[f"gbps-{fast:05d}"] < ranks[f"gbps-{slow:05d}"]


def test_consumer_cards_without_p2p_scale_as_measured() -> None:
    """4x RTX 4090 (no P2P): the cortwave.github.io measurement, 14.0 samples/s on four
    against 15.4 on one; eight cards barely beat one."""
    four = make_offer(offer_id="4x", gpu_model="RTX-4090", gpu_count=4, price_amount=Decimal("2"))
    eight = make_offer(offer_id="8x", gpu_model="RTX-4090", gpu_count=8, price_amount=Decimal("4"))
    one = make_offer(offer_id="1x", gpu_model="RTX-4090", gpu_count=1, price_amount=Decimal("0.5"))
    out = rank(_frame([four, eight, one]), options=AT_NOW)
    scaling = dict(zip(out["offer_id"], out["scaling"], strict=True))
    assert 4 * scaling["4x"] == pytest.approx(14.0 / 15.4, rel=0.01)
    assert 1 < 8 * scaling["8x"] < 2
    assert out["offer_id"][0] == "1x"


def test_memory_is_checked_per_gpu() -> None:
    """70B on one 8x 80 GB node: 1120 GB of state is 140 GB per GPU, more than 80, although
    the node's 640 GB and the cluster's sum would hide it; on 64 nodes it fits."""
    node = _cluster("8x")
    assert rank(_frame([node]), job=Job.training(70e9, 1e11), options=AT_NOW).is_empty()
    out = rank(_frame([node]), job=Job.training(70e9, 1e11, gpus=512), options=AT_NOW)
    assert out["memory_per_gpu_gb"][0] < 80
    # a duration-only job can carry the model size for the check
    assert rank(_frame([node]), job=Job(hours=10, params=70e9), options=AT_NOW).is_empty()
    assert rank(_frame([node]), job=Job(hours=10, params=7e9), options=AT_NOW).height == 1
    note = left_out_note(_frame([node]), None, NOW, job=Job(hours=10, params=70e9))
    assert note is not None and ex.NO_FIT in note


def test_a_misfit_note_gives_the_figures_and_what_would_fit() -> None:
    """70B on one 8x 80 GB node: the note says the GB each GPU needs and has, the GPUs it
    fits on and the bytes per parameter it fits at, named per surface; both remedies rank."""
    node, small = (
        _cluster("8x"),
        _cluster("4x-40gb", gpu_count=4, gpu_model="A100-SXM4-40GB", gpu_memory_gb=40),
    )
    job = Job.training(70e9, 1e9)
    frame = _frame([node, small])
    note = left_out_note(frame, None, NOW, job=job)
    assert note is not None
    assert (
        f"{ex.NO_FIT}: 2 (acme), 150 GB per GPU needed on 8 GPUs of 80 GB (the largest left"
        " out): it fits on 16 of those GPUs (job_gpus 16), or on 8 at 8 bytes per parameter"
        " or less (bytes_per_param 8, e.g. LoRA: about 2 for frozen bf16 weights)" in note
    )
    cli = left_out_note(frame, None, NOW, job=job, name=lambda f: "--" + f.replace("_", "-"))
    assert cli is not None and "(--job-gpus 16)" in cli and "(--bytes-per-param 8," in cli
    bare = left_out_note(frame, None, NOW, job=job, name=lambda f: None)
    assert bare is not None and "it fits on 16 of those GPUs, or on 8 at 8 bytes" in bare
    assert "job_gpus" not in bare and "(e.g. LoRA" in bare
    assert rank(_frame([node]), job=Job.training(70e9, 1e9, gpus=16), options=AT_NOW).height == 1
    lean = Job(params=70e9, tokens=1e9, bytes_per_param=8)
    assert rank(_frame([node]), job=lean, options=AT_NOW).height == 1
    # the figures of each (GPU memory, job GPUs), nearest first
    left = left_out(frame, None, NOW, job=job)
    fits = misfits(frame, left, None, NOW, job=job)
    assert fits is not None
    assert fits.select("gpu_memory_gb", "job_gpus", "fits_on_gpus").rows() == [
        (80.0, 8.0, 16),
        (40.0, 4.0, 37),
    ]
    assert misfits(frame, left_out(frame, None, NOW, job=Job.for_hours(1)), job=job) is None


def test_activations_that_overflow_a_gpu_are_said_so() -> None:
    vm = make_offer(offer_id="1x-t4", gpu_model="T4", gpu_count=1)
    job = Job(params=70e9, tokens=1e9, context_tokens=1_000_000)
    note = left_out_note(_frame([vm]), None, NOW, job=job)
    assert note is not None and "its activations alone overflow one GPU" in note


def test_interruptible_risk_grows_with_nodes_and_length_and_can_be_excluded() -> None:
    spot = _cluster("spot", term=RentalTerm.INTERRUPTIBLE, price_amount=Decimal("6"))
    on_demand = _cluster("on-demand")

    def spot_row(job: Job) -> dict[str, object]:
        out = rank(_frame([spot]), job=job, options=AT_NOW)
        return out.row(0, named=True)

    small, big = spot_row(Job.for_hours(100, gpus=8)), spot_row(Job.for_hours(100, gpus=512))
    longer = spot_row(Job.for_hours(2000, gpus=512))
    overhead = [r["wall_clock_hours"] / r["compute_hours"] for r in (small, big)]  # type: ignore[operator]
    assert overhead[0] < overhead[1]
    assert small["interruptions_expected"] < big["interruptions_expected"]  # type: ignore[operator]
    assert big["interruptions_expected"] < longer["interruptions_expected"]  # type: ignore[operator]
    assert "64 node(s)" in str(big["interruptible_risk"])
    excluded = rank(
        _frame([spot, on_demand]),
        Requirement(exclude_interruptible=True),
        Job.for_hours(10),
        AT_NOW,
    )
    assert excluded["term"].to_list() == ["on_demand"]
    assert excluded["interruptible_risk"].to_list() == [None]


def test_a_spot_job_on_too_many_nodes_is_not_placed() -> None:
    spot = _cluster("spot", term=RentalTerm.INTERRUPTIBLE, gpu_count=1, fabric_gbps=400)
    # 3.06e-4 per node-hour x 1 h lost each: from ~3,268 nodes preemptions outpace the work
    out = rank(_frame([spot]), job=Job.for_hours(10, gpus=4000), options=AT_NOW)
    assert out.is_empty()
    note = left_out_note(_frame([spot]), None, NOW, job=Job.for_hours(10, gpus=4000))
    assert note is not None and ex.NEVER_FINISHES in note


def test_a_configuration_is_left_out_only_when_none_of_its_terms_can_be_placed() -> None:
    """Its spot term outpaced by preemptions, its on-demand term fine: it runs, so the
    note leaves it alone; with only the spot term it is left out, with that reason."""
    spot = _cluster("mixed", term=RentalTerm.INTERRUPTIBLE, gpu_count=1, fabric_gbps=400)
    on_demand = _cluster("mixed", gpu_count=1, fabric_gbps=400)
    spot_only = _cluster("spot-only", term=RentalTerm.INTERRUPTIBLE, gpu_count=1, fabric_gbps=400)
    job = Job.for_hours(10, gpus=4000)
    left = left_out(_frame([spot, on_demand, spot_only]), None, NOW, job=job)
    assert left.select("reason", "offers").rows() == [(ex.NEVER_FINISHES, 1)]
    assert rank(_frame([spot, on_demand]), job=job, options=AT_NOW)["term"].to_list() == [
        "on_demand"
    ]


def test_reasons_are_an_enum_while_placed_and_text_once_counted() -> None:
    """Every qualifying row gets its reason, so it is the enum's small integer there (text
    written into each refused row was most of placing a job most rows refuse); the counted
    table says it in words, ordered by them, with the reasons that are no placement's."""
    offers = [
        make_offer(offer_id="no-fabric", price_amount=Decimal("4"), multi_node=True),
        _cluster("undeclared", multi_node=None),
        make_offer(offer_id="mystery", gpu_model=None, gpu_raw_name="Mystery GPU"),
    ]
    placed = placement_plan(_frame(offers), None, BIG).collect()
    assert placed.schema["placement_reason"] == ex.REASON
    assert set(placed["placement_reason"].drop_nulls()) == {ex.NO_FABRIC, ex.MULTI_NODE_UNSTATED}
    left = left_out(_frame(offers), None, NOW, job=BIG)
    assert left.schema["reason"] == pl.String
    assert left.sort("offers", "reason", descending=[True, False]).equals(left)
    assert set(left["reason"]) == {ex.NO_FABRIC, ex.MULTI_NODE_UNSTATED, UNIDENTIFIED}
