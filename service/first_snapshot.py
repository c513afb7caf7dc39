"""What ``gpuscout offers`` does when nothing is stored yet: it takes a snapshot of the
published catalogs first, so a new user's first answer is today's market, not the offline
sample.

The catalogs (gpuhunt's and SkyPilot's, :mod:`adapters.gpuhunt_catalog` and
:mod:`adapters.skypilot_catalog`) need no account and carry many providers' prices, hours
old, in a few files: a first answer in seconds. ``gpuscout snapshot`` fetches every
provider's own API. With no network the sources fail fast and the offline sample answers,
saying so; the attempt is recorded, so a machine that stays offline is not made to wait
again for :data:`RETRY_AFTER`. The setting ``fetch_when_empty`` turns this off.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from .settings import Settings

__all__ = ["CATALOGS", "RETRY_AFTER", "first_snapshot", "nothing_stored"]

#: The sources a first snapshot fetches: published catalogs, no account needed.
CATALOGS = ("gpuhunt_catalog", "skypilot_catalog")
#: How long after an attempt that stored nothing another is not made.
RETRY_AFTER = timedelta(hours=1)


def nothing_stored(settings: Settings, now: datetime | None = None) -> bool:
    """Whether the database holds no current offer and no snapshot was attempted within
    :data:`RETRY_AFTER` of ``now`` (an SQLite file not yet created holds nothing)."""
    from gpuscout.db.head import no_sqlite_file

    if no_sqlite_file(settings.database_url):
        return True
    import sqlalchemy as sa

    from gpuscout.db.engine import make_engine
    from gpuscout.db.models import CurrentOffer, SnapshotRun

    engine = make_engine(settings.database_url)
    try:
        tables = sa.inspect(engine)
        if not tables.has_table(CurrentOffer.__tablename__):
            return True
        with engine.connect() as connection:
            if connection.execute(sa.select(CurrentOffer.offer_key).limit(1)).first() is not None:
                return False
            if not tables.has_table(SnapshotRun.__tablename__):
                return True
            last = connection.execute(sa.select(sa.func.max(SnapshotRun.started_at))).scalar()
    finally:
        engine.dispose()
    if last is None:
        return True
    at = now or datetime.now(UTC)
    return at - last.replace(tzinfo=last.tzinfo or UTC) >= RETRY_AFTER


def first_snapshot(settings: Settings, report: Callable[[str], None]) -> None:
    """Take a snapshot of :data:`CATALOGS` (those not disabled) into the database,
    ``report``-ing what it does and what it got; a locked or failed snapshot is reported,
    never raised: the answer then comes from what is stored, else the sample."""
    from gpuscout.adapters.collect import RunStatus

    from .snapshots import SnapshotLocked, fetch_providers, take_snapshot

    names = [n for n in CATALOGS if n not in settings.providers_disabled]
    if not names:
        return
    report(
        "nothing stored yet: fetching the published catalogs (gpuhunt's, SkyPilot's; no"
        " account needed); `gpuscout snapshot` fetches every provider"
    )
    try:
        stored = take_snapshot(settings, fetch=lambda: fetch_providers(settings, names))
    except SnapshotLocked as exc:
        report(f"not fetched: {exc}")
        return
    ok = [p for p in stored.summary.providers if p.status is RunStatus.OK]
    if ok:
        offers = sum(p.offer_count for p in ok)
        report(f"stored {offers:,} offers of {len(ok)} providers")
    else:
        report("the catalogs could not be fetched: answering from the offline sample")
