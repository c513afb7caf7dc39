"""``GET /index?gpus=H100&term=on_demand&days=30``: the daily price index as a chart, and
the current spread of prices across providers with how often their offers were in stock.

The index is the answer of ``GET /v1/history/index`` (the router's own function, its
query model too: the same parameters, bounds and errors); the spread is read from the
current offers in memory, so it shows even without a database.

Above both, the banner every page about offers shows (``_banner.html``): "Sample data"
when the index counts prices of the offline sample (with the index's note: the capture
dates, and that its days start when the sample was stored) or the current offers are the
sample's, and the current state's stale and failed providers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import polars as pl
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool

from gpuscout.adapters.regions import RegionClass, region_class_of
from gpuscout.adapters.schema import RentalTerm
from gpuscout.pricing import expressions as ex
from gpuscout.pricing.display import for_display
from gpuscout.pricing.requirement import Requirement
from gpuscout.service.api.deps import ContextDep, StateDep
from gpuscout.service.api.routers.history import IndexQuery, price_index
from gpuscout.service.publication import publishable_state, withheld, withheld_note
from gpuscout.service.validation_text import error_message

from .charts import Series, line_chart
from .templating import templates

__all__ = ["current_spread", "in_region", "router", "stock_by_provider"]

router = APIRouter(include_in_schema=False)

#: The index page draws days: the hourly index is the API's (``interval=hour``).
_ALLOWED = frozenset(IndexQuery.model_fields) - {"interval"}


def in_region(frame: pl.DataFrame, region: RegionClass | None) -> pl.DataFrame:
    """The offers of ``frame`` rented in ``region`` (by their country, as the rollups class
    them: :func:`adapters.regions.region_class_of`, once per distinct country); all of them
    without one."""
    if region is None:
        return frame
    countries = frame.get_column("country").unique().to_list()
    kept = [c for c in countries if c is not None and region_class_of(c) is region]
    country = pl.col("country")
    unstated = country.is_null() & (region is RegionClass.UNKNOWN)
    return frame.filter(country.is_in(kept) | unstated)


def current_spread(frame: pl.DataFrame, gpu: str, term: str) -> list[dict[str, Any]]:
    """Per provider: cheapest, median and dearest USD per GPU-hour of ``gpu`` at ``term``."""
    models = list(Requirement(gpus=(gpu,)).gpu_models())
    spread = (
        frame.lazy()
        .filter(pl.col("gpu_model").is_in(models), pl.col("term").cast(pl.String) == term)
        .with_columns(usd_per_gpu_hour=ex.usd_per_gpu_hour())
        .group_by("provider")
        .agg(
            min_usd_per_gpu_hour=pl.col("usd_per_gpu_hour").min(),
            median_usd_per_gpu_hour=pl.col("usd_per_gpu_hour").median(),
            max_usd_per_gpu_hour=pl.col("usd_per_gpu_hour").max(),
            offers=pl.len(),
        )
        .sort("min_usd_per_gpu_hour", "provider")
        .collect()
    )
    return for_display(spread).to_dicts()


def stock_by_provider(
    engine: Any, frame: pl.DataFrame, gpu: str, term: str, now: datetime
) -> dict[str | None, float | None]:
    """Per provider (and ``None``: all of them), the share of the last 7 days' snapshots in
    which its current offers of ``gpu`` at ``term`` were in stock
    (:func:`db.availability.availability`); empty without a database."""
    if not isinstance(engine, Engine):
        return {}
    from gpuscout.db.availability import availability
    from gpuscout.service.offer_record import frame_key

    models = list(Requirement(gpus=(gpu,)).gpu_models())
    offers = frame.filter(
        pl.col("gpu_model").is_in(models), pl.col("term").cast(pl.String) == term
    ).select("provider", frame_key().alias("offer_key"))
    if offers.is_empty():
        return {}
    with engine.connect() as connection:
        shares = availability(connection, now, keys=offers["offer_key"].to_list(), days=(7,))
    joined = offers.join(shares, on="offer_key").filter(pl.col("snapshots") > 0)
    if joined.is_empty():
        return {}

    def share(part: pl.DataFrame) -> float:
        return float(part["available_snapshots"].sum()) / float(part["snapshots"].sum())

    out: dict[str | None, float | None] = {None: share(joined)}
    for (provider,), part in joined.group_by("provider"):
        out[str(provider)] = share(part)
    return out


def banner_answer(index: Any, state: Any) -> dict[str, Any]:
    """What the page's banner says: the index's source (``index``: its answer, or ``None``)
    and the current state's (``state``), as the fields of the offers' answers."""
    current = state.current
    index_sample = bool(index is not None and index.sample)
    return {
        "sample": index_sample or current.sample,
        "note": index.note if index_sample else current.note,
        "stale_providers": list(current.stale_providers),
        "failed_providers": list(current.failed_providers),
    }


def _chart(index: Any) -> Any:
    def series(name: str, field: str) -> Series:
        points = [(d.day, getattr(d, field)) for d in index.days if getattr(d, field) is not None]
        return Series(name, points)

    return line_chart(
        [
            series("median", "median_usd_per_gpu_hour"),
            series("p10", "p10_usd_per_gpu_hour"),
            series("p90", "p90_usd_per_gpu_hour"),
            series("min", "min_usd_per_gpu_hour"),
        ],
        title=f"Daily {index.gpus} {index.term.value} price index, USD per GPU-hour",
    )


@router.get("/index", response_class=HTMLResponse)
async def index_page(request: Request, state: StateDep, context: ContextDep) -> HTMLResponse:
    params = {k: v for k, v in request.query_params.items() if v.strip() and k in _ALLOWED}
    if "gpu" not in params:
        params.setdefault("gpus", "H100")
    errors: list[str] = []
    index, unavailable = None, None
    try:
        query = IndexQuery.model_validate(params)
    except ValidationError as exc:
        errors = [f"{e['loc'][0]}: {error_message(e)}" for e in exc.errors()]
        query = IndexQuery(gpus="H100")
    if not errors:
        try:
            index = await price_index(query, context)
        except HTTPException as exc:  # no database: the spread still shows
            unavailable = str(exc.detail)
    days = [d for d in index.days if d.offers] if index else []
    settings = context.settings
    public = publishable_state(settings, state.current)  # publication = public: within terms
    offers = in_region(public.frame, None if errors else query.region_class)
    stock = {}
    if not errors and state.current.source == "database":  # stock needs stored snapshots
        stock = await run_in_threadpool(
            stock_by_provider,
            context.history,
            offers,
            query.model,
            query.term.value,
            datetime.now(UTC),
        )
    return templates().TemplateResponse(
        request,
        "index.html",
        {
            "title": "Price index",
            "nav": "index",
            "query": query,
            "params": params,
            "terms": [t.value for t in RentalTerm],
            "errors": errors,
            "index": index,
            "days": days,
            "chart": _chart(index) if days else None,
            "unavailable": unavailable,
            "regions": [c.value for c in RegionClass],
            "spread": [] if errors else current_spread(offers, query.model, query.term.value),
            "withheld_note": withheld_note(withheld(settings, state.current.providers)),
            "stock": stock,
            "answer": banner_answer(index, state),
        },
        status_code=422 if errors else 200,
    )
