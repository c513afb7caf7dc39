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

__all__ = ["ADAPTER_MODULES", "get_adapter", "provider_names", "registry"]

#: One module per provider under ``adapters/`` (each defines ``ADAPTER``, its class) -> the
#: provider's name (that class's ``name``; :func:`registry` refuses a mismatch). The names
#: are here so that a caller can know them without importing every adapter (a
#: requirement's ``providers`` is checked on each ``gpuscout offers``, which imports none).
ADAPTER_MODULES: dict[str, str] = {
    "lambdalabs": "lambda",
    "verda": "verda",
    "cudo": "cudo",
    "sheet": "sheet",
    "azure": "azure",
    "aws": "aws",
    "gcp": "gcp",
    "oci": "oci",
    "vultr": "vultr",
    "vastai": "vastai",
    "runpod": "runpod",
    "tensordock": "tensordock",
    "jarvislabs": "jarvislabs",
    "digitalocean": "digitalocean",
    "hyperstack": "hyperstack",
    "shadeform": "shadeform",
    "fluidstack": "fluidstack",
    "tencent": "tencent",
    "alibaba": "alibaba",
    "mithril": "mithril",
}


def provider_names() -> tuple[str, ...]:
    """The registered providers' names, in registry order, without importing an adapter."""
    return tuple(ADAPTER_MODULES.values())


@functools.cache
def registry() -> dict[str, type[Adapter]]:
    """Provider name -> adapter class, in the order of :data:`ADAPTER_MODULES`."""
    classes: dict[str, type[Adapter]] = {}
    for module, name in ADAPTER_MODULES.items():
        cls: type[Adapter] = importlib.import_module(f"{__name__}.{module}").ADAPTER
        if cls.name != name:
            raise RuntimeError(f"adapters.{module} names its provider {cls.name!r}, not {name!r}")
        classes[name] = cls
    return classes


def get_adapter(name: str) -> type[Adapter]:
    """The adapter class for ``name``; KeyError lists the known providers."""
    try:
        return registry()[name]
    except KeyError:
        known = ", ".join(registry())
        raise KeyError(f"unknown provider {name!r}; known: {known}") from None
