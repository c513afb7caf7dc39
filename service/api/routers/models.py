"""``GET /v1/models`` and ``GET /v1/models/{name}``: the models gpuscout prices serving for."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status
from pydantic import BaseModel

from gpuscout.pricing.serving_models import ServingModel, UnknownModelError, serving_model
from gpuscout.pricing.serving_models import serving_models as catalog

from ..deps import NoQueryDep

__all__ = ["ModelList", "router"]

router = APIRouter(prefix="/v1/models", tags=["models"])


class ModelList(BaseModel):
    count: int
    models: list[ServingModel]


@router.get("", response_model=ModelList, dependencies=[NoQueryDep])
async def list_models() -> ModelList:
    """Every model ``/v1/offers?serve=`` takes: parameters (billions, total and active per
    token), attention shape, context, and the source of each figure."""
    models = list(catalog())
    return ModelList(count=len(models), models=models)


@router.get(
    "/{name}",
    response_model=ServingModel,
    dependencies=[NoQueryDep],
    responses={404: {"description": "no such model in the catalog"}},
)
async def get_model(name: str) -> ServingModel:
    """One model by name (``llama-3.1-70b``)."""
    try:
        return serving_model(name)
    except UnknownModelError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
