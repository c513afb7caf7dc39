"""Signed, expiring tokens for the links in mails (confirm, unsubscribe).

A token is an itsdangerous ``URLSafeTimedSerializer`` payload signed with
``settings.token_secret`` and a *purpose salt*, so a confirmation token can never be used to
unsubscribe and the other way round. The payload names the subscription and a fingerprint
of its address (not the address itself: links end up in logs); a token whose address no
longer matches the subscription is refused like a forged one.

Errors form one small tree::

    TokenError              any token that must do nothing
    ├── InvalidToken        forged, altered, truncated, or signed for another purpose
    └── ExpiredToken        correctly signed but older than its max age
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from itsdangerous import BadSignature, SignatureExpired, TimestampSigner, URLSafeTimedSerializer

__all__ = [
    "ExpiredToken",
    "InvalidToken",
    "Purpose",
    "TokenClaims",
    "TokenError",
    "address_fingerprint",
    "make_token",
    "read_token",
]


class Purpose(StrEnum):
    """What a token may do; the value is its signing salt."""

    CONFIRM = "gpuscout.subscription.confirm"
    UNSUBSCRIBE = "gpuscout.subscription.unsubscribe"
    ALERT_HISTORY = "gpuscout.alert.history"  # read an alert's firings (link in its mails)


class TokenError(ValueError):
    """A token that must do nothing."""


class InvalidToken(TokenError):
    """Forged, altered, truncated, or made for another purpose."""


class ExpiredToken(TokenError):
    """Genuine but older than the allowed age."""


@dataclasses.dataclass(frozen=True, slots=True)
class TokenClaims:
    subscription_id: int
    address_fingerprint: str
    issued_at: datetime

    def matches(self, email: str) -> bool:
        """Whether the token was made for ``email`` (compared in constant time)."""
        return hmac.compare_digest(self.address_fingerprint, address_fingerprint(email))


def address_fingerprint(email: str) -> str:
    """A short, stable fingerprint of an address (case-insensitive), not the address."""
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()[:16]


def _serializer(
    secret: str, purpose: Purpose, issued_at: datetime | None = None
) -> URLSafeTimedSerializer:
    if not secret:
        raise ValueError("token secret is empty")
    if issued_at is None:
        return URLSafeTimedSerializer(secret, salt=purpose.value)
    stamp = int(issued_at.timestamp())

    class _SignerAt(TimestampSigner):
        def get_timestamp(self) -> int:
            return stamp

    return URLSafeTimedSerializer(secret, salt=purpose.value, signer=_SignerAt)


def make_token(
    secret: str,
    purpose: Purpose,
    subscription_id: int,
    email: str,
    *,
    now: datetime | None = None,
) -> str:
    """A URL-safe token for ``purpose`` on one subscription, timestamped ``now``."""
    payload = {"s": int(subscription_id), "a": address_fingerprint(email)}
    token = _serializer(secret, purpose, now).dumps(payload)
    return token if isinstance(token, str) else token.decode()


def read_token(
    secret: str,
    purpose: Purpose,
    token: str,
    *,
    max_age: timedelta,
    now: datetime | None = None,
) -> TokenClaims:
    """The claims of a genuine, unexpired token for ``purpose``; :class:`TokenError` else.

    ``now`` (timezone-aware) lets tests check expiry without waiting.
    """
    serializer = _serializer(secret, purpose)
    max_age_s = int(max_age.total_seconds())
    try:
        payload, signed_at = serializer.loads(token, max_age=None, return_timestamp=True)
    except SignatureExpired as exc:  # pragma: no cover - max_age is checked below
        raise ExpiredToken("link expired") from exc
    except BadSignature as exc:
        raise InvalidToken("invalid link") from exc
    except Exception as exc:  # malformed input of any kind does nothing either
        raise InvalidToken("invalid link") from exc
    issued_at = signed_at if signed_at.tzinfo else signed_at.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    if current - issued_at > timedelta(seconds=max_age_s):
        raise ExpiredToken("link expired")
    if issued_at - current > timedelta(minutes=5):  # from the future: clock games
        raise InvalidToken("invalid link")
    if (
        not isinstance(payload, dict)
        or not isinstance(payload.get("s"), int)
        or isinstance(payload.get("s"), bool)
        or not isinstance(payload.get("a"), str)
    ):
        raise InvalidToken("invalid link")
    return TokenClaims(payload["s"], payload["a"], issued_at)
