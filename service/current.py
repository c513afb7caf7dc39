"""Where the current offers come from: the database, or the offline sample.

Every reader of "today's offers" (CLI, API, digest) goes through :func:`load_current`, so
the rule "the database when it holds offers, else the bundled sample, and always say which"
lives in one place. Both give a :class:`db.current.CurrentState`, priced with the FX table
the settings select (read again on every load).
"""

from __future__ import annotations

from adapters.sample import replay_sample, sample_note
from adapters.schema import FxTable
from db.current import CurrentState, state_from_runs

from .fx import fx_table
from .settings import Settings

__all__ = ["load_current", "load_database", "load_sample", "sample_note"]


def load_sample(fx: FxTable) -> CurrentState:
    """The bundled recorded responses, replayed through each adapter's parse; its note
    names each sample's capture date (or says it is unknown)."""
    return state_from_runs(replay_sample(), fx=fx, source="sample")


def load_database(settings: Settings, fx: FxTable) -> CurrentState | None:
    """The stored current offers, or ``None`` when the database holds none (or no schema).

    Nothing is migrated here (reading must not write): a database at an older revision is
    an alembic ``CommandError`` saying to run ``gpuscout db upgrade``, not a missing column.
    """
    import sqlalchemy as sa
    from alembic.util.exc import CommandError

    from db.current import load_current_offers
    from db.engine import make_engine
    from db.migrate import current_revision, head_revision

    engine = make_engine(settings.database_url)
    try:
        if not sa.inspect(engine).has_table("current_offer"):
            return None
        at, head = current_revision(engine), head_revision()
        if at != head:
            raise CommandError(
                f"the database is at revision {at}, this gpuscout reads {head}: run "
                "`gpuscout db upgrade` (or `gpuscout snapshot`, which migrates first)"
            )
        state = load_current_offers(engine, fx=fx)
    finally:
        engine.dispose()
    return None if state.frame.is_empty() else state


def load_current(sample: bool = False, settings: Settings | None = None) -> CurrentState:
    """The current offers: the database when it holds offers, else the bundled sample.

    The FX table is read from the settings even for the sample: it converts its non-USD
    prices. A named FX file that is missing or broken is a :class:`service.fx.FxError`.
    """
    if settings is None:
        from .settings import get_settings

        settings = get_settings()
    fx = fx_table(settings)
    if sample:
        return load_sample(fx)
    stored = load_database(settings, fx)
    return stored if stored is not None else load_sample(fx)
