"""The rollups answer the daily index exactly as a scan of the whole history did.

The oracle is the index as it was computed before rollups: every price row of the GPU and
term valid in the window, one price per offer and day (the last valid that day).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import polars as pl
import pytest
import sqlalchemy as sa
from polars.testing import assert_frame_equal
from sqlalchemy.engine import Engine

from gpuscout.adapters.collect import ProviderRun
from gpuscout.adapters.run import Origin
from gpuscout.adapters.schema import Offer
from gpuscout.db.history import INDEX_SCHEMA, daily_index, gpu_filter
from gpuscout.db.models import PriceHistory, PriceRollup
from gpuscout.db.rollups import rebuild_rollups, series_named, update_rollups
from gpuscout.db.snapshots import store_snapshot

from .factories import offer, ok

START = datetime(2025, 3, 1, 0, 0, tzinfo=UTC)
MODELS = ("H100-SXM5-80GB", "H100-PCIe-80GB", "A100-SXM4-80GB", "RTX-4090")
NAMES = ("H100-SXM5-80GB", "H100", "A100-SXM4-80GB", "nvidia", "RTX 4090")


def oracle_index(engine: Engine, *, gpu: str, start: date, end: date, term: str) -> pl.DataFrame:
    """The daily index as a full scan of the history computes it."""
    h = PriceHistory.__table__.c
    lower = datetime.combine(start, datetime.min.time(), tzinfo=UTC)
    upper = datetime.combine(end + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    query = sa.select(
        h.offer_key, h.provider, h.usd_per_gpu_hour, h.valid_from, h.valid_to, h.origin
    ).where(
        gpu_filter(gpu),
        h.term == term,
        h.usd_per_gpu_hour.is_not(None),
        h.valid_from < upper,
        sa.or_(h.valid_to.is_(None), h.valid_to > lower),
    )
    with engine.connect() as connection:
        rows = connection.execute(query).all()

    def naive(at: datetime | None) -> datetime | None:
        return None if at is None else at.astimezone(UTC).replace(tzinfo=None)

    prices = pl.DataFrame(
        [(k, p, x, naive(f), naive(t), o == Origin.SAMPLE.value) for k, p, x, f, t, o in rows],
        schema={
            "offer_key": pl.String,
            "provider": pl.String,
            "usd_per_gpu_hour": pl.Float64,
            "valid_from": pl.Datetime("us"),
            "valid_to": pl.Datetime("us"),
            "sample": pl.Boolean,
        },
        orient="row",
    )
    price = pl.col("usd_per_gpu_hour")
    per_day = (
        prices.lazy()
        .with_columns(
            first_day=pl.max_horizontal(pl.col("valid_from").dt.date(), pl.lit(start)),
            last_day=pl.min_horizontal(
                (pl.col("valid_to") - pl.duration(microseconds=1)).dt.date().fill_null(end),
                pl.lit(end),
            ),
        )
        .filter(pl.col("first_day") <= pl.col("last_day"))
        .with_columns(day=pl.date_ranges("first_day", "last_day", "1d"))
        .explode("day")
        .sort("day", "offer_key", "valid_from")
        .group_by("day", "offer_key")
        .agg(pl.col("provider").last(), price.last(), pl.col("sample").last())
        .group_by("day")
        .agg(
            median_usd_per_gpu_hour=price.median(),
            p10_usd_per_gpu_hour=price.quantile(0.1, interpolation="linear"),
            p90_usd_per_gpu_hour=price.quantile(0.9, interpolation="linear"),
            min_usd_per_gpu_hour=price.min(),
            offers=pl.len(),
            providers=pl.col("provider").n_unique(),
            sample_offers=pl.col("sample").sum(),
        )
    )
    days = pl.DataFrame({"day": pl.date_range(start, end, "1d", eager=True)})
    return (
        days.lazy()
        .join(per_day, on="day", how="left")
        .with_columns(pl.col("offers", "providers", "sample_offers").fill_null(0))
        .sort("day")
        .collect()
        .cast(INDEX_SCHEMA)  # type: ignore[arg-type]
    )


def _market(rng: random.Random, provider: str, size: int) -> dict[str, dict[str, Any]]:
    return {
        f"{provider}-{i}": {
            "gpu_model": rng.choice(MODELS),
            "term": rng.choice(("on_demand", "on_demand", "interruptible")),
            "gpu_count": rng.choice((1, 2, 8)),
            "price": rng.randint(50, 900),
        }
        for i in range(size)
    }


def _offers(provider: str, market: dict[str, dict[str, Any]]) -> list[Offer]:
    return [
        offer(
            provider,
            key,
            f"{spec['price'] * spec['gpu_count'] / 100:.2f}",
            gpu_model=spec["gpu_model"],
            gpu_count=spec["gpu_count"],
            term=spec["term"],
        )
        for key, spec in market.items()
    ]


def _churn(rng: random.Random, market: dict[str, dict[str, Any]], provider: str, n: int) -> None:
    for key in rng.sample(sorted(market), k=min(3, len(market))):
        market[key]["price"] = max(10, market[key]["price"] + rng.randint(-80, 80))
    if rng.random() < 0.3 and len(market) > 2:
        del market[rng.choice(sorted(market))]
    if rng.random() < 0.3:
        market |= {f"{provider}-new{n}": _market(rng, provider, 1)[f"{provider}-0"]}


def grow_history(engine: Engine, seed: int) -> list[datetime]:
    """Snapshots over 12 days at random hours (several a day, some days none), three
    providers repricing, adding and dropping offers, one of them replaying the sample
    once; returns the snapshot times."""
    rng = random.Random(seed)
    markets = {p: _market(rng, p, 12) for p in ("alpha", "beta", "gamma")}
    times: list[datetime] = []
    for day in range(12):
        if day in (4, 5, 9):  # no snapshot: the days still hold the open prices
            continue
        hours = sorted(rng.sample(range(24), k=rng.choice((1, 2, 3))))
        for n, hour in enumerate(hours):
            when = START + timedelta(days=day, hours=hour, minutes=rng.randint(0, 59))
            runs: list[ProviderRun] = []
            for provider, market in markets.items():
                _churn(rng, market, provider, day * 10 + n)
                run = ok(provider, _offers(provider, market), when)
                if provider == "gamma" and day == 2:
                    run = dataclasses.replace(run, origin=Origin.SAMPLE)
                runs.append(run)
            store_snapshot(engine, runs, started_at=when, finished_at=when + timedelta(minutes=1))
            times.append(when)
    return times


def _rollup_rows(engine: Engine) -> list[tuple[Any, ...]]:
    r = PriceRollup.__table__.c
    columns = [c for c in PriceRollup.__table__.c if c.name != "id"]
    with engine.connect() as connection:
        return [
            tuple(row)
            for row in connection.execute(
                sa.select(*columns).order_by(
                    r.series, r.term, r.region_class, r.period, r.day, r.hour
                )
            )
        ]


@pytest.mark.parametrize("seed", [1, 2])
def test_rollups_answer_as_the_full_scan_did(engine: Engine, seed: int) -> None:
    grow_history(engine, seed)
    windows: Sequence[tuple[date, date]] = (
        (date(2025, 3, 1), date(2025, 3, 12)),
        (date(2025, 2, 25), date(2025, 3, 20)),  # before the first and after the last
        (date(2025, 3, 5), date(2025, 3, 6)),  # days no snapshot saw
        (date(2025, 3, 3), date(2025, 3, 3)),  # the sample's day
    )
    compared = 0
    for name in NAMES:
        assert series_named(name) is not None
        for term in ("on_demand", "interruptible"):
            for start, end in windows:
                got = daily_index(engine, gpu=name, start=start, end=end, term=term)
                want = oracle_index(engine, gpu=name, start=start, end=end, term=term)
                assert_frame_equal(got, want)
                compared += int(want["offers"].sum())
    assert compared > 500


def test_a_rerun_changes_nothing_and_the_migration_builds_the_same(engine: Engine) -> None:
    times = grow_history(engine, 3)
    written = _rollup_rows(engine)
    assert written
    with engine.begin() as connection:
        update_rollups(connection, first=times[-1], last=times[-1])
    assert _rollup_rows(engine) == written
    with engine.begin() as connection:
        rebuild_rollups(connection, until=times[-1].date(), days_per_pass=5)
    assert _rollup_rows(engine) == written


def test_names_that_are_no_series_read_the_history(engine: Engine) -> None:
    grow_history(engine, 4)
    assert series_named("A100 80GB") is None
    start, end = date(2025, 3, 1), date(2025, 3, 12)
    for gpu, exclude in (("A100 80GB", ()), ("H100", ("beta",))):
        got = daily_index(engine, gpu=gpu, start=start, end=end, exclude=exclude)
        if not exclude:
            assert_frame_equal(
                got, oracle_index(engine, gpu=gpu, start=start, end=end, term="on_demand")
            )
        assert got.height == 12


def test_the_migration_builds_the_rollups_of_an_existing_history(
    engine: Engine, db_url: str
) -> None:
    from alembic import command

    from gpuscout.db.migrate import alembic_config, upgrade

    grow_history(engine, 8)
    written = _rollup_rows(engine)
    command.downgrade(alembic_config(db_url), "0009")
    with engine.connect() as connection:
        assert not sa.inspect(connection).has_table("price_rollup")
    upgrade(db_url)
    # the day rows the snapshots wrote, and every day since up to today's (which hold the
    # open prices: no snapshot changed them)
    assert {row for row in written if row[0] == "day"} <= set(_rollup_rows(engine))
    r = PriceRollup.__table__.c
    with engine.connect() as connection:
        last = connection.execute(sa.select(sa.func.max(r.day)).where(r.period == "day")).scalar()
    assert last == datetime.now(UTC).date()
    start, end = date(2025, 3, 1), date(2025, 3, 20)
    assert_frame_equal(
        daily_index(engine, gpu="H100", start=start, end=end),
        oracle_index(engine, gpu="H100", start=start, end=end, term="on_demand"),
    )


def test_a_snapshot_changing_no_price_writes_only_a_new_day_or_hour(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuscout.db.rollups

    written: list[tuple[date, date] | None] = []
    hourly: list[tuple[datetime, datetime] | None] = []
    write = gpuscout.db.rollups._write

    def counted(
        connection: Any,
        days: tuple[date, date] | None,
        hours: tuple[datetime, datetime] | None,
        keep_from: datetime | None,
    ) -> None:
        written.append(days)
        hourly.append(hours)
        write(connection, days, hours, keep_from)

    monkeypatch.setattr(gpuscout.db.rollups, "_write", counted)
    offers = [offer("alpha", "a1", "2.50"), offer("alpha", "a2", "3.00")]
    for hours in (0, 1, 2, 25):
        # new offers; the same prices; a new price; the same prices the next day
        when = START + timedelta(hours=10 + hours)
        priced = offers if hours < 2 else [offer("alpha", "a1", "2.40"), offers[1]]
        store_snapshot(engine, [ok("alpha", priced, when)], started_at=when, finished_at=when)
    day = START.date()
    # the same prices in a new hour write that hour only, not the day again
    assert written == [(day, day), None, (day, day), (day + timedelta(days=1),) * 2]
    at = [START + timedelta(hours=h) for h in (10, 11, 12, 13, 35)]
    # the next day's snapshot fills the hours since the last one written
    assert hourly == [(at[0], at[0]), (at[1], at[1]), (at[2], at[2]), (at[3], at[4])]
