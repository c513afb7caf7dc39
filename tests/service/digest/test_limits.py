"""The mail limits: one key per inbox whatever the spelling, the client behind trusted proxies
only, and exactly ``limit`` requests through however many arrive at once."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from gpuscout.db.engine import make_engine
from gpuscout.db.migrate import upgrade
from gpuscout.db.subscriptions import QUOTA_MAX_WINDOW, MailQuota, MailQuotaUse
from gpuscout.service.digest.limits import (
    SubscribeRateLimited,
    address_limit_key,
    client_address,
    subscribe_quotas,
)
from gpuscout.service.digest.schedule import smtp_transport
from gpuscout.service.digest.subscriptions import SubscriptionManager, SubscriptionRequest
from gpuscout.service.settings import Settings

from .conftest import RecordingHandler
from .helpers import NOW


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("Ada@Example.COM", "ada@example.com"),
        ("ada+digest@example.com", "ada@example.com"),
        ("ADA+a+b@EXAMPLE.com", "ada@example.com"),
        ("ÄDA@example.com", "äda@example.com"),  # SQL lower() folds ASCII only
        ("ÉLODIE+x@example.com", "élodie@example.com"),
        ("STRASSE@example.com", "straße@example.com"),  # full case folding
        ("ａｄａ@example.com", "ada@example.com"),  # full-width (NFKC)
        ("ada@BÜCHER.example", "ada@xn--bcher-kva.example"),  # IDNA
        ("ada@example.com.", "ada@example.com"),
    ],
)
def test_one_inbox_one_key(spelling: str, canonical: str) -> None:
    assert address_limit_key(spelling) == address_limit_key(canonical)


def test_different_inboxes_keep_their_keys() -> None:
    keys = {
        address_limit_key(a)
        for a in ("ada@example.com", "a.da@example.com", "ada@example.org", "+x@example.com")
    }
    assert len(keys) == 4


@pytest.mark.parametrize(
    ("peer", "forwarded", "proxies", "client"),
    [
        ("203.0.113.9", None, [], "203.0.113.9"),
        # an untrusted peer's X-Forwarded-For is the client's own claim: ignored
        ("203.0.113.9", "198.51.100.1", [], "203.0.113.9"),
        ("203.0.113.9", "198.51.100.1", ["10.0.0.0/8"], "203.0.113.9"),
        # behind a trusted proxy: the address it saw
        ("10.0.0.2", "198.51.100.1", ["10.0.0.0/8"], "198.51.100.1"),
        # a client-written entry further left is never believed
        ("10.0.0.2", "1.2.3.4, 198.51.100.1", ["10.0.0.0/8"], "198.51.100.1"),
        # two trusted proxies in a row
        ("10.0.0.2", "198.51.100.1, 10.0.0.3", ["10.0.0.0/8"], "198.51.100.1"),
        ("::1", "2001:db8::5", ["::1"], "2001:db8::5"),
        # only proxies: the farthest of them
        ("10.0.0.2", "10.0.0.3", ["10.0.0.0/8"], "10.0.0.3"),
        (None, None, [], "unknown"),
    ],
)
def test_client_address(
    peer: str | None, forwarded: str | None, proxies: list[str], client: str
) -> None:
    assert client_address(peer, forwarded, proxies) == client


def test_one_ipv6_64_is_one_client(settings: Settings) -> None:
    def client_key(ip: str) -> str:
        quotas = subscribe_quotas(settings, "a@example.com", ip)
        return next(q.key for q in quotas if q.key.startswith("client:"))

    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff::9")
    assert client_key("2001:db8:1:2::1") != client_key("2001:db8:1:3::1")
    assert client_key("::ffff:198.51.100.1") == client_key("198.51.100.1")
    assert client_key("198.51.100.1") != client_key("198.51.100.2")


def test_settings_refuse_a_proxy_that_is_not_an_address() -> None:
    with pytest.raises(ValueError, match="not an IP address or network: 'proxy.local'"):
        Settings(_env_file=None, trusted_proxies=["10.0.0.0/8", "proxy.local"])  # type: ignore[call-arg]


def _request(email: str) -> SubscriptionRequest:
    return SubscriptionRequest(email=email, name="H100")


def test_spellings_of_one_inbox_share_its_limit(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    limited = settings.model_copy(update={"subscriptions_per_address_per_day": 3})
    manager = SubscriptionManager(limited, engine, smtp_transport(limited), clock=lambda: NOW)
    for spelling in ("Ädá@example.com", "ädá@example.com", "ÄDÁ+news@EXAMPLE.com"):
        manager.subscribe(_request(spelling))
    with pytest.raises(SubscribeRateLimited, match="3 subscription request"):
        manager.subscribe(_request("ädá+other@example.com"))
    assert len(handler.messages) == 3
    assert handler.envelopes[2][1] == ["ÄDÁ+news@example.com"]  # mail goes where asked
    manager.subscribe(_request("ada@example.com"))  # another inbox


def test_per_client_and_global_limits_answer_with_retry_after(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    limited = settings.model_copy(
        update={"subscriptions_per_client_per_hour": 2, "subscriptions_per_hour": 3}
    )
    now = [NOW]
    manager = SubscriptionManager(limited, engine, smtp_transport(limited), clock=lambda: now[0])
    manager.subscribe(_request("a1@example.com"), client="198.51.100.1")
    now[0] += timedelta(minutes=10)
    manager.subscribe(_request("a2@example.com"), client="198.51.100.1")
    with pytest.raises(SubscribeRateLimited, match="this client: already 2") as caught:
        manager.subscribe(_request("a3@example.com"), client="198.51.100.1")
    assert caught.value.retry_after_s == 50 * 60
    manager.subscribe(_request("a3@example.com"), client="198.51.100.2")
    with pytest.raises(SubscribeRateLimited, match="gpuscout: already 3") as caught:
        manager.subscribe(_request("a4@example.com"), client="198.51.100.3")
    assert caught.value.retry_after_s == 50 * 60
    assert len(handler.messages) == 3
    now[0] = NOW + timedelta(hours=1)  # the first request left both windows
    manager.subscribe(_request("a4@example.com"), client="198.51.100.1")
    assert len(handler.messages) == 4


@pytest.mark.parametrize("limit_kind", ["address", "client", "global"])
def test_concurrent_requests_pass_exactly_the_limit(
    limit_kind: str,
    settings: Settings,
    engine: Engine,
    smtp_server: tuple[RecordingHandler, int],
) -> None:
    """20 requests at once from threads (on PostgreSQL: 20 transactions racing): exactly the
    limit of them store a subscription and send a mail; the rest are refused."""
    handler, _ = smtp_server
    limit = 5
    limited = settings.model_copy(
        update={
            "subscriptions_per_address_per_day": limit if limit_kind == "address" else 100,
            "subscriptions_per_client_per_hour": limit if limit_kind == "client" else 100,
            "subscriptions_per_hour": limit if limit_kind == "global" else 100,
        }
    )
    manager = SubscriptionManager(limited, engine, smtp_transport(limited), clock=lambda: NOW)
    barrier = threading.Barrier(20)
    accepted: list[int] = []
    refused: list[int] = []
    errors: list[BaseException] = []

    def request(i: int) -> None:
        email = "ada@example.com" if limit_kind == "address" else f"ada{i}@example.com"
        client = "198.51.100.1" if limit_kind == "client" else f"198.51.100.{i + 10}"
        try:
            barrier.wait()
            manager.subscribe(_request(email), client=client)
            accepted.append(i)
        except SubscribeRateLimited:
            refused.append(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=request, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert (len(accepted), len(refused)) == (limit, 20 - limit)
    assert len(handler.messages) == limit


def _old_key(connection: sa.Connection, key: str) -> None:
    long_ago = NOW - QUOTA_MAX_WINDOW - timedelta(hours=1)
    connection.execute(sa.insert(MailQuota.__table__).values(key=key, used_at=long_ago))
    connection.execute(sa.insert(MailQuotaUse.__table__).values(key=key, at=long_ago))


def test_uses_no_window_sees_are_pruned(settings: Settings, engine: Engine) -> None:
    with engine.begin() as connection:
        _old_key(connection, "address:old")
    manager = SubscriptionManager(settings, engine, lambda _m: 1, clock=lambda: NOW)
    manager.subscribe(_request("ada@example.com"), client="198.51.100.1")
    with engine.connect() as connection:
        keys = set(connection.execute(sa.select(MailQuota.__table__.c.key)).scalars())
        uses = list(connection.execute(sa.select(MailQuotaUse.__table__.c.key)).scalars())
    assert "address:old" not in keys and "address:old" not in uses
    assert len(keys) == len(uses) == 4  # this request's address, client, network, global


@pytest.mark.postgres
def test_pruning_skips_a_row_another_request_holds(pg_url: str) -> None:
    """A request holding an old key's row (waiting for ``global``, say) must not make this
    one's prune wait for it: that would be a deadlock."""
    upgrade(pg_url)
    engine = make_engine(pg_url)
    try:
        with engine.begin() as connection:
            _old_key(connection, "address:held")
        settings = Settings(_env_file=None, database_url=pg_url)  # type: ignore[call-arg]
        manager = SubscriptionManager(settings, engine, lambda _m: 1, clock=lambda: NOW)
        with engine.connect() as holder, holder.begin():
            holder.execute(
                sa.select(MailQuota.__table__)
                .where(MailQuota.__table__.c.key == "address:held")
                .with_for_update()
            )
            done = threading.Event()
            worker = threading.Thread(
                target=lambda: (manager.subscribe(_request("ada@example.com")), done.set())
            )
            worker.start()
            finished = done.wait(10)
        worker.join()
        assert finished, "the prune waited for a row another transaction held"
    finally:
        engine.dispose()


def test_eleven_clients_of_one_network_cannot_lock_out_everyone(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    """100 requests from 11 addresses of one network (the defaults): the network's quota
    stops them, and a client elsewhere still signs up."""
    handler, _ = smtp_server
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    limited = settings.model_copy(
        update={
            name: getattr(defaults, name)
            for name in (
                "subscriptions_per_client_per_hour",
                "subscriptions_per_network_per_hour",
                "subscriptions_per_hour",
            )
        }
    )
    manager = SubscriptionManager(limited, engine, smtp_transport(limited), clock=lambda: NOW)
    accepted = refused = 0
    for i in range(100):
        try:
            manager.subscribe(_request(f"v{i}@example.com"), client=f"203.0.113.{i % 11 + 1}")
        except SubscribeRateLimited as exc:
            refused += 1
            assert "this client" in str(exc)  # the client's or its network's quota, not ours
            continue
        accepted += 1
    assert accepted == limited.subscriptions_per_network_per_hour and refused == 100 - accepted
    manager.subscribe(_request("someone@example.org"), client="198.51.100.7")
    assert len(handler.messages) == accepted + 1
