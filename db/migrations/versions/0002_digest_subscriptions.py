"""digest subscriptions and deliveries

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

The tables of db/subscriptions.py: ``subscription`` and ``digest_delivery`` (one row per
subscription and ISO week, unique, for exactly-once weekly digests). Column types are
spelled out as in 0001 (UTC_DATETIME is what db.types.UtcDateTime stores).

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

UTC_DATETIME = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


# revision identifiers, used by Alembic.
revision: str = '0002'
down_revision: Union[str, Sequence[str], None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('subscription',
    sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
    sa.Column('email', sa.String(length=320), nullable=False, comment='normalized address'),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('time_zone', sa.String(length=64), nullable=False, comment='IANA name, e.g. Europe/Paris'),
    sa.Column('requirement', sa.Text(), nullable=False, comment='pricing.Requirement as JSON'),
    sa.Column('job', sa.Text(), nullable=False, comment='pricing.Job as JSON'),
    sa.Column('status', sa.String(length=16), nullable=False, comment='pending | active | unsubscribed'),
    sa.Column('created_at', UTC_DATETIME, nullable=False),
    sa.Column('confirmed_at', UTC_DATETIME, nullable=True),
    sa.Column('unsubscribed_at', UTC_DATETIME, nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_subscription'))
    )
    with op.batch_alter_table('subscription', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_subscription_email'), ['email'], unique=False)
        batch_op.create_index(batch_op.f('ix_subscription_status'), ['status'], unique=False)

    op.create_table('digest_delivery',
    sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
    sa.Column('subscription_id', BIG_ID, nullable=False),
    sa.Column('week', sa.String(length=8), nullable=False, comment="ISO week in the subscriber's zone"),
    sa.Column('status', sa.String(length=16), nullable=False, comment='claimed | sending | sent | failed'),
    sa.Column('message_id', sa.String(length=255), nullable=False, comment='chosen at the first claim, reused by every resend'),
    sa.Column('attempts', sa.Integer(), nullable=False, comment='claims taken so far'),
    sa.Column('claimed_by', sa.String(length=64), nullable=True),
    sa.Column('claimed_at', UTC_DATETIME, nullable=False),
    sa.Column('lease_expires_at', UTC_DATETIME, nullable=True, comment='a claimed/sending row is reserved until then'),
    sa.Column('sending_at', UTC_DATETIME, nullable=True),
    sa.Column('sent_at', UTC_DATETIME, nullable=True),
    sa.Column('possible_duplicate', sa.Boolean(), nullable=False, comment='resent after an attempt that may have reached the server'),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['subscription_id'], ['subscription.id'], name=op.f('fk_digest_delivery_subscription_id_subscription'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_digest_delivery')),
    sa.UniqueConstraint('message_id', name=op.f('uq_digest_delivery_message_id')),
    sa.UniqueConstraint('subscription_id', 'week', name=op.f('uq_digest_delivery_subscription_id_week'))
    )
    with op.batch_alter_table('digest_delivery', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_digest_delivery_status'), ['status'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('digest_delivery', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_digest_delivery_status'))

    op.drop_table('digest_delivery')
    with op.batch_alter_table('subscription', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_subscription_status'))
        batch_op.drop_index(batch_op.f('ix_subscription_email'))

    op.drop_table('subscription')
