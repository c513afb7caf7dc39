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

#: One module per provider under ``adapters/`` -> the provider's name, the ``name`` of the
#: adapter class the module defines (:func:`registry` refuses a module without one). The names
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
    """Provider name -> adapter class, in the order of :data:`ADAPTER_MODULES`: the one
    :class:`~adapters.base.Adapter` subclass of the provider's module whose ``name`` it is."""
    from .base import Adapter

    classes: dict[str, type[Adapter]] = {}
    for module, name in ADAPTER_MODULES.items():
        found = [
            cls
            for cls in vars(importlib.import_module(f"{__name__}.{module}")).values()
            if isinstance(cls, type)
            and issubclass(cls, Adapter)
            and getattr(cls, "name", "") == name
        ]
        if len(found) != 1:
            raise RuntimeError(
                f"adapters.{module} defines {len(found)} adapters named {name!r}, not 1"
            )
        classes[name] = found[0]
    return classes


def get_adapter(name: str) -> type[Adapter]:
    """The adapter class for ``name``; KeyError lists the known providers."""
    try:
        return registry()[name]
    except KeyError:
        known = ", ".join(registry())
        raise KeyError(f"unknown provider {name!r}; known: {known}") from None
