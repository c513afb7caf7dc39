"""The pure builder and the message assembly: purity, escaping, header injection."""

from __future__ import annotations

import dataclasses
import re
from datetime import timedelta

import pytest
from pydantic import ValidationError

from gpuscout.db.history import PriceChange, WeekOverWeek
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.pricing.offer_checklist import checklists
from gpuscout.service.digest.build import (
    Digest,
    DigestLinks,
    StaleProvider,
    SubscriptionView,
    build_digest,
)
from gpuscout.service.digest.chart import IndexPoint
from gpuscout.service.digest.mail import (
    HeaderInjectionError,
    InvalidAddressError,
    build_digest_message,
    parse_sender,
)
from gpuscout.service.digest.subscriptions import SubscriptionRequest

from .helpers import JOB, NOW, REQUIREMENT, WEEK_AGO, offer

LINKS = DigestLinks(
    "https://gpuscout.test/v1/subscriptions/unsubscribe?token=t", "https://gpuscout.test"
)
OFFERS = [offer("alpha", "a1", "18.00", NOW), offer("beta", "b1", "27.50", NOW)]


def _build(name: str = "H100 weekly") -> Digest:
    view = SubscriptionView(1, name, "a@example.com", REQUIREMENT, JOB, "Europe/Paris")
    changes = WeekOverWeek(
        WEEK_AGO,
        NOW,
        cheaper=[
            PriceChange(
                "k",
                OFFERS[0],
                offer("alpha", "a1", "20", WEEK_AGO).usd_per_hour,
                OFFERS[0].usd_per_hour,
            )
        ],
        dearer=[],
        new=[PriceChange("k2", OFFERS[1], None, OFFERS[1].usd_per_hour)],
        gone=[],
    )
    index = [
        IndexPoint((NOW - timedelta(days=d)).date(), "H100-SXM5-80GB", "on_demand", 2.5 - d / 100)
        for d in range(14)
    ]
    return build_digest(
        view,
        offers_to_frame(OFFERS),
        changes=changes,
        price_index=index,
        stale_providers=[StaleProvider("beta", NOW - timedelta(days=3), "HTTP 503")],
        links=LINKS,
        now=NOW,
    )


def test_build_digest_is_pure_and_complete() -> None:
    first, second = _build(), _build()
    assert first == second  # same input, same subject, html, text and chart bytes
    assert first.week == "2025-W11"
    assert first.subject.startswith("gpuscout 2025-W11: best 8× H100-SXM5-80GB $18.00/h")
    assert "H100 weekly" not in first.subject  # the subscriber's chosen name is not in it
    assert first.chart_png.startswith(b"\x89PNG")
    assert f"cid:{first.chart_cid}" in first.html
    for part in (first.html, first.text):
        assert "alpha" in part and "beta" in part and "3 days old" in part
        assert LINKS.unsubscribe_url.replace("&", "&amp;") in part or LINKS.unsubscribe_url in part
    assert "(stale)" in first.text


def test_each_listed_offer_carries_its_checklist_summary() -> None:
    digest = _build()
    frame = offers_to_frame(OFFERS)
    expected = {c.summary for c in checklists(frame)}
    for part in (digest.html, digest.text):
        shown = set(re.findall(r"checklist: (\d+ of \d+ met(?:, \d+ unknown)?)", part))
        assert shown == expected and len(re.findall("checklist: ", part)) == len(OFFERS)


def test_user_text_is_escaped_and_kept_on_one_line() -> None:
    digest = _build('<script>alert("x")</script>\r\nBcc: eve@example.com')
    assert "<script>" not in digest.html
    assert "&lt;script&gt;" in digest.html
    assert "\r" not in digest.subject and "\n" not in digest.subject


def test_header_injection_is_refused_everywhere() -> None:
    with pytest.raises(ValidationError):
        SubscriptionRequest(email="a@example.com", name="x\r\nBcc: eve@example.com")
    for address in (
        "a@example.com\r\nBcc: eve@example.com",
        "a@example.com\nX: y",
        "not-an-address",
    ):
        with pytest.raises(ValidationError):
            SubscriptionRequest(email=address, name="ok")
    with pytest.raises(ValidationError):
        SubscriptionRequest(email="a@example.com", name="ok", time_zone="../../etc/passwd")
    with pytest.raises(HeaderInjectionError):
        parse_sender("gpuscout <d@gpuscout.test>\r\nBcc: eve@example.com")
    digest = _build()
    sender = parse_sender("gpuscout <d@gpuscout.test>")
    bad_subject = dataclasses.replace(digest, subject="hi\r\nBcc: eve@example.com")
    with pytest.raises(HeaderInjectionError):
        build_digest_message(
            bad_subject,
            sender=sender,
            to_email="a@example.com",
            message_id="<m@gpuscout.test>",
            unsubscribe_url=LINKS.unsubscribe_url,
            date=NOW,
        )
    with pytest.raises(InvalidAddressError):
        build_digest_message(
            digest,
            sender=sender,
            to_email="a@example.com\r\nBcc: eve@example.com",
            message_id="<m@gpuscout.test>",
            unsubscribe_url=LINKS.unsubscribe_url,
            date=NOW,
        )
    with pytest.raises(HeaderInjectionError):
        build_digest_message(
            digest,
            sender=sender,
            to_email="a@example.com",
            message_id="<m@gpuscout.test>",
            unsubscribe_url=LINKS.unsubscribe_url + "\r\nBcc: eve@example.com",
            date=NOW,
        )


def test_each_listed_offer_links_to_where_to_rent_it() -> None:
    """The digest's rows and its changes carry the offer's link to rent (adapters/rent.py)."""
    aws = offer("aws", "p5.48xlarge", "98.32", NOW, region="us-east-1")
    lam = offer("lambda", "gpu_8x_h100_sxm5", "23.92", NOW)
    view = SubscriptionView(1, "H100", "a@example.com", REQUIREMENT, JOB, "Europe/Paris")
    changes = WeekOverWeek(
        WEEK_AGO, NOW, cheaper=[], dearer=[], new=[PriceChange("k", aws, None, aws.usd_per_hour)],
        gone=[],
    )  # fmt: skip
    digest = build_digest(
        view,
        offers_to_frame([aws, lam]),
        changes=changes,
        price_index=[],
        stale_providers=[],
        links=LINKS,
        now=NOW,
    )
    launch = (
        "https://console.aws.amazon.com/ec2/home?region=us-east-1"
        "#LaunchInstances:instanceType=p5.48xlarge"
    )
    assert digest.text.count(f"rent: {launch}") == 2  # its row and its change
    assert "rent: https://cloud.lambda.ai/instances" in digest.text
    assert digest.html.count(f'<a href="{launch}" rel="noopener nofollow"') == 2


def test_a_serving_search_lists_usd_per_m_tokens_instead_of_the_training_rows() -> None:
    from gpuscout.pricing.serve_rank import ServeRequest

    serve = ServeRequest(serve="llama-3.1-70b", precision="fp8")
    view = SubscriptionView(1, "70B", "a@example.com", REQUIREMENT, JOB, "UTC", serve=serve)
    digest = build_digest(
        view,
        offers_to_frame(OFFERS),
        changes=None,
        price_index=[],
        stale_providers=[],
        links=LINKS,
        now=NOW,
    )
    assert re.match(
        r"gpuscout 2025-W11: best 8× H100-SXM5-80GB \$0\.\d{4}/Mtok \(alpha", digest.subject
    )
    assert "Serve: llama-3.1-70b, fp8, offline" in digest.text
    for part in (digest.html, digest.text):
        assert "per M" in part or "per million output tokens" in part
        assert "predicted: roofline" in part and "batch" in part
        assert "effective TFLOP" not in part  # the training rows are not shown
    assert re.search(r" 1\. alpha .*\n    \$0\.\d{4} per million output tokens", digest.text)
