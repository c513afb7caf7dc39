"""``GET /v1/history/index`` (daily price index per GPU model and term) and
``GET /v1/history/offers/{key}`` (one offer's stored prices). Both read the database."""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from fastapi import APIRouter, HTTPException, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from starlette.concurrency import run_in_threadpool

from gpuscout.adapters.regions import RegionClass
from gpuscout.adapters.schema import RentalTerm
from gpuscout.pricing.display import DECIMALS, for_display
from gpuscout.pricing.names import refused_gpus

from ...publication import withheld_everywhere, withheld_note
from ..deps import ContextDep, NoQueryDep
from ..offer_ids import offer_id
from ..offers_cache import CachedPage, page_response
from ..problems import problem_responses
from ..vocabulary import UtcTime, deprecation_headers

if TYPE_CHECKING:
    from gpuscout.db.history import HistoryLabel

__all__ = ["INDEX_PATH", "price_index", "router"]

INDEX_PATH = "/v1/history/index"

router = APIRouter(
    prefix="/v1/history",
    tags=["history"],
    responses=problem_responses(503, _503="no database configured"),
)


class IndexQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gpus: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="a GPU model, family or vendor, or a name as providers write it"
        " (H100, H100 SXM, 4090), read as one of the offers' gpus",
        examples=["H100"],
    )
    gpu: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="deprecated: use gpus",
        json_schema_extra={"deprecated": True},
    )
    term: RentalTerm = RentalTerm.ON_DEMAND
    days: int | None = Field(
        default=None,
        ge=1,
        le=366,
        description="UTC days up to today (default 30); with interval=hour, the days of hours"
        " up to this one (default 1)",
    )
    region_class: RegionClass | None = Field(
        default=None,
        description="only the offers of this region class (from their country; unknown:"
        " none stated); a GPU model, family or vendor only",
    )
    interval: Literal["day", "hour"] = Field(
        default="day",
        description="day: the index per UTC day; hour: per UTC hour (kept for the last days"
        " only: GPUSCOUT_ROLLUP_HOURLY_DAYS)",
    )

    @field_validator("gpus", "gpu")
    @classmethod
    def _known(cls, value: str | None) -> str | None:
        message = None if value is None else refused_gpus([value])
        if message:  # the names /v1/offers refuses, worded as it words them
            raise ValueError(message)
        return value

    @model_validator(mode="after")
    def _one_name(self) -> IndexQuery:
        if self.gpus is None and self.gpu is None:
            raise ValueError("gpus: required (a GPU model or family, e.g. H100)")
        if self.gpus is not None and self.gpu is not None:
            raise ValueError("gpu: deprecated name of gpus; give gpus only")
        return self

    @property
    def model(self) -> str:
        return self.gpus or self.gpu or ""

    @property
    def window_days(self) -> int:
        """The days asked for, or the interval's default (30 days, or the last day's hours)."""
        return self.days or (1 if self.interval == "hour" else 30)


class IndexDay(BaseModel):
    day: date
    median_usd_per_gpu_hour: float | None
    p10_usd_per_gpu_hour: float | None
    p90_usd_per_gpu_hour: float | None
    min_usd_per_gpu_hour: float | None
    offers: int
    providers: int
    sample_offers: int = Field(
        description="of the day's offers, those replayed from the offline sample"
    )
    availability_share: float | None = Field(
        None,
        description="of the offers whose stock was recorded that day, the share stated"
        " available at some time in it; null: no stock recorded (or read from the price rows)",
    )


class IndexHour(BaseModel):
    hour: UtcTime = Field(description="the UTC hour's start")
    median_usd_per_gpu_hour: float | None
    p10_usd_per_gpu_hour: float | None
    p90_usd_per_gpu_hour: float | None
    min_usd_per_gpu_hour: float | None
    offers: int
    providers: int
    sample_offers: int
    availability_share: float | None = Field(
        None, description="as the days' availability_share, over the hour"
    )


class HistorySource(BaseModel):
    """Where the stored prices answered come from, as the offers' answers say it."""

    sample: bool = Field(description="some prices are the offline sample's recorded ones, not live")
    origin: Literal["live", "sample", "mixed"] = Field(
        description="live | sample | mixed: every price fetched, every one the offline"
        " sample's, or some of each"
    )
    sample_providers: list[str] = Field(
        description="the providers whose prices answered are the sample's"
    )
    note: str | None = Field(
        description="for sample prices: their capture dates, and that their days count from"
        " when the sample was stored, not from the capture dates"
    )

    @classmethod
    def of(cls, label: HistoryLabel) -> dict[str, Any]:
        """The fields of ``label``, to build an answer with."""
        return {
            "sample": label.sample,
            "origin": label.origin,
            "sample_providers": list(label.sample_providers),
            "note": label.note,
        }


class PriceIndex(HistorySource):
    gpus: str
    term: RentalTerm
    start: date
    end: date
    unit: str = "USD per GPU-hour"
    region_class: RegionClass | None = None
    interval: Literal["day", "hour"] = "day"
    days: list[IndexDay]
    hours: list[IndexHour] = Field(
        default_factory=list, description="interval=hour: the hours (days is then empty)"
    )
    withheld_note: str | None = Field(
        None,
        description="publication = public: the sources whose prices the index leaves out"
        " (their terms do not allow republishing), and why",
    )


class PricePointOut(BaseModel):
    valid_from: UtcTime
    valid_to: UtcTime | None = Field(description="null: the price still holds")
    price_amount: str = Field(description="as published, exact")
    price_currency: str
    price_unit: str
    price_basis: str
    term: RentalTerm
    usd_per_hour: float
    usd_per_gpu_hour: float | None
    origin: Literal["live", "catalog", "sample"] = Field(
        description="catalog: read from a published catalog of the provider's prices (the"
        " offer's via_catalog names it); sample: replayed from the offline sample, valid from"
        " when it was stored"
    )


class OfferHistory(HistorySource):
    id: str = Field(description="the offer's id, as in the offers' answers")
    key: str
    prices: list[PricePointOut]


def _engine(context: Any) -> Any:
    if context.history is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "no database configured")
    return context.history


@router.get(
    "/index",
    response_model=PriceIndex,
    responses={304: {"description": "If-None-Match matched: same snapshot, same query, same day"}},
)
async def get_price_index(
    query: Annotated[IndexQuery, Query()], request: Request, context: ContextDep
) -> Response:
    """Get the daily price index of a GPU model or family.

    `gpus` takes every spelling `/v1/offers` takes and means the same models by it: a
    model, a family (H100: every H100), a vendor or a name as providers write it (H100 SXM).

    Median, p10, p90 and min USD per GPU-hour per UTC day, with offer and provider counts
    and the share of offers in stock. `region_class` keeps the offers of one region class;
    `interval=hour` answers per UTC hour over the last `days` of hours (kept for the last
    days only; more is a 422).
    A day counts the prices the database held on it; prices of the offline sample count
    from when the sample was stored (not from their capture dates), and the answer says
    `sample` with a `note` naming their capture dates. The answer is cached per snapshot
    and day, with an ETag (`If-None-Match` gets a 304).
    """
    page = await price_index_page(query, context)
    client_etags = ",".join(request.headers.getlist("if-none-match")) or None
    response = page_response(page, client_etags, context.settings.cache_max_age_s)
    if query.gpu is not None:
        deprecation_headers([("gpu", "gpus")], response.headers)
    return response


async def price_index(query: IndexQuery, context: Any) -> PriceIndex:
    """The price index ``query`` asks for, as :func:`get_price_index` answers it (cached)."""
    return PriceIndex.model_validate_json((await price_index_page(query, context)).body)


async def price_index_page(query: IndexQuery, context: Any) -> CachedPage:
    """The finished answer of ``query``: from the current state's cache (one per snapshot,
    :mod:`service.api.offers_cache`) when it holds it for today, else read and kept there.
    Without a loaded state (none yet) it is read and not kept."""
    engine = _engine(context)
    end = datetime.now(UTC).date()
    state = context.holder.state
    key = f"{INDEX_PATH}?gpus={query.model}&term={query.term.value}&days={query.window_days}"
    if query.region_class is not None:
        key += f"&region_class={query.region_class.value}"
    if query.interval == "hour":
        return await _hourly_index_page(query, context, engine, f"{key}&interval=hour")
    cache_key = (key, end)
    page = None if state is None else state.cache.get(cache_key)
    if page is not None:
        return cast(CachedPage, page)
    start = end - timedelta(days=query.window_days - 1)
    gpu, term = query.model, query.term

    out = withheld_everywhere(context.settings)  # publication = public: within terms
    kept_out = tuple(out)

    def read() -> tuple[Any, HistoryLabel]:
        from gpuscout.db.history import daily_index, index_label

        frame = daily_index(
            engine,
            gpu=gpu,
            start=start,
            end=end,
            term=term,
            exclude=kept_out,
            region_class=query.region_class,
            availability=True,
        )
        label = index_label(
            engine, frame, gpu=gpu, start=start, end=end, term=term, exclude=kept_out
        )
        return frame, label

    try:
        frame, label = await run_in_threadpool(read)
    except ValueError as exc:  # a region class of no GPU series
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    answer = PriceIndex(
        **HistorySource.of(label),
        gpus=query.model,
        term=query.term,
        region_class=query.region_class,
        start=start,
        end=end,
        days=[IndexDay.model_validate(row) for row in for_display(frame).iter_rows(named=True)],
        withheld_note=withheld_note(out),
    )
    tag = "none" if state is None else state.tag
    digest = hashlib.blake2b(f"{key}&end={end}".encode(), digest_size=8).hexdigest()
    page = CachedPage(answer.model_dump_json().encode(), f'W/"{tag}-{digest}"')
    if state is not None:
        state.cache.put(cache_key, page)
    return page


async def _hourly_index_page(query: IndexQuery, context: Any, engine: Any, key: str) -> CachedPage:
    """The answer of an ``interval=hour`` ``query``: read each time (an hour moves on
    within a snapshot), with the ETag of its hour."""
    now = datetime.now(UTC)
    out = withheld_everywhere(context.settings)
    kept_out = tuple(out)

    def read() -> tuple[Any, HistoryLabel, datetime, datetime]:
        from gpuscout.db.history import hourly_index, hourly_window, index_label

        kept_days = context.settings.rollup_hourly_days
        first, last = hourly_window(now, query.window_days, kept_days)
        frame = hourly_index(
            engine,
            gpu=query.model,
            start=first,
            end=last,
            term=query.term,
            exclude=kept_out,
            region_class=query.region_class,
        )
        label = index_label(
            engine,
            frame,
            gpu=query.model,
            start=first.date(),
            end=last.date(),
            term=query.term,
            exclude=kept_out,
        )
        return frame, label, first, last

    try:
        frame, label, first, last = await run_in_threadpool(read)
    except ValueError as exc:  # beyond the kept hours, or no GPU series
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    answer = PriceIndex(
        **HistorySource.of(label),
        gpus=query.model,
        term=query.term,
        region_class=query.region_class,
        interval="hour",
        start=first.date(),
        end=last.date(),
        days=[],
        hours=[IndexHour.model_validate(row) for row in for_display(frame).iter_rows(named=True)],
        withheld_note=withheld_note(out),
    )
    state = context.holder.state
    tag = "none" if state is None else state.tag
    digest = hashlib.blake2b(f"{key}&at={last}".encode(), digest_size=8)
    return CachedPage(answer.model_dump_json().encode(), f'W/"{tag}-{digest.hexdigest()}"')


@router.get(
    "/offers/{key:path}",
    response_model=OfferHistory,
    dependencies=[NoQueryDep],
    responses=problem_responses(404, _404="no stored price for this offer key"),
)
async def get_offer_history(key: str, context: ContextDep) -> OfferHistory:
    """Get every stored price of one offer by its key.

    The key is `provider|offer_id|region|term|basis` (percent-encoded); the offers' answers
    link each offer's history by its URL-safe `id` instead: `/v1/offers/{id}/history`.
    """
    return await offer_history_of(key, context)


async def offer_history_of(key: str, context: Any) -> OfferHistory:
    """The stored prices of the offer ``key``; 404 if there are none, 503 without database."""
    from gpuscout.db.history import offer_price_history, points_label

    engine = _engine(context)
    points = await run_in_threadpool(offer_price_history, engine, key)
    if not points:
        state = context.holder.state
        why = ""
        if state is not None and state.current.source == "sample":
            why = (
                "; the answers come from the offline sample, which stores nothing"
                " (`gpuscout snapshot` stores prices)"
            )
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no price history for offer {key!r}{why}")
    return OfferHistory(
        **HistorySource.of(points_label(key, points)),
        id=offer_id(key),
        key=key,
        prices=[
            PricePointOut(
                valid_from=p.valid_from,
                valid_to=p.valid_to,
                price_amount=format(Decimal(p.price_amount).normalize(), "f"),
                price_currency=p.price_currency,
                price_unit=p.price_unit.value,
                price_basis=p.price_basis.value,
                term=p.term,
                usd_per_hour=float(p.usd_per_hour),
                usd_per_gpu_hour=None
                if p.usd_per_gpu_hour is None
                else round(p.usd_per_gpu_hour, DECIMALS["usd_per_gpu_hour"]),
                origin=p.origin.value,
            )
            for p in points
        ],
    )
