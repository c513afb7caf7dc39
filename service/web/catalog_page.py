"""``GET /gpus``: the GPU catalog, each figure with how it was had and its source.

Per precision the figure the ranking uses (:meth:`adapters.gpus.GpuSpec.figure`): from the
datasheet, derived by a sourced rule, or a fallback at a wider precision; ``?q=`` narrows
the list as ``/v1/gpus?q=`` does.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from gpuscout.adapters.gpus import Precision, catalog, find_gpus

from .templating import templates

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

#: The precisions shown, widest last (INT8 is in TOPS).
SHOWN: tuple[Precision, ...] = (
    Precision.FP8, Precision.BF16, Precision.FP16, Precision.TF32, Precision.FP32, Precision.FP64,
)  # fmt: skip


def _figures(spec: Any) -> list[dict[str, Any]]:
    out = []
    for p in SHOWN:
        f = spec.figure(p)
        out.append(
            {
                "precision": p.name,
                "tflops": None if f is None else f.tflops,
                "basis": None if f is None else f.basis.value,
                "note": None if f is None else f.note(p),
                "source": None if f is None or f.rule is None else f.rule.source,
            }
        )
    return out


@router.get("/gpus", response_class=HTMLResponse)
async def catalog_page(
    request: Request, q: Annotated[str | None, Query(max_length=100)] = None
) -> HTMLResponse:
    specs = find_gpus(q) if q else catalog()
    rows = [{"spec": s, "figures": _figures(s)} for s in specs]
    return templates().TemplateResponse(
        request,
        "catalog.html",
        {"title": "GPU catalog", "nav": "gpus", "rows": rows, "q": q or "", "shown": SHOWN},
    )
