"""Where the current offers come from: the database, or the offline sample.

Every reader of "today's offers" (CLI, API, digest) goes through :func:`load_current`, so
the rule "the database when it holds offers, else the bundled sample, and always say which"
lives in one place. Both give a :class:`db.state.CurrentState`, priced with the FX table
the settings select (read again on every load). The sample shown because the database holds
no offers still tells the live attempts the database records (every fetch failed, say, on a
machine without network): each such provider's outcome and error are its latest attempt's
(:func:`db.state.sample_after_attempts`), never the sample's own "ok".

Three things keep a command fast: an embedded SQLite database whose file does not exist (or
is empty) holds no offers, so it is not opened (nor created) and SQLAlchemy is not
imported; the sample is parsed once and kept beside the data dir
(:mod:`service.sample_cache`); and so is the frame of a stored snapshot's offers
(:mod:`service.frame_cache`), so only the providers' outcomes are read on each load. The
snapshot that stored the offers keeps their frame (:func:`keep_stored`), so no reader frames
them: not the API's replicas at start or refresh, not the digest, not the next CLI call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from gpuscout.adapters.field_coverage import ProviderCoverage
from gpuscout.adapters.sample import manifest_bytes, replay_sample, sample_note
from gpuscout.adapters.schema import FxTable
from gpuscout.db.head import sqlite_file
from gpuscout.db.state import CurrentState, sample_after_attempts, state_from_runs

from .fx import fx_table
from .settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from .frame_cache import FileFrameStore

__all__ = ["keep_stored", "load_current", "load_sample", "load_stored"]


def load_sample(fx: FxTable, settings: Settings | None = None) -> CurrentState:
    """The bundled recorded responses, replayed through each adapter's parse; its note
    names each sample's capture date (or says it is unknown). With ``settings``, read from
    (or kept in) the cache under their ``data_dir``."""
    note = sample_note()

    def parse() -> CurrentState:
        return state_from_runs(replay_sample(), fx=fx, source="sample")

    if settings is None:
        return parse()
    from .sample_cache import cached_sample

    return cached_sample(settings.data_dir, fx, manifest=manifest_bytes(), note=note, parse=parse)


def _no_sqlite_file(url: str) -> bool:
    """The URL names an SQLite file that does not exist (and could be created) or is empty:
    it holds no offers. Any other database is for the database to say.
    """
    file = sqlite_file(url)
    if file is None:
        return False
    if file.exists():
        return file.is_file() and file.stat().st_size == 0
    # SQLite would create it: where it cannot (a parent is a file), the database says so
    parent = next((p for p in file.parents if p.exists()), None)
    return parent is not None and parent.is_dir()


def load_stored(settings: Settings, fx: FxTable) -> CurrentState | None:
    """What the database holds: its current offers (maybe none) and every provider's latest
    attempt; ``None`` when there is no database yet (no file, no schema).

    Nothing is migrated here (reading must not write): a database at an older revision is
    an alembic ``CommandError`` saying to run ``gpuscout db upgrade``, not a missing column.
    """
    if _no_sqlite_file(settings.database_url):
        return None
    from .frame_cache import FileFrameStore, sqlite_marker

    store = FileFrameStore(settings.data_dir)
    file = sqlite_file(settings.database_url)
    marker = sqlite_marker(file, fx) if file is not None else None
    kept = _kept(store, marker, settings, fx)
    if kept is not None:
        return kept
    # one process frames at a time: one that waited reads what the other kept
    with store.framing():
        kept = _kept(store, marker, settings, fx)
        return kept if kept is not None else _frame_stored(settings, fx, store, marker)


def _kept(
    store: FileFrameStore, marker: str | None, settings: Settings, fx: FxTable
) -> CurrentState | None:
    """The state kept under an SQLite file's ``marker``, if there is one."""
    if marker is None:
        return None
    kept = store.read_state(marker, fx)
    if kept is None:
        return None
    return dataclasses.replace(kept, count_fields=_coverage_reader(settings))


def keep_stored(settings: Settings, fx: FxTable, engine: Engine) -> None:
    """Frame the current offers of ``engine``'s database and keep the frame (on SQLite, the
    state too) in the data dir of ``settings``, and in the database for readers on other
    hosts (:class:`~service.frame_cache.DatabaseFrameStore`): the last step of a snapshot.

    Framing 100k stored offers takes seconds; done once here, by the process that stored
    them, every later load (each API replica's start and refresh, the digest, each CLI
    call) reads the kept frame instead of framing the same records again. A frame some
    other process kept meanwhile for the same offers is read, not made again.
    """
    from .frame_cache import FileFrameStore, sqlite_marker

    store = FileFrameStore(settings.data_dir)
    file = sqlite_file(engine.url.render_as_string(hide_password=False))
    with store.framing():
        marker = sqlite_marker(file, fx) if file is not None else None
        _frame_stored(settings, fx, store, marker, engine, keep=True)


def _frame_stored(
    settings: Settings,
    fx: FxTable,
    store: FileFrameStore,
    marker: str | None,
    engine: Engine | None = None,
    *,
    keep: bool = False,
) -> CurrentState | None:
    """:func:`load_stored` through SQLAlchemy (on ``engine``, else one of its own on the
    settings' database): the revision checked, the frame kept in (or read from) ``store``,
    else read from the database's own kept frame, and the state kept under ``marker`` (one
    with no offers too: the attempts it records are read back without SQLAlchemy as well).
    ``keep``: the snapshot's load, which also keeps the frame in the database."""
    import sqlalchemy as sa

    from gpuscout.db.current import load_current_offers
    from gpuscout.db.engine import make_engine
    from gpuscout.db.migrate import HEAD_REVISION, stored_revisions

    from .frame_cache import DatabaseFrameStore

    own = engine is None
    engine = engine or make_engine(settings.database_url)
    try:
        if not sa.inspect(engine).has_table("current_offer"):
            return None
        # the revision read with one query: Alembic is imported only to say it is wrong
        revisions = stored_revisions(engine)
        if revisions != (HEAD_REVISION,):
            from alembic.util.exc import CommandError

            at = ", ".join(revisions) if revisions else None
            raise CommandError(
                f"the database is at revision {at}, this gpuscout reads {HEAD_REVISION}: run "
                "`gpuscout db upgrade` (or `gpuscout snapshot`, which migrates first)"
            )
        with engine.connect() as connection, connection.begin():
            kept = DatabaseFrameStore(connection, keep=keep)
            state = load_current_offers(connection, fx=fx, frames=store, kept=kept)
    finally:
        if own:
            engine.dispose()
    # the engine is gone: a later count opens (and closes) one of its own
    state = dataclasses.replace(state, count_fields=_coverage_reader(settings))
    if marker is not None:
        store.keep_state(marker, state)
    return state


def with_stock(state: CurrentState, settings: Settings) -> CurrentState:
    """``state`` with each offer's ``in_stock_7d`` (:mod:`db.availability`): the share of its
    provider's snapshots of the last 7 days in which it was in stock."""
    from gpuscout.db.availability import availability
    from gpuscout.db.engine import make_engine

    from .offer_record import frame_key

    engine = make_engine(settings.database_url)
    try:
        with engine.connect() as connection:
            shares = availability(connection, datetime.now(UTC), days=(7,))
    finally:
        engine.dispose()
    if shares.is_empty():
        return state
    frame = (
        state.frame.with_columns(_stock_key=frame_key())
        .drop("in_stock_7d")
        .join(
            shares.select(_stock_key="offer_key", in_stock_7d="share"),
            on="_stock_key",
            how="left",
            maintain_order="left",
        )
        .select(state.frame.columns)
    )
    return dataclasses.replace(state, frame=frame)


def _coverage_reader(settings: Settings) -> Callable[[], Mapping[str, ProviderCoverage]]:
    """Which fields the stored offers carry, read from the database when first asked (a
    kept state holds the frame, not the records the count needs)."""

    def count() -> Mapping[str, ProviderCoverage]:
        from gpuscout.db.current import stored_coverage
        from gpuscout.db.engine import make_engine

        engine = make_engine(settings.database_url)
        try:
            return stored_coverage(engine)
        finally:
            engine.dispose()

    return count


def load_current(sample: bool = False, settings: Settings | None = None) -> CurrentState:
    """The current offers: the database when it holds offers, else the bundled sample.

    The sample shown because the database holds no offers carries the latest attempts the
    database records, if any (:func:`db.state.sample_after_attempts`): a provider whose
    live fetch failed is ``stale`` with its error (sample offers held) or ``failed`` (none
    held), and the state's snapshot is the latest one. ``sample=True`` is the bundled sample
    alone, as recorded, whatever the database holds.

    The FX table is read from the settings even for the sample: it converts its non-USD
    prices. A named FX file that is missing or broken is a :class:`service.fx.FxError`.
    """
    if settings is None:
        from .settings import get_settings

        settings = get_settings()
    fx = fx_table(settings)
    if sample:
        return load_sample(fx, settings)
    stored = load_stored(settings, fx)
    if stored is not None and not stored.frame.is_empty():
        return with_stock(stored, settings)
    fallback = load_sample(fx, settings)
    if stored is None or not stored.providers:
        return fallback
    return sample_after_attempts(fallback, stored)
