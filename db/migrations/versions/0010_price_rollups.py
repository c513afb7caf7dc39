"""price rollups: the daily index's statistics per UTC day, GPU series and term

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07

``price_rollup`` holds, per UTC day, GPU series (a catalog model, family or vendor) and
term, what the daily price index computes over the price history (gpuscout.db.rollups);
each snapshot updates it in its own transaction, and the history views read it instead of
scanning the history. It is built from the existing history by 0011, with the code the
snapshots use (so a day's row is what a snapshot would write), once the table has the
columns that code writes.

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

# revision identifiers, used by Alembic.
revision: str = '0010'
down_revision: Union[str, Sequence[str], None] = '0009'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('price_rollup',
    sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
    sa.Column('period', sa.String(length=8), nullable=False, comment='day | open'),
    sa.Column('day', sa.Date(), nullable=False, comment='UTC day'),
    sa.Column('series', sa.String(length=96), nullable=False, comment='a catalog model, family:<family> or vendor:<vendor>'),
    sa.Column('term', sa.String(length=32), nullable=False),
    sa.Column('offers', sa.Integer(), nullable=False),
    sa.Column('providers', sa.Integer(), nullable=False),
    sa.Column('sample_offers', sa.Integer(), nullable=False),
    sa.Column('min_usd_per_gpu_hour', sa.Float(), nullable=False),
    sa.Column('p10_usd_per_gpu_hour', sa.Float(), nullable=False),
    sa.Column('median_usd_per_gpu_hour', sa.Float(), nullable=False),
    sa.Column('p90_usd_per_gpu_hour', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_price_rollup'))
    )
    with op.batch_alter_table('price_rollup', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_price_rollup_series_term_period_day'), ['series', 'term', 'period', 'day'], unique=True)
        batch_op.create_index(batch_op.f('ix_price_rollup_period_day'), ['period', 'day'], unique=False)

    # The build from the existing history is 0011's: the rollup code writes the columns
    # that revision adds, so it runs once the table has them.


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('price_rollup', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_price_rollup_period_day'))
        batch_op.drop_index(batch_op.f('ix_price_rollup_series_term_period_day'))
    op.drop_table('price_rollup')
