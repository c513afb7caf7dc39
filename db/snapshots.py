"""Writing a snapshot: one run over all providers, stored in ONE transaction.

The runs stream in (:func:`store_snapshot` takes any iterable): each is stored when it
comes, its rows written a chunk at a time, so memory holds one provider's run, not every
provider's; the commit after the last one switches every provider at once.

For each provider of the run:

* ``ok``: unless the plausibility guard finds it suspect (:mod:`db.guard`: no offers, a
  large drop, most records skipped; then it is stored as ``error`` naming the guard, and
  treated as below), its current offers are replaced by the fetched set, and the price history gets
  a row only where a price changed: a new offer or a new price opens a row
  (``valid_from`` = the run's start), a changed or vanished offer's open row is closed
  (``valid_to`` = the run's start). An unchanged price writes nothing, so history grows with
  the number of changes, not of snapshots. Prices are compared by a 64-bit hash column.
  A run replaying the offline sample "starts" at its capture date (its offers' fetch time);
  its price rows open and close at the snapshot's start instead (:func:`_observed_at`),
  when the sample entered this database, and say ``origin = sample``: the history shows a
  price on the days this database held it, never days before it was stored.
* ``error`` / ``skipped``: nothing of its offers is touched: they stay current, and
  :mod:`db.current` reports them stale with their age.

Each run says where its offers come from (:attr:`~adapters.collect.ProviderRun.origin`:
live, or the offline sample replayed by ``gpuscout snapshot --sample``): stored per run
(``snapshot_provider.origin``, ``capture_date_known``), for the snapshot as a whole
(``snapshot.origin``: live | sample | mixed) and, for an ok run, with its provider's offer
set (``provider_status.offers_origin``), which :mod:`db.current` reads back.
What each run skipped is stored with it, counted by reason and capped
(``snapshot_provider.skip_reasons``, :func:`adapters.skip_summary.summarise_skips`): the
answers name the rows of the run whose offers are current that no ranking holds.

A crash, a kill or an exception anywhere inside leaves the previous state as it was (the
transaction is rolled back by the database), and the next run starts from that state.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from gpuscout.adapters.run import Origin, ProviderRun, RunStatus
from gpuscout.adapters.schema import (
    USD_QUANTUM,
    FxTable,
    Offer,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    default_fx,
    usd_per_hour,
)
from gpuscout.adapters.skip_summary import summarise_skips

from .availability import Stock, has_stock, record_stock, stock_of
from .engine import Target, placeholders, transaction
from .guard import ACCEPTED_PREFIX, OfferGuard, suspect_count
from .models import CurrentOffer, PriceHistory, ProviderStatus, Snapshot, SnapshotProvider
from .records import hash64, hash64s, record_jsons
from .rollups import HOURLY_DAYS, update_rollups

__all__ = ["ProviderChanges", "SnapshotSummary", "snapshot_origin", "store_snapshot"]

log = logging.getLogger("gpuscout.db")

#: Keys per ``IN (...)`` list (SQLite allows 32766 bound parameters per statement).
CHUNK = 5000

_current = cast(sa.Table, CurrentOffer.__table__)
_history = cast(sa.Table, PriceHistory.__table__)
_snapshot = cast(sa.Table, Snapshot.__table__)
_snapshot_provider = cast(sa.Table, SnapshotProvider.__table__)
_status = cast(sa.Table, ProviderStatus.__table__)


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderChanges:
    """What one provider's run changed in the database."""

    provider: str
    status: RunStatus
    offer_count: int
    """offers fetched in this run (0 unless ok)"""
    offers_added: int = 0
    offers_removed: int = 0
    offers_updated: int = 0
    """offers whose stored record changed (price or anything else)"""
    prices_changed: int = 0
    history_added: int = 0
    history_closed: int = 0
    error: str | None = None
    offers_kept: int = 0
    """offers of an earlier run kept as current because this run failed or was skipped"""
    guarded: bool = False
    """the run answered ok but failed the plausibility guard (:mod:`db.guard`): stored as
    ``error`` with the guard's verdict as its error, its earlier offers kept"""


@dataclasses.dataclass(frozen=True, slots=True)
class SnapshotSummary:
    snapshot_id: int
    started_at: datetime
    finished_at: datetime
    providers: tuple[ProviderChanges, ...]
    origin: str = Origin.LIVE.value
    """live | sample | mixed (:func:`snapshot_origin`), as ``snapshot.origin`` stores it"""

    @property
    def offer_count(self) -> int:
        return sum(p.offer_count for p in self.providers)

    @property
    def history_added(self) -> int:
        return sum(p.history_added for p in self.providers)

    @property
    def history_closed(self) -> int:
        return sum(p.history_closed for p in self.providers)


class _Encoded:
    """A run's offers as compared with what is stored: one record hash and one fetch time
    per offer (``None``: the run's start), in the run's order.

    The records themselves (JSON text, the largest part of an encoded offer) are not kept:
    they are hashed a chunk at a time, and serialised again by :meth:`records_of` for the
    offers that are written, a chunk at a time, so a run's encoding holds a few numbers an
    offer, not its record. The keys (and the check for repeated ones) are built only when
    the run differs from what its provider has stored (:meth:`same_as`): an identical run is
    told by one aggregate.
    """

    __slots__ = ("_index", "fetched_at", "fingerprint", "offers", "provider", "record_hashes")

    def __init__(self, run: ProviderRun) -> None:
        offers = run.offers
        started_at = run.started_at
        self.provider = run.provider
        self.offers = offers
        hashes: list[int] = []
        for chunk in _chunks(offers):
            hashes.extend(hash64s(record_jsons(chunk)))
        self.record_hashes: Sequence[int] = hashes
        times = [offer.fetched_at for offer in offers]
        # usually every offer carries the run's start: one count (in C) tells
        own = times.count(started_at)
        self.fetched_at: list[datetime | None] = (
            [None] * len(times)
            if own == len(times)
            else [None if fetched == started_at else fetched for fetched in times]
        )
        self.fingerprint = _Fingerprint.of(self.record_hashes, len(times) - own)
        self._index: dict[str, int] | None = None

    @property
    def index(self) -> dict[str, int]:
        """Each distinct key's position in the run; a repeated key keeps its last offer."""
        if self._index is None:
            offers = self.offers
            index = {offer.key: i for i, offer in enumerate(offers)}
            if len(index) < len(offers):
                log.warning(
                    "%s: %d offers repeat a key; the last of each was kept",
                    self.provider,
                    len(offers) - len(index),
                )
            self._index = index
        return self._index

    def records_of(self, positions: Sequence[int]) -> list[bytes]:
        """The stored records (:func:`db.records.record_jsons`) of the offers at
        ``positions``."""
        offers = self.offers
        return record_jsons([offers[i] for i in positions])

    def same_as(self, stored: _Fingerprint) -> bool:
        """Whether the stored offer set of this run's provider (``stored``) is this one:
        the same records (as a multiset of hashes: a record holds its key, so equal multisets
        are equal sets keyed alike) and every fetch time the provider's (NULL: the run's
        start). Then storing the run changes no row."""
        return self.fingerprint == stored and not self.fingerprint.timed

    def drop(self, keys: Iterable[str]) -> None:
        """Forget ``keys`` (their positions stay, unused)."""
        for key in keys:
            del self.index[key]


_LOW_32 = 0xFFFFFFFF


@dataclasses.dataclass(frozen=True, slots=True)
class _Fingerprint:
    """An offer set in four numbers: its size, the sums of its record hashes' high and low
    32 bits (exact in SQL on both databases: no 64-bit overflow) and how many offers carry a
    fetch time of their own. Equal sets have equal fingerprints; a changed record changes the
    sums but for a 64-bit hash collision, as likely as one in the per-offer comparison."""

    count: int
    high: int
    low: int
    timed: int

    @classmethod
    def of(cls, record_hashes: Sequence[int], timed: int) -> _Fingerprint:
        """The fingerprint of an offer set of ``record_hashes``, ``timed`` of whose offers
        carry a fetch time of their own."""
        low = sum(map(_LOW_32.__and__, record_hashes))
        # h == (h >> 32) * 2**32 + (h & _LOW_32) for every h: the high sum follows exactly
        return cls(len(record_hashes), (sum(record_hashes) - low) >> 32, low, timed)

    @classmethod
    def stored(cls, connection: Connection, provider: str) -> _Fingerprint:
        """The fingerprint of ``provider``'s current offers, by one aggregate query."""
        hashes = _current.c.record_hash
        # inlined numbers: PostgreSQL shifts a bigint by an integer, not by a bigint parameter
        shift: sa.ColumnElement[int] = sa.literal_column("32")
        mask: sa.ColumnElement[int] = sa.literal_column(str(_LOW_32))
        count, high, low, timed = connection.execute(
            sa.select(
                sa.func.count(),
                sa.func.coalesce(sa.func.sum(hashes.op(">>", return_type=sa.BigInteger)(shift)), 0),
                sa.func.coalesce(sa.func.sum(hashes.op("&", return_type=sa.BigInteger)(mask)), 0),
                sa.func.count(_current.c.fetched_at),
            ).where(_current.c.provider == provider)
        ).one()
        return cls(int(count), int(high), int(low), int(timed))


@functools.lru_cache(maxsize=1 << 16)
def _price(
    amount: Decimal,
    currency: str,
    unit: PriceUnit,
    basis: PriceBasis,
    term: RentalTerm,
    gpu_count: int,
    fx: _FxKey,
) -> tuple[int, Decimal, float]:
    """Price hash, ``Offer.usd_per_hour`` and the latter as a float, memoised: prices repeat
    a lot. Equal amounts of different spelling (2.5, 2.50) share an entry: none of the three
    depends on the spelling. ``fx`` (the snapshot's FX table, keyed by its rates) keeps USD
    figures of another table from being reused after the table changes."""
    usd = usd_per_hour(
        price_amount=amount,
        price_currency=currency,
        price_unit=unit,
        price_basis=basis,
        term=term,
        gpu_count=gpu_count,
        fx=fx.table,
    ).quantize(USD_QUANTUM)
    # str.__str__ of a StrEnum member is its value, without Enum's slow ``.value`` lookup
    text = f"{format(amount.normalize(), 'f')}|{currency}|{unit!s}|{basis!s}|{term!s}"
    return hash64(text), usd, float(usd)


class _FxKey:
    """An FX table as a memo key: equal for tables with equal rates, date and source."""

    __slots__ = ("_key", "table")

    def __init__(self, table: FxTable) -> None:
        self.table = table
        self._key = (table.as_of, table.source, tuple(sorted(table.units_per_usd.items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _FxKey) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)


#: The columns an offer's price fields determine, driver-ready: price hash, USD per hour,
#: USD per GPU-hour, GPUs, and the term, unit and basis as text.
_PriceColumns = tuple[int, Any, float | None, float, str, str, str]


class _Columns:
    """Builds rows of driver-ready values for one snapshot: on SQLite the text SQLAlchemy's
    column types store (decimals, naive UTC datetimes), on PostgreSQL the Python values
    themselves, with the type of each column (:attr:`copy_types`) for a binary COPY."""

    def __init__(self, connection: Connection, fx: FxTable) -> None:
        self.fx = _FxKey(fx)
        #: :meth:`_columns_of_price` by the price fields, enums as their text (a dict lookup
        #: without the Python-level ``Enum.__hash__``); the amount as a ``Decimal``, so that
        #: 2.5 and 2.50 share an entry (no column here depends on the spelling)
        self._prices: dict[tuple[Any, ...], _PriceColumns] = {}
        dialect = connection.dialect
        self.sqlite = dialect.name == "sqlite"
        self.copy_types = {} if self.sqlite else _copy_types(connection, (_current, _history))
        self._time: dict[datetime | None, Any] = {None: None}
        process = _current.c.fetched_at.type.dialect_impl(dialect).bind_processor(dialect)
        self._process_time = process or (lambda value: value)
        self._stored_time: dict[Any, datetime | None] = {None: None}
        result = _current.c.fetched_at.type.dialect_impl(dialect).result_processor(dialect, None)
        self._result_time = result or (lambda value: value)

    def price_columns(self, offer: Offer) -> _PriceColumns:
        """The columns ``offer``'s price fields determine, computed once per distinct price."""
        key = (
            offer.price_amount,
            offer.price_currency,
            str.__str__(offer.price_unit),
            str.__str__(offer.price_basis),
            str.__str__(offer.term),
            offer.gpu_count,
            offer.gpu_fraction,
        )
        got = self._prices.get(key)
        if got is None:
            got = self._prices[key] = self._columns_of_price(offer)
        return got

    def _columns_of_price(self, offer: Offer) -> _PriceColumns:
        p_hash, usd, usd_float = _price(
            offer.price_amount,
            offer.price_currency,
            offer.price_unit,
            offer.price_basis,
            offer.term,
            offer.gpu_count,
            self.fx,
        )
        fraction = offer.gpu_fraction
        gpus = float(offer.gpu_count) if fraction is None else fraction
        return (
            p_hash,
            str(usd) if self.sqlite else usd,
            usd_float / gpus if gpus > 0 else None,
            gpus,
            str.__str__(offer.term),
            str.__str__(offer.price_unit),
            str.__str__(offer.price_basis),
        )

    def time(self, value: datetime | None) -> Any:
        try:
            return self._time[value]
        except KeyError:
            out = self._time[value] = self._process_time(value)
            return out

    def stored_time(self, value: Any) -> datetime | None:
        """A ``fetched_at`` as the driver returned it, as a datetime."""
        try:
            return self._stored_time[value]
        except KeyError:
            out = self._stored_time[value] = self._result_time(value)
            return out

    def rows(
        self,
        provider: str,
        enc: _Encoded,
        keys: Sequence[str],
        *,
        history: Container[str] | None,
        valid_from: datetime,
        snapshot_id: int,
        origin: Origin = Origin.LIVE,
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """``CURRENT_COLUMNS`` rows of ``keys`` and, in one pass, ``HISTORY_COLUMNS`` rows
        (opened at ``valid_from``, of ``origin``) of those of them in ``history`` (``None``:
        all of them).
        The columns that follow from an offer's price fields are computed once per distinct
        price (:meth:`price_columns`)."""
        sqlite, time, index = self.sqlite, self.time, enc.index
        offers, hashes, fetched = enc.offers, enc.record_hashes, enc.fetched_at
        positions = [index[key] for key in keys]
        records = enc.records_of(positions)
        since = time(valid_from)
        origin_text = origin.value
        price_columns = self.price_columns
        current: list[tuple[Any, ...]] = []
        opened: list[tuple[Any, ...]] = []
        add_current, add_opened = current.append, opened.append
        for key, i, record in zip(keys, positions, records, strict=True):
            offer = offers[i]
            p_hash, usd_value, per_gpu, gpus, term_text, unit_text, basis_text = price_columns(
                offer
            )
            model, region, stamp = offer.gpu_model, offer.region, fetched[i]
            add_current(
                (
                    key,
                    provider,
                    model,
                    term_text,
                    region,
                    gpus,
                    usd_value,
                    per_gpu,
                    p_hash,
                    hashes[i],
                    None if stamp is None else time(stamp),
                    record.decode(),
                )
            )
            if history is None or key in history:
                add_opened(
                    (
                        key,
                        provider,
                        model,
                        gpus,
                        term_text,
                        region,
                        offer.country,
                        # the amount as stated (2.50 stays 2.50), not from the memo
                        str(offer.price_amount) if sqlite else offer.price_amount,
                        offer.price_currency,
                        unit_text,
                        basis_text,
                        usd_value,
                        per_gpu,
                        p_hash,
                        since,
                        snapshot_id,
                        origin_text,
                    )
                )
        return current, opened


def _chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _copy_types(connection: Connection, tables: Iterable[sa.Table]) -> dict[str, dict[str, int]]:
    """The type OID of each column of ``tables`` (by table and column name), as PostgreSQL's
    catalog has it: a binary COPY sends each value in its column type's own format, so the
    client has to pick the type's dumper."""
    names = [table.name for table in tables]
    rows = connection.execute(
        sa.text(
            "SELECT c.relname, a.attname, a.atttypid FROM pg_attribute a"
            " JOIN pg_class c ON c.oid = a.attrelid"
            " WHERE a.attrelid = ANY(CAST(:names AS regclass[])) AND a.attnum > 0"
            " AND NOT a.attisdropped"
        ),
        {"names": "{" + ",".join(names) + "}"},
    )
    types: dict[str, dict[str, int]] = {name: {} for name in names}
    for table, column, oid in rows:
        types[table][column] = int(oid)
    return types


def _bulk_insert(
    connection: Connection,
    table: sa.Table,
    names: Sequence[str],
    rows: list[tuple[Any, ...]],
    columns: _Columns,
) -> None:
    """Insert many rows of driver-ready values (see :class:`_Columns`) through the driver:
    a binary COPY on PostgreSQL (no text for the server to parse), one ``executemany`` of a
    prepared statement on SQLite. Both skip SQLAlchemy's per-row statement machinery."""
    if not rows:
        return
    driver = connection.connection.driver_connection
    assert driver is not None
    if not columns.sqlite:
        statement = f"COPY {table.name} ({', '.join(names)}) FROM STDIN (FORMAT BINARY)"
        types = columns.copy_types[table.name]
        with driver.cursor() as cursor, cursor.copy(statement) as copy:
            copy.set_types([types[name] for name in names])
            write_row = copy.write_row
            for row in rows:
                write_row(row)
        return
    statement = (
        f"INSERT INTO {table.name} ({', '.join(names)}) "
        f"VALUES ({placeholders(connection, len(names))})"
    )
    cursor = driver.cursor()
    try:
        cursor.executemany(statement, rows)
    finally:
        cursor.close()


def _update_current(connection: Connection, rows: list[tuple[Any, ...]]) -> None:
    """Rewrite the current rows of their keys (``CURRENT_COLUMNS`` rows, driver-ready), in
    one ``executemany`` through the driver."""
    if not rows:
        return
    mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    assignments = ", ".join(f"{column} = {mark}" for column in CURRENT_COLUMNS[1:])
    sql = f"UPDATE {_current.name} SET {assignments} WHERE offer_key = {mark}"
    driver = connection.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    try:
        cursor.executemany(sql, [(*row[1:], row[0]) for row in rows])
    finally:
        cursor.close()


CURRENT_COLUMNS = (
    "offer_key",
    "provider",
    "gpu_model",
    "term",
    "region",
    "gpus",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "price_hash",
    "record_hash",
    "fetched_at",
    "record",
)

HISTORY_COLUMNS = (
    "offer_key",
    "provider",
    "gpu_model",
    "gpus",
    "term",
    "region",
    "country",
    "price_amount",
    "price_currency",
    "price_unit",
    "price_basis",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "price_hash",
    "valid_from",
    "opened_snapshot_id",
    "origin",
)


def _close_history(
    connection: Connection,
    keys: Sequence[str],
    *,
    valid_to: datetime,
    snapshot_id: int,
    gone: bool = False,
) -> int:
    """Close the open price rows of ``keys``; returns how many were closed.

    For offers that are ``gone`` the closed row keeps the offer's record as last seen
    (copied from ``current_offer``, which is about to lose it).
    """
    values: dict[str, Any] = {"valid_to": valid_to, "closed_snapshot_id": snapshot_id}
    if gone:
        values["record"] = (
            sa.select(_current.c.record)
            .where(_current.c.offer_key == _history.c.offer_key)
            .scalar_subquery()
        )
    statement = (
        sa.update(_history)
        .where(_history.c.valid_to.is_(None), _history.c.offer_key.in_(sa.bindparam("keys")))
        .values(values)
    )
    closed = 0
    for chunk in _chunks(keys):
        closed += connection.execute(statement, {"keys": list(chunk)}).rowcount
    return closed


def _keys_held_by_others(connection: Connection, provider: str, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` another provider's run already stores (an adapter overlap).

    A key starts with its offer's provider. Normally a run's offers carry the run's own
    provider name, and no other run stores keys with that prefix: one range probe on the
    primary key proves it, and only keys of other prefixes are looked up one chunk at a time.
    """
    prefix = f"{provider}|"
    own_prefix_elsewhere = connection.execute(
        sa.select(_current.c.offer_key)
        .where(
            _current.c.provider != provider,
            _current.c.offer_key >= prefix,
            _current.c.offer_key < provider + chr(ord("|") + 1),
        )
        .limit(1)
    ).first()
    suspects = keys if own_prefix_elsewhere else [k for k in keys if not k.startswith(prefix)]
    held: set[str] = set()
    statement = sa.select(_current.c.offer_key).where(
        _current.c.provider != provider, _current.c.offer_key.in_(sa.bindparam("keys"))
    )
    for chunk in _chunks(suspects):
        held.update(connection.execute(statement, {"keys": list(chunk)}).scalars())
    return held


def _observed_at(run: ProviderRun, stored_at: datetime) -> datetime:
    """When ``run``'s prices were observed by this database: a live run's start; for a
    replay of the offline sample (which "starts" at its capture date) ``stored_at``, the
    snapshot's start. Price rows open and close at this time."""
    return stored_at if run.origin is Origin.SAMPLE else run.started_at


def _store_offers(
    connection: Connection,
    run: ProviderRun,
    offers: _Encoded,
    snapshot_id: int,
    columns: _Columns,
    stored_at: datetime,
) -> ProviderChanges:
    """Replace the current offers of a successful run and record the price changes (at
    :func:`_observed_at`)."""
    provider, at = run.provider, _observed_at(run, stored_at)
    # the driver's values, as the comparisons below read them (no per-row type processing)
    stored = connection.exec_driver_sql(
        f"SELECT offer_key, price_hash, record_hash, fetched_at FROM {_current.name}"
        f" WHERE provider = {placeholders(connection, 1)}",
        (provider,),
    ).all()
    index, record_hashes, fetched = offers.index, offers.record_hashes, offers.fetched_at
    stored_time, all_offers = columns.stored_time, offers.offers
    removed: list[str] = []
    repriced: list[str] = []
    updated: list[str] = []
    for key, p_hash, r_hash, fetched_at in stored:
        i = index.get(key)
        if i is None:
            removed.append(key)
        # the record holds every price field: an equal record means an equal price
        elif record_hashes[i] != r_hash:
            updated.append(key)
            if columns.price_columns(all_offers[i])[0] != p_hash:
                repriced.append(key)
        elif fetched[i] != stored_time(fetched_at):
            updated.append(key)
    if len(stored) - len(removed) < len(index):
        existing = {row[0] for row in stored}
        added = sorted(k for k in index if k not in existing)
    else:
        added = []
    del stored  # the writes below hold a chunk at a time
    if added:
        clash = _keys_held_by_others(connection, provider, added)
        if clash:
            log.warning(
                "%s: %d offer keys belong to another provider; ignored", provider, len(clash)
            )
            added = [k for k in added if k not in clash]
            offers.drop(clash)

    history_closed = _close_history(
        connection, removed, valid_to=at, snapshot_id=snapshot_id, gone=True
    ) + _close_history(connection, repriced, valid_to=at, snapshot_id=snapshot_id)
    for chunk in _chunks(removed):
        connection.execute(sa.delete(_current).where(_current.c.offer_key.in_(chunk)))
    # rows are built and written a chunk at a time: memory holds one chunk's records;
    # history rows go in the order added, then repriced
    repriced_set = set(repriced)
    for keys, history in ((added, None), (updated, repriced_set)):
        for chunk in _chunks(keys):
            current_rows, history_rows = columns.rows(
                provider,
                offers,
                chunk,
                history=history,
                valid_from=at,
                snapshot_id=snapshot_id,
                origin=run.origin,
            )
            _bulk_insert(connection, _history, HISTORY_COLUMNS, history_rows, columns)
            if history is None:  # added: new current rows
                _bulk_insert(connection, _current, CURRENT_COLUMNS, current_rows, columns)
            else:
                _update_current(connection, current_rows)
    record_stock(connection, provider, _listed(offers), snapshot_id=snapshot_id, at=at)
    return ProviderChanges(
        provider=provider,
        status=run.status,
        offer_count=len(index),
        offers_added=len(added),
        offers_removed=len(removed),
        offers_updated=len(updated),
        prices_changed=len(repriced),
        history_added=len(added) + len(repriced),
        history_closed=history_closed,
    )


def _listed(offers: _Encoded) -> dict[str, Stock]:
    """Each stored offer's stock as this fetch states it (:mod:`db.availability`)."""
    listed = {}
    for key, i in offers.index.items():
        offer = offers.offers[i]
        available, count = stock_of(offer.available_now, offer.available_count)
        listed[key] = Stock(available, count, offer.gpu_model)
    return listed


def _upsert_status(
    connection: Connection, run: ProviderRun, changes: ProviderChanges, snapshot_id: int
) -> None:
    ok = run.status is RunStatus.OK
    values: dict[str, Any] = {
        "last_status": run.status.value,
        "last_attempt_at": run.started_at,
        "last_error": run.error,
        "last_snapshot_id": snapshot_id,
    }
    if ok:
        values |= {
            "last_success_at": run.started_at,
            "offers_fetched_at": run.started_at,
            "offer_count": changes.offer_count,
            "offers_origin": run.origin.value,
            "offers_capture_date_known": run.capture_date_known,
        }
    table = _status
    done = connection.execute(
        sa.update(table).where(table.c.provider == run.provider).values(values)
    ).rowcount
    if not done:
        values.setdefault("last_success_at", None)
        values.setdefault("offers_fetched_at", None)
        values.setdefault("offer_count", 0)
        values.setdefault("offers_origin", Origin.LIVE.value)
        values.setdefault("offers_capture_date_known", True)
        connection.execute(sa.insert(table).values(provider=run.provider, **values))


def _skip_reasons(run: ProviderRun) -> str | None:
    """The run's skipped records summarised as JSON text (``None``: it skipped none)."""
    if not run.skipped:
        return None
    return json.dumps(summarise_skips(run.skipped).as_dict(), ensure_ascii=False)


def snapshot_origin(runs: Iterable[ProviderRun]) -> str:
    """``live``, ``sample`` (every run replayed the sample) or ``mixed``."""
    return _origin_of(run.origin for run in runs)


def _origin_of(run_origins: Iterable[Origin]) -> str:
    """:func:`snapshot_origin` of runs of ``run_origins``."""
    origins = set(run_origins)
    if origins == {Origin.SAMPLE}:
        return Origin.SAMPLE.value
    return "mixed" if Origin.SAMPLE in origins else Origin.LIVE.value


def _dedupe_runs(runs: Iterable[ProviderRun]) -> list[ProviderRun]:
    seen: dict[str, ProviderRun] = {}
    for run in runs:
        if run.provider in seen:
            log.warning("%s: two runs in one snapshot; the last one is stored", run.provider)
        seen[run.provider] = run
    return list(seen.values())


def _first_taken(runs: Iterable[ProviderRun]) -> Iterator[ProviderRun]:
    """``runs`` with its first run taken now (before the transaction begins), the rest as
    they come; the first is not held once handed on."""
    rest = iter(runs)
    first = next(rest, None)
    taken = [] if first is None else [first]
    del first

    def chained() -> Iterator[ProviderRun]:
        while taken:
            yield taken.pop()
        yield from rest

    return chained()


def store_snapshot(
    target: Target,
    runs: Iterable[ProviderRun],
    *,
    started_at: datetime,
    finished_at: datetime | Callable[[], datetime],
    fx: FxTable | None = None,
    guard: OfferGuard | None = None,
    hourly_days: int = HOURLY_DAYS,
) -> SnapshotSummary:
    """Store one snapshot in one transaction and say what changed per provider.

    ``target`` is an engine (a transaction is opened and committed here), a connection or a
    session (see :func:`db.engine.transaction`). Times are timezone-aware UTC. The stored
    USD figures convert with ``fx``: the table the settings select
    (:func:`service.fx.fx_table`); ``None``: the shipped one. ``guard``
    holds the plausibility thresholds an ok run must pass to replace its provider's offers
    (default: :class:`~db.guard.OfferGuard`'s). ``hourly_days``: the days of hourly rollups
    kept (:func:`db.rollups.update_rollups`).

    ``runs`` streams: each run is taken from it when the one before is stored, its rows
    written a chunk (:data:`CHUNK` offers) at a time, and let go of before the next, so an
    iterator that makes each run when asked keeps memory to one run, not the market. The
    transaction commits after the last run: readers see every provider switch at once, and
    an error anywhere (in the iterator too) leaves the previous state as it was. A provider
    twice in a sequence: its last run is stored; twice in an iterator (which cannot be read
    ahead): :class:`ValueError`. ``finished_at`` may be a callable, called once the last run
    is stored: the end of a snapshot whose runs are fetched as they are stored. The
    transaction begins once an iterator gives its first run, not while it is awaited: on
    SQLite it holds the write lock from the first provider's answer to the last.
    """
    runs = _dedupe_runs(runs) if isinstance(runs, Sequence) else _first_taken(runs)
    with transaction(target) as connection:
        return _store(
            connection,
            runs,
            started_at=started_at,
            finished_at=finished_at,
            fx=fx or default_fx(),
            guard=guard or OfferGuard(),
            hourly_days=hourly_days,
        )


def _guarded(
    connection: Connection, run: ProviderRun, offers: _Encoded | None, guard: OfferGuard
) -> tuple[ProviderRun, int, bool]:
    """``run`` as it is stored (an ok run the guard finds suspect becomes an error run), the
    number of offers its provider has stored now, and whether they are the run's offers
    already (:meth:`_Encoded.same_as`)."""
    stored = _Fingerprint.stored(connection, run.provider)
    same = offers is not None and offers.same_as(stored)
    if run.status is RunStatus.OK and offers is not None:
        baseline, suspects = _guard_history(connection, run.provider, guard)
        verdict, note = guard.judge(
            offer_count=stored.count if same else len(offers.index),
            skipped=run.skipped,
            stored_count=stored.count,
            baseline=baseline,
            suspects=suspects,
        )
        if verdict is not None:
            log.warning("%s: %s", run.provider, verdict)
            run = dataclasses.replace(run, status=RunStatus.ERROR, error=verdict)
        elif note is not None:
            log.warning("%s: %s", run.provider, note)
            run = dataclasses.replace(run, error=note)
    return run, stored.count, same


def _guard_history(
    connection: Connection, provider: str, guard: OfferGuard
) -> tuple[list[int], list[int]]:
    """The offer counts the guard judges a run of ``provider`` against, newest first: its
    latest accepted (ok) runs back to the last change the guard accepted, and the suspect
    runs just before this one (read from their errors, :func:`db.guard.suspect_count`)."""
    rows = connection.execute(
        sa.select(
            _snapshot_provider.c.status,
            _snapshot_provider.c.error,
            _snapshot_provider.c.offer_count,
        )
        .where(_snapshot_provider.c.provider == provider)
        .order_by(_snapshot_provider.c.snapshot_id.desc())
        .limit(guard.baseline_runs + guard.accept_after + 20)
    ).all()
    baseline: list[int] = []
    suspects: list[int] = []
    leading = True  # still in the run of suspect answers just before this one
    for status, error, offer_count in rows:
        count = suspect_count(error) if status == RunStatus.ERROR.value else None
        if leading and count is not None:
            suspects.append(count)
            continue
        leading = False
        if status == RunStatus.OK.value:
            baseline.append(offer_count)
            if len(baseline) >= guard.baseline_runs or (error or "").startswith(ACCEPTED_PREFIX):
                break
    return baseline, suspects


def _store(
    connection: Connection,
    runs: Iterable[ProviderRun],
    *,
    started_at: datetime,
    finished_at: datetime | Callable[[], datetime],
    fx: FxTable,
    guard: OfferGuard,
    hourly_days: int,
) -> SnapshotSummary:
    snapshot_id = connection.execute(
        sa.insert(_snapshot)
        .values(
            started_at=started_at,
            # set with the totals: a callable is called once the last run is stored
            finished_at=finished_at if isinstance(finished_at, datetime) else started_at,
            offer_count=0,
            history_added=0,
            history_closed=0,
            origin=Origin.LIVE.value,  # set with the totals once every run is stored
        )
        .returning(_snapshot.c.id)
    ).scalar_one()
    changes: list[ProviderChanges] = []
    provider_rows: list[dict[str, Any]] = []
    origins: list[Origin] = []
    observed = [started_at]
    # built for the first run that changes rows
    columns = functools.cache(lambda: _Columns(connection, fx))
    seen: set[str] = set()
    for fetched in runs:
        if fetched.provider in seen:
            raise ValueError(f"{fetched.provider}: two runs in one snapshot")
        seen.add(fetched.provider)
        change = _store_run(connection, fetched, snapshot_id, columns, guard, started_at)
        changes.append(change)
        origins.append(fetched.origin)
        observed.append(_observed_at(fetched, started_at))
        provider_rows.append(
            {
                "snapshot_id": snapshot_id,
                "provider": fetched.provider,
                "status": change.status.value,
                "error": change.error,
                "started_at": fetched.started_at,
                "duration_s": fetched.duration_s,
                "offer_count": change.offer_count,
                "skipped_count": len(fetched.skipped),
                "skip_reasons": _skip_reasons(fetched),
                "history_added": change.history_added,
                "history_closed": change.history_closed,
                "origin": fetched.origin.value,
                "capture_date_known": fetched.capture_date_known,
            }
        )
        del fetched  # let the run go before the iterator makes the next
    if not isinstance(finished_at, datetime):
        finished_at = finished_at()
    origin = _origin_of(origins)
    # an updated record may be a changed stock: the rollups' availability reads it
    changed = any(c.history_added or c.history_closed or c.offers_updated for c in changes)
    update_rollups(
        connection,
        first=min(observed),
        last=max(observed),
        changed=changed,
        hourly_days=hourly_days,
    )
    summary = SnapshotSummary(snapshot_id, started_at, finished_at, tuple(changes), origin)
    if provider_rows:
        connection.execute(sa.insert(_snapshot_provider), provider_rows)
    connection.execute(
        sa.update(_snapshot)
        .where(_snapshot.c.id == snapshot_id)
        .values(
            finished_at=finished_at,
            offer_count=summary.offer_count,
            history_added=summary.history_added,
            history_closed=summary.history_closed,
            origin=origin,
        )
    )
    return summary


def _store_run(
    connection: Connection,
    fetched: ProviderRun,
    snapshot_id: int,
    columns: Callable[[], _Columns],
    guard: OfferGuard,
    started_at: datetime,
) -> ProviderChanges:
    """Store one provider's run of the snapshot ``snapshot_id``; what it changed.
    ``columns`` gives the snapshot's :class:`_Columns`."""
    encoded = _Encoded(fetched) if fetched.status is RunStatus.OK else None
    run, stored, same = _guarded(connection, fetched, encoded, guard)
    if run.status is RunStatus.OK and same:
        assert encoded is not None
        change = ProviderChanges(run.provider, run.status, stored)
        if stored and not has_stock(connection, run.provider):  # stored before stock was
            at = _observed_at(run, started_at)
            listed = _listed(encoded)
            record_stock(connection, run.provider, listed, snapshot_id=snapshot_id, at=at)
    elif run.status is RunStatus.OK:
        assert encoded is not None
        change = _store_offers(connection, run, encoded, snapshot_id, columns(), started_at)
    else:
        change = ProviderChanges(
            run.provider,
            run.status,
            0,
            error=run.error,
            offers_kept=stored,
            guarded=run is not fetched,
        )
    if run.status is RunStatus.OK and run.error is not None:  # the guard's note
        change = dataclasses.replace(change, error=run.error)
    _upsert_status(connection, run, change, snapshot_id)
    return change
