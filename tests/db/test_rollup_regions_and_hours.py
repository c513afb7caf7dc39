"""The rollups per region class and per hour, and the share of offers in stock, on a small
history built by hand: three H100 offers in three countries over two snapshots an hour
apart, whose figures are worked out below.

    10:15  a1 US 2.00 in stock    a2 DE 4.00 out of stock    a3 (no country) 3.00 in stock
    11:20  a1 US 2.50 in stock    a2 DE 4.00 out of stock    a3 gone
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from gpuscout.adapters.regions import RegionClass
from gpuscout.db.history import daily_index, hourly_index, hourly_window
from gpuscout.db.models import PriceHistory, PriceRollup
from gpuscout.db.snapshots import store_snapshot

from .factories import offer, ok

FIRST = datetime(2025, 3, 3, 10, 15, tzinfo=UTC)
SECOND = datetime(2025, 3, 3, 11, 20, tzinfo=UTC)
DAY = FIRST.date()


def _a1(price: str) -> Any:
    return offer("alpha", "a1", price, country="US", available_now=True)


A2 = offer("alpha", "a2", "4.00", country="DE", available_now=False)
A3 = offer("alpha", "a3", "3.00", available_now=True)


def _store(engine: Engine, offers: list[Any], when: datetime, **options: Any) -> None:
    store_snapshot(
        engine, [ok("alpha", offers, when)], started_at=when, finished_at=when, **options
    )


def _history(engine: Engine, **options: Any) -> None:
    _store(engine, [_a1("2.00"), A2, A3], FIRST, **options)
    _store(engine, [_a1("2.50"), A2], SECOND, **options)


def _rollup_rows(engine: Engine) -> list[tuple[Any, ...]]:
    r = PriceRollup.__table__.c
    columns = [c for c in PriceRollup.__table__.c if c.name != "id"]
    order = (r.series, r.term, r.region_class, r.period, r.day, r.hour)
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(sa.select(*columns).order_by(*order))]


def _hour_rows(engine: Engine) -> list[datetime]:
    r = PriceRollup.__table__.c
    query = sa.select(r.day, r.hour).where(r.period == "hour").distinct()
    with engine.connect() as connection:
        found = connection.execute(query).all()
    return sorted(
        datetime.combine(d, datetime.min.time(), UTC) + timedelta(hours=h) for d, h in found
    )


def test_the_day_counts_each_region_class_and_the_share_in_stock(engine: Engine) -> None:
    _history(engine)

    def day(region: RegionClass | None) -> dict[str, Any]:
        frame = daily_index(
            engine, gpu="H100", start=DAY, end=DAY, region_class=region, availability=True
        )
        return frame.row(0, named=True)

    every = day(None)
    # a1 at its last price of the day, a2 and a3; a1 and a3 were in stock
    assert (every["offers"], every["min_usd_per_gpu_hour"]) == (3, 2.5)
    assert every["median_usd_per_gpu_hour"] == 3.0
    assert every["availability_share"] == pytest.approx(2 / 3)
    by_region = {region: day(region) for region in RegionClass}
    assert by_region[RegionClass.NORTH_AMERICA]["median_usd_per_gpu_hour"] == 2.5
    assert by_region[RegionClass.NORTH_AMERICA]["availability_share"] == 1.0
    assert by_region[RegionClass.EUROPE]["median_usd_per_gpu_hour"] == 4.0
    assert by_region[RegionClass.EUROPE]["availability_share"] == 0.0
    assert by_region[RegionClass.UNKNOWN]["median_usd_per_gpu_hour"] == 3.0
    assert by_region[RegionClass.ASIA_PACIFIC]["offers"] == 0
    assert sum(row["offers"] for row in by_region.values()) == every["offers"]
    # without the availability asked for, the answer is the index as it was
    plain = daily_index(engine, gpu="H100", start=DAY, end=DAY)
    assert "availability_share" not in plain.columns


def test_the_hours_read_their_own_prices_and_the_held_ones_after(engine: Engine) -> None:
    _history(engine)
    ten = FIRST.replace(minute=0)
    frame = hourly_index(engine, gpu="H100", start=ten, end=ten + timedelta(hours=2))
    got = frame.select("hour", "offers", "min_usd_per_gpu_hour", "availability_share")
    assert got.rows() == [
        (ten, 3, 2.0, pytest.approx(2 / 3)),
        # a3 went at 11:20: it counts in that hour; a1 at its new price
        (ten + timedelta(hours=1), 3, 2.5, pytest.approx(2 / 3)),
        # after the last snapshot: the prices and stock it left open
        (ten + timedelta(hours=2), 2, 2.5, 0.5),
    ]
    europe = hourly_index(engine, gpu="H100", start=ten, end=ten, region_class=RegionClass.EUROPE)
    assert europe["offers"].to_list() == [1]


def test_a_name_that_is_no_series_has_no_region_class_or_hours(engine: Engine) -> None:
    _history(engine)
    with pytest.raises(ValueError, match="rollups"):
        daily_index(engine, gpu="A100 80GB", start=DAY, end=DAY, region_class=RegionClass.EUROPE)
    with pytest.raises(ValueError, match="rollups"):
        hourly_index(engine, gpu="H100", start=FIRST, end=SECOND, exclude=("beta",))


def test_the_hourly_window_is_the_kept_days_only() -> None:
    now = datetime(2025, 3, 3, 11, 40, tzinfo=UTC)
    hour = now.replace(minute=0)
    assert hourly_window(now, 1, 7) == (hour - timedelta(hours=23), hour)
    assert hourly_window(now, 7, 7)[0] == hour - timedelta(hours=7 * 24 - 1)
    with pytest.raises(ValueError, match="the last 7 days"):
        hourly_window(now, 8, 7)
    with pytest.raises(ValueError, match="none are kept"):
        hourly_window(now, 1, 0)


def test_hour_rows_beyond_the_kept_days_are_pruned(engine: Engine) -> None:
    later = FIRST + timedelta(days=2)
    _store(engine, [_a1("2.00"), A2], FIRST, hourly_days=1)
    assert _hour_rows(engine) == [FIRST.replace(minute=0)]
    _store(engine, [_a1("2.00"), A2], later, hourly_days=1)
    hours = _hour_rows(engine)
    # the 24 hours up to the last snapshot's, each written (the ones between snapshots too)
    assert hours[0] == later.replace(minute=0) - timedelta(hours=23)
    assert hours[-1] == later.replace(minute=0)
    assert len(hours) == 24
    _store(engine, [_a1("2.00"), A2], later + timedelta(hours=1), hourly_days=0)
    assert _hour_rows(engine) == []


def test_the_same_snapshot_twice_writes_the_same_rows(engine: Engine) -> None:
    _history(engine)
    written = _rollup_rows(engine)
    assert {row[0] for row in written} == {"day", "hour", "open"}
    _store(engine, [_a1("2.50"), A2], SECOND)
    assert _rollup_rows(engine) == written


def test_the_migration_fills_the_countries_and_builds_the_rollups(
    engine: Engine, db_url: str
) -> None:
    from alembic import command

    from gpuscout.db.migrate import alembic_config, upgrade

    _history(engine)
    before = daily_index(
        engine, gpu="H100", start=DAY, end=DAY, region_class=RegionClass.EUROPE, availability=True
    )
    command.downgrade(alembic_config(db_url), "0010")
    with engine.connect() as connection:
        assert "country" not in {
            c["name"] for c in sa.inspect(connection).get_columns("price_history")
        }
    upgrade(db_url)
    h = PriceHistory.__table__.c
    with engine.connect() as connection:
        countries = connection.execute(
            sa.select(h.offer_key, h.country).order_by(h.offer_key, h.valid_from)
        ).all()
    # from the current offers' records, and from the record kept when a3 went
    assert [country for _, country in countries] == ["US", "US", "DE", None]
    offers = {None: 3, RegionClass.EUROPE: 1, RegionClass.NORTH_AMERICA: 1}
    for region, count in offers.items():
        after = daily_index(
            engine, gpu="H100", start=DAY, end=DAY, region_class=region, availability=True
        )
        assert after["offers"].to_list() == [count]
        if region is RegionClass.EUROPE:
            assert after.equals(before)
