"""price alerts

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

Price alerts (db/alerts.py): ``subscription.kind`` (digest | alert; existing rows
are digests), ``digest_delivery.week`` widened to 40 characters so it can name an alert
firing's mail (``alert:<firing>``) or webhook call (``hook:<firing>:<webhook>``), and the
tables ``alert``, ``alert_firing``, ``alert_webhook`` and ``search_observation``. Column
types are spelled out as in 0001.

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

UTC_DATETIME = sa.DateTime(timezone=True)
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


# revision identifiers, used by Alembic.
revision: str = '0006'
down_revision: Union[str, Sequence[str], None] = '0005'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('subscription', schema=None) as batch_op:
        batch_op.add_column(sa.Column('kind', sa.String(length=16), server_default='digest', nullable=False, comment='digest | alert'))
        batch_op.create_index(batch_op.f('ix_subscription_kind'), ['kind'], unique=False)
    with op.batch_alter_table('digest_delivery', schema=None) as batch_op:
        batch_op.alter_column('week', existing_type=sa.String(length=8), type_=sa.String(length=40), existing_nullable=False, comment="ISO week in the subscriber's zone; alert:<firing> | hook:<firing>:<webhook>")
    op.create_table('alert',
    sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
    sa.Column('subscription_id', BIG_ID, nullable=False),
    sa.Column('condition', sa.String(length=16), nullable=False, comment='below | in_stock | drop'),
    sa.Column('metric', sa.String(length=40), nullable=False, comment='usd_per_gpu_hour | usd_per_effective_tflop_hour | job_cost_usd'),
    sa.Column('threshold', sa.String(length=40), nullable=True, comment="exact decimal, USD in the metric's unit (below)"),
    sa.Column('drop_pct', sa.Float(), nullable=True, comment='percent (drop)'),
    sa.Column('quiet_minutes', sa.Integer(), nullable=False, comment='no firing sooner after one'),
    sa.Column('search_key', sa.String(length=64), nullable=False, comment='sha256 of the canonical requirement and job'),
    sa.Column('armed', sa.Boolean(), nullable=False, comment='fires at the next crossing'),
    sa.Column('fire_count', sa.Integer(), nullable=False, comment='firings so far'),
    sa.Column('last_value', sa.Float(), nullable=True),
    sa.Column('last_evaluated_at', UTC_DATETIME, nullable=True),
    sa.Column('last_fired_at', UTC_DATETIME, nullable=True),
    sa.ForeignKeyConstraint(['subscription_id'], ['subscription.id'], name=op.f('fk_alert_subscription_id_subscription'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert')),
    sa.UniqueConstraint('subscription_id', name=op.f('uq_alert_subscription_id'))
    )
    with op.batch_alter_table('alert', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alert_search_key'), ['search_key'], unique=False)
    op.create_table('alert_firing',
    sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
    sa.Column('alert_id', BIG_ID, nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False, comment='1, 2, ... per alert'),
    sa.Column('fired_at', UTC_DATETIME, nullable=False),
    sa.Column('value', sa.Float(), nullable=True, comment='the metric when it fired'),
    sa.Column('baseline', sa.Float(), nullable=True, comment='7-day median (drop)'),
    sa.Column('offer', sa.Text(), nullable=False, comment='the best offer, JSON'),
    sa.Column('settled', sa.Boolean(), nullable=False, comment='every delivery final'),
    sa.ForeignKeyConstraint(['alert_id'], ['alert.id'], name=op.f('fk_alert_firing_alert_id_alert'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_firing')),
    sa.UniqueConstraint('alert_id', 'seq', name=op.f('uq_alert_firing_alert_id_seq'))
    )
    with op.batch_alter_table('alert_firing', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alert_firing_fired_at'), ['fired_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_alert_firing_settled'), ['settled'], unique=False)
    op.create_table('alert_webhook',
    sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
    sa.Column('alert_id', BIG_ID, nullable=False),
    sa.Column('url', sa.String(length=2048), nullable=False),
    sa.Column('secret', sa.String(length=128), nullable=False, comment='HMAC-SHA256 signing key'),
    sa.Column('failures', sa.Integer(), nullable=False, comment='consecutive failed deliveries'),
    sa.Column('disabled_at', UTC_DATETIME, nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['alert_id'], ['alert.id'], name=op.f('fk_alert_webhook_alert_id_alert'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_webhook'))
    )
    op.create_table('search_observation',
    sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
    sa.Column('search_key', sa.String(length=64), nullable=False),
    sa.Column('at', UTC_DATETIME, nullable=False),
    sa.Column('usd_per_gpu_hour', sa.Float(), nullable=True),
    sa.Column('usd_per_effective_tflop_hour', sa.Float(), nullable=True),
    sa.Column('job_cost_usd', sa.Float(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_search_observation'))
    )
    with op.batch_alter_table('search_observation', schema=None) as batch_op:
        batch_op.create_index('ix_search_observation_key_at', ['search_key', 'at'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('search_observation', schema=None) as batch_op:
        batch_op.drop_index('ix_search_observation_key_at')
    op.drop_table('search_observation')
    op.drop_table('alert_webhook')
    with op.batch_alter_table('alert_firing', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alert_firing_settled'))
        batch_op.drop_index(batch_op.f('ix_alert_firing_fired_at'))
    op.drop_table('alert_firing')
    with op.batch_alter_table('alert', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alert_search_key'))
    op.drop_table('alert')
    with op.batch_alter_table('digest_delivery', schema=None) as batch_op:
        batch_op.alter_column('week', existing_type=sa.String(length=40), type_=sa.String(length=8), existing_nullable=False, comment="ISO week in the subscriber's zone")
    with op.batch_alter_table('subscription', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_subscription_kind'))
        batch_op.drop_column('kind')
