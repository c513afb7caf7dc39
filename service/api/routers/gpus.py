"""``GET /v1/gpus`` and ``GET /v1/gpus/{name}``: the GPU catalog."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, ConfigDict, Field

from gpuscout.adapters.gpus import GpuSpec, Precision, catalog, find_gpus
from gpuscout.adapters.gpus import get_gpu as lookup_gpu

from ..deps import NoQueryDep

__all__ = ["GpuOut", "GpuQuery", "router"]

router = APIRouter(prefix="/v1/gpus", tags=["gpus"])


class GpuOut(BaseModel):
    """One catalog model: dense peak TFLOPS per GPU (INT8 in TOPS), memory, power."""

    name: str
    family: str
    vendor: str
    form_factor: str
    memory_gb: float | None
    memory_type: str | None
    mem_bandwidth_gbs: float | None
    tflops: dict[str, float | None] = Field(description="dense peak per precision, per GPU")
    tdp_w: float | None
    nvlink_gbs: float | None
    release_year: int | None
    source: str

    @classmethod
    def of(cls, spec: GpuSpec) -> GpuOut:
        return cls(
            name=spec.name,
            family=spec.family,
            vendor=spec.vendor.value,
            form_factor=spec.form_factor.value,
            memory_gb=spec.memory_gb,
            memory_type=spec.memory_type,
            mem_bandwidth_gbs=spec.mem_bandwidth_gbs,
            tflops={p.value: spec.peak_tflops(p) for p in Precision},
            tdp_w=spec.tdp_w,
            nvlink_gbs=spec.nvlink_gbs,
            release_year=spec.release_year,
            source=spec.source,
        )


class GpuList(BaseModel):
    count: int
    gpus: list[GpuOut]


class GpuQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    q: str | None = Field(
        default=None, max_length=100, description="a model, family (H100) or vendor (amd)"
    )


@router.get("", response_model=GpuList)
async def list_gpus(query: Annotated[GpuQuery, Query()]) -> GpuList:
    """Every catalog model, or those matching ``q``."""
    specs = catalog() if not query.q else find_gpus(query.q)
    return GpuList(count=len(specs), gpus=[GpuOut.of(s) for s in specs])


@router.get(
    "/{name}",
    response_model=GpuOut,
    dependencies=[NoQueryDep],
    responses={404: {"description": "no such model in the catalog"}},
)
async def get_gpu(name: str) -> GpuOut:
    """One model by canonical name (case-insensitive)."""
    spec = lookup_gpu(name)
    if spec is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"unknown GPU model {name!r}; see /v1/gpus (families: /v1/gpus?q=H100)",
        )
    return GpuOut.of(spec)
