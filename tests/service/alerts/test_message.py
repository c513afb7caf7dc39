"""An alert's mail says where to rent its best offer (adapters/rent.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from gpuscout.db.alerts import AlertRow, FiringRow
from gpuscout.service.alerts.condition import AlertCondition
from gpuscout.service.alerts.message import AlertLinks, alert_message
from gpuscout.service.settings import Settings

AT = datetime(2026, 12, 1, 9, tzinfo=UTC)
LINKS = AlertLinks("https://gpuscout.test/v1/alerts/1/firings", "https://gpuscout.test/u?t=x")


def _mail(offer: dict[str, object], tmp_path: Path) -> tuple[str, str]:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        mail_from="gpuscout <alerts@gpuscout.test>",
    )
    alert = AlertRow(
        1, 1, "a@example.org", "8x H100", "{}", "{}", "below", "usd_per_gpu_hour", "2.2",
        None, 60, "k", True, 1, 2.1, AT, "active",
    )  # fmt: skip
    firing = FiringRow(1, 1, 1, AT, 2.1, None, json.dumps(offer), False)
    condition = AlertCondition(kind="below", threshold=Decimal("2.20"))
    message = alert_message(
        settings, alert, condition, firing, LINKS, message_id="<m@gpuscout.test>", date=AT
    )
    text = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    html = message.get_body(("html",)).get_content()  # type: ignore[union-attr]
    return text, html


def test_the_mail_links_to_where_to_rent_the_best_offer(tmp_path: Path) -> None:
    offer = {"provider": "aws", "offer_id": "p5.48xlarge", "region": "us-east-1"}
    text, html = _mail(offer, tmp_path)
    launch = (
        "https://console.aws.amazon.com/ec2/home?region=us-east-1"
        "#LaunchInstances:instanceType=p5.48xlarge"
    )
    assert f"Rent it: {launch}" in text
    assert f'<a href="{launch}" rel="noopener nofollow">Rent it</a>' in html


def test_an_offer_without_a_link_says_nothing_of_renting(tmp_path: Path) -> None:
    text, html = _mail({"provider": "sheet", "offer_id": "x/1"}, tmp_path)
    assert "Rent it" not in text and "Rent it" not in html
