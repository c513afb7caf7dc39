"""``GET /v1/providers``: each provider's last fetch, outcome, offers held and freshness."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter
from pydantic import BaseModel, Field

from adapters import registry

from ..deps import NoQueryDep, SettingsDep, StateDep
from ..state import ProviderStatus

__all__ = ["ProviderOut", "router"]

router = APIRouter(prefix="/v1/providers", tags=["providers"], dependencies=[NoQueryDep])


class ProviderOut(BaseModel):
    provider: str
    title: str | None = Field(description="the provider's display name, if registered")
    outcome: str = Field(description="ok | stale | failed | skipped | never_fetched")
    fresh: bool = Field(description="its offers come from the latest snapshot")
    offer_count: int
    last_fetch_at: datetime | None
    price_age_s: float | None = Field(description="seconds since its prices were fetched")
    error: str | None = None
    credentials: str = Field(description="none_needed | set | missing")


class ProviderList(BaseModel):
    source: str
    note: str | None
    snapshot_at: datetime | None
    providers: list[ProviderOut]


@router.get("", response_model=ProviderList)
async def list_providers(state: StateDep, settings: SettingsDep) -> ProviderList:
    """Every registered provider, and any other the current offers come from."""
    now = datetime.now(UTC)
    known = registry()
    creds = settings.provider_credentials()
    by_name: dict[str, ProviderStatus] = {p.provider: p for p in state.providers}
    out = []
    for name in sorted(set(known) | set(by_name)):
        status = by_name.get(name)
        cls = known.get(name)
        need = cls.credential_names if cls is not None else ()
        out.append(
            ProviderOut(
                provider=name,
                title=cls.title if cls is not None else None,
                outcome=status.outcome if status else "never_fetched",
                fresh=status is not None and status.outcome == "ok",
                offer_count=status.offer_count if status else 0,
                last_fetch_at=status.last_fetch_at if status else None,
                price_age_s=(
                    state.age_s(status.last_fetch_at, now)
                    if status and status.last_fetch_at
                    else None
                ),
                error=status.error if status else None,
                credentials=(
                    "none_needed"
                    if not need
                    else "set"
                    if all(creds.get(n) for n in need)
                    else "missing"
                ),
            )
        )
    return ProviderList(
        source=state.current.source,
        note=state.current.note,
        snapshot_at=state.current.snapshot_at,
        providers=out,
    )
