"""price history origin: live or the offline sample, dated when stored

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

``price_history.origin`` (live | sample). Before this revision a replay of the offline
sample (``gpuscout snapshot --sample``) opened its price rows at the sample's capture date
(its runs "start" then), so the daily index showed the sample's prices on every day since
2023, and closed the rows it replaced at that date too. From now on such rows open and close
when the sample was stored (the snapshot's start, db/snapshots.py) and say ``sample``.

Earlier rows are fixed where the snapshot that opened them is still on record: a row opened
by a sample run (``snapshot_provider.origin``) is marked ``sample`` and opens at its
snapshot's start; a row closed by a sample run closes at that snapshot's start. A sample row
whose snapshot was pruned is still recognised (its ``valid_from`` is midnight UTC of a date
the sample manifest gave its provider, which no live fetch matches to the microsecond) and
marked ``sample``; its dates stay (the store time is no longer known). Column types are
spelled out as in 0001.

"""
from datetime import UTC, datetime
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

UTC_DATETIME = sa.DateTime(timezone=True)

# revision identifiers, used by Alembic.
revision: str = '0007'
down_revision: Union[str, Sequence[str], None] = '0006'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

#: The dates the sample's runs started at, per provider: the manifest's ``captured`` up to
#: revision 0004 and its ``captured`` or ``known_by`` since 0005.
SAMPLE_DATES = {
    "lambda": ("2025-12-01", "2025-11-22"),
    "verda": ("2025-10-01", "2023-11-24"),
    "cudo": ("2024-06-01", "2024-03-14"),
    "sheet": ("2026-11-30",),
    "gcp": ("2023-03-24",),
    "vultr": ("2025-10-01", "2025-01-08"),
    "azure": ("2023-08-01",),
    "aws": ("2025-09-15",),
    "vastai": ("2024-07-30", "2025-01-01"),
    "jarvislabs": ("2025-10-01", "2026-06-11"),
    "digitalocean": ("2025-10-01", "2025-08-29"),
}


def _midnight(day: str) -> datetime:
    """Midnight UTC of ``day`` as db.types.UtcDateTime binds it (naive UTC on SQLite)."""
    at = datetime.fromisoformat(day).replace(tzinfo=UTC)
    return at.replace(tzinfo=None) if op.get_bind().dialect.name == 'sqlite' else at


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('price_history', schema=None) as batch_op:
        batch_op.add_column(sa.Column('origin', sa.String(length=16), server_default='live', nullable=False, comment='live | sample: the price was fetched, or replayed from the offline sample (valid_from/valid_to are then when the sample was stored, not its capture date)'))
    _fix_sample_rows()


def _fix_sample_rows() -> None:
    history = sa.table(
        'price_history',
        sa.column('provider', sa.String),
        sa.column('valid_from', UTC_DATETIME),
        sa.column('valid_to', UTC_DATETIME),
        sa.column('opened_snapshot_id', sa.Integer),
        sa.column('closed_snapshot_id', sa.Integer),
        sa.column('origin', sa.String),
    )
    runs = sa.table(
        'snapshot_provider',
        sa.column('snapshot_id', sa.Integer),
        sa.column('provider', sa.String),
        sa.column('origin', sa.String),
    )
    snapshot = sa.table('snapshot', sa.column('id', sa.Integer), sa.column('started_at', UTC_DATETIME))

    def run_of(snapshot_id: sa.ColumnElement[int]) -> sa.Exists:
        return sa.exists().where(
            runs.c.snapshot_id == snapshot_id,
            runs.c.provider == history.c.provider,
            runs.c.origin == 'sample',
        )

    def start_of(snapshot_id: sa.ColumnElement[int]) -> sa.ScalarSelect[datetime]:
        return sa.select(snapshot.c.started_at).where(snapshot.c.id == snapshot_id).scalar_subquery()

    opened = history.c.opened_snapshot_id
    closed = history.c.closed_snapshot_id
    op.execute(sa.update(history).where(run_of(opened)).values(origin='sample'))
    op.execute(
        sa.update(history)
        .where(run_of(opened), start_of(opened).is_not(None), history.c.valid_from < start_of(opened))
        .values(valid_from=start_of(opened))
    )
    op.execute(
        sa.update(history)
        .where(
            closed.is_not(None),
            run_of(closed),
            start_of(closed).is_not(None),
            history.c.valid_to < start_of(closed),
        )
        .values(valid_to=start_of(closed))
    )
    any_run = sa.exists().where(runs.c.snapshot_id == opened, runs.c.provider == history.c.provider)
    for provider, days in SAMPLE_DATES.items():
        op.execute(
            sa.update(history)
            .where(
                history.c.provider == provider,
                history.c.valid_from.in_([_midnight(d) for d in days]),
                ~any_run,
            )
            .values(origin='sample')
        )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('price_history', schema=None) as batch_op:
        batch_op.drop_column('origin')
