"""The tables, as typed SQLAlchemy 2 models. The Alembic migrations create exactly these
(a test runs autogenerate against a migrated database and expects no difference).

Layout::

    snapshot            one run over all providers: started_at, finished_at, totals, origin
                        (live | sample: fetched, or the offline sample replayed)
    snapshot_run        every attempt to take a snapshot, written when it starts: running,
                        then ok (its snapshot id) | failed (its error) | aborted (its
                        process died: left running, found by the next runner)
    snapshot_provider   per snapshot and provider: status ok|error|skipped, error, offer and
                        skipped-record counts, the skipped records' reasons summarised
                        (JSON), duration_s, history rows added and closed, origin and
                        whether a sample's capture date is known
    provider_status     per provider, the latest outcome: last attempt and last success,
                        last error, and the fetched_at and origin of its stored offer set
    current_offer       the latest good offer set per provider: indexed key columns and the
                        offer record as compact JSON text (replaced only by a successful fetch)
    price_history       one row per price *change*: valid_from .. valid_to (NULL while the
                        price holds), raw amount, currency, unit, basis and term next to the
                        normalised USD figures, and its origin (live | sample)
    job_lock            lease rows guarding jobs on SQLite (PostgreSQL uses advisory locks)
    price_rollup        per UTC day (and hour, for the last days), GPU series (a model,
                        family or vendor), term and region class, the index's statistics
                        with the share of offers in stock, written by each snapshot
                        (db.rollups); period "open" holds for the periods after the last
                        one written
    kept_frame          the polars frame of the current offers, as the snapshot that stored
                        them framed it (Arrow IPC, zstd): one row, under the key of what it
                        was framed from, so a reader on any host reads it instead of framing

Money is exact (:class:`~db.types.ExactDecimal`); times are timezone-aware UTC
(:class:`~db.types.UtcDateTime`). Snapshot ids in ``price_history`` are plain integers, not
foreign keys: retention prunes old snapshots while their price rows may still be open.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from .types import ExactDecimal, UtcDateTime

__all__ = [
    "Base",
    "CurrentOffer",
    "JobLock",
    "KeptFrame",
    "PriceHistory",
    "PriceRollup",
    "ProviderStatus",
    "Snapshot",
    "SnapshotProvider",
    "SnapshotRun",
]

#: A 64-bit id that is still SQLite's auto-incrementing ``INTEGER PRIMARY KEY``.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


class Snapshot(Base):
    __tablename__ = "snapshot"

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    finished_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    offer_count: Mapped[int] = mapped_column(sa.Integer, comment="offers fetched in this run")
    history_added: Mapped[int] = mapped_column(sa.Integer)
    history_closed: Mapped[int] = mapped_column(sa.Integer)
    origin: Mapped[str] = mapped_column(
        sa.String(16),
        server_default="live",
        comment="live | sample | mixed: where its runs' offers come from",
    )


class SnapshotRun(Base):
    __tablename__ = "snapshot_run"

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    status: Mapped[str] = mapped_column(
        sa.String(16), index=True, comment="running | ok | failed | aborted"
    )
    holder: Mapped[str] = mapped_column(sa.String(128), comment="host:pid of the runner")
    started_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    heartbeat_at: Mapped[datetime] = mapped_column(
        UtcDateTime, comment="renewed while running: a stale one means the runner died"
    )
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    snapshot_id: Mapped[int | None] = mapped_column(sa.Integer, comment="the snapshot it stored")
    error: Mapped[str | None] = mapped_column(sa.Text)


class SnapshotProvider(Base):
    __tablename__ = "snapshot_provider"

    snapshot_id: Mapped[int] = mapped_column(
        sa.ForeignKey("snapshot.id", ondelete="CASCADE"), primary_key=True
    )
    provider: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    status: Mapped[str] = mapped_column(sa.String(16), comment="ok | error | skipped")
    error: Mapped[str | None] = mapped_column(sa.Text)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime)
    duration_s: Mapped[float] = mapped_column(sa.Float)
    offer_count: Mapped[int] = mapped_column(sa.Integer)
    skipped_count: Mapped[int] = mapped_column(sa.Integer, comment="records the parser skipped")
    skip_reasons: Mapped[str | None] = mapped_column(
        sa.Text,
        comment="JSON {reasons: {reason: records}, other: records} (adapters.skip_summary);"
        " NULL: nothing skipped, or stored before reasons were",
    )
    history_added: Mapped[int] = mapped_column(sa.Integer)
    history_closed: Mapped[int] = mapped_column(sa.Integer)
    origin: Mapped[str] = mapped_column(
        sa.String(16), server_default="live", comment="live | sample (the offline sample)"
    )
    capture_date_known: Mapped[bool] = mapped_column(
        sa.Boolean,
        server_default=sa.true(),
        comment="false: sample prices of unknown capture date (started_at is the latest it can be)",
    )


class ProviderStatus(Base):
    __tablename__ = "provider_status"

    provider: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    last_status: Mapped[str] = mapped_column(sa.String(16))
    last_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime)
    last_success_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    last_snapshot_id: Mapped[int] = mapped_column(sa.Integer)
    offers_fetched_at: Mapped[datetime | None] = mapped_column(
        UtcDateTime, comment="fetched_at of the stored offer set (its successful run's start)"
    )
    offer_count: Mapped[int] = mapped_column(sa.Integer, comment="offers stored as current")
    offers_origin: Mapped[str] = mapped_column(
        sa.String(16),
        server_default="live",
        comment="live | sample: where the stored offer set comes from",
    )
    offers_capture_date_known: Mapped[bool] = mapped_column(
        sa.Boolean,
        server_default=sa.true(),
        comment="false: sample offers of unknown capture date (offers_fetched_at is the latest)",
    )


class CurrentOffer(Base):
    __tablename__ = "current_offer"

    offer_key: Mapped[str] = mapped_column(sa.String, primary_key=True)
    provider: Mapped[str] = mapped_column(sa.String(64), index=True)
    gpu_model: Mapped[str | None] = mapped_column(sa.String(64))
    term: Mapped[str] = mapped_column(sa.String(32))
    region: Mapped[str | None] = mapped_column(sa.String)
    gpus: Mapped[float] = mapped_column(sa.Float, comment="GPUs, a slice counting its fraction")
    usd_per_hour: Mapped[Decimal] = mapped_column(ExactDecimal)
    usd_per_gpu_hour: Mapped[float | None] = mapped_column(sa.Float)
    price_hash: Mapped[int] = mapped_column(sa.BigInteger)
    record_hash: Mapped[int] = mapped_column(sa.BigInteger)
    fetched_at: Mapped[datetime | None] = mapped_column(
        UtcDateTime, comment="NULL: the provider's offers_fetched_at"
    )
    record: Mapped[str] = mapped_column(
        sa.Text, comment="Offer JSON without fetched_at, usd_per_hour and None fields"
    )


class PriceHistory(Base):
    __tablename__ = "price_history"
    __table_args__ = (
        sa.Index(None, "offer_key", "valid_from"),
        # only closed rows: retention prunes by valid_to; open rows need no entry here
        sa.Index(
            None,
            "valid_to",
            sqlite_where=sa.text("valid_to IS NOT NULL"),
            postgresql_where=sa.text("valid_to IS NOT NULL"),
        ),
        sa.Index(
            "uq_price_history_open_offer_key",
            "offer_key",
            unique=True,
            sqlite_where=sa.text("valid_to IS NULL"),
            postgresql_where=sa.text("valid_to IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    offer_key: Mapped[str] = mapped_column(sa.String)
    provider: Mapped[str] = mapped_column(sa.String(64))
    gpu_model: Mapped[str | None] = mapped_column(sa.String(64))
    gpus: Mapped[float] = mapped_column(sa.Float)
    term: Mapped[str] = mapped_column(sa.String(32))
    region: Mapped[str | None] = mapped_column(sa.String)
    country: Mapped[str | None] = mapped_column(
        sa.String(2), comment="ISO 3166-1 alpha-2, as the offer states it; NULL: not stated"
    )
    price_amount: Mapped[Decimal] = mapped_column(ExactDecimal, comment="as the provider states it")
    price_currency: Mapped[str] = mapped_column(sa.String(3))
    price_unit: Mapped[str] = mapped_column(sa.String(16))
    price_basis: Mapped[str] = mapped_column(sa.String(16))
    usd_per_hour: Mapped[Decimal] = mapped_column(ExactDecimal, comment="whole instance")
    usd_per_gpu_hour: Mapped[float | None] = mapped_column(sa.Float)
    price_hash: Mapped[int] = mapped_column(sa.BigInteger)
    valid_from: Mapped[datetime] = mapped_column(UtcDateTime)
    valid_to: Mapped[datetime | None] = mapped_column(UtcDateTime, comment="NULL: still valid")
    opened_snapshot_id: Mapped[int] = mapped_column(sa.Integer)
    closed_snapshot_id: Mapped[int | None] = mapped_column(sa.Integer)
    record: Mapped[str | None] = mapped_column(
        sa.Text, comment="the offer as last seen, set when it disappears"
    )
    origin: Mapped[str] = mapped_column(
        sa.String(16),
        server_default="live",
        comment="live | sample: the price was fetched, or replayed from the offline sample"
        " (valid_from/valid_to are then when the sample was stored, not its capture date)",
    )


class OfferStock(Base):
    """Whether an offer was rentable, and how many of it, as change-only intervals.

    A row opens when a successful fetch lists the offer with a different stock than its open
    row says (or lists it for the first time) and closes when that changes or the offer is
    no longer listed. With the provider's successful snapshots this gives the share of
    snapshots in which an offer was available (:mod:`db.availability`).
    """

    __tablename__ = "offer_stock"
    __table_args__ = (
        sa.Index(None, "offer_key", "opened_snapshot_id"),
        sa.Index(None, "provider", "closed_snapshot_id"),
        # only closed rows: the rollups read the rows closed since a day began (db.rollups)
        sa.Index(
            None,
            "valid_to",
            sqlite_where=sa.text("valid_to IS NOT NULL"),
            postgresql_where=sa.text("valid_to IS NOT NULL"),
        ),
        sa.Index(
            "uq_offer_stock_open_offer_key",
            "offer_key",
            unique=True,
            sqlite_where=sa.text("closed_snapshot_id IS NULL"),
            postgresql_where=sa.text("closed_snapshot_id IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    offer_key: Mapped[str] = mapped_column(sa.String)
    provider: Mapped[str] = mapped_column(sa.String(64))
    gpu_model: Mapped[str | None] = mapped_column(sa.String(64))
    available: Mapped[bool] = mapped_column(
        sa.Boolean, comment="listed and not stated unavailable (available_now false, count 0)"
    )
    available_count: Mapped[int | None] = mapped_column(
        sa.Integer, comment="how many the provider states it has; NULL: not published"
    )
    opened_snapshot_id: Mapped[int] = mapped_column(sa.Integer)
    closed_snapshot_id: Mapped[int | None] = mapped_column(
        sa.Integer, comment="NULL: still the offer's stock"
    )
    valid_from: Mapped[datetime] = mapped_column(UtcDateTime)
    valid_to: Mapped[datetime | None] = mapped_column(UtcDateTime)


class PriceRollup(Base):
    """The index's statistics of one GPU series, term and region class over one UTC day or
    hour (:mod:`db.rollups`), so a history view reads a row per period instead of the
    history.

    ``period`` is ``day`` (the day ``day``), ``hour`` (hour ``hour`` of ``day``, kept for
    the last days only) or ``open`` (the prices valid since the last snapshot, which stood
    on ``day``: what every later day and hour holds until a price changes). ``region_class``
    is ``all`` (every offer) or a class of :class:`adapters.regions.RegionClass`. Only series
    with offers get a row; a missing period counts none.
    """

    __tablename__ = "price_rollup"
    __table_args__ = (
        sa.Index(None, "series", "term", "region_class", "period", "day", "hour", unique=True),
        sa.Index(None, "period", "day"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    period: Mapped[str] = mapped_column(sa.String(8), comment="day | hour | open")
    day: Mapped[date] = mapped_column(sa.Date, comment="UTC day")
    hour: Mapped[int] = mapped_column(
        sa.SmallInteger, comment="UTC hour of the day (0-23) of an hour row; 0 otherwise"
    )
    series: Mapped[str] = mapped_column(
        sa.String(96), comment="a catalog model, family:<family> or vendor:<vendor>"
    )
    term: Mapped[str] = mapped_column(sa.String(32))
    region_class: Mapped[str] = mapped_column(
        sa.String(24), comment="all, or a region class of the offers' countries"
    )
    offers: Mapped[int] = mapped_column(sa.Integer)
    providers: Mapped[int] = mapped_column(sa.Integer)
    sample_offers: Mapped[int] = mapped_column(sa.Integer)
    stock_offers: Mapped[int] = mapped_column(
        sa.Integer, comment="of the offers, those whose stock was recorded in the period"
    )
    available_offers: Mapped[int] = mapped_column(
        sa.Integer, comment="of those, the ones stated available at some time in the period"
    )
    min_usd_per_gpu_hour: Mapped[float] = mapped_column(sa.Float)
    p10_usd_per_gpu_hour: Mapped[float] = mapped_column(sa.Float)
    median_usd_per_gpu_hour: Mapped[float] = mapped_column(sa.Float)
    p90_usd_per_gpu_hour: Mapped[float] = mapped_column(sa.Float)


class JobLock(Base):
    __tablename__ = "job_lock"

    name: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(sa.String(64))
    acquired_at: Mapped[datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)


class KeptFrame(Base):
    __tablename__ = "kept_frame"

    key: Mapped[str] = mapped_column(
        sa.String(64), primary_key=True, comment="digest of the stored offers, code and schema"
    )
    snapshot_id: Mapped[int] = mapped_column(sa.Integer, comment="the snapshot that framed it")
    row_count: Mapped[int] = mapped_column(sa.Integer)
    kept_at: Mapped[datetime] = mapped_column(UtcDateTime)
    frame: Mapped[bytes] = mapped_column(sa.LargeBinary, comment="Arrow IPC, zstd-compressed")
