"""``GET /v1/providers``: each provider's last fetch, outcome, offers held and freshness;
``GET /v1/providers/coverage``: which fields of the checklist's groups its current offers carry.

``fresh`` follows price age: live prices at most the adapter's ``fresh_within_hours`` old
(:data:`adapters.base.FRESH_WITHIN_HOURS` unless the adapter sets it); sample prices are
never fresh, whatever their date, and say ``origin: sample``. Each provider carries its
terms as read (:mod:`adapters.source_terms`) and, under ``publication = public``, whether
it is published and why not (:mod:`service.publication`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import polars as pl
from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from gpuscout.adapters import registry
from gpuscout.adapters.run import FRESH_WITHIN_HOURS
from gpuscout.adapters.source_terms import terms_of

from ...field_coverage import coverage_answer
from ...provider_facts import provider_facts
from ...publication import withheld, withheld_note
from ..deps import NoQueryDep, SettingsDep, StateDep
from ..vocabulary import UtcTime

__all__ = ["CoverageList", "ProviderOut", "TermsOut", "router"]

router = APIRouter(prefix="/v1/providers", tags=["providers"], dependencies=[NoQueryDep])


class TermsOut(BaseModel):
    """What a source's terms allow, as read (adapters/data/source_terms.toml)."""

    terms_url: str | None = Field(description="the terms page read (null: not read)")
    read_on: str | None = Field(description="the date they were read (YYYY-MM-DD)")
    automated_access: str = Field(description="yes | no | unknown")
    keeping_history: str = Field(description="yes | no | unknown")
    republishing: str = Field(
        description="republishing, or building an index or comparison: yes | no | unknown"
    )
    automated_access_clause: str | None = Field(description="the clause quoted, if read")
    keeping_history_clause: str | None = Field(description="the clause quoted, if read")
    republishing_clause: str | None = Field(description="the clause quoted, if read")
    note: str | None
    source: str = Field(description="where this reading comes from")

    @classmethod
    def of(cls, provider: str) -> TermsOut:
        t = terms_of(provider)
        return cls(
            terms_url=t.terms_url,
            read_on=t.read_on,
            automated_access=t.automated_access.value,
            keeping_history=t.keeping_history.value,
            republishing=t.republishing.value,
            automated_access_clause=t.automated_access_clause,
            keeping_history_clause=t.keeping_history_clause,
            republishing_clause=t.republishing_clause,
            note=t.note,
            source=t.source,
        )


class ProviderOut(BaseModel):
    provider: str
    title: str | None = Field(description="the provider's display name, if registered")
    outcome: str = Field(description="ok | stale | failed | skipped | never_fetched")
    fresh: bool = Field(
        description="its prices are live and at most fresh_within_hours old; sample prices"
        " never are"
    )
    fresh_within_hours: float = Field(description="the provider's freshness threshold, hours")
    origin: str | None = Field(
        description="live | catalog | sample: where its offers come from: its own API, a"
        " published catalog of its prices (each offer's via_catalog names which, its"
        " price_age_hours how old), or the offline sample (null: none held)"
    )
    capture_date_known: bool = Field(
        description="false: sample prices whose capture date is unknown: last_fetch_at is the"
        " latest it can be, price_age_s the least the prices can be old"
    )
    offer_count: int
    last_fetch_at: UtcTime | None
    price_age_hours: float | None = Field(description="hours since its prices were fetched")
    price_age_s: float | None = Field(
        description="deprecated: use price_age_hours", json_schema_extra={"deprecated": True}
    )
    error: str | None = None
    credentials: str = Field(description="none_needed | set | missing")
    account_needed: bool | None = Field(
        description="a credential must be set to fetch it (null: not a registered provider)"
    )
    settings: list[str] = Field(
        description="the environment variables its adapter reads, its base URL's last"
    )
    prices_from: str | None = Field(description="where its prices come from, in words")
    lifecycle: str | None = Field(
        description="active | deprecated | retired (a retired provider is not fetched and"
        " its offers are never ranked)"
    )
    lifecycle_note: str | None = Field(
        description="for a deprecated or retired provider: since when, why, and the source"
    )
    format_checked: str | None = Field(
        description="the day its format was checked against the provider's current"
        " documentation (YYYY-MM-DD), or 'not found' / 'not checked'"
    )
    terms: TermsOut = Field(description="what the source's terms allow, as read")
    published: bool = Field(
        description="false: kept out of everything published (publication = public) because"
        " its terms do not say yes to republishing"
    )
    withheld_reason: str | None = Field(description="why it is not published (null: it is)")


class ProviderList(BaseModel):
    source: str
    sample: bool = Field(description="true: some providers' offers are recorded sample prices")
    note: str | None
    snapshot_at: UtcTime | None
    fx_as_of: str = Field(description="date of the FX table non-USD prices convert with")
    publication: str = Field(
        description="personal | public: public keeps sources whose terms do not allow"
        " republishing out of the catalog, the index, digests and alerts"
    )
    withheld_note: str | None = Field(description="what publication = public withholds, and why")
    providers: list[ProviderOut]


#: No offers: the providers' declared facts alone (what the offers cover is answered above).
_NO_OFFERS = pl.DataFrame(
    schema={"provider": pl.String, "region": pl.String, "gpu_model": pl.String, "term": pl.String}
)


def _hours(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 3600, 3)


@router.get("", response_model=ProviderList)
async def list_providers(state: StateDep, settings: SettingsDep) -> ProviderList:
    """Every registered provider, and any other the current offers come from."""
    now = datetime.now(UTC)
    known = registry()
    creds = settings.provider_credentials()
    current = state.current
    facts = {f.name: f for f in provider_facts(_NO_OFFERS)}
    names = sorted(set(known) | set(current.providers))
    out_of_print = withheld(settings, names)
    out = []
    for name in names:
        held = current.providers.get(name)
        cls = known.get(name)
        need = cls.needed_settings() if cls is not None else ()
        within_hours = cls.fresh_within_hours if cls is not None else FRESH_WITHIN_HOURS
        holds = held is not None and held.offer_count > 0
        fact = facts.get(name)
        out.append(
            ProviderOut(
                provider=name,
                title=cls.title if cls is not None else None,
                outcome=held.outcome.value if held else "never_fetched",
                fresh=held is not None and held.fresh(now, within_hours),
                fresh_within_hours=within_hours,
                origin=held.origin.value if held is not None and holds else None,
                capture_date_known=held.capture_date_known if held else True,
                offer_count=held.offer_count if held else 0,
                last_fetch_at=held.fetched_at if held else None,
                price_age_hours=_hours(held.price_age_s(now)) if held else None,
                price_age_s=held.price_age_s(now) if held else None,
                error=held.error if held else None,
                credentials=(
                    "none_needed"
                    if not need
                    else "set"
                    if all(creds.get(n) for n in need)
                    else "missing"
                ),
                account_needed=fact.account_needed if fact else None,
                settings=list(fact.settings) if fact else [],
                prices_from=fact.source if fact else None,
                lifecycle=fact.lifecycle if fact else None,
                lifecycle_note=(fact.lifecycle_note or None) if fact else None,
                format_checked=fact.format_checked if fact else None,
                terms=TermsOut.of(name),
                published=name not in out_of_print,
                withheld_reason=out_of_print.get(name),
            )
        )
    return ProviderList(
        source=current.source,
        sample=current.sample,
        note=current.note,
        snapshot_at=current.snapshot_at,
        fx_as_of=current.fx.as_of,
        publication=settings.publication,
        withheld_note=withheld_note(out_of_print),
        providers=out,
    )


class FieldCoverageOut(BaseModel):
    field: str = Field(description="an offer field (see the offer's groups)")
    offers: int = Field(description="offers that carry it (not null)")
    share: float | None = Field(description="offers / the provider's offers, 0-1")


class GroupCoverageOut(BaseModel):
    group: str = Field(description="a checklist group: Compute, Memory and storage, Network, ...")
    share: float | None = Field(
        description="filled fields over offers x the group's fields, 0-1 (null: no offers)"
    )
    fields: list[FieldCoverageOut]


class ProviderCoverageOut(BaseModel):
    provider: str = Field(description='a provider name, or "all" for every offer together')
    offers: int = Field(description="its current offers")
    groups: list[GroupCoverageOut]


_COVERAGE_EXAMPLE: dict[str, Any] = {
    "source": "sample",
    "sample": True,
    "note": "offline sample: recorded prices, not live (vastai capture date unknown (on"
    " record by 2025-01-01))",
    "providers": [
        {
            "provider": "vastai",
            "offers": 2,
            "groups": [
                {
                    "group": "Software",
                    "share": 0.4,
                    "fields": [
                        {"field": "os_images", "offers": 0, "share": 0.0},
                        {"field": "cuda_version", "offers": 2, "share": 1.0},
                        {"field": "driver_version", "offers": 2, "share": 1.0},
                        {"field": "frameworks", "offers": 0, "share": 0.0},
                        {"field": "backup_service", "offers": 0, "share": 0.0},
                    ],
                }
            ],
        }
    ],
    "all": {"provider": "all", "offers": 2, "groups": []},
}


class CoverageList(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [_COVERAGE_EXAMPLE]})

    source: str = Field(description="database | sample: where the current offers come from")
    sample: bool = Field(description="true: some providers' offers are recorded sample prices")
    note: str | None
    providers: list[ProviderCoverageOut] = Field(
        description="each provider with current offers, in name order"
    )
    all: ProviderCoverageOut = Field(description="every current offer together")


@router.get("/coverage", response_model=CoverageList)
async def provider_coverage(state: StateDep) -> CoverageList:
    """Per provider, the share of its current offers that carry each field of the checklist's
    groups: where an offer's "unknown" comes from.

    Counted once per snapshot, when first asked (from the stored records or the sample).
    """
    answer = await run_in_threadpool(coverage_answer, state.current)
    return CoverageList.model_validate(answer)
