"""skip reasons: each provider run's skipped records, counted by reason

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07

``snapshot_provider.skip_reasons`` holds what a run skipped, summarised as JSON text
``{"reasons": {reason: records}, "other": records}`` (gpuscout.adapters.skip_summary: the
commonest 20 reasons, the rest counted as other), so the offers answers can name what was
not ranked, such as a region a provider does not provision. Rows stored before this
migration stay NULL: only their ``skipped_count`` is known.

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0011'
down_revision: Union[str, Sequence[str], None] = '0010'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('snapshot_provider', schema=None) as batch_op:
        batch_op.add_column(sa.Column('skip_reasons', sa.Text(), nullable=True, comment='JSON {reasons: {reason: records}, other: records} (adapters.skip_summary); NULL: nothing skipped, or stored before reasons were'))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('snapshot_provider', schema=None) as batch_op:
        batch_op.drop_column('skip_reasons')
