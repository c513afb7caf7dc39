"""The answer to "which offer serves this model cheapest per million tokens", as JSON data.

One function shapes it for every surface (``gpuscout offers --serve ... --format json`` and
``GET /v1/offers?serve=...``), so the CLI and the API give the same rows. The answer states
the model, precision, scenario, request shape, the service hours the terms were chosen
for, and per offer its batch, replicas and the throughput's source ("measured" with the
MLPerf submission, or "predicted" by the roofline); ``left_out`` says which offers could
not serve and why.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gpuscout.db.current import CurrentState
from gpuscout.pricing.serve_rank import ServeRanking

__all__ = ["LEFT_OUT_WORDS", "THROUGHPUT_NOTE", "serving_answer"]

#: What each reason of ``left_out`` means.
LEFT_OUT_WORDS = {
    "does_not_fit": "the model's weights and one request's KV cache do not fit its GPUs",
    "no_precision": "its GPU lacks the precision's tensor math",
    "gpu_unknown": "its GPU is unknown to the benchmark table and to the roofline",
    "latency": "no replica meets the latency targets",
}
#: How to read ``throughput_source``.
THROUGHPUT_NOTE = (
    "throughput: 'measured' is the MLPerf Inference v5.1 result (closed, datacenter) for this"
    " model, GPU, scenario and precision, naming its submission; 'predicted' is gpuscout's"
    " roofline calibrated on those results (docs/serving.md)"
)
_INTERNAL = ("config_id",)


def serving_answer(ranking: ServeRanking, current: CurrentState, limit: int) -> dict[str, Any]:
    """The first ``limit`` rows of ``ranking`` and what they rest on."""
    request = ranking.request
    model = request.model_entry()
    rows = ranking.rows.drop(_INTERNAL).head(limit).to_dicts()
    return {
        "source": str(current.source),
        "sample": current.sample,
        "model": model.model_dump(),
        "precision": request.precision.value,
        "scenario": request.scenario.value,
        "workload": dataclasses.asdict(ranking.workload),
        "service_hours": ranking.hours,
        "tokens_per_day": request.tokens_per_day,
        "notes": [THROUGHPUT_NOTE],
        "total": ranking.rows.height,
        "offers": rows,
        "left_out": [
            {
                "reason": reason,
                "configurations": count,
                "why": LEFT_OUT_WORDS[reason],
                "example": ranking.examples.get(reason),
            }
            for reason, count in sorted(ranking.left_out.items())
        ],
    }
