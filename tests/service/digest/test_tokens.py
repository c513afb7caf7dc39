"""Signed, expiring link tokens: forged, altered, expired or misdirected tokens do nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpuscout.service.digest.tokens import (
    ExpiredToken,
    InvalidToken,
    Purpose,
    make_token,
    read_token,
)

SECRET = "s3cret-for-tests"
T = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)
WEEK = timedelta(days=7)


def test_round_trip() -> None:
    token = make_token(SECRET, Purpose.CONFIRM, 42, "Ada@Example.com", now=T)
    claims = read_token(SECRET, Purpose.CONFIRM, token, max_age=WEEK, now=T + timedelta(days=6))
    assert claims.subscription_id == 42
    assert claims.matches("ada@example.com") and not claims.matches("eve@example.com")
    assert "example" not in token.lower()  # the address is not in the link


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # signature altered
        lambda t: ("B" if t[0] != "B" else "C") + t[1:],  # payload altered
        lambda t: t[: len(t) // 2],  # truncated
        lambda t: t + "x",
        lambda t: "",
        lambda t: "not-a-token",
        lambda t: "eyJzIjoxfQ.AAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAA",  # guessed shape
        lambda t: "\u00e9\u0000\r\n",
    ],
)
def test_altered_or_guessed_tokens_are_invalid(mutate: object) -> None:
    token = make_token(SECRET, Purpose.UNSUBSCRIBE, 7, "a@example.com", now=T)
    with pytest.raises(InvalidToken):
        read_token(SECRET, Purpose.UNSUBSCRIBE, mutate(token), max_age=WEEK, now=T)  # type: ignore[operator]


def test_forged_with_another_key_or_for_another_purpose() -> None:
    forged = make_token("guessed-secret", Purpose.UNSUBSCRIBE, 7, "a@example.com", now=T)
    with pytest.raises(InvalidToken):
        read_token(SECRET, Purpose.UNSUBSCRIBE, forged, max_age=WEEK, now=T)
    confirm = make_token(SECRET, Purpose.CONFIRM, 7, "a@example.com", now=T)
    with pytest.raises(InvalidToken):
        read_token(SECRET, Purpose.UNSUBSCRIBE, confirm, max_age=WEEK, now=T)


def test_expired_and_future_tokens() -> None:
    token = make_token(SECRET, Purpose.CONFIRM, 1, "a@example.com", now=T)
    with pytest.raises(ExpiredToken):
        read_token(
            SECRET, Purpose.CONFIRM, token, max_age=WEEK, now=T + WEEK + timedelta(seconds=2)
        )
    with pytest.raises(InvalidToken):
        read_token(SECRET, Purpose.CONFIRM, token, max_age=WEEK, now=T - timedelta(hours=1))
