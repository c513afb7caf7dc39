"""The current state: the offers to rank now as one polars frame, and each provider's outcome.

:class:`CurrentState` is the one type every reader of "today's offers" works on: the API
holds one per snapshot, the CLI ranks its frame, the digest frames nothing of its own. Two
places make one:

* :func:`load_current_offers` from the database: the latest good offer set of every
  provider, framed straight from the stored records by :func:`pricing.frame.records_to_frame`
  (no ``Offer`` per row), and the outcome of each provider's latest attempt from
  ``provider_status``. A provider whose latest fetch failed (or was skipped) still has its
  last good offers here, and its outcome says ``stale``.
* :func:`state_from_runs` from provider runs (the offline sample), and
  :func:`state_from_offers` from offers (tests, benchmarks), framed by
  :func:`pricing.frame.offers_to_frame`. Those and the state's types live in
  :mod:`db.state` (no SQLAlchemy there) and are re-exported here.

Either way prices convert to USD with the FX table passed in, and the state names it
(:attr:`CurrentState.fx_note`).

Framing 100k stored records takes seconds; a :class:`FrameStore` passed to
:func:`load_current_offers` keeps the frame between processes (the API's start, every CLI
call) under a key naming everything it was built from: the database, its latest snapshot,
the number of current offers, each provider's held offers and fetch time, and the FX table
(:func:`frame_key`); a second store, in the database itself (:mod:`db.kept_frames`, under
the key without the URL), is read on a miss there, so a reader on another host does not frame
what the snapshot already framed. The provider outcomes are always read, the rows only on a
miss of both.

Each provider's state says where its held offers come from (:attr:`ProviderState.origin`:
a live fetch, or the offline sample replayed by ``gpuscout snapshot --sample``) and whether
their capture date is known; the state as a whole says so too (:attr:`CurrentState.sample`,
:attr:`CurrentState.origin`), and its ``note`` names the sample's capture dates first, so
an answer built on stored sample offers says "sample" as one built on the replayed sample
does. :meth:`ProviderState.fresh` follows price age.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Protocol, cast

import polars as pl
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from gpuscout.adapters.field_coverage import ProviderCoverage, count_records
from gpuscout.adapters.run import Origin, RunStatus
from gpuscout.adapters.schema import FxTable
from gpuscout.pricing.frame import records_to_frame

from .engine import driver_cursor, driver_rows, placeholders
from .models import CurrentOffer, ProviderStatus, Snapshot
from .state import (
    CurrentState,
    Outcome,
    ProviderState,
    Source,
    by_name,
    state_from_offers,
    state_from_runs,
    stored_state,
)

__all__ = [
    "CurrentState",
    "FrameStore",
    "Origin",
    "Outcome",
    "ProviderState",
    "Source",
    "frame_key",
    "latest_snapshot",
    "load_current_offers",
    "state_from_offers",
    "state_from_runs",
]

_current = cast(sa.Table, CurrentOffer.__table__)
_status = cast(sa.Table, ProviderStatus.__table__)
_snapshot = cast(sa.Table, Snapshot.__table__)


def latest_snapshot(connection: Connection) -> tuple[int, datetime] | None:
    """Id and finish time of the newest snapshot, or ``None`` if there is none yet."""
    row = connection.execute(
        sa.select(_snapshot.c.id, _snapshot.c.finished_at).order_by(_snapshot.c.id.desc()).limit(1)
    ).first()
    return None if row is None else (row[0], row[1])


class FrameStore(Protocol):
    """Keeps frames of the current offers between loads, by :func:`frame_key`."""

    def get(self, key: str, rows: int) -> pl.DataFrame | None:
        """The frame kept under ``key`` if it is whole (``rows`` rows), else ``None``."""
        ...

    def put(self, key: str, frame: pl.DataFrame) -> None: ...


def frame_key(
    connection: Connection,
    latest: tuple[int, datetime] | None,
    rows: int,
    states: Mapping[str, ProviderState],
    fx: FxTable,
    *,
    database: bool = True,
) -> str:
    """A digest of everything the frame of the current offers is built from, as stored.

    Every snapshot adds a ``snapshot`` row in the transaction that writes the current
    offers, so its id and finish time move with them; the database's URL (no password),
    the row count and each provider's held offers and fetch time guard against another
    database at the same URL or a snapshot id reused after a reset; the FX table gives
    the USD figures. ``database=False`` leaves the URL out: the key of a frame kept in that
    database itself (:mod:`db.kept_frames`), which every reader reaches under its own URL.
    """
    parts: list[object] = [
        None if latest is None else [latest[0], latest[1].isoformat()],
        rows,
        [
            [p.provider, p.offer_count, p.fetched_at.isoformat() if p.fetched_at else None]
            for p in states.values()
        ],
        [fx.as_of, fx.source, sorted((k, str(v)) for k, v in fx.units_per_usd.items())],
    ]
    if database:
        parts.insert(0, connection.engine.url.render_as_string(hide_password=True))
    return hashlib.blake2b(json.dumps(parts).encode(), digest_size=12).hexdigest()


def load_current_offers(
    engine: Engine | Connection,
    *,
    fx: FxTable,
    providers: list[str] | None = None,
    now: datetime | None = None,
    frames: FrameStore | None = None,
    kept: FrameStore | None = None,
) -> CurrentState:
    """The current offers (by GPU model, then key) and every provider's state, in one read.

    Prices convert to USD with ``fx``. The frame is built from the stored records as they
    are (see :func:`pricing.frame.records_to_frame`); an offer without its own
    ``fetched_at`` has its provider's. With ``frames`` (and every provider), a frame kept
    there for the same stored offers is used instead, and a new one kept. ``kept`` is the
    store in the database itself (on this connection, under the URL-free key): read when
    ``frames`` has none, and given the frame (a store that only reads ignores it).
    """
    now = now or datetime.now(UTC)
    if isinstance(engine, Engine):
        with engine.connect() as connection, connection.begin():
            return load_current_offers(
                connection, fx=fx, providers=providers, now=now, frames=frames, kept=kept
            )
    connection = engine
    states = by_name(
        ProviderState(
            provider=row["provider"],
            last_status=RunStatus(row["last_status"]),
            offer_count=row["offer_count"],
            fetched_at=row["offers_fetched_at"],
            last_attempt_at=row["last_attempt_at"],
            error=row["last_error"],
            origin=Origin(row["offers_origin"]),
            capture_date_known=row["offers_capture_date_known"],
        )
        for row in connection.execute(sa.select(_status)).mappings()
    )
    latest = latest_snapshot(connection)
    frame: pl.DataFrame | None = None
    key: str | None = None
    shared: str | None = None
    if frames is not None and providers is None:
        count = connection.execute(sa.select(sa.func.count()).select_from(_current)).scalar_one()
        key = frame_key(connection, latest, count, states, fx)
        frame = frames.get(key, count)
        if kept is not None:
            shared = frame_key(connection, latest, count, states, fx, database=False)
            if frame is None and (frame := kept.get(shared, count)) is not None:
                frames.put(key, frame)
    if frame is None:
        frame = _read_frame(connection, providers, states, fx)
        if frames is not None and key is not None:
            frames.put(key, frame)
    if kept is not None and shared is not None:
        kept.put(shared, frame)  # a store that only reads ignores it
    count_fields = functools.partial(stored_coverage, connection.engine, providers)
    return stored_state(frame, states, fx, now, latest, count_fields)


def _read_frame(
    connection: Connection,
    providers: list[str] | None,
    states: Mapping[str, ProviderState],
    fx: FxTable,
) -> pl.DataFrame:
    """The current offers' frame from their stored records (of ``providers``: all), in
    the order of their offer keys."""
    statement = f"SELECT provider, record, fetched_at FROM {_current.name}"
    if providers is not None:
        statement += f" WHERE provider IN ({placeholders(connection, len(providers))})"
    statement += " ORDER BY offer_key"
    params = tuple(providers or ())
    names: Sequence[str]
    times: Sequence[object]
    records: Sequence[str] | bytes
    if providers is not None and not providers:
        names, records, times = (), (), ()
    elif connection.dialect.name == "sqlite":
        names, records, times = _sqlite_records(connection, statement, params)
    else:
        rows = driver_rows(connection, statement, params)
        names, records, times = list(zip(*rows, strict=True)) or [(), (), ()]
    return records_to_frame(records, _fetched_at(names, times, states, connection), fx)


def _sqlite_records(
    connection: Connection, statement: str, params: tuple[str, ...]
) -> tuple[list[str], bytes, list[object]]:
    """The providers, records and fetch times ``statement`` selects, in its order, read in
    one step (see :func:`db.engine.driver_rows` for why one): the records as the
    newline-delimited JSON :func:`pricing.frame.records_to_frame` parses (a record is one
    line: JSON escapes the newlines in its strings), joined by SQLite: 0.11 s for 100k
    alone, 0.13 s beside a busy thread (``benchmarks/bulk_read.py``)."""
    import orjson

    with driver_cursor(connection) as cursor:
        cursor.execute(
            "SELECT CAST(coalesce(group_concat(record, char(10)), '') AS BLOB),"
            f" json_group_array(provider), json_group_array(fetched_at) FROM ({statement})",
            params,
        )
        lines, names, times = cursor.fetchone()
    return orjson.loads(names), bytes(lines), orjson.loads(times)


def stored_coverage(
    engine: Engine, providers: list[str] | None = None
) -> dict[str, ProviderCoverage]:
    """Which fields the stored current offers carry, read when first asked (a new
    connection: the state's own is closed by then). A record leaves its ``None`` fields out,
    so the keys it has are the fields it carries."""
    if providers is not None and not providers:
        return {}
    statement = f"SELECT record FROM {_current.name}"
    with engine.connect() as connection:
        if providers is not None:
            statement += f" WHERE provider IN ({placeholders(connection, len(providers))})"
        rows = driver_rows(connection, statement, tuple(providers or ()))
    return count_records(json.loads(record) for (record,) in rows)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _fetched_at(
    providers: Sequence[str],
    stored: Sequence[object],
    states: Mapping[str, ProviderState],
    connection: Connection,
) -> pl.Series:
    """Each row's ``fetched_at`` from the stored values as the driver returns them; a row
    without one (the usual case) has its provider's.

    Each distinct value is converted once: the offers of one run share theirs, so
    converting per row would repeat the same work 100k times.
    """
    dialect = connection.dialect
    process = _current.c.fetched_at.type.dialect_impl(dialect).result_processor(dialect, None)
    memo: dict[object, int] = {}
    for name, p in states.items():
        if p.fetched_at is not None:
            memo[(None, name)] = (p.fetched_at - _EPOCH) // _MICROSECOND
    out: list[int] = []
    for provider, value in zip(providers, stored, strict=True):
        key = (None, provider) if value is None else value
        try:
            out.append(memo[key])
        except KeyError:
            if value is None:
                raise ValueError(
                    f"stored offers of {provider!r} have no fetch time (no provider_status row)"
                ) from None
            when = cast(datetime, process(value) if process is not None else value)
            memo[key] = (when - _EPOCH) // _MICROSECOND
            out.append(memo[key])
    return pl.Series("fetched_at", out, dtype=pl.Int64).cast(pl.Datetime("us", "UTC"))
