from __future__ import annotations

from decimal import Decimal

from adapters.schema import PriceBasis, RentalTerm
from pricing.frame import OFFER_SCHEMA, offers_to_frame

from .factories import make_offer


def test_one_row_per_offer_exact_price_and_config_id() -> None:
    offers = [
        make_offer(price_amount=Decimal("2.123456789"), price_basis=PriceBasis.GPU),
        make_offer(term=RentalTerm.INTERRUPTIBLE, price_basis=PriceBasis.GPU),
        make_offer(offer_id="other"),
    ]
    frame = offers_to_frame(offers)
    assert frame.height == 3
    assert list(frame.columns) == [*OFFER_SCHEMA, "config_id"]
    assert frame["price_amount"][0] == Decimal("2.123456789")
    assert frame["usd_per_hour"][0] == float(offers[0].usd_per_hour)
    ids = frame["config_id"].to_list()
    assert ids[0] == ids[1] != ids[2]


def test_empty() -> None:
    assert offers_to_frame([]).height == 0
