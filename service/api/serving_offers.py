"""``GET /v1/offers?serve=MODEL``: the offers ranked by USD per million tokens.

The parameters of :class:`~pricing.serve_rank.ServeRequest` (``serve``, ``precision``,
``scenario``, ``tokens_per_day``, ``input_tokens``, ``output_tokens``, ``ttft_s``,
``tpot_s``) are read here; every other parameter is the offers query's own (the
requirement's filters, ``hours`` for the service's duration, ``limit``), validated by the
same code as a ranking by TFLOP-hour. ``precision`` takes ``fp4`` here. The answer is
:func:`service.serving_answer.serving_answer`, as ``gpuscout offers --serve`` prints it.
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.datastructures import QueryParams

from gpuscout.pricing.serve_rank import DEFAULT_SERVICE_HOURS, ServeRequest, rank_serving

from ..serving_answer import serving_answer
from .engine_inputs import parse_offers_query
from .offers_query import canonical_key, validate_query
from .state import ApiState

__all__ = ["SERVE_PARAMS", "serving_offers"]

#: The query parameters a serving request adds (or, for ``precision``, takes over).
SERVE_PARAMS: tuple[str, ...] = tuple(ServeRequest.model_fields)


def _serve_request(params: QueryParams) -> ServeRequest:
    data = {k: params[k] for k in SERVE_PARAMS if k in params}
    try:
        return ServeRequest.model_validate(data)
    except ValidationError as exc:
        errors = [
            {
                "type": e["type"],
                "loc": ("query", *[str(p) for p in e["loc"]]),
                "msg": e["msg"],
                "input": e.get("input"),
            }
            for e in exc.errors(include_url=False, include_context=False)
        ]
        raise RequestValidationError(errors) from None


def serving_offers(
    params: QueryParams, state: ApiState, max_list_items: int | None
) -> dict[str, Any]:
    """The serving answer for ``params``; a 422 naming the parameter it refuses."""
    request = _serve_request(params)
    rest = QueryParams([(k, v) for k, v in params.multi_items() if k not in SERVE_PARAMS])
    query = validate_query(rest, max_list_items)
    parsed = parse_offers_query(query, canonical_key(query), providers=state.known_providers)
    hours = parsed.job.hours if parsed.job is not None and parsed.job.hours else None
    ranking = rank_serving(
        state.frame,
        request,
        parsed.requirement,
        hours=hours or DEFAULT_SERVICE_HOURS,
        now=state.answer_time(),
    )
    return serving_answer(ranking, state.current, parsed.limit)
