"""The all-in cost recomputed from recorded provider payloads, field by field: compute, the
required extras (boot disk, public IPv4), the job's further disk and egress, for Vast.ai,
Cudo, TensorDock and RunPod, and the sample's too-small Cudo VM flagged, not silently first."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gpuscout.adapters.cudo import CudoAdapter
from gpuscout.adapters.runpod import RunPodAdapter
from gpuscout.adapters.sample import replay_sample
from gpuscout.adapters.schema import Offer, RentalTerm
from gpuscout.adapters.tensordock import TensorDockAdapter
from gpuscout.adapters.vastai import VastAiAdapter
from gpuscout.pricing import Job, RankOptions, Requirement, offers_to_frame, rank
from gpuscout.pricing.rank import costed_plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOW = datetime(2026, 7, 1, tzinfo=UTC)
ON_DEMAND = Requirement(terms=(RentalTerm.ON_DEMAND,))


def load(path: str) -> Any:
    return json.loads((FIXTURES / path).read_text())


def costed(offers: list[Offer], job: Job, **where: object) -> dict[str, Any]:
    """The one on-demand costed row of ``offers`` matching ``where``."""
    frame = costed_plan(offers_to_frame(offers), ON_DEMAND, job, RankOptions(now=NOW)).collect()
    rows = frame.filter(*(pl.col(k) == v for k, v in where.items())).to_dicts()
    assert len(rows) == 1, rows
    return rows[0]


def test_vastai_disk_is_the_searched_storage_total_cost_and_egress_inet_up_cost() -> None:
    [record] = load("vastai/offers_cli_raw_rtx4090_2024.verbatim.json")
    offers = VastAiAdapter().parse([{"offers": [record]}], fetched_at=NOW).offers
    row = costed(offers, Job(hours=10, storage_gb=50, egress_gb=200), gpu_count=1)
    # usd_per_hour is kept to a millionth of a dollar (adapters.schema.USD_QUANTUM)
    assert row["job_cost_usd"] == pytest.approx(10 * record["dph_base"], abs=10 * 5e-7)
    # the search priced allocated_storage = 5 GB: storage_total_cost per hour for 5 GB, the
    # dph_total - dph_base difference; 50 GB is ten times that, 10 GB of it the instance's
    # disk (required), 40 GB further disk
    per_gb_hour = record["storage_total_cost"] / 5
    assert record["dph_total"] - record["dph_base"] == pytest.approx(5 * per_gb_hour)
    assert row["required_extras_usd"] == pytest.approx(10 * 10 * per_gb_hour)
    assert row["storage_cost_usd"] == pytest.approx(40 * 10 * per_gb_hour)
    assert row["egress_cost_usd"] == 200 * record["inet_up_cost"] == 0.0
    extras = row["all_in_cost_usd"] - row["job_cost_usd"]
    assert extras == pytest.approx(50 * 10 * per_gb_hour)


def test_vastai_egress_at_inet_up_cost() -> None:
    payload = load("vastai/bundles_response.reconstructed.json")
    [record] = [r for r in payload["offers"] if r.get("inet_up_cost")][:1]
    offers = VastAiAdapter().parse([{"offers": [record]}], fetched_at=NOW).offers
    row = costed(offers, Job(hours=1, egress_gb=1000), gpu_count=record["num_gpus"])
    assert row["egress_cost_usd"] == pytest.approx(1000 * record["inet_up_cost"])
    month_per_gb = record["storage_cost"] / 720  # Vast's storage_cost: per 30-day month
    assert row["required_extras_usd"] == pytest.approx(10 * month_per_gb)  # the 10 GB disk


def test_tensordock_bills_its_100_gb_minimum_storage_per_gb_hour() -> None:
    payload = load("tensordock/v2_locations.docs_plus_reconstructed.json")
    offers = TensorDockAdapter().parse([payload], fetched_at=NOW).offers
    gpu = payload["data"]["locations"][0]["gpus"][0]  # the docs' H100 SXM5, Austin
    rates = gpu["pricing"]
    one = next(o for o in offers if o.gpu_count == 1 and o.gpu_raw_name == gpu["v0Name"])
    row = costed(offers, Job(hours=10), offer_id=one.offer_id)
    compute = (
        gpu["price_per_hr"] + one.vcpus * rates["per_vcpu_hr"] + one.ram_gb * rates["per_gb_ram_hr"]
    )
    assert row["job_cost_usd"] == pytest.approx(10 * compute)
    assert row["job_storage_gb"] == 100
    assert row["required_extras_usd"] == pytest.approx(10 * 100 * rates["per_gb_storage_hr"])
    assert row["storage_cost_usd"] == 0
    more = costed(offers, Job(hours=10, storage_gb=300), offer_id=one.offer_id)
    assert more["storage_cost_usd"] == pytest.approx(10 * 200 * rates["per_gb_storage_hr"])
    assert more["all_in_cost_usd"] == pytest.approx(
        10 * (compute + 300 * rates["per_gb_storage_hr"])
    )


def test_runpod_bills_the_container_disk_and_volume_at_the_documented_price() -> None:
    payload = load("runpod/graphql_gpuTypes_pricing.reconstructed.json")
    offers = RunPodAdapter().parse([payload], fetched_at=NOW).offers
    h100 = payload["data"]["gpuTypes"][0]
    one = next(
        o
        for o in offers
        if o.gpu_raw_name == h100["id"]
        and o.gpu_count == 1
        and o.datacenter is True
        and o.term is RentalTerm.ON_DEMAND
    )
    row = costed(offers, Job(hours=10, storage_gb=100), offer_id=one.offer_id)
    assert row["job_cost_usd"] == pytest.approx(10 * h100["securePrice"])
    per_gb_hour = 0.10 / 730  # $0.10 per GB-month (docs.runpod.io/pods/storage)
    assert row["required_extras_usd"] == pytest.approx(10 * 20 * per_gb_hour)  # container disk
    assert row["storage_cost_usd"] == pytest.approx(10 * 80 * per_gb_hour)
    assert row["all_in_cost_usd"] == pytest.approx(10 * (h100["securePrice"] + 100 * per_gb_hour))


# --- the sample's cheapest configuration -------------------------------------------------


def _sample() -> pl.DataFrame:
    return offers_to_frame([o for run in replay_sample() for o in run.offers])


def test_a_retired_providers_offers_are_never_ranked() -> None:
    """CUDO Compute closed its public platform on 2026-03-31: its offers, recorded or stored
    before, are in no frame, so no answer ranks them, whatever the job."""
    recorded = load("cudo/vms_machine_types.gpuhunt_fixture.verbatim.json")
    offers = CudoAdapter().parse([recorded], fetched_at=NOW).offers
    assert offers  # the adapter still reads its recorded answer
    frame = offers_to_frame([*offers, *(o for run in replay_sample() for o in run.offers)])
    assert "cudo" not in set(frame["provider"])
    for job in (Job(hours=100), Job(hours=5000)):
        ranked = rank(frame, job=job, options=RankOptions(limit=None, now=NOW))
        assert ranked.height and "cudo" not in set(ranked["provider"])


def test_runnable_minimums_leave_the_too_small_vm_out() -> None:
    small = {"cascade-lake/1gpu", "epyc-rome-rtx-a5000/1gpu"}
    req = Requirement(min_vcpus_per_gpu=2, min_ram_gb_per_gpu=8, allow_unknown=True)
    ranked = rank(_sample(), req, Job(hours=1), RankOptions(limit=None, now=NOW))
    assert not small & set(ranked["offer_id"])
    assert ranked.height > 10
    every = rank(_sample(), Requirement(min_ram_gb_per_gpu=8), Job(hours=1), RankOptions(now=NOW))
    assert every["ram_gb"].is_not_null().all()  # unknown RAM is not taken as enough
