"""Chinese platforms rank on the offline sample, each price in CNY beside its USD: five with a
dated source, listed here so that another one changes this test on purpose."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpuscout.service.cli import app

runner = CliRunner()

#: The Chinese platforms the sample ranks (a provider, or a price sheet's seller).
CHINESE_ON_THE_SAMPLE = {"autodl", "compshare", "alibaba-cloud", "tencent-cloud", "jd-cloud"}


def test_chinese_platforms_rank_on_the_sample_with_cny_beside_usd() -> None:
    result = runner.invoke(app, ["offers", "--sample", "--limit", "500", "--format", "json"])
    assert result.exit_code == 0, result.output
    offers = json.loads(result.stdout)["offers"]
    cny = [o for o in offers if o["price"]["price_currency"] == "CNY"]
    assert {o["seller"] or o["provider"] for o in cny} == CHINESE_ON_THE_SAMPLE
    hourly_rates = set()
    for offer in cny:
        price = offer["price"]
        assert float(price["price_amount"]) > 0 and price["usd_per_hour"] > 0  # both shown
        if price["price_unit"] == "hour" and price["price_basis"] == "instance":
            hourly_rates.add(round(price["usd_per_hour"] / float(price["price_amount"]), 5))
    # every hourly CNY price converted at the one dated FX rate the answer names
    assert len(hourly_rates) == 1
    assert json.loads(result.stdout)["fx_as_of"]
    assert "prices in CNY converted to USD at the FX table of" in result.stderr
