"""mail quotas, invalid subscriptions, delivery retry backoff

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

Hardening of db/subscriptions.py:

* ``mail_quota`` (one lockable row per limit key) and ``mail_quota_use`` (one row per
  confirmation mail counted): the atomic per-address, per-client and global limits;
* ``subscription.problem``: why a subscription whose stored search no longer validates was
  marked ``invalid`` (the status column is free text, so the new value needs no change);
* ``digest_delivery.retry_at``: a failed delivery is not claimed again before then.

Column types are spelled out as in 0001 (UTC_DATETIME is what db.types.UtcDateTime stores).

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

UTC_DATETIME = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


# revision identifiers, used by Alembic.
revision: str = '0003'
down_revision: Union[str, Sequence[str], None] = '0002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('mail_quota',
    sa.Column('key', sa.String(length=80), nullable=False, comment='address:<sha256> | client:<sha256> | global'),
    sa.Column('used_at', UTC_DATETIME, nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_mail_quota'))
    )
    with op.batch_alter_table('mail_quota', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_mail_quota_used_at'), ['used_at'], unique=False)

    op.create_table('mail_quota_use',
    sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
    sa.Column('key', sa.String(length=80), nullable=False),
    sa.Column('at', UTC_DATETIME, nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_mail_quota_use'))
    )
    with op.batch_alter_table('mail_quota_use', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_mail_quota_use_at'), ['at'], unique=False)
        batch_op.create_index('ix_mail_quota_use_key_at', ['key', 'at'], unique=False)

    with op.batch_alter_table('subscription', schema=None) as batch_op:
        batch_op.add_column(sa.Column('problem', sa.Text(), nullable=True, comment='why the subscription was marked invalid'))
        batch_op.alter_column('status', existing_type=sa.String(length=16), existing_nullable=False, comment='pending | active | unsubscribed | invalid', existing_comment='pending | active | unsubscribed')

    with op.batch_alter_table('digest_delivery', schema=None) as batch_op:
        batch_op.add_column(sa.Column('retry_at', UTC_DATETIME, nullable=True, comment='a failed row is not claimed again before then (backoff)'))
        batch_op.alter_column('status', existing_type=sa.String(length=16), existing_nullable=False, comment='claimed | sending | sent | failed | refused', existing_comment='claimed | sending | sent | failed')


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('digest_delivery', schema=None) as batch_op:
        batch_op.alter_column('status', existing_type=sa.String(length=16), existing_nullable=False, comment='claimed | sending | sent | failed', existing_comment='claimed | sending | sent | failed | refused')
        batch_op.drop_column('retry_at')

    with op.batch_alter_table('subscription', schema=None) as batch_op:
        batch_op.alter_column('status', existing_type=sa.String(length=16), existing_nullable=False, comment='pending | active | unsubscribed', existing_comment='pending | active | unsubscribed | invalid')
        batch_op.drop_column('problem')

    with op.batch_alter_table('mail_quota_use', schema=None) as batch_op:
        batch_op.drop_index('ix_mail_quota_use_key_at')
        batch_op.drop_index(batch_op.f('ix_mail_quota_use_at'))

    op.drop_table('mail_quota_use')
    with op.batch_alter_table('mail_quota', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_mail_quota_used_at'))

    op.drop_table('mail_quota')
