"""``GET /docs``: Swagger UI for the API, its assets served by the app.

FastAPI's own ``/docs`` loads Swagger UI from a CDN and is blank offline; the app turns it
off (``docs_url=None``) and this page serves the Swagger UI 5 files that the
``swagger-ui-py`` package ships (Swagger UI is Apache-2.0; its LICENSE is among the files
served) under ``/static/swagger-ui``. Swagger UI 5 is needed: FastAPI's schema is
OpenAPI 3.1, which 4.x cannot render.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
from pathlib import Path

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

from gpuscout.service.api.security_headers import PAGE_POLICY

__all__ = ["SWAGGER_UI_DIR", "SWAGGER_UI_URL", "router"]

router = APIRouter(include_in_schema=False)


def _package_dir(name: str) -> Path:
    """Where package ``name`` is installed, found without importing it (``swagger_ui``
    imports its handlers for a dozen web frameworks: ~25 ms of every start, for a path)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"the {name} package is not installed", name=name)
    return Path(spec.origin).parent


SWAGGER_UI_DIR = _package_dir("swagger_ui") / "static"
SWAGGER_UI_URL = "/static/swagger-ui"


@router.get("/docs", response_class=HTMLResponse)
async def api_docs() -> HTMLResponse:
    page = get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="gpuscout API",
        swagger_js_url=f"{SWAGGER_UI_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{SWAGGER_UI_URL}/swagger-ui.css",
        swagger_favicon_url="/static/favicon.svg",
    )
    # Swagger UI starts from one inline script: the page's policy allows it by its hash
    scripts = re.findall(rb"<script>(.*?)</script>", bytes(page.body), flags=re.S)
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(s).digest()).decode()}'" for s in scripts
    )
    page.headers["Content-Security-Policy"] = PAGE_POLICY.replace(
        "script-src 'self'", f"script-src 'self' {hashes}"
    ).replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
    return page
