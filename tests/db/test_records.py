"""The batched record serialisation is byte for byte the per-offer one."""

from __future__ import annotations

from decimal import Decimal

from adapters.schema import Offer
from db.records import hash64, record_json, record_jsons

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
    assert record_jsons([]) == []


def test_record_jsons_of_a_subclass_fall_back_to_its_serialiser() -> None:
    class Tagged(Offer):
        tag: str = "t"

    offers = [
        offer(offer_id="a"),
        Tagged(**offer(offer_id="b").model_dump(exclude={"usd_per_hour"})),
    ]
    assert [r.decode() for r in record_jsons(offers)] == [record_json(o) for o in offers]
