"""Offers as Parquet and back: every field, exact money, refused files named."""

from __future__ import annotations

import io
from decimal import Decimal

import polars as pl
import pytest

from gpuscout.adapters.sample import replay_sample
from gpuscout.service.catalog.offers_file import (
    OFFER_COLUMNS,
    OffersFileError,
    offers_from_parquet,
    offers_to_parquet,
)


def test_every_field_of_every_offer_comes_back_equal() -> None:
    offers = [o for run in replay_sample(["vastai", "aws", "runpod"]) for o in run.offers]
    assert offers
    back = offers_from_parquet(offers_to_parquet(offers))
    assert back == offers  # every field, in order
    assert [o.usd_per_hour for o in back] == [o.usd_per_hour for o in offers]


def test_money_is_exact_decimal_text_and_usd_is_written_for_readers() -> None:
    offers = [o for run in replay_sample(["vastai"]) for o in run.offers][:3]
    frame = pl.read_parquet(io.BytesIO(offers_to_parquet(offers)))
    assert frame.schema["price_amount"] == pl.String
    assert [Decimal(v) for v in frame["price_amount"]] == [o.price_amount for o in offers]
    assert frame["price_amount"].to_list() == [str(o.price_amount) for o in offers]
    assert frame["usd_per_hour"].to_list() == [str(o.usd_per_hour) for o in offers]
    assert list(frame.columns) == list(OFFER_COLUMNS)


def test_an_empty_file_reads_as_no_offers() -> None:
    assert offers_from_parquet(offers_to_parquet([])) == []


def test_a_file_that_is_not_parquet_is_named() -> None:
    with pytest.raises(OffersFileError, match="not a Parquet file"):
        offers_from_parquet(b"PAR1 but not really")


def test_a_missing_or_mistyped_column_is_named() -> None:
    offers = [o for run in replay_sample(["vastai"]) for o in run.offers][:2]
    frame = pl.read_parquet(io.BytesIO(offers_to_parquet(offers)))
    out = io.BytesIO()
    frame.drop("price_currency").write_parquet(out)
    with pytest.raises(OffersFileError, match="missing column.*price_currency"):
        offers_from_parquet(out.getvalue())
    out = io.BytesIO()
    frame.with_columns(pl.col("gpu_count").cast(pl.String)).write_parquet(out)
    with pytest.raises(OffersFileError, match="column gpu_count: String"):
        offers_from_parquet(out.getvalue())


def test_an_offer_the_schema_refuses_is_named() -> None:
    offers = [o for run in replay_sample(["vastai"]) for o in run.offers][:2]
    frame = pl.read_parquet(io.BytesIO(offers_to_parquet(offers)))
    out = io.BytesIO()
    frame.with_columns(price_currency=pl.lit("XXX")).write_parquet(out)
    with pytest.raises(OffersFileError, match="refuses.*currency"):
        offers_from_parquet(out.getvalue())
