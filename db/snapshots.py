"""Writing a snapshot: one run over all providers, stored in ONE transaction.

For each provider of the run:

* ``ok``: its current offers are replaced by the fetched set, and the price history gets
  a row only where a price changed: a new offer or a new price opens a row
  (``valid_from`` = the run's start), a changed or vanished offer's open row is closed
  (``valid_to`` = the run's start). An unchanged price writes nothing, so history grows with
  the number of changes, not of snapshots. Prices are compared by a 64-bit hash column.
* ``error`` / ``skipped``: nothing of its offers is touched: they stay current, and
  :mod:`db.current` reports them stale with their age.

A crash, a kill or an exception anywhere inside leaves the previous state as it was (the
transaction is rolled back by the database), and the next run starts from that state.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from adapters.collect import ProviderRun, RunStatus
from adapters.schema import (
    USD_QUANTUM,
    Offer,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    usd_per_hour,
)

from .engine import Target, transaction
from .models import CurrentOffer, PriceHistory, ProviderStatus, Snapshot, SnapshotProvider
from .records import gc_paused, hash64, price_hash, record_json, usd_per_gpu_hour

__all__ = ["ProviderChanges", "SnapshotSummary", "store_snapshot"]

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


@dataclasses.dataclass(frozen=True, slots=True)
class SnapshotSummary:
    snapshot_id: int
    started_at: datetime
    finished_at: datetime
    providers: tuple[ProviderChanges, ...]

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
    """An offer as stored. The record (and its hash) is always needed to compare; the
    price hash and USD figures only for rows that change, so they are computed lazily."""

    __slots__ = (
        "_price_hash",
        "_usd",
        "_usd_per_gpu_hour",
        "fetched_at",
        "offer",
        "record",
        "record_hash",
    )

    def __init__(self, offer: Offer, fetched_at: datetime | None) -> None:
        self.offer = offer
        self.record = record_json(offer)
        self.record_hash = hash64(self.record)
        self.fetched_at = fetched_at
        self._price_hash: int | None = None
        self._usd: Decimal | None = None
        self._usd_per_gpu_hour: float | None = None

    @property
    def price_hash(self) -> int:
        if self._price_hash is None:
            self._price_hash = price_hash(self.offer)
        return self._price_hash

    @property
    def usd_per_hour(self) -> Decimal:
        if self._usd is None:
            self._compute_usd()
        assert self._usd is not None
        return self._usd

    @property
    def usd_per_gpu_hour(self) -> float | None:
        if self._usd is None:
            self._compute_usd()
        return self._usd_per_gpu_hour

    def _compute_usd(self) -> None:
        o = self.offer
        self._usd = _usd_per_hour(
            o.price_amount, o.price_currency, o.price_unit, o.price_basis, o.term, o.gpu_count
        )
        self._usd_per_gpu_hour = usd_per_gpu_hour(self._usd, o.gpus)


#: Enum member -> its value (``.value`` goes through a slow descriptor; psycopg would
#: dump a bare member by name).
_VALUE: dict[Any, str] = {m: m.value for e in (RentalTerm, PriceUnit, PriceBasis) for m in e}


@functools.lru_cache(maxsize=1 << 16)
def _usd_per_hour(
    amount: Decimal,
    currency: str,
    unit: PriceUnit,
    basis: PriceBasis,
    term: RentalTerm,
    gpu_count: int,
) -> Decimal:
    """``Offer.usd_per_hour`` from the fields it depends on, memoised: prices repeat a lot."""
    return usd_per_hour(
        price_amount=amount,
        price_currency=currency,
        price_unit=unit,
        price_basis=basis,
        term=term,
        gpu_count=gpu_count,
    ).quantize(USD_QUANTUM)


def _chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _bulk_insert(
    connection: Connection, table: sa.Table, columns: Sequence[str], rows: list[tuple[Any, ...]]
) -> None:
    """Insert many rows through the driver: COPY on PostgreSQL, one ``executemany`` on SQLite.

    Both skip SQLAlchemy's per-row statement machinery. On SQLite the values of typed
    columns go through the column type's own bind processor (so they are stored exactly as
    SQLAlchemy stores them), memoised since most repeat (one ``valid_from`` per run); COPY
    takes driver-ready values, which :class:`~db.types.UtcDateTime` (aware datetimes) and
    :class:`~db.types.ExactDecimal` (Decimals) already are on PostgreSQL.
    """
    if not rows:
        return
    driver = connection.connection.driver_connection
    assert driver is not None
    dialect = connection.dialect
    if dialect.name == "postgresql":
        statement = f"COPY {table.name} ({', '.join(columns)}) FROM STDIN"
        with driver.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)
        return
    if dialect.name != "sqlite":
        connection.execute(table.insert(), [dict(zip(columns, r, strict=True)) for r in rows])
        return
    typed = []
    for index, column in enumerate(columns):
        process = table.c[column].type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            typed.append((index, process, {None: None}))
    values: list[list[Any]] = []
    for row in rows:
        value = list(row)
        for index, process, memo in typed:
            raw = value[index]
            try:
                value[index] = memo[raw]
            except KeyError:
                value[index] = memo[raw] = process(raw)
        values.append(value)
    statement = str(table.insert().compile(dialect=dialect, column_keys=list(columns)))
    cursor = driver.cursor()
    try:
        cursor.executemany(statement, values)
    finally:
        cursor.close()


def _encode(run: ProviderRun) -> dict[str, _Encoded]:
    """The run's offers by key (a repeated key keeps its last offer)."""
    out: dict[str, _Encoded] = {}
    started_at = run.started_at
    for offer in run.offers:
        fetched_at = offer.fetched_at
        out[offer.key] = _Encoded(offer, None if fetched_at == started_at else fetched_at)
    if len(out) < len(run.offers):
        log.warning(
            "%s: %d offers repeat a key; the last of each was kept",
            run.provider,
            len(run.offers) - len(out),
        )
    return out


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


def _current_row(provider: str, key: str, enc: _Encoded) -> tuple[Any, ...]:
    offer = enc.offer
    return (
        key,
        provider,
        offer.gpu_model,
        _VALUE[offer.term],
        offer.region,
        offer.gpus,
        enc.usd_per_hour,
        enc.usd_per_gpu_hour,
        enc.price_hash,
        enc.record_hash,
        enc.fetched_at,
        enc.record,
    )


HISTORY_COLUMNS = (
    "offer_key",
    "provider",
    "gpu_model",
    "gpus",
    "term",
    "region",
    "price_amount",
    "price_currency",
    "price_unit",
    "price_basis",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "price_hash",
    "valid_from",
    "opened_snapshot_id",
)


def _history_row(
    provider: str, key: str, enc: _Encoded, *, valid_from: datetime, snapshot_id: int
) -> tuple[Any, ...]:
    offer = enc.offer
    return (
        key,
        provider,
        offer.gpu_model,
        offer.gpus,
        _VALUE[offer.term],
        offer.region,
        offer.price_amount,
        offer.price_currency,
        _VALUE[offer.price_unit],
        _VALUE[offer.price_basis],
        enc.usd_per_hour,
        enc.usd_per_gpu_hour,
        enc.price_hash,
        valid_from,
        snapshot_id,
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


def _store_offers(
    connection: Connection, run: ProviderRun, offers: dict[str, _Encoded], snapshot_id: int
) -> ProviderChanges:
    """Replace the current offers of a successful run and record the price changes."""
    provider, at = run.provider, run.started_at
    existing = {
        key: (p_hash, r_hash, fetched_at)
        for key, p_hash, r_hash, fetched_at in connection.execute(
            sa.select(
                _current.c.offer_key,
                _current.c.price_hash,
                _current.c.record_hash,
                _current.c.fetched_at,
            ).where(_current.c.provider == provider)
        )
    }
    added = [k for k in offers if k not in existing]
    if added:
        clash = _keys_held_by_others(connection, provider, added)
        if clash:
            log.warning(
                "%s: %d offer keys belong to another provider; ignored", provider, len(clash)
            )
            added = [k for k in added if k not in clash]
            for key in clash:
                del offers[key]
    removed = [k for k in existing if k not in offers]
    repriced: list[str] = []
    updated: list[str] = []
    for key, (p_hash, r_hash, fetched_at) in existing.items():
        enc = offers.get(key)
        if enc is None:
            continue
        # the record holds every price field: an equal record means an equal price
        if enc.record_hash != r_hash:
            updated.append(key)
            if enc.price_hash != p_hash:
                repriced.append(key)
        elif enc.fetched_at != fetched_at:
            updated.append(key)

    history_closed = _close_history(
        connection, removed, valid_to=at, snapshot_id=snapshot_id, gone=True
    ) + _close_history(connection, repriced, valid_to=at, snapshot_id=snapshot_id)
    _bulk_insert(
        connection,
        _history,
        HISTORY_COLUMNS,
        [
            _history_row(provider, k, offers[k], valid_from=at, snapshot_id=snapshot_id)
            for k in added + repriced
        ],
    )
    for chunk in _chunks(removed):
        connection.execute(sa.delete(_current).where(_current.c.offer_key.in_(chunk)))
    if updated:
        rows = [
            dict(zip(CURRENT_COLUMNS, _current_row(provider, k, offers[k]), strict=True))
            for k in updated
        ]
        for row in rows:
            row["key_"] = row.pop("offer_key")
        connection.execute(
            sa.update(_current)
            .where(_current.c.offer_key == sa.bindparam("key_"))
            .values({c: sa.bindparam(c) for c in rows[0] if c != "key_"}),
            rows,
        )
    _bulk_insert(
        connection,
        _current,
        CURRENT_COLUMNS,
        [_current_row(provider, k, offers[k]) for k in added],
    )
    return ProviderChanges(
        provider=provider,
        status=run.status,
        offer_count=len(offers),
        offers_added=len(added),
        offers_removed=len(removed),
        offers_updated=len(updated),
        prices_changed=len(repriced),
        history_added=len(added) + len(repriced),
        history_closed=history_closed,
    )


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
        }
    table = _status
    done = connection.execute(
        sa.update(table).where(table.c.provider == run.provider).values(values)
    ).rowcount
    if not done:
        values.setdefault("last_success_at", None)
        values.setdefault("offers_fetched_at", None)
        values.setdefault("offer_count", 0)
        connection.execute(sa.insert(table).values(provider=run.provider, **values))


def _dedupe_runs(runs: Iterable[ProviderRun]) -> list[ProviderRun]:
    seen: dict[str, ProviderRun] = {}
    for run in runs:
        if run.provider in seen:
            log.warning("%s: two runs in one snapshot; the last one is stored", run.provider)
        seen[run.provider] = run
    return list(seen.values())


def store_snapshot(
    target: Target,
    runs: Sequence[ProviderRun],
    *,
    started_at: datetime,
    finished_at: datetime,
) -> SnapshotSummary:
    """Store one snapshot in one transaction and say what changed per provider.

    ``target`` is an engine (a transaction is opened and committed here), a connection or a
    session (see :func:`db.engine.transaction`). Times are timezone-aware UTC.
    """
    runs = _dedupe_runs(runs)
    with gc_paused():
        # Encoding is pure CPU work: do it before the transaction takes the write lock.
        encoded = {run.provider: _encode(run) for run in runs if run.status is RunStatus.OK}
        return _store(target, runs, encoded, started_at=started_at, finished_at=finished_at)


def _store(
    target: Target,
    runs: list[ProviderRun],
    encoded: dict[str, dict[str, _Encoded]],
    *,
    started_at: datetime,
    finished_at: datetime,
) -> SnapshotSummary:
    with transaction(target) as connection:
        snapshot_id = connection.execute(
            sa.insert(_snapshot)
            .values(
                started_at=started_at,
                finished_at=finished_at,
                offer_count=0,
                history_added=0,
                history_closed=0,
            )
            .returning(_snapshot.c.id)
        ).scalar_one()
        changes: list[ProviderChanges] = []
        for run in runs:
            if run.status is RunStatus.OK:
                change = _store_offers(connection, run, encoded[run.provider], snapshot_id)
            else:
                change = ProviderChanges(run.provider, run.status, 0, error=run.error)
            _upsert_status(connection, run, change, snapshot_id)
            changes.append(change)
        summary = SnapshotSummary(snapshot_id, started_at, finished_at, tuple(changes))
        if runs:
            connection.execute(
                sa.insert(_snapshot_provider),
                [
                    {
                        "snapshot_id": snapshot_id,
                        "provider": run.provider,
                        "status": run.status.value,
                        "error": run.error,
                        "started_at": run.started_at,
                        "duration_s": run.duration_s,
                        "offer_count": change.offer_count,
                        "skipped_count": len(run.skipped),
                        "history_added": change.history_added,
                        "history_closed": change.history_closed,
                    }
                    for run, change in zip(runs, changes, strict=True)
                ],
            )
        connection.execute(
            sa.update(_snapshot)
            .where(_snapshot.c.id == snapshot_id)
            .values(
                offer_count=summary.offer_count,
                history_added=summary.history_added,
                history_closed=summary.history_closed,
            )
        )
    return summary
