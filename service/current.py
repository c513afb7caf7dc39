"""Where the current offers come from: the database, or the offline sample.

Every reader of "today's offers" (CLI, API, digest) goes through :func:`load_current`, so
the rule "the database when it holds offers, else the bundled sample, and always say which"
lives in one place. Both give a :class:`db.current.CurrentState`, priced with the FX table
the settings select (read again on every load). The sample shown because the database holds
no offers still tells the live attempts the database records (every fetch failed, say, on a
machine without network): each such provider's outcome and error are its latest attempt's
(:func:`db.current.sample_after_attempts`), never the sample's own "ok".

An embedded SQLite database whose file does not exist (or is empty) holds no offers, so it
is not opened (nor created); the sample is parsed once and kept beside the data dir
(:mod:`service.sample_cache`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gpuscout.adapters.field_coverage import ProviderCoverage
from gpuscout.adapters.sample import manifest_bytes, replay_sample, sample_note
from gpuscout.adapters.schema import FxTable
from gpuscout.db.current import CurrentState, sample_after_attempts, state_from_runs
from gpuscout.db.head import sqlite_file

from .fx import fx_table
from .settings import Settings

__all__ = ["load_current", "load_sample", "load_stored"]


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
    import sqlalchemy as sa

    from gpuscout.db.current import load_current_offers
    from gpuscout.db.engine import make_engine
    from gpuscout.db.migrate import HEAD_REVISION, stored_revisions

    engine = make_engine(settings.database_url)
    try:
        if not sa.inspect(engine).has_table("current_offer"):
            return None
        revisions = stored_revisions(engine)
        if revisions != (HEAD_REVISION,):
            from alembic.util.exc import CommandError

            at = ", ".join(revisions) if revisions else None
            raise CommandError(
                f"the database is at revision {at}, this gpuscout reads {HEAD_REVISION}: run "
                "`gpuscout db upgrade` (or `gpuscout snapshot`, which migrates first)"
            )
        state = load_current_offers(engine, fx=fx)
    finally:
        engine.dispose()
    # the engine is gone: a later count opens (and closes) one of its own
    return _with_coverage_reader(state, settings)


def _with_coverage_reader(state: CurrentState, settings: Settings) -> CurrentState:
    """``state`` counting which fields its offers carry on a connection of its own, when
    first asked."""
    import dataclasses

    def count() -> Mapping[str, ProviderCoverage]:
        from gpuscout.db.current import stored_coverage
        from gpuscout.db.engine import make_engine

        engine = make_engine(settings.database_url)
        try:
            return stored_coverage(engine)
        finally:
            engine.dispose()

    reader: Callable[[], Mapping[str, ProviderCoverage]] = count
    return dataclasses.replace(state, count_fields=reader)


def load_current(sample: bool = False, settings: Settings | None = None) -> CurrentState:
    """The current offers: the database when it holds offers, else the bundled sample.

    The sample shown because the database holds no offers carries the latest attempts the
    database records, if any (:func:`db.current.sample_after_attempts`): a provider whose
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
        return stored
    fallback = load_sample(fx, settings)
    if stored is None or not stored.providers:
        return fallback
    return sample_after_attempts(fallback, stored)
