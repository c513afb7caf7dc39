"""The web pages of gpuscout, served by the API app itself (``gpuscout serve``).

Server-rendered HTML (Jinja2) over the same in-memory state and the same ranking as
``/v1/offers``; every page works without JavaScript, which only enhances the explorer.
Every asset is served by the app (``/static``), the API docs' Swagger UI too: nothing is
fetched from elsewhere. One router module per page, in :data:`PAGES`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

__all__ = ["PAGES", "STATIC_DIR", "mount"]

STATIC_DIR = Path(__file__).parent / "static"
#: One module per page (or family of pages) under ``service/web``.
PAGES: tuple[str, ...] = (
    "explorer",
    "offer_page",
    "providers_page",
    "catalog_page",
    "index_page",
    "subscribe_page",
    "alert_page",
    "docs_page",
)


def mount(app: FastAPI) -> None:
    """Add the pages and their static files to ``app``."""
    for module in PAGES:
        app.include_router(importlib.import_module(f"{__name__}.{module}").router)
    from .docs_page import SWAGGER_UI_DIR, SWAGGER_UI_URL

    # the more specific mount first: Starlette matches mounts in order
    app.mount(SWAGGER_UI_URL, StaticFiles(directory=SWAGGER_UI_DIR), name="swagger-ui")
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
