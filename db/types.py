"""Column types that behave the same on SQLite and PostgreSQL.

* :class:`UtcDateTime`: timezone-aware UTC in, timezone-aware UTC out. PostgreSQL stores
  ``timestamptz``; SQLite has no time zones, so the value is stored as naive UTC text (which
  sorts chronologically) and made aware again when read.
* :class:`ExactDecimal`: exact money. PostgreSQL stores ``NUMERIC`` without a precision
  limit; SQLite would turn a NUMERIC into a binary float, so there it is stored as the
  decimal's text and read back as :class:`~decimal.Decimal`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = ["ExactDecimal", "UtcDateTime"]


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend; naive datetimes are refused."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware UTC datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class ExactDecimal(TypeDecorator[Decimal]):
    """An exact decimal: unbounded ``NUMERIC`` on PostgreSQL, decimal text on SQLite."""

    impl = sa.Numeric
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.String())
        return dialect.type_descriptor(sa.Numeric(asdecimal=True))

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if not isinstance(value, Decimal):
            raise TypeError(f"ExactDecimal takes a Decimal, not {type(value).__name__}")
        return str(value) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        return value if isinstance(value, Decimal) else Decimal(str(value))
