"""The web pages in a real headless Chromium (Debian's ``chromium``, driven by Playwright
with the system browser; ``playwright install`` is never needed) against a real uvicorn.

Walks what a person does: set filters, sort, open an offer and see its price history
chart, subscribe and confirm, create a price alert (by keyboard, JavaScript off) and confirm
it from its mail; and checks that no request leaves the app's origin.
Set ``GPUSCOUT_SCREENSHOTS=docs/screenshots`` to write the screenshots of docs/web.md.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import LiveServer

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
MISSING = (
    f"BROWSER TESTS NOT RUN: no Chromium at {CHROMIUM}; install Debian's package "
    "(apt-get install -y chromium) - .ci/run does"
)

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() or shutil.which("chromium") is None, reason=MISSING
)


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def _guarded_page(
    browser: Any, live: LiveServer, outside: list[str], width: int = 1280, **context: Any
) -> Any:
    """A page whose every request is checked: one to another origin is recorded, refused.
    ``context``: options of the browser context (``java_script_enabled=False``)."""
    page = browser.new_context(viewport={"width": width, "height": 900}, **context).new_page()

    def check(route: Any) -> None:
        url = route.request.url
        if url.startswith(live.base_url + "/") or url.startswith("data:"):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page.route("**/*", check)
    page.on(
        "request",
        lambda r: None if r.url.startswith((live.base_url, "data:")) else outside.append(r.url),
    )
    return page


_TOO_WIDE = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .slice(0, 5)
  .map(e => e.tagName + '.' + e.className + ': ' + (e.textContent || '').slice(0, 40))"""


def _fits(page: Any, width: int) -> None:
    """Nothing on the page is wider than the viewport (no sideways scrolling)."""
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= width, page.evaluate(_TOO_WIDE)


def _money(text: str) -> float:
    return float(text.replace("$", "").replace(",", ""))


def _shoot(page: Any, name: str) -> None:
    folder = os.environ.get("GPUSCOUT_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def _confirm_from_mail(page: Any, live: LiveServer) -> Any:
    """After a form's "check your mail": follow the one mail's confirmation link and press
    Confirm on its page, in the site's look; the mail."""
    page.get_by_text("Almost done: check your mail.").wait_for()
    (mail,) = live.mail.messages
    text = mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    link = re.search(re.escape(live.base_url) + r"/v1/subscriptions/confirm\?token=\S+", text)
    assert link is not None, text
    page.goto(link.group(0))
    assert page.get_by_role("heading", name="Confirm your subscription").is_visible()
    assert page.locator("link[rel=stylesheet]").get_attribute("href") == "/static/style.css"
    page.get_by_role("button", name="Confirm").click()
    page.get_by_role("heading", name="Subscription confirmed").wait_for()
    return mail


def test_filter_sort_open_offer_and_subscribe(browser: Any, live_server: LiveServer) -> None:
    outside: list[str] = []
    page = _guarded_page(browser, live_server, outside)
    page.goto(live_server.base_url + "/")
    assert page.locator("h1").inner_text().startswith("GPU rental offers")
    assert page.locator("table.offers tbody tr").count() == 4  # 4 configurations
    # announced at the top: cirrus's latest fetch failed; in the coverage note: the Z9 offer
    assert "cirrus" in page.locator(".banner.warn").first.inner_text()
    cirrus = page.locator("table.offers tbody tr", has_text="cirrus")
    assert "stale" in cirrus.locator("td.caveats").inner_text()
    left_out = page.locator("table.left-out tbody tr")
    assert left_out.count() == 1 and "Z9" in left_out.inner_text()
    fits = "(() => { const w = document.querySelector('.table-wrap');"
    fits += " return w.scrollWidth <= w.clientWidth; })()"
    assert page.evaluate(fits), "the offers table scrolls sideways at 1280 px"
    _shoot(page, "explorer-1280")

    # set filters: H100 only, a 10-hour job on 8 GPUs
    page.get_by_label("GPU models or families").fill("H100")
    page.get_by_label("Job hours (wall clock on one offer)").fill("10")
    page.get_by_role("button", name="Show offers").click()
    page.wait_for_url(re.compile(r"gpus=H100"))
    assert "hours=10" in page.url and "min_gpus=" not in page.url  # blank fields left out
    rows = page.locator("table.offers tbody tr")
    assert rows.count() == 2
    for i in range(2):
        assert "H100" in rows.nth(i).locator("td[data-label=GPUs]").inner_text()

    # sort by $/h: a server-side link; the cheapest whole instance first
    page.locator("th a[data-sort=usd_per_hour]").click()
    page.wait_for_url(re.compile(r"sort=usd_per_hour"))
    assert "gpus=H100" in page.url
    prices = [_money(t) for t in page.locator("td[data-label='$ / h']").all_inner_texts()]
    assert prices == sorted(prices) and prices[0] == pytest.approx(2.5)
    header = page.locator("th[aria-sort=ascending]")
    assert header.inner_text().startswith("$ / h")

    # open acme's 8x H100: its terms, its fields, its history chart (16 then 14 USD/h)
    page.get_by_role("link", name="acme").first.click()
    page.wait_for_url(re.compile(r"/offer\?key=acme"))
    assert page.get_by_role("heading", name="Price history").is_visible()
    chart = page.locator("figure.history svg.chart")
    assert chart.is_visible()
    assert chart.locator("path.line").count() == 1
    page.get_by_text("The prices as a table").click()
    published = page.locator("figure.history + details td[data-label='As published']")
    assert published.all_inner_texts() == ["16 USD", "14 USD"]
    terms = page.locator("table.terms tbody tr")
    assert terms.count() == 2  # on-demand and the one-month commitment
    assert "d" in terms.nth(1).locator("td[data-label='Break-even']").inner_text()
    assert page.get_by_role("heading", name="Network").is_visible()
    _shoot(page, "offer-1280")
    raw = page.get_by_role("link", name="Raw record (JSON)")
    assert raw.get_attribute("href").startswith("/offer/record?key=acme")

    # subscribe to the filtered search, then confirm by the mailed link
    page.goto(live_server.base_url + "/?gpus=H100&hours=10")
    page.get_by_role("link", name="Get it weekly by mail").click()
    page.get_by_label("Email address").fill("renter@example.org")
    page.get_by_label("Name of the digest").fill("H100 for ten hours")
    page.get_by_role("button", name="Subscribe").click()
    _confirm_from_mail(page, live_server)

    # the API docs render from the app's own files
    page.goto(live_server.base_url + "/docs")
    page.locator(".opblock-summary-path", has_text="/v1/offers").first.wait_for()
    assert outside == []


def test_create_an_alert_by_keyboard_without_javascript_and_confirm_it(
    browser: Any, live_server: LiveServer
) -> None:
    """From the explorer's search to a confirmed alert on it: the form is reached by its
    link, filled with the keyboard only (Tab, arrow keys, Enter), posts without JavaScript,
    and the mailed link confirms it on the digest's page in the site's look."""
    from gpuscout.db.alerts import active_alerts
    from gpuscout.db.engine import make_engine

    outside: list[str] = []
    page = _guarded_page(browser, live_server, outside, java_script_enabled=False)
    page.goto(live_server.base_url + "/?gpus=H100&min_gpus=8")
    page.get_by_role("link", name="Alert me on a price change").click()
    page.wait_for_url(re.compile(r"/alert\?gpus=H100&min_gpus=8"))
    assert page.get_by_role("heading", name="A price alert by mail").is_visible()
    assert "gpus=H100&min_gpus=8" in page.locator("form code").inner_text()
    for label in ("Email address", "Name of the alert", "Price measured in", "Threshold"):
        assert page.get_by_label(label, exact=True).count() == 1, label  # each is labelled
    page.get_by_label("Email address").focus()
    page.keyboard.type("renter@example.org")
    page.keyboard.press("Tab")
    page.keyboard.type("8x H100 drop")
    page.keyboard.press("Tab")  # into the radio group, on the checked "below"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")  # "drop"
    assert page.get_by_label(re.compile("drops by a percentage")).is_checked()
    for _ in range(3):  # past "Price measured in" and "Threshold"
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "a-drop"
    page.keyboard.type("15")
    page.keyboard.press("Enter")  # submits the form
    mail = _confirm_from_mail(page, live_server)
    assert "price alert" in str(mail["Subject"])
    assert "price alert" in page.locator("main").inner_text()
    engine = make_engine(live_server.settings.database_url)
    try:
        (alert,) = active_alerts(engine)
    finally:
        engine.dispose()
    assert (alert.condition, alert.metric, alert.drop_pct) == ("drop", "usd_per_gpu_hour", 15)
    assert alert.threshold is None and alert.name == "8x H100 drop"
    assert '"gpus":["H100"]' in alert.requirement_json and '"min_gpus":8' in alert.requirement_json
    assert outside == []


def test_phone_width(browser: Any, live_server: LiveServer) -> None:
    """At 390 px the table becomes one labelled card per offer: nothing scrolls sideways."""
    outside: list[str] = []
    page = _guarded_page(browser, live_server, outside, width=390)
    page.goto(live_server.base_url + "/?hours=10")
    _fits(page, 390)
    cell = page.locator("td[data-label='$ / GPU-h']").first
    assert cell.evaluate("e => getComputedStyle(e, '::before').content") == '"$ / GPU-h"'
    _shoot(page, "explorer-390")
    page.get_by_role("link", name="acme").first.click()
    page.locator("figure.history svg.chart").wait_for()
    page.wait_for_load_state("load")  # its stylesheet applied: parsed is not yet styled
    _fits(page, 390)
    _shoot(page, "offer-390")
    assert outside == []


def test_without_javascript(browser: Any, live_server: LiveServer) -> None:
    """The form and the sort links work with JavaScript off."""
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.base_url + "/")
    page.get_by_label("GPU models or families").fill("A100")
    page.get_by_role("button", name="Show offers").click()
    page.wait_for_url(re.compile(r"gpus=A100"))
    assert page.locator("table.offers tbody tr").count() == 1
    page.locator("th a[data-sort=job_cost_usd]").click()
    page.wait_for_url(re.compile(r"sort=job_cost_usd"))
    context.close()


def test_index_providers_and_catalog_pages(browser: Any, live_server: LiveServer) -> None:
    outside: list[str] = []
    page = _guarded_page(browser, live_server, outside)
    page.goto(live_server.base_url + "/")
    page.get_by_role("link", name="Price index").click()
    page.locator("figure.index svg.chart path.line").first.wait_for()
    assert page.locator("figure.index svg.chart path.line").count() == 4  # median p10 p90 min
    spread = page.locator("#spread-h + div table tbody tr")
    assert spread.count() == 2  # bolt's 1x and acme's 8x H100 on demand
    page.get_by_role("link", name="Providers").click()
    cirrus = page.locator("table.providers tbody tr", has_text="cirrus")
    assert "stale" in cirrus.inner_text() and "HTTP 503" in cirrus.inner_text()
    page.get_by_role("link", name="GPUs", exact=True).click()
    page.get_by_label("Model, family or vendor").fill("H100")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"q=H100"))
    assert page.locator("table.catalog tbody tr", has_text="H100-SXM5-80GB").count() == 1
    assert outside == []


#: Page checks at phone width, in the spirit of Lighthouse's audits. Each returns a list of
#: what fails (empty: the page passes).
_OVERLAPS = """() => {
  // visible elements holding text of their own, in <main>: no two may overlap
  const own = e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
  const boxes = [...document.querySelectorAll('main *')]
    .filter(e => own(e) && e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden')
    .filter(e => !e.closest('.visually-hidden, svg, details:not([open]) > :not(summary)'))
    .slice(0, 600)
    .flatMap(e => [...e.getClientRects()].map(r => [e, r]));  // an inline one: each line
  const bad = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const [a, r] = boxes[i], [b, s] = boxes[j];
    if (a.contains(b) || b.contains(a)) continue;
    const w = Math.min(r.right, s.right) - Math.max(r.left, s.left);
    const h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
    if (w > 2 && h > 2)
      bad.push(a.textContent.trim().slice(0, 30) + ' / ' + b.textContent.trim().slice(0, 30));
  }
  // a stacked cell's label (its ::before) must not spill out of the cell onto the next
  for (const td of document.querySelectorAll('td[data-label]'))
    if (td.getClientRects().length && td.scrollHeight > td.clientHeight + 1)
      bad.push('label spills: ' + td.dataset.label);
  return bad.slice(0, 10);
}"""
_SMALL_TARGETS = """() => {
  // WCAG 2.5.8: a target is 24 x 24 px, or a 24 px circle on its centre meets no other target
  const kinds = 'a[href], button, input:not([type=hidden]), select, summary';
  const targets = [...document.querySelectorAll(kinds)]
    .filter(e => e.getClientRects().length && !e.closest('.visually-hidden, .skip'))
    .filter(e => e.matches('summary') || !e.closest('details:not([open])'))  // not shown
    // a check box's target is its label, which toggles it too
    .map(e => e.matches('[type=checkbox], [type=radio]') && e.closest('label') || e)
    .map(e => [e, e.getBoundingClientRect()]);
  const near = (r, s) => {
    const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
    const dx = Math.max(s.left - cx, 0, cx - s.right), dy = Math.max(s.top - cy, 0, cy - s.bottom);
    return Math.hypot(dx, dy) < 12;
  };
  const name = e => `${e.tagName} ${(e.textContent || e.name || '').trim().slice(0, 30)}`;
  return targets
    .filter(([e, r]) => r.width < 24 || r.height < 24)
    .map(([e, r]) => [e, r, targets.find(([f, s]) => f !== e && !f.contains(e)
      && !e.contains(f) && near(r, s))])
    .filter(([e, r, other]) => other)
    .map(([e, r, [f, s]]) => `${name(e)} ${r.width.toFixed(0)}x${r.height.toFixed(0)}`
      + ` near ${name(f)}`)
    .slice(0, 10);
}"""
_LOW_CONTRAST = """() => {
  // WCAG AA: 4.5:1 for text (3:1 at 24 px, or 18.66 px bold), against the first opaque
  // background behind it
  const rgb = c => (c.match(/[\\d.]+/g) || []).map(Number);
  const lin = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = ([r, g, b]) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  const bg = e => {
    for (; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || c[3] > 0.5) return c;
    }
    return [255, 255, 255];
  };
  const own = e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
  const bad = new Set();
  for (const e of document.querySelectorAll('body *')) {
    if (!own(e) || !e.getClientRects().length) continue;
    if (e.closest('.visually-hidden, .skip, svg')) continue;
    const st = getComputedStyle(e), fg = lum(rgb(st.color)), back = lum(bg(e));
    const ratio = (Math.max(fg, back) + 0.05) / (Math.min(fg, back) + 0.05);
    const size = parseFloat(st.fontSize), bold = parseInt(st.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need)
      bad.add(`${e.tagName}.${e.className} ${st.color} on ${bg(e)}: ${ratio.toFixed(2)}`);
  }
  return [...bad].slice(0, 10);
}"""


def _audit(page: Any, width: int, where: str) -> None:
    """The page at ``width``: no sideways scroll, nothing overlaps, tap targets, contrast."""
    scroll = page.evaluate("document.scrollingElement.scrollWidth")
    assert scroll <= page.evaluate("innerWidth"), (where, page.evaluate(_TOO_WIDE))
    for audit in (_OVERLAPS, _SMALL_TARGETS, _LOW_CONTRAST):
        failing = page.evaluate(audit)
        assert failing == [], f"{where}: {failing}"


def test_every_page_passes_the_phone_audit(browser: Any, live_server: LiveServer) -> None:
    """At 390 px (and 320 and 1280 for the explorer and the offer page): the first offer row
    is on the first screen, the results before the form; no page scrolls sideways, no text
    overlaps, every tap target is big or far enough, the text contrast is AA."""
    outside: list[str] = []
    page = _guarded_page(browser, live_server, outside, width=390)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(live_server.base_url + "/")
    first = page.locator("table.offers tbody tr").first.bounding_box()
    assert first is not None and first["y"] < 844  # an iPhone's first screen
    results, form = (page.locator(s).bounding_box() for s in ("#results", "#filters"))
    assert results is not None and form is not None and results["y"] < form["y"]
    page.get_by_role("link", name="Change the search").click()
    page.wait_for_url(re.compile(r"#filters$"))
    offer = page.locator("td[data-label=Offer] a").first.get_attribute("href")
    rows = page.locator("table.offers tbody tr")
    assert page.locator("td[data-label=Rent]").count() == rows.count()  # a Rent cell each
    paths = ["/", offer, "/index?gpu=H100", "/providers", "/gpus?q=H100", "/subscribe", "/alert"]
    for width in (390, 320, 1280):
        page.set_viewport_size({"width": width, "height": 844})
        for path in paths if width == 390 else ["/", offer]:
            page.goto(live_server.base_url + str(path))
            _audit(page, width, f"{path} at {width} px")
    assert outside == []
