"""What the explorer shows: the very answer of ``GET /v1/offers`` for the page's query.

The explorer asks :func:`service.api.answers.ranked_page` (the API's ranking and shaping)
and shares the API's per-snapshot cache: a query answered by one is cached for the other.
The answer's bytes are decoded once more here (~1 ms for a page of offers).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from fastapi.exceptions import RequestValidationError
from starlette.datastructures import QueryParams

from gpuscout.service.api.answers import ranked_page
from gpuscout.service.api.app_context import ApiContext
from gpuscout.service.api.engine_inputs import parse_offers_query
from gpuscout.service.api.offers_query import canonical_key, validate_query
from gpuscout.service.api.state import ApiState
from gpuscout.service.validation_text import error_message

__all__ = ["QueryError", "offer_key", "offer_path", "offers_answer", "query_errors"]


class QueryError(Exception):
    """The query was refused; ``errors`` name each parameter and why."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(f"{e['param']}: {e['msg']}" for e in errors))
        self.errors = errors


def query_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Each refused parameter and why, for the form."""
    out = []
    for e in exc.errors():
        loc = [str(p) for p in e.get("loc", ()) if p != "query"]
        out.append({"param": loc[0] if loc else "query", "msg": error_message(e)})
    return out


async def offers_answer(
    state: ApiState, params: QueryParams, context: ApiContext
) -> dict[str, Any]:
    """The ``/v1/offers`` answer for ``params`` as a dict; :class:`QueryError` if refused."""
    now = state.answer_time()
    try:
        query = validate_query(params, context.settings.api_max_list_items)
        key = canonical_key(query)
        page = state.cache.get((key, now))
        if page is None:
            parsed = parse_offers_query(query, key, providers=state.known_providers)
            page = await context.ranking(ranked_page, state, parsed, now)
            state.cache.put((key, now), page)
    except RequestValidationError as exc:
        raise QueryError(query_errors(exc)) from None
    answer: dict[str, Any] = json.loads(page.body)
    return answer


def offer_key(offer: dict[str, Any]) -> str:
    """The stored key of a ranked offer (:attr:`adapters.schema.Offer.key`)."""
    price = offer["price"]
    key = (
        f"{offer['provider']}|{offer['offer_id']}|{offer['region'] or ''}"
        f"|{price['term']}|{price['price_basis']}"
    )
    return key if price.get("term_variant") is None else f"{key}|{price['term_variant']}"


def offer_path(key: str) -> str:
    return "/offer?key=" + quote(key, safe="")
