"""Where the current offers come from: the database, or the offline sample.

Every reader of "today's offers" (CLI, API, digest) goes through :func:`load_current`, so
the rule "the database when it holds offers, else the bundled sample, and always say which"
lives in one place. Both give a :class:`db.current.CurrentState`, priced with the FX table
the settings select (read again on every load). The sample shown because the database holds
no offers still tells the live attempts the database records (every fetch failed, say, on a
machine without network): each such provider's outcome and error are its latest attempt's
(:func:`db.current.sample_after_attempts`), never the sample's own "ok".

An embedded SQLite database whose file does not exist (or is empty) holds no offers, so it
is not opened (nor created: :func:`db.head.no_sqlite_file`); the sample is parsed once and
kept beside the data dir (:mod:`service.sample_cache`).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from gpuscout.adapters.sample import manifest_bytes, replay_sample
from gpuscout.adapters.schema import FxTable
from gpuscout.db.current import CurrentState, sample_after_attempts, state_from_runs
from gpuscout.db.head import no_sqlite_file

from .fx import fx_table
from .settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = ["load_current", "load_sample"]


def load_sample(fx: FxTable, settings: Settings | None = None) -> CurrentState:
    """The bundled recorded responses, replayed through each adapter's parse; its note
    names each sample's capture date (or says it is unknown). With ``settings``, read from
    (or kept in) the cache under their ``data_dir``."""

    def parse() -> CurrentState:
        return state_from_runs(replay_sample(), fx=fx, source="sample")

    if settings is None:
        return parse()
    from .sample_cache import cached_sample

    return cached_sample(settings.data_dir, fx, manifest=manifest_bytes(), parse=parse)


def with_stock(state: CurrentState, engine: Engine) -> CurrentState:
    """``state`` with each offer's ``in_stock_7d`` (:mod:`db.availability`): the share of its
    provider's snapshots of the last 7 days in which it was in stock."""
    from gpuscout.db.availability import availability

    from .offer_record import frame_key

    with engine.connect() as connection:
        shares = availability(connection, datetime.now(UTC), days=(7,))
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


def load_current(sample: bool = False, settings: Settings | None = None) -> CurrentState:
    """The current offers: the database when it holds offers, else the bundled sample.

    The sample shown because the database holds no offers carries the latest attempts the
    database records, if any (:func:`db.current.sample_after_attempts`): a provider whose
    live fetch failed is ``stale`` with its error (sample offers held) or ``failed`` (none
    held), and the state's snapshot is the latest one. ``sample=True`` is the bundled sample
    alone, as recorded, whatever the database holds.

    Nothing is migrated here (reading must not write): a database at an older revision is
    an alembic ``CommandError`` saying to run ``gpuscout db upgrade``, not a missing column.
    The FX table is read from the settings even for the sample: it converts its non-USD
    prices. A named FX file that is missing or broken is a :class:`service.fx.FxError`.
    """
    if settings is None:
        from .settings import get_settings

        settings = get_settings()
    fx = fx_table(settings)
    stored: CurrentState | None = None
    if not sample and not no_sqlite_file(settings.database_url):
        import sqlalchemy as sa

        from gpuscout.db.current import load_current_offers
        from gpuscout.db.engine import make_engine
        from gpuscout.db.migrate import check_head

        engine = make_engine(settings.database_url)
        try:
            if sa.inspect(engine).has_table("current_offer"):
                check_head(engine)
                stored = load_current_offers(engine, fx=fx)
                if not stored.frame.is_empty():  # how often each was in stock, 7 days
                    stored = with_stock(stored, engine)
        finally:
            engine.dispose()
        if stored is not None and not stored.frame.is_empty():
            return stored
    fallback = load_sample(fx, settings)
    if stored is None or not stored.providers:
        return fallback
    return sample_after_attempts(fallback, stored)
