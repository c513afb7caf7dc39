"""Provider adapters and the common offer schema.

The registry below is the one list of providers that every other part reads (CLI,
snapshots, docs, the contract test). Adapter modules are imported on first use, and so is
the adapter contract (``adapters.base``, with its HTTP client): ``adapters.schema`` and
``adapters.gpus`` alone (the pricing engine's needs) do not import it.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Adapter

__all__ = ["ADAPTER_MODULES", "get_adapter", "registry"]

#: One module per provider under ``adapters/``; each defines ``ADAPTER`` (its class).
ADAPTER_MODULES: tuple[str, ...] = (
    "lambdalabs",
    "verda",
    "cudo",
    "sheet",
    "azure",
    "aws",
    "gcp",
    "oci",
    "vultr",
    "vastai",
    "runpod",
    "tensordock",
    "jarvislabs",
    "digitalocean",
    "hyperstack",
    "shadeform",
    "fluidstack",
    "tencent",
    "alibaba",
    "mithril",
)


@functools.cache
def registry() -> dict[str, type[Adapter]]:
    """Provider name -> adapter class, in the order of :data:`ADAPTER_MODULES`."""
    classes = (importlib.import_module(f"{__name__}.{m}").ADAPTER for m in ADAPTER_MODULES)
    return {cls.name: cls for cls in classes}


def get_adapter(name: str) -> type[Adapter]:
    """The adapter class for ``name``; KeyError lists the known providers."""
    try:
        return registry()[name]
    except KeyError:
        known = ", ".join(registry())
        raise KeyError(f"unknown provider {name!r}; known: {known}") from None
