"""snapshot runs

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

``snapshot_run`` (db/runs.py): one row per attempt to take a snapshot, written ``running``
when it starts and renewed while it runs, so that a snapshot killed mid-way leaves a record
the next runner reports as aborted. Column types are spelled out as in 0001.

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

UTC_DATETIME = sa.DateTime(timezone=True)


# revision identifiers, used by Alembic.
revision: str = '0004'
down_revision: Union[str, Sequence[str], None] = '0003'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('snapshot_run',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False, comment='running | ok | failed | aborted'),
    sa.Column('holder', sa.String(length=128), nullable=False, comment='host:pid of the runner'),
    sa.Column('started_at', UTC_DATETIME, nullable=False),
    sa.Column('heartbeat_at', UTC_DATETIME, nullable=False, comment='renewed while running: a stale one means the runner died'),
    sa.Column('finished_at', UTC_DATETIME, nullable=True),
    sa.Column('snapshot_id', sa.Integer(), nullable=True, comment='the snapshot it stored'),
    sa.Column('error', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_snapshot_run'))
    )
    with op.batch_alter_table('snapshot_run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_snapshot_run_started_at'), ['started_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_snapshot_run_status'), ['status'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('snapshot_run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_snapshot_run_status'))
        batch_op.drop_index(batch_op.f('ix_snapshot_run_started_at'))

    op.drop_table('snapshot_run')
