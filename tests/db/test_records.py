"""The batched record serialisation is byte for byte the per-offer one."""

from __future__ import annotations

from decimal import Decimal

from gpuscout.adapters.collect import RunStatus
from gpuscout.adapters.sample import replay_sample
from gpuscout.adapters.schema import Offer
from gpuscout.db.records import hash64, hash64s, record_json, record_jsons

from .factories import offer


def test_record_jsons_equal_record_json_per_offer() -> None:
    offers = [
        offer(offer_id="a"),
        offer(offer_id='b},{"provider":"x', instance_name='},{"provider":\n"y"', country="de"),
        offer(offer_id="c", price="2.50", os_images=("ubuntu", "debian"), frameworks=()),
        offer(offer_id="ünï", price=Decimal("2.5"), term_variant="spot|zone-a", vcpus=8.0),
        offer(provider="beta", offer_id="d", gpu_model=None, gpu_count=0, price_basis="instance"),
    ]
    records = record_jsons(offers)
    assert [r.decode() for r in records] == [record_json(o) for o in offers]
    assert [hash64(r) for r in records] == [hash64(record_json(o)) for o in offers]
    assert hash64s(records) == tuple(hash64(r) for r in records)
    assert {h < 0 for h in hash64s(records)} == {True, False}  # both signs unpacked
    assert record_jsons([]) == []
    assert hash64s([]) == ()
    # one record is both the first and the last of the list: both brackets come off
    assert [r.decode() for r in record_jsons(offers[:1])] == [record_json(offers[0])]


def test_record_jsons_of_a_subclass_fall_back_to_its_serialiser() -> None:
    class Tagged(Offer):
        tag: str = "t"

    offers = [
        offer(offer_id="a"),
        Tagged(**offer(offer_id="b").model_dump(exclude={"usd_per_hour"})),
    ]
    assert [r.decode() for r in record_jsons(offers)] == [record_json(o) for o in offers]


def _every_field_set() -> Offer:
    return offer(
        seller="coreweave",
        instance_name="gpu-8x",
        country="US",
        raw_ref="https://example.invalid/r/1",
        via_catalog="gpuhunt v3",
        catalog_version="20261207-1",
        catalog_licence="MPL-2.0",
        gpu_raw_name="NVIDIA H100 80GB HBM3",
        gpu_vendor="nvidia",
        gpu_count=1,
        gpu_fraction=0.5,
        gpu_mig_profile="1g.10gb",
        gpu_memory_gb=80.0,
        gpu_form_factor="sxm",
        gpu_interconnect="nvlink",
        gpu_nvlink_gbs=900.0,
        gpu_pcie_gen=5,
        cpu_model="Xeon 8480+",
        cpu_vendor="intel",
        cpu_arch="x86_64",
        cpu_sockets=2,
        cpu_cores=112.0,
        vcpus=224.0,
        ram_gb=2048.0,
        ram_ecc=True,
        storage_gb=30720.0,
        storage_type="nvme",
        disk_bandwidth_mbps=1e16,
        public_bandwidth_up_mbps=10000.0,
        public_bandwidth_down_mbps=0.1 + 0.2,
        fabric="infiniband",
        fabric_gbps=3200.0,
        multi_node=True,
        psu_watts=10200.0,
        psu_redundancy="2+2",
        cooling="liquid",
        chassis_form_factor="8U",
        expandability_notes="none",
        os_images=("ubuntu-22.04", "ubuntu-24.04"),
        cuda_version="12.4",
        driver_version="550.54",
        frameworks=("pytorch",),
        backup_service=False,
        price="21.123456789012345",
        price_basis="gpu",
        price_unit="month",
        term="commit_1y",
        term_variant="all-upfront",
        interruption_band="5-10%",
        min_rental_hours=1.5,
        billing_increment_s=60,
        billing_cap_hours_per_month=672.0,
        prepaid=True,
        storage_price_per_gb_month=Decimal("0.0727456116"),
        storage_included_gb=0.0,
        boot_disk_min_gb=107.3741824,
        ipv4_price_per_hour=Decimal("0"),
        boot_disk_price_per_hour=Decimal("0.0008767123"),
        egress_price_per_gb=Decimal("1E-2"),
        support_tier="enterprise",
        sla_uptime_pct=99.99,
        reliability=0.987654321,
        verified=True,
        datacenter=True,
        available_now=False,
        available_count=3,
    )


def test_records_of_every_field_and_the_sample_equal_the_models_serialiser() -> None:
    """The batch serialises field dicts with enums typed as text (gpuscout.db.records._RecordDict):
    every field and enum is written as the model's own serialiser writes it."""
    full = _every_field_set()
    assert all(value is not None for value in full.__dict__.values())
    sample = [o for run in replay_sample() if run.status is RunStatus.OK for o in run.offers]
    offers = [full, *sample]
    assert [r.decode() for r in record_jsons(offers)] == [record_json(o) for o in offers]
    assert len(sample) > 100
