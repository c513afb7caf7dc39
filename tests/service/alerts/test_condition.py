"""When a condition holds, fires and re-arms: the pure :func:`judge`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from pydantic import ValidationError

from gpuscout.service.alerts.condition import AlertCondition, State, judge, search_key

T = datetime(2026, 1, 1, tzinfo=UTC)
BELOW = AlertCondition(kind="below", threshold=Decimal("2.20"))


def _judge(condition: AlertCondition, armed: bool, value: float | None, **kw: object) -> str:
    state = State(
        condition,
        armed=armed,
        last_fired_at=kw.pop("last_fired_at", None),  # type: ignore[arg-type]
        quiet=kw.pop("quiet", timedelta(0)),  # type: ignore[arg-type]
    )
    return judge(
        state,
        value=value,
        in_stock=kw.pop("in_stock", 0),  # type: ignore[arg-type]
        baseline=kw.pop("baseline", None),  # type: ignore[arg-type]
        band_pct=5,
        now=T,
    )


@pytest.mark.parametrize(
    ("armed", "value", "verdict"),
    [
        (True, 2.20, "fire"),  # at the threshold counts
        (True, 2.2000001, "none"),
        (True, None, "none"),  # nothing qualifies
        (False, 2.10, "none"),
        (False, 2.31, "none"),  # exactly the band's edge: not above it
        (False, 2.3100001, "rearm"),
        (False, None, "rearm"),  # nothing qualifies any more: not below
    ],
)
def test_below_with_its_band(armed: bool, value: float | None, verdict: str) -> None:
    assert _judge(BELOW, armed, value) == verdict


def test_quiet_period() -> None:
    fired = T - timedelta(minutes=30)
    assert _judge(BELOW, True, 2.0, last_fired_at=fired, quiet=timedelta(hours=1)) == "quiet"
    assert _judge(BELOW, True, 2.0, last_fired_at=fired, quiet=timedelta(minutes=30)) == "fire"


def test_drop_needs_a_baseline() -> None:
    drop = AlertCondition(kind="drop", drop_pct=10)
    assert _judge(drop, True, 1.0) == "none"  # no 7-day median yet
    assert _judge(drop, True, 2.25, baseline=2.5) == "fire"  # 10 % below
    assert _judge(drop, True, 2.26, baseline=2.5) == "none"
    assert _judge(drop, False, 2.36, baseline=2.5) == "none"  # inside 2.25 x 1.05 = 2.3625
    assert _judge(drop, False, 2.37, baseline=2.5) == "rearm"


def test_in_stock() -> None:
    stock = AlertCondition(kind="in_stock")
    assert _judge(stock, True, None, in_stock=1) == "fire"
    assert _judge(stock, False, None, in_stock=1) == "none"
    assert _judge(stock, False, None, in_stock=0) == "rearm"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "below"}, "needs a threshold"),
        ({"kind": "drop"}, "needs drop_pct"),
        ({"kind": "in_stock", "threshold": "1"}, "threshold is for 'below'"),
        ({"kind": "below", "threshold": "1", "drop_pct": 5}, "drop_pct is for 'drop'"),
        ({"kind": "below", "threshold": "-1"}, "greater than 0"),
        ({"kind": "below", "threshold": "Infinity"}, "finite"),
    ],
)
def test_bad_conditions_say_what_is_wrong(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        AlertCondition.model_validate(fields)


def test_search_key_is_canonical() -> None:
    assert search_key('{"a":1,"b":2}', "{}") == search_key('{"b": 2, "a": 1}', "{ }")
    assert search_key('{"a":1}', "{}") != search_key('{"a":2}', "{}")
