"""The renter's checklist: the table's invariants, and a few offers checked item by item."""

from __future__ import annotations

from decimal import Decimal

import polars as pl

from gpuscout.adapters.schema import FIELD_GROUPS, Cooling, Fabric, StorageType
from gpuscout.pricing.checklist import CHECKLIST, SEED_SERVER, checklist_requirement
from gpuscout.pricing.expressions import qualifies
from gpuscout.pricing.frame import OFFER_SCHEMA, offers_to_frame
from gpuscout.pricing.offer_checklist import Checklist, Status, checklists, counts_frame, summaries
from gpuscout.pricing.rank import rank_page
from gpuscout.pricing.requirement import PRESETS, Requirement, preset

from .factories import AT_NOW, NOW, make_offer

MET, NOT_MET, UNKNOWN = Status.MET, Status.NOT_MET, Status.UNKNOWN

#: The seed's example server, with every item of the checklist published.
SEED_FIELDS: dict[str, object] = {
    "gpu_model": "A100-SXM4-80GB",
    "cpu_model": "AMD EPYC 7702 64-Core Processor",
    "cpu_sockets": 2,
    "cpu_cores": 128.0,
    "ram_gb": 512.0,
    "ram_ecc": True,
    "storage_gb": 15360.0,
    "storage_type": StorageType.SSD,
    "fabric": Fabric.INFINIBAND,
    "fabric_gbps": 400.0,
    "psu_watts": 8000.0,
    "psu_redundancy": "2+2",
    "cooling": Cooling.AIR,
    "chassis_form_factor": "4U",
    "os_images": ("Ubuntu 22.04 LTS",),
    "cuda_version": "12.2",
    "frameworks": ("PyTorch", "TensorFlow"),
    "backup_service": True,
    "support_tier": "business",
}


def _checklist(**fields: object) -> Checklist:
    (checklist,) = checklists(offers_to_frame([make_offer(**fields)]))
    return checklist


def _statuses(checklist: Checklist) -> dict[str, Status]:
    return {c.key: c.status for c in checklist.checks}


def test_the_table_is_well_formed() -> None:
    keys = [e.key for e in CHECKLIST]
    assert len(keys) == len(set(keys))
    for entry in CHECKLIST:
        assert entry.group in FIELD_GROUPS, entry.key
        assert set(entry.fields) <= set(OFFER_SCHEMA), entry.key
        Requirement.model_validate(dict(entry.requirement))  # each item is a valid filter


def test_the_checklist_preset_is_the_items_and_the_seed_server() -> None:
    checklist = preset("full-checklist")
    assert checklist.min_psu_watts == 2000 and checklist.psu_redundant is True
    assert checklist.min_chassis_u == 4 and checklist.min_cuda_version == "11.0"
    assert checklist.os_images == ("Ubuntu 22.04", "Ubuntu 24.04")
    assert checklist.frameworks == ("pytorch", "tensorflow") and checklist.backup_service
    assert checklist.min_cpu_sockets == 2 and checklist.server_cpu and checklist.ram_ecc
    # the example server's own figures, where it is stricter than an item
    assert checklist.min_gpus == 8 and checklist.min_ram_gb == 512
    assert set(checklist.gpu_models()) == {"A100-SXM4-80GB", "A100-PCIE-80GB"}
    assert PRESETS["8xa100-pretrain"] == dict(SEED_SERVER)
    assert checklist_requirement()["min_psu_watts"] == 2000


def test_the_seed_server_meets_every_item() -> None:
    seed = _checklist(**SEED_FIELDS)
    assert set(_statuses(seed).values()) == {MET}
    assert seed.summary == f"{len(CHECKLIST)} of {len(CHECKLIST)} met"
    by_key = {c.key: c for c in seed.checks}
    assert by_key["psu_watts"].value == "psu_watts: 8000"
    assert by_key["fabric"].value == "fabric: infiniband; fabric_gbps: 400"
    assert by_key["os"].value == "os_images: Ubuntu 22.04 LTS"
    assert by_key["support"].value == "support_tier: business"


def test_a_cloud_vm_item_by_item() -> None:
    """A 1-GPU VM that publishes a few fields: what it says decides, the rest is unknown."""
    vm = _checklist(
        offer_id="1x-h100",
        gpu_count=1,
        price_amount=Decimal("2"),
        cpu_model="Intel Core i9-13900K",
        ram_gb=64.0,
        storage_type=StorageType.NETWORK,
        fabric=Fabric.ETHERNET,
        fabric_gbps=100.0,
        psu_redundancy="1+0",
        os_images=("ubuntu-20.04", "lambda-stack-22-04"),
        cuda_version="10.2",
        frameworks=("jax",),
        backup_service=False,
        sla_uptime_pct=99.5,
    )
    assert _statuses(vm) == {
        "server_cpu": NOT_MET,  # a desktop line
        "cpu_sockets": UNKNOWN,  # not stated
        "gpu_count": NOT_MET,
        "gpu_model": MET,  # an H100
        "ram": NOT_MET,
        "ram_ecc": UNKNOWN,
        "fast_storage": NOT_MET,  # network storage
        "fabric": NOT_MET,  # Ethernet
        "psu_watts": UNKNOWN,
        "psu_redundancy": NOT_MET,
        "cooling": UNKNOWN,
        "chassis": UNKNOWN,
        "os": NOT_MET,  # 20.04; lambda-stack does not say Ubuntu
        "cuda": NOT_MET,
        "frameworks": NOT_MET,
        "backup": NOT_MET,
        "price_term": MET,
        "support": MET,  # an SLA
    }
    assert vm.summary == f"3 of {len(CHECKLIST)} met, 5 unknown"
    assert vm.counts()["not_met"] == len(CHECKLIST) - 8
    by_key = {c.key: c for c in vm.checks}
    assert by_key["cpu_sockets"].value == "not stated"
    assert by_key["price_term"].value == "usd_per_hour: 2; term: on_demand"


def test_a_bare_offer_is_unknown_where_it_says_nothing() -> None:
    bare = _statuses(_checklist())
    stated = {"gpu_count", "gpu_model", "price_term"}
    assert {k for k, s in bare.items() if s is not UNKNOWN} == stated


def test_items_agree_with_their_filters() -> None:
    """Met exactly where the item's own requirement admits the offer."""
    offers = [
        make_offer(offer_id="a", psu_watts=2400.0, chassis_form_factor="2U", cuda_version="12.1"),
        make_offer(offer_id="b", psu_watts=1200.0, chassis_form_factor="6U"),
        make_offer(offer_id="c"),
    ]
    frame = offers_to_frame(offers)
    lists = checklists(frame)
    for entry in (e for e in CHECKLIST if e.requirement):
        admitted = frame.select(qualifies(Requirement.model_validate(dict(entry.requirement)), NOW))
        met = [next(c for c in cl.checks if c.key == entry.key).status is MET for cl in lists]
        assert admitted.to_series().fill_null(False).to_list() == met, entry.key


def test_summaries_of_ranked_rows_match_the_checklists() -> None:
    offers = [
        make_offer(offer_id="a", psu_watts=2400.0, ram_ecc=True),
        make_offer(offer_id="b", gpu_count=2, price_amount=Decimal("5")),
    ]
    frame = offers_to_frame(offers)
    page = rank_page(frame, options=AT_NOW)
    ranked = page.rows
    rows = frame[page.offer_rows]  # as the API fetches a page's rows
    assert rows["offer_id"].to_list() == ranked["offer_id"].to_list()
    expected = [c.summary for c in checklists(rows)]
    assert summaries(frame, ranked).to_list() == expected
    assert counts_frame(rows)["summary"].to_list() == expected
    missing = ranked.with_columns(offer_id=pl.lit("gone"))
    assert summaries(frame, missing).to_list() == [None, None]


def test_the_binding_note_names_the_checklist_items_the_closest_offers_miss() -> None:
    from gpuscout.pricing.coverage import binding_note

    near = make_offer(
        **{**SEED_FIELDS, "chassis_form_factor": "2U", "backup_service": False, "offer_id": "near"}
    )
    note = binding_note(offers_to_frame([near]), preset("full-checklist"), NOW)
    assert note is not None and note.endswith("miss only backup_service, min_chassis_u")
