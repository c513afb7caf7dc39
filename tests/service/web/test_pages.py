"""The web pages in-process (httpx on the ASGI app): what they say, and that they say what
the API says. The browser tests (test_browser.py) walk them in Chromium."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from gpuscout.adapters.schema import FIELD_GROUPS, Offer
from gpuscout.service.api import create_app
from gpuscout.service.api.offer_ids import offer_id
from gpuscout.service.api.offers_query import OffersQuery
from gpuscout.service.settings import Settings
from gpuscout.service.web.form import NOT_A_SEARCH
from gpuscout.service.web.templating import OPTION_LABELS
from tests.service.api.conftest import FakeSource, database_state, offer

pytestmark = pytest.mark.anyio


def _offer_keys(html: str) -> list[str]:
    return re.findall(r'<a href="/offer\?key=([^"]+)">', html)


async def test_explorer_ranks_as_the_api(client: httpx.AsyncClient) -> None:
    query = "gpus=H100&hours=10&sort=usd_per_gpu_hour"
    page = await client.get(f"/?{query}")
    api = (await client.get(f"/v1/offers?{query}")).json()
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    expected = [
        quote(f"{o['provider']}|{o['offer_id']}|{o['region']}|{o['price']['term']}|"
              f"{o['price']['price_basis']}", safe="")
        for o in api["offers"]
    ]  # fmt: skip
    assert _offer_keys(page.text) == expected and len(expected) == 2
    assert 'aria-sort="ascending"><a href="?gpus=H100&amp;hours=10&amp;sort=usd_per_gpu_hour"' in (
        page.text
    )
    # each term as people write it, the API's code in the link
    terms = re.findall(r'<td data-label="Term">([^<]*)', page.text)
    assert terms == [OPTION_LABELS[o["price"]["term"]] for o in api["offers"]]
    assert all("_" not in t for t in terms)


async def test_explorer_announces_stale_and_failed_providers(client: httpx.AsyncClient) -> None:
    text = (await client.get("/")).text
    assert "<strong>Stale providers:</strong> bolt" in text
    assert "<strong>Failed providers:</strong> gcp" in text
    assert "Sample data" not in text


async def test_blank_fields_are_no_constraint(client: httpx.AsyncClient) -> None:
    """A GET form sends every blank input; they must not be read as invalid values."""
    blank = "&".join(f"{name}=" for name in OffersQuery.model_fields)
    r = await client.get(f"/?{blank}&gpus=A100")
    assert r.status_code == 200, r.text
    assert len(_offer_keys(r.text)) == 1


async def test_the_costs_caveats_are_badges_in_the_table(tmp_path: Path) -> None:
    """A machine too small to feed its GPUs (1 vCPU, 1 GB RAM) carries its warning in the
    explorer as in the API and the CLI: a badge with the whole text as its title."""
    small = offer(provider="tiny", offer_id="1x-4090", gpu_model="RTX-4090", gpu_count=1,
                  gpu_memory_gb=24.0, vcpus=1.0, ram_gb=1.0, fabric=None, fabric_gbps=None,
                  price_amount=Decimal("0.1"))  # fmt: skip
    source = FakeSource(database_state([offer(), small]))
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    transport = httpx.ASGITransport(app=create_app(settings, offers_loader=source))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        api = (await c.get("/v1/offers?providers=tiny")).json()["offers"][0]["job"]["caveats"]
        page = (await c.get("/?providers=tiny")).text
    assert api.startswith("below a runnable GPU server: 1.0 vCPU and 1.0 GB RAM per GPU")
    badge = re.search(r'<span class="tag warn" title="([^"]*)">([^<]*)</span>', page)
    assert badge is not None
    assert badge.group(1) == api and badge.group(2) == "below a runnable GPU server"
    assert 'class="caveats none"' not in page


async def test_a_page_says_how_many_qualify_and_shows_more(client: httpx.AsyncClient) -> None:
    """The explorer shows a query's first page: its heading says of how many, and "Show
    more" raises the limit until every configuration is on the page."""
    total = (await client.get("/v1/offers?limit=1")).json()["total"]
    assert total > 2
    page = (await client.get("/?limit=2")).text
    assert f'<h2 id="results-h">2 of {total} offers</h2>' in page
    more = re.search(r'<a href="\?([^"]*)">Show (\d+) more</a>', page)
    assert more is not None and int(more.group(2)) == total - 2
    assert more.group(1) == "limit=22"
    whole = (await client.get(f"/?{more.group(1)}")).text
    assert f'<h2 id="results-h">{total} offers</h2>' in whole and 'class="more"' not in whole


async def test_refused_query_names_the_parameter(client: httpx.AsyncClient) -> None:
    r = await client.get("/?min_gpus=x&gpus=H100")
    assert r.status_code == 422
    assert "<code>min_gpus</code>" in r.text
    assert 'id="f-min_gpus" name="min_gpus" value="x"' in r.text  # the input is kept
    r = await client.get("/?gpus=H9000")
    assert r.status_code == 422 and "unknown GPU model" in r.text
    for page in ("/?gpus=H9000", "/subscribe?gpus=H9000", "/alert?gpus=H9000"):
        text = (await client.get(page)).text  # what was wrong, without pydantic's prefix
        assert "unknown GPU model" in text and "Value error" not in text, page


async def test_explorer_refuses_an_unknown_provider_and_reads_gpu_names(
    client: httpx.AsyncClient,
) -> None:
    r = await client.get("/?providers=blot")
    assert r.status_code == 422
    assert "<code>providers</code>" in r.text
    assert "unknown provider &#39;blot&#39; (did you mean &#39;bolt&#39;?)" in r.text
    r = await client.get("/?gpus=H1000")
    assert r.status_code == 422 and "(did you mean &#39;H100&#39;" in r.text
    r = await client.get("/", params={"gpus": "H100 SXM"})
    assert r.status_code == 200, r.text
    assert _offer_keys(r.text)


async def test_every_query_parameter_of_a_search_is_a_control(client: httpx.AsyncClient) -> None:
    text = (await client.get("/")).text
    names = set(re.findall(r'name="([a-z_0-9]+)"', text))
    assert set(OffersQuery.model_fields) - NOT_A_SEARCH <= names
    assert not NOT_A_SEARCH & names


async def test_a_cursor_is_neither_a_control_nor_kept_in_the_pages_links(
    client: httpx.AsyncClient,
) -> None:
    """The pages show a query's first page: a cursor (of this query or another) is left
    out of the form and of the links, where "This answer as JSON" then answered an error."""
    first = (await client.get("/v1/offers?limit=1")).json()
    assert first["next"] is not None
    r = await client.get(f"/?gpus=H100&limit=1&cursor={first['next']}")
    assert r.status_code == 200
    assert "cursor" not in r.text
    links = re.findall(r'href="(/v1/offers[^"]*)"', r.text)
    assert links == ["/v1/offers?gpus=H100&amp;limit=1"]
    assert (await client.get(links[0].replace("&amp;", "&"))).status_code == 200


def test_every_offer_field_is_in_a_group() -> None:
    grouped = [n for names in FIELD_GROUPS.values() for n in names]
    assert sorted(grouped) == sorted(Offer.model_fields)


async def test_an_offer_page_by_id_and_its_errors_are_pages(client: httpx.AsyncClient) -> None:
    """The API's id opens the same page as the key; an offer no longer listed, no offer
    named, or not an id is an HTML page saying so (a bookmark of a dropped offer got a
    JSON problem), the key escaped."""
    key = offer().key
    by_key = await client.get(f"/offer?key={quote(key, safe='')}")
    by_id = await client.get(f"/offer?id={offer_id(key)}")
    assert by_id.status_code == by_key.status_code == 200
    title = re.search(r"<title>([^<]*)</title>", by_key.text)
    assert title is not None and title.group(0) in by_id.text
    gone = await client.get("/offer?key=" + quote("acme|<b>gone</b>||on_demand|instance"))
    assert gone.status_code == 404 and gone.headers["content-type"].startswith("text/html")
    assert "Offer not listed" in gone.text and "&lt;b&gt;gone&lt;/b&gt;" in gone.text
    assert "<b>gone" not in gone.text
    assert 'href="/v1/history/offers/acme%7C%3Cb%3Egone' in gone.text
    for path, said in (("/offer", "Which offer?"), ("/offer?key=", "Which offer?"),
                       ("/offer?id=zzz", "Not an offer id")):  # fmt: skip
        r = await client.get(path)
        assert r.status_code == 422 and r.headers["content-type"].startswith("text/html"), path
        assert said in r.text, path


async def test_offer_page(client: httpx.AsyncClient) -> None:
    key = quote(offer().key, safe="")
    r = await client.get(f"/offer?key={key}")
    assert r.status_code == 200
    terms = re.findall(r'<td data-label="Break-even" class="num">([^<]*)</td>', r.text)
    assert terms == ["–", "23.4 d"]  # one month at 9000 USD / 16 USD/h on demand = 562.5 h
    named = re.findall(r'<td data-label="Term"><a href="[^"]*">([^<]*)</a>', r.text)
    assert named == ["on-demand", "1-month commitment"]
    assert "no database" in r.text  # no history without one
    record = (await client.get(f"/offer/record?key={key}")).json()
    assert record["record"]["fabric"] == "infiniband" and record["from"] == "frame"
    assert (await client.get("/offer?key=nobody%7Cx")).status_code == 404


async def test_docs_are_served_locally(client: httpx.AsyncClient) -> None:
    html = (await client.get("/docs")).text
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets and all(a.startswith("/") for a in assets), assets
    for asset in assets:
        assert (await client.get(asset)).status_code == 200, asset
    assert "http" not in html.replace("http-equiv", "")


async def test_pages_without_a_database(client: httpx.AsyncClient) -> None:
    index = await client.get("/index?gpu=H100")
    assert index.status_code == 200 and "No history: no database configured" in index.text
    assert (await client.get("/index?gpu=H9000")).status_code == 422
    providers = (await client.get("/providers")).text
    assert "HTTP 503" in providers and "gcp" in providers
    gpus = await client.get("/gpus?q=H100")
    assert "H100-SXM5-80GB" in gpus.text and "datasheet" in gpus.text
    pascal = (await client.get("/gpus?q=P40")).text  # a card without tensor cores says why
    assert "No tensor figure: Pascal GP102: no tensor cores" in pascal


async def test_offer_page_has_the_checklist(client: httpx.AsyncClient) -> None:
    """The renter's checklist: each item's status and the published value behind it."""
    r = await client.get(f"/offer?key={quote(offer().key, safe='')}")
    section = r.text.split('id="checklist-h"', 1)[1].split("</section>", 1)[0]
    assert re.match(r">The renter's checklist: \d+ of \d+ met, \d+ unknown</h2>", section)
    item = r'<td data-label="Item">([^<]+)</td>.*?<strong>([^<]+)</strong>'
    rows = re.findall(item, section, re.S)
    statuses = dict(rows)
    assert statuses["InfiniBand at 400G or more"] == "met"  # 3200 Gbps
    assert statuses["Redundant power supplies"] == "unknown"  # not published
    assert statuses["Four or more GPUs"] == "met"
    assert "fabric: infiniband; fabric_gbps: 3200" in section


async def test_alert_form_carries_the_explorers_search(client: httpx.AsyncClient) -> None:
    from gpuscout.service.alerts.condition import METRICS
    from gpuscout.service.web.alert_page import METRIC_LABELS

    assert tuple(METRIC_LABELS) == (*METRICS, "usd_per_m_tokens")  # every metric an alert takes
    page = await client.get("/?gpus=H100&hours=10")
    assert 'href="/alert?gpus=H100&amp;hours=10"' in page.text
    form = (await client.get("/alert?gpus=H100&hours=10")).text
    assert '<input type="hidden" name="query" value="gpus=H100&amp;hours=10">' in form
    ids = re.findall(r'<(?:input|select) [^>]*id="([^"]+)"', form)
    assert ids and all(f'<label for="{i}">' in form for i in ids)  # every control labelled
    assert "<script" not in form and "http" not in form.split("<main")[1].split("</main>")[0]


async def test_alert_form_refusals_name_the_control(client: httpx.AsyncClient) -> None:
    def post(**fields: str) -> Any:
        data = {"email": "ada@example.com", "name": "H100", "query": "gpus=H100", **fields}
        return client.post("/alert", data=data)

    r = await post(kind="below", threshold="", drop_pct="15")  # drop_pct is not read
    assert r.status_code == 422
    assert "Alert me when: a &#39;below&#39; alert needs a threshold" in r.text
    assert 'value="15"' in r.text  # what was typed is kept
    r = await post(kind="drop", drop_pct="150")
    assert r.status_code == 422 and "Drop: " in r.text
    r = await post(kind="in_stock", email="not-an-address")
    assert r.status_code == 422 and "Email address: " in r.text
    r = await post(kind="in_stock", query="gpus=H9000")
    assert r.status_code == 422 and "unknown GPU model" in r.text


async def test_a_yuan_price_is_shown_under_its_dollars(tmp_path: Path) -> None:
    """A Chinese platform's price: the explorer's $/h cell carries the yuan as published,
    and the API row both (price_amount in price_currency, usd_per_hour)."""
    yuan = offer(provider="autodl", offer_id="m1:1x", gpu_model="RTX-4090", gpu_count=1,
                 gpu_memory_gb=24.0, fabric=None, fabric_gbps=None,
                 price_amount=Decimal("2.72"), price_currency="CNY")  # fmt: skip
    source = FakeSource(database_state([offer(), yuan]))
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    transport = httpx.ASGITransport(app=create_app(settings, offers_loader=source))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        row = (await c.get("/v1/offers?providers=autodl")).json()["offers"][0]["price"]
        page = (await c.get("/?providers=autodl")).text
    assert (row["price_amount"], row["price_currency"]) == ("2.72", "CNY")
    assert 0 < row["usd_per_hour"] < 2.72
    assert "2.72 CNY/h</span>" in page


async def test_the_sample_rows_have_a_rent_button_and_no_ok_for_sample_prices(
    tmp_path: Path,
) -> None:
    """On the offline sample: each explorer row links to where to rent it, as the API's
    ``links.rent`` says, with a price age; the offer page too; /providers never says "ok"
    of a sample price."""
    from gpuscout.service.current import load_current

    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    state = load_current(sample=True, settings=settings)
    app = create_app(settings, offers_loader=lambda: state)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        page = (await c.get("/?limit=50")).text
        api = (await c.get("/v1/offers?limit=50")).json()["offers"]
        rents = re.findall(r'<a class="button rent" href="([^"]+)" rel="noopener nofollow"', page)
        expected = [o["links"]["rent"] for o in api if o["links"]["rent"]]
        assert [r.replace("&amp;", "&") for r in rents] == expected and len(expected) == 50
        ages = re.findall(r'<td data-label="Price age" class="num age"', page)
        assert len(ages) == 50
        first = await c.get(f"/offer?id={api[0]['id']}")
        assert f'href="{api[0]["links"]["rent"]}" rel="noopener nofollow"' in first.text
        for path in ("/", f"/offer?id={api[0]['id']}", "/index?gpu=H100", "/providers"):
            shown = (await c.get(path)).text
            assert '<p class="banner sample" role="status"><strong>Sample data.' in shown, path
        providers = (await c.get("/providers")).text
        outcomes = re.findall(r'<span class="tag [a-z]*">([a-z_]+)</span>', providers)
        assert "sample" in outcomes and "ok" not in outcomes
        assert "latest fetch succeeded" not in providers


async def test_the_boot_disk_is_shown_apart_from_the_ipv4_in_api_and_offer_page(
    tmp_path: Path,
) -> None:
    """A hyperscaler's machine pays its boot disk and its IPv4 per instance-hour: the API row
    gives each apart, ``required_extras_usd`` is their sum over the billed hours, and the
    offer page lists both under "Price and term"."""
    vm = offer(provider="aws", offer_id="p5.48xlarge", ipv4_price_per_hour=Decimal("0.005"),
               boot_disk_price_per_hour=Decimal("0.0008767123"))  # fmt: skip
    source = FakeSource(database_state([vm]))
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    transport = httpx.ASGITransport(app=create_app(settings, offers_loader=source))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        row = (await c.get("/v1/offers?hours=10")).json()["offers"][0]
        page = (await c.get(f"/offer?key={quote(vm.key, safe='')}")).text
    price, job = row["price"], row["job"]
    assert price["boot_disk_usd_per_hour"] == pytest.approx(0.0008767123)
    assert price["ipv4_usd_per_hour"] == 0.005
    assert job["required_extras_usd"] == pytest.approx((0.0008767123 + 0.005) * 10, abs=0.005)
    assert "boot_disk_price_per_hour" in page and "0.0008767123" in page
    assert "ipv4_price_per_hour" in page


async def test_an_unstated_form_factor_is_a_badge_in_the_explorer_row(tmp_path: Path) -> None:
    """A provider naming the H100 family without SXM or PCIe: the explorer's row carries the
    caveat the API row gives in ``job.caveats``, a badge with the whole text as its title."""
    unstated = offer(provider="doco", offer_id="h", gpu_model="H100-PCIE-80GB",
                     gpu_raw_name="H100", gpu_form_factor=None)  # fmt: skip
    source = FakeSource(database_state([offer(), unstated]))
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    transport = httpx.ASGITransport(app=create_app(settings, offers_loader=source))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        api = (await c.get("/v1/offers?providers=doco")).json()["offers"][0]["job"]["caveats"]
        page = (await c.get("/?providers=doco")).text
        stated = (await c.get("/?providers=acme")).text
    assert api == "form factor not stated: ranked as the slower variant (H100-PCIE-80GB)"
    badges = re.findall(r'<span class="tag warn" title="([^"]*)">([^<]*)</span>', page)
    assert (api, "form factor not stated") in badges
    assert "form factor not stated" not in stated
