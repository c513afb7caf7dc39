"""offer origin: live or the offline sample

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

Where a snapshot's offers come from (issue 13): ``snapshot.origin`` (live | sample |
mixed), ``snapshot_provider.origin`` and ``capture_date_known`` per provider run, and
``provider_status.offers_origin`` / ``offers_capture_date_known`` for the stored offer set,
so an answer built on stored sample offers says "sample" (db/current.py).

Rows written before this revision did not record it. A run of ``snapshot --sample`` is
recognisable all the same: the sample's runs started at midnight UTC of the date the sample
manifest then gave each provider (SAMPLE_DATES_BEFORE_0005), which no live fetch does to
the microsecond. Those rows are marked ``sample``; where that date was a placeholder, the
capture date is marked unknown and the stored fetch time becomes the latest the capture can
be (KNOWN_BY, as adapters/samples/manifest.toml now says). Everything else stays ``live``.
Column types are spelled out as in 0001.

"""
from datetime import UTC, datetime
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

UTC_DATETIME = sa.DateTime(timezone=True)

# revision identifiers, used by Alembic.
revision: str = '0005'
down_revision: Union[str, Sequence[str], None] = '0004'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

#: The sample manifest's ``captured`` per provider up to revision 0004.
SAMPLE_DATES_BEFORE_0005 = {
    "lambda": "2025-12-01",
    "verda": "2025-10-01",
    "cudo": "2024-06-01",
    "sheet": "2026-11-30",
    "gcp": "2023-03-24",
    "vultr": "2025-10-01",
    "azure": "2023-08-01",
    "aws": "2025-09-15",
    "vastai": "2024-07-30",
    "jarvislabs": "2025-10-01",
    "digitalocean": "2025-10-01",
}
#: The providers whose sample capture date is unknown, and the latest it can be.
KNOWN_BY = {
    "lambda": "2025-11-22",
    "verda": "2023-11-24",
    "cudo": "2024-03-14",
    "sheet": "2026-11-30",
    "vultr": "2025-01-08",
    "vastai": "2025-01-01",
    "jarvislabs": "2026-06-11",
    "digitalocean": "2025-08-29",
}


def _midnight(day: str) -> datetime:
    """Midnight UTC of ``day`` as db.types.UtcDateTime binds it (naive UTC on SQLite)."""
    at = datetime.fromisoformat(day).replace(tzinfo=UTC)
    return at.replace(tzinfo=None) if op.get_bind().dialect.name == 'sqlite' else at


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('snapshot', schema=None) as batch_op:
        batch_op.add_column(sa.Column('origin', sa.String(length=16), server_default='live', nullable=False, comment="live | sample | mixed: where its runs' offers come from"))
    with op.batch_alter_table('snapshot_provider', schema=None) as batch_op:
        batch_op.add_column(sa.Column('origin', sa.String(length=16), server_default='live', nullable=False, comment='live | sample (the offline sample)'))
        batch_op.add_column(sa.Column('capture_date_known', sa.Boolean(), server_default=sa.true(), nullable=False, comment='false: sample prices of unknown capture date (started_at is the latest it can be)'))
    with op.batch_alter_table('provider_status', schema=None) as batch_op:
        batch_op.add_column(sa.Column('offers_origin', sa.String(length=16), server_default='live', nullable=False, comment='live | sample: where the stored offer set comes from'))
        batch_op.add_column(sa.Column('offers_capture_date_known', sa.Boolean(), server_default=sa.true(), nullable=False, comment='false: sample offers of unknown capture date (offers_fetched_at is the latest)'))
    _mark_sample_rows()


def _mark_sample_rows() -> None:
    snapshot = sa.table('snapshot', sa.column('id', sa.Integer), sa.column('origin', sa.String))
    runs = sa.table(
        'snapshot_provider',
        sa.column('snapshot_id', sa.Integer),
        sa.column('provider', sa.String),
        sa.column('started_at', UTC_DATETIME),
        sa.column('origin', sa.String),
        sa.column('capture_date_known', sa.Boolean),
    )
    status = sa.table(
        'provider_status',
        sa.column('provider', sa.String),
        sa.column('offers_fetched_at', UTC_DATETIME),
        sa.column('offers_origin', sa.String),
        sa.column('offers_capture_date_known', sa.Boolean),
    )
    for provider, day in SAMPLE_DATES_BEFORE_0005.items():
        known = provider not in KNOWN_BY
        op.execute(
            sa.update(runs)
            .where(runs.c.provider == provider, runs.c.started_at == _midnight(day))
            .values(origin='sample', capture_date_known=known)
        )
        values: dict[str, object] = {'offers_origin': 'sample', 'offers_capture_date_known': known}
        if not known:
            values['offers_fetched_at'] = _midnight(KNOWN_BY[provider])
        op.execute(
            sa.update(status)
            .where(status.c.provider == provider, status.c.offers_fetched_at == _midnight(day))
            .values(values)
        )
    sample_runs = sa.select(runs.c.snapshot_id).where(runs.c.origin == 'sample')
    live_runs = sa.select(runs.c.snapshot_id).where(runs.c.origin == 'live')
    op.execute(
        sa.update(snapshot)
        .where(snapshot.c.id.in_(sample_runs))
        .values(origin=sa.case((snapshot.c.id.in_(live_runs), 'mixed'), else_='sample'))
    )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('provider_status', schema=None) as batch_op:
        batch_op.drop_column('offers_capture_date_known')
        batch_op.drop_column('offers_origin')
    with op.batch_alter_table('snapshot_provider', schema=None) as batch_op:
        batch_op.drop_column('capture_date_known')
        batch_op.drop_column('origin')
    with op.batch_alter_table('snapshot', schema=None) as batch_op:
        batch_op.drop_column('origin')
