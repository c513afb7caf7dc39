"""offer stock: each offer's availability as change-only intervals

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07

``offer_stock`` records, for every offer a successful fetch lists, whether it was rentable
and how many of it the provider states, opening a row when that changes and closing it
when the offer changes or is no longer listed: the share of snapshots in which an offer was
available over 7 and 30 days comes from it (gpuscout.db.availability). Existing history has
no stock: shares start with the first snapshot after this migration.

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

UTC_DATETIME = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

# revision identifiers, used by Alembic.
revision: str = '0009'
down_revision: Union[str, Sequence[str], None] = '0008'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('offer_stock',
    sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
    sa.Column('offer_key', sa.String(), nullable=False),
    sa.Column('provider', sa.String(length=64), nullable=False),
    sa.Column('gpu_model', sa.String(length=64), nullable=True),
    sa.Column('available', sa.Boolean(), nullable=False, comment='listed and not stated unavailable (available_now false, count 0)'),
    sa.Column('available_count', sa.Integer(), nullable=True, comment='how many the provider states it has; NULL: not published'),
    sa.Column('opened_snapshot_id', sa.Integer(), nullable=False),
    sa.Column('closed_snapshot_id', sa.Integer(), nullable=True, comment="NULL: still the offer's stock"),
    sa.Column('valid_from', UTC_DATETIME, nullable=False),
    sa.Column('valid_to', UTC_DATETIME, nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_offer_stock'))
    )
    with op.batch_alter_table('offer_stock', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_offer_stock_offer_key_opened_snapshot_id'), ['offer_key', 'opened_snapshot_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_offer_stock_provider_closed_snapshot_id'), ['provider', 'closed_snapshot_id'], unique=False)
        batch_op.create_index('uq_offer_stock_open_offer_key', ['offer_key'], unique=True, sqlite_where=sa.text('closed_snapshot_id IS NULL'), postgresql_where=sa.text('closed_snapshot_id IS NULL'))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('offer_stock', schema=None) as batch_op:
        batch_op.drop_index('uq_offer_stock_open_offer_key', sqlite_where=sa.text('closed_snapshot_id IS NULL'), postgresql_where=sa.text('closed_snapshot_id IS NULL'))
        batch_op.drop_index(batch_op.f('ix_offer_stock_provider_closed_snapshot_id'))
        batch_op.drop_index(batch_op.f('ix_offer_stock_offer_key_opened_snapshot_id'))
    op.drop_table('offer_stock')
