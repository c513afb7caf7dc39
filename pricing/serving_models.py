"""The models gpuscout prices serving for: their shape and size, from ``serving_models.toml``.

A serving estimate needs the weights' size (every parameter is resident, even a mixture of
experts' idle ones), the parameters a token touches (FLOPs and weight reads per token), and
the KV cache a token of context holds (layers x cached values per layer). Each figure comes
from the model's Hugging Face ``config.json`` and model card, named in its ``source``.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

__all__ = ["ServingModel", "UnknownModelError", "serving_model", "serving_models"]

_DATA_FILE = "serving_models.toml"
Billions = Annotated[float, Field(gt=0)]


class UnknownModelError(ValueError):
    """A model name the catalog does not hold; the message lists the names it does."""


class ServingModel(BaseModel):
    """One model of the catalog. Parameters in billions; ``context_tokens`` is what the
    model serves without rope scaling."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    title: str
    params_b: Billions
    active_params_b: Billions
    layers: PositiveInt
    hidden_size: PositiveInt
    kv_heads: PositiveInt
    head_dim: PositiveInt
    kv_values_per_layer: PositiveInt | None = Field(
        default=None,
        description="cached values per layer per token where not 2 x kv heads x head dim",
    )
    context_tokens: PositiveInt
    source: str

    @property
    def moe(self) -> bool:
        """Whether a token uses fewer parameters than the model holds."""
        return self.active_params_b < self.params_b

    def kv_values_per_token(self) -> int:
        """Values the KV cache holds per token of context, over every layer."""
        per_layer = self.kv_values_per_layer or 2 * self.kv_heads * self.head_dim
        return self.layers * per_layer


def _load(text: str) -> tuple[ServingModel, ...]:
    models = tuple(ServingModel(**entry) for entry in tomllib.loads(text)["model"])
    for model in models:
        if model.active_params_b > model.params_b:
            raise ValueError(f"{_DATA_FILE}: {model.name}: active_params_b exceeds params_b")
    return models


@functools.cache
def serving_models() -> tuple[ServingModel, ...]:
    """Every model of the catalog, in file order; read once."""
    package = __package__ or "pricing"
    return _load(resources.files(package).joinpath(_DATA_FILE).read_text("utf-8"))


def serving_model(name: str) -> ServingModel:
    """The model called ``name`` (case-insensitive, ``_`` or ``.`` as in the catalog)."""
    wanted = name.strip().lower().replace("_", "-")
    for model in serving_models():
        if model.name == wanted:
            return model
    known = ", ".join(m.name for m in serving_models())
    raise UnknownModelError(f"unknown model {name!r}: one of {known}")
