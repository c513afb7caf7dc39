"""Screenshots of every web page at 390 px (a phone) and 1280 px, from the offline sample.

Starts the app on 127.0.0.1 on an empty database (so it shows the bundled sample, never a
test fixture), opens each page in Debian's headless Chromium through Playwright
and writes ``<page>-<width>.png`` to ``docs/screenshots/`` (or the folder given)::

    uv run python scripts/screenshots.py [folder]
"""

from __future__ import annotations

import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from playwright.sync_api import sync_playwright

from gpuscout.db.engine import sqlite_url
from gpuscout.db.migrate import upgrade
from gpuscout.service.api import create_app
from gpuscout.service.settings import Settings

CHROMIUM = "/usr/bin/chromium"
WIDTHS = (390, 1280)
#: The tallest screenshot: a page's first screens (the GPU catalog runs to 30,000 px).
MOST_PX = 2400


def pages(base: str) -> dict[str, str]:
    """Each page's name -> its path; the offer page is the sample's first offer."""
    first = httpx.get(f"{base}/v1/offers?limit=1", timeout=60).json()["offers"][0]
    return {
        "explorer": "/",
        "serving": "/?serve=llama-3.1-70b&precision=fp8",
        "offer": f"/offer?id={first['id']}",
        "index": "/index",
        "providers": "/providers",
        "gpus": "/gpus",
        "subscribe": "/subscribe",
        "alert": "/alert",
    }


def serve(data_dir: Path) -> tuple[uvicorn.Server, str]:
    url = sqlite_url(data_dir / "gpuscout.db")
    upgrade(url)  # an empty database: the pages show the bundled sample
    settings = Settings(_env_file=None, data_dir=data_dir, database_url=url)  # type: ignore[call-arg]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    return server, base


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as data_dir:
        server, base = serve(Path(data_dir))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox"], headless=True
                )
                for name, path in pages(base).items():
                    for width in WIDTHS:
                        page = browser.new_page(viewport={"width": width, "height": 900})
                        page.goto(base + path, wait_until="networkidle")
                        tall = page.evaluate("document.scrollingElement.scrollHeight")
                        clip = {"x": 0, "y": 0, "width": width, "height": min(tall, MOST_PX)}
                        shot = folder / f"{name}-{width}.png"
                        page.screenshot(path=str(shot), full_page=True, clip=clip)
                        page.close()
                        print(f"wrote {shot}")
                browser.close()
        finally:
            server.should_exit = True


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/screenshots"))
