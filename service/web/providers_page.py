"""``GET /providers``: each provider's last fetch, price age, outcome and error text.

The page shows the answer of ``GET /v1/providers`` (the router's own function), so both
say the same about every provider.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from gpuscout.service.api.deps import SettingsDep, StateDep
from gpuscout.service.api.routers.providers import list_providers

from .templating import templates

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

#: How each outcome is marked (class of its tag), and what it means for the offers shown.
OUTCOMES: dict[str, tuple[str, str]] = {
    "ok": ("ok", "latest fetch succeeded"),
    "stale": ("warn", "latest fetch failed: older offers shown"),
    # stale over the offline sample's offers (no live fetch has succeeded yet)
    "stale_sample": ("warn", "latest live fetch failed or skipped: sample offers shown"),
    # the offline sample's recorded prices, never fetched live: not an "ok"
    "ok_sample": ("warn", "recorded prices of the offline sample, not fetched live"),
    "failed": ("bad", "no offers from it"),
    "skipped": ("warn", "not fetched (e.g. no credentials)"),
    "never_fetched": ("", "no fetch recorded"),
}


@router.get("/providers", response_class=HTMLResponse)
async def providers_page(request: Request, state: StateDep, settings: SettingsDep) -> HTMLResponse:
    listing = await list_providers(state, settings)
    return templates().TemplateResponse(
        request,
        "providers.html",
        {"title": "Providers", "nav": "providers", "listing": listing, "outcomes": OUTCOMES},
    )
