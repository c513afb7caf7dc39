"""kept frame: the current offers' frame, kept in the database by the snapshot

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04

``kept_frame`` holds one row: the polars frame of the current offers as the snapshot that
stored them framed it (Arrow IPC, zstd: ~3 MB for 100k offers), under a digest of what it
was framed from (gpuscout.db.current.frame_key without the URL, the frame's schema and the code's
digest). An API replica on a host without the snapshot's data dir reads it instead of
framing the stored records (seconds of CPU for 100k offers). Column types are spelled out
as in 0001.

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

UTC_DATETIME = sa.DateTime(timezone=True)

# revision identifiers, used by Alembic.
revision: str = '0008'
down_revision: Union[str, Sequence[str], None] = '0007'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('kept_frame',
    sa.Column('key', sa.String(length=64), nullable=False, comment='digest of the stored offers, code and schema'),
    sa.Column('snapshot_id', sa.Integer(), nullable=False, comment='the snapshot that framed it'),
    sa.Column('row_count', sa.Integer(), nullable=False),
    sa.Column('kept_at', UTC_DATETIME, nullable=False),
    sa.Column('frame', sa.LargeBinary(), nullable=False, comment='Arrow IPC, zstd-compressed'),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_kept_frame'))
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('kept_frame')
