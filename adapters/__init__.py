"""Provider adapters and the common offer schema.

The registry below is the one list of providers that every other part reads (CLI,
snapshots, settings, docs, the contract test). It is what the adapters declare
(:mod:`adapters.declarations`): a provider is a module of ``adapters/`` whose adapter class
declares a ``name``, and nothing else lists it. Adapter modules are imported on first use, and
so is the adapter contract (``adapters.base``, with its HTTP client): ``adapters.schema`` and
``adapters.gpus`` alone (the pricing engine's needs) do not import it.
"""

from __future__ import annotations

import csv
import functools
import importlib
import importlib.resources
import io
from typing import TYPE_CHECKING

from .declarations import REGENERATE, declared, stale_entries

if TYPE_CHECKING:
    from .base import Adapter

__all__ = ["adapter_modules", "get_adapter", "provider_aliases", "provider_names", "registry"]


def adapter_modules() -> dict[str, str]:
    """Module under ``adapters/`` -> the name of the provider whose adapter it defines, in
    name order, from the adapters' declarations, without importing an adapter (a
    requirement's ``providers`` is checked on each ``gpuscout offers``, which imports none)."""
    return {d.module: d.name for d in declared()}


def provider_names() -> tuple[str, ...]:
    """The registered providers' names, in registry order, without importing an adapter."""
    return tuple(d.name for d in declared())


@functools.cache
def provider_aliases() -> dict[str, str]:
    """How people write a provider's name (``矩池云``, ``腾讯云``, ``Tencent Cloud``), lowered,
    -> its registered name; from ``data/provider_aliases.csv``, where each carries its source.
    A user who searches by the platform's own (often Chinese) name finds its offers."""
    text = importlib.resources.files(__name__).joinpath("data/provider_aliases.csv")
    rows = csv.DictReader(io.StringIO(text.read_text("utf-8")))
    aliases = {row["alias"].strip().lower(): row["provider"].strip() for row in rows}
    unknown = sorted(set(aliases.values()) - set(provider_names()))
    if unknown:
        raise RuntimeError(f"data/provider_aliases.csv names unregistered providers: {unknown}")
    return aliases


@functools.cache
def registry() -> dict[str, type[Adapter]]:
    """Provider name -> adapter class, in the order of :func:`provider_names`: the one
    :class:`~adapters.base.Adapter` subclass of the provider's module whose ``name`` it is.

    A class whose declarations differ from the manifest the settings were built from is a
    RuntimeError saying how to write it again: the settings would not match the adapter.
    """
    from .base import Adapter

    classes: dict[str, type[Adapter]] = {}
    for module, name in adapter_modules().items():
        found = [
            cls
            for cls in vars(importlib.import_module(f"{__name__}.{module}")).values()
            if isinstance(cls, type)
            and issubclass(cls, Adapter)
            and cls.__module__ == f"{__name__}.{module}"
            and getattr(cls, "name", "") == name
        ]
        if len(found) != 1:
            raise RuntimeError(
                f"adapters.{module} defines {len(found)} adapters named {name!r}, not 1"
            )
        classes[name] = found[0]
    stale = stale_entries(list(classes.values()))
    if stale:
        raise RuntimeError(f"{'; '.join(stale)}: run {REGENERATE}")
    return classes


def get_adapter(name: str) -> type[Adapter]:
    """The adapter class for ``name``; KeyError lists the known providers."""
    try:
        return registry()[name]
    except KeyError:
        known = ", ".join(registry())
        raise KeyError(f"unknown provider {name!r}; known: {known}") from None
