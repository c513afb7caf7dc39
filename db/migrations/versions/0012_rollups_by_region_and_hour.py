"""price rollups per region class and per hour, with the offers' stock; offer countries

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07

``price_rollup`` gains a region class (``all``, or the coarse region of the offers'
countries, gpuscout.adapters.regions), hour rows for the last days (period ``hour``, its
``hour`` of the day) and the offers' stock (``stock_offers``, ``available_offers``: the
availability share). The region class is read from the offer's country, which
``price_history`` now stores: existing rows take it from the offer's stored record (the
current offer's, or the record kept when the offer went), and stay NULL (region class
``unknown``) where none is stored. ``offer_stock`` gains an index on closed rows'
``valid_to``, through which the rollups read the stock of a day.

The rollups are then rebuilt from the existing history with the code the snapshots use
(0010 leaves that build to this revision, as that code writes these columns).

"""
import json
from datetime import UTC, datetime
from typing import Any, Sequence, Union

from alembic import op
import sqlalchemy as sa

# revision identifiers, used by Alembic.
revision: str = '0012'
down_revision: Union[str, Sequence[str], None] = '0011'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

_CHUNK = 5000


def _countries(bind: sa.engine.Connection) -> dict[str, str]:
    """Offer key -> its country, from the records stored (the current offers' last)."""
    out: dict[str, str] = {}
    queries = (
        "SELECT offer_key, record FROM price_history WHERE record IS NOT NULL",
        "SELECT offer_key, record FROM current_offer",
    )
    for query in queries:
        for key, record in bind.execute(sa.text(query)):
            country = json.loads(record).get("country") if record else None
            if country:
                out[key] = country
    return out


def upgrade() -> None:
    """Upgrade schema."""
    op.add_column('price_history', sa.Column('country', sa.String(length=2), nullable=True, comment='ISO 3166-1 alpha-2, as the offer states it; NULL: not stated'))
    with op.batch_alter_table('offer_stock', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_offer_stock_valid_to'), ['valid_to'], unique=False, sqlite_where=sa.text('valid_to IS NOT NULL'), postgresql_where=sa.text('valid_to IS NOT NULL'))

    # rebuilt below: the new columns need no default for rows that would not stay
    op.execute(sa.text("DELETE FROM price_rollup"))
    with op.batch_alter_table('price_rollup', schema=None) as batch_op:
        batch_op.add_column(sa.Column('hour', sa.SmallInteger(), nullable=False, comment='UTC hour of the day (0-23) of an hour row; 0 otherwise'))
        batch_op.add_column(sa.Column('region_class', sa.String(length=24), nullable=False, comment="all, or a region class of the offers' countries"))
        batch_op.add_column(sa.Column('stock_offers', sa.Integer(), nullable=False, comment='of the offers, those whose stock was recorded in the period'))
        batch_op.add_column(sa.Column('available_offers', sa.Integer(), nullable=False, comment='of those, the ones stated available at some time in the period'))
        batch_op.alter_column('period', existing_type=sa.String(length=8), comment='day | hour | open', existing_comment='day | open', existing_nullable=False)
        batch_op.drop_index(batch_op.f('ix_price_rollup_series_term_period_day'))
        batch_op.create_index(batch_op.f('ix_price_rollup_series_term_region_class_period_day_hour'), ['series', 'term', 'region_class', 'period', 'day', 'hour'], unique=True)

    # A new database has no history: skip the backfill and the build (and the import of
    # polars it needs, which the parent of several API workers must not pay before it
    # starts them).
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT 1 FROM price_history LIMIT 1")).first() is None:
        return
    pairs: list[dict[str, Any]] = [
        {"key": key, "country": country} for key, country in sorted(_countries(bind).items())
    ]
    update = sa.text("UPDATE price_history SET country = :country WHERE offer_key = :key")
    for start in range(0, len(pairs), _CHUNK):
        bind.execute(update, pairs[start : start + _CHUNK])

    from gpuscout.db.rollups import rebuild_rollups

    now = datetime.now(UTC)
    rebuild_rollups(bind, until=now.date(), now=now)


def downgrade() -> None:
    """Downgrade schema."""
    op.execute(sa.text("DELETE FROM price_rollup"))
    with op.batch_alter_table('price_rollup', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_price_rollup_series_term_region_class_period_day_hour'))
        batch_op.create_index(batch_op.f('ix_price_rollup_series_term_period_day'), ['series', 'term', 'period', 'day'], unique=True)
        batch_op.alter_column('period', existing_type=sa.String(length=8), comment='day | open', existing_comment='day | hour | open', existing_nullable=False)
        batch_op.drop_column('available_offers')
        batch_op.drop_column('stock_offers')
        batch_op.drop_column('region_class')
        batch_op.drop_column('hour')
    with op.batch_alter_table('offer_stock', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_offer_stock_valid_to'), sqlite_where=sa.text('valid_to IS NOT NULL'), postgresql_where=sa.text('valid_to IS NOT NULL'))
    op.drop_column('price_history', 'country')
