"""The GPU and provider names a requirement gives, and how an unknown one is refused.

A name nothing matches would otherwise filter every offer out: the answer would be an empty
ranking and the user left to guess at a typo. So an unknown name is refused by name, with
the closest known ones (a "did you mean").

GPU names are known from the catalog alone, which is fixed per process, so
:class:`~pricing.requirement.Requirement` refuses them itself (:func:`refused_gpus`).
Provider names are not: a price sheet's seller, or the cloud behind an aggregator, is a
provider a user may name (the filter matches ``provider`` or ``seller``), and only the data
being ranked says which exist. So providers are checked where that data is at hand, the
CLI's ``offers`` and the API's query, and every saved search (a digest's or an alert's,
from the API, the web forms and the CLI: one naming no offer's provider would never find
anything), against :func:`known_providers`: the registered adapters' names
(:func:`adapters.provider_names`, passed in) and every provider and seller in the frame.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from gpuscout.adapters import provider_aliases
from gpuscout.adapters.gpus import (
    GpuSpec,
    find_gpus,
    gpu_named,
    gpus_named,
    similar_gpu_names,
)

if TYPE_CHECKING:
    import polars as pl

    from .requirement import Requirement

__all__ = [
    "PROVIDER_FIELDS",
    "UnknownName",
    "check_providers",
    "did_you_mean",
    "known_providers",
    "one_gpu_model",
    "refused_gpus",
    "similar_names",
    "unknown_gpus_message",
]

#: The requirement's fields that name providers (or the sellers behind them).
PROVIDER_FIELDS: tuple[str, ...] = ("providers", "exclude_providers")


class UnknownName(ValueError):
    """A requirement names something the data does not know; ``field`` is the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def did_you_mean(close: Sequence[str]) -> str:
    """`` (did you mean 'a' or 'b'?)`` for the close names, empty without one."""
    if not close:
        return ""
    quoted = [repr(c) for c in close]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    return f" (did you mean {listed}?)"


def similar_names(name: str, known: Iterable[str], limit: int = 3) -> tuple[str, ...]:
    """Up to ``limit`` of ``known`` close to ``name`` (difflib's ratio, case aside)."""
    by_lower: dict[str, str] = {}
    for word in known:
        by_lower.setdefault(word.lower(), word)
    close = difflib.get_close_matches(name.strip().lower(), by_lower, n=limit, cutoff=0.6)
    return tuple(by_lower[c] for c in close)


def unknown_gpus_message(names: Sequence[str]) -> str:
    """The refusal of GPU names no model, family, vendor or alias matches, each with the
    closest catalog names (:func:`adapters.gpus.similar_gpu_names`)."""
    parts = [f"{name!r}{did_you_mean(similar_gpu_names(name))}" for name in names]
    return "unknown GPU model, family or vendor: " + ", ".join(parts)


def refused_gpus(queries: Iterable[str]) -> str | None:
    """The refusal of the GPU names of ``queries`` that mean no catalog model
    (:func:`adapters.gpus.gpus_named`, what a requirement's ``gpus`` and the history's
    ``gpus`` are read with), worded alike wherever a GPU is asked for
    (:func:`unknown_gpus_message`); ``None``: all known."""
    unknown = [q for q in queries if not gpus_named(q)]
    return unknown_gpus_message(unknown) if unknown else None


def one_gpu_model(name: str) -> GpuSpec:
    """The one catalog model ``name`` means, for what needs a single model (an estimate):
    a canonical name, else the one model a family or a raw name resolves to
    (:func:`adapters.gpus.gpu_named`: ``"4090"`` is ``RTX-4090``). A ValueError otherwise:
    a family, vendor or name meaning several models lists them (a family is not one GPU's
    figures), an unknown one gets a "did you mean"."""
    one = gpu_named(name)
    if one is not None:
        return one
    models = gpus_named(name)
    listed = ", ".join(m.name for m in models)
    if not models:
        message = f"unknown GPU model {name!r}{did_you_mean(similar_gpu_names(name))}"
    elif find_gpus(name) != models:
        message = f"{name!r} names several models: one of {listed}"
    elif models[0].vendor.value == name.strip().lower():
        examples = ", ".join(m.name for m in models[:3])
        message = f"{name!r} is a vendor: give one of its {len(models)} models, e.g. {examples}"
    else:
        message = f"{name!r} is a family: one of {listed}"
    raise ValueError(message)


def known_providers(frame: pl.DataFrame, registered: Iterable[str]) -> frozenset[str]:
    """The provider names a requirement may give for ``frame``: ``registered`` (the
    adapters' names) and every ``provider`` and ``seller`` of its offers."""
    names = set(registered)
    for column in ("provider", "seller"):
        if column in frame.columns:
            names.update(v for v in frame[column].drop_nulls().unique().to_list() if v)
    return frozenset(names)


def check_providers(requirement: Requirement, known: Collection[str]) -> Requirement:
    """``requirement`` with its ``providers`` and ``exclude_providers`` spelled as in
    ``known`` (:func:`known_providers`): a name that differs from a known one only in case
    is that one (``Lambda`` is ``lambda``), and a platform's own name is its provider's
    (``矩池云`` is ``matpool``, :func:`adapters.provider_aliases`). Any other name not in
    ``known`` is refused (:class:`UnknownName`), naming the closest and the known ones."""
    by_lower = {name.lower(): name for name in sorted(known)}
    # the platform's own name (矩池云, 腾讯云) is its provider's
    aliases = {a: p for a, p in provider_aliases().items() if p in known}
    spelled: dict[str, tuple[str, ...]] = {}
    for field in PROVIDER_FIELDS:
        given: tuple[str, ...] = getattr(requirement, field)
        names = tuple(
            n if n in known else by_lower.get(n.lower()) or aliases.get(n.strip().lower(), n)
            for n in given
        )
        unknown = [name for name in names if name not in known]
        if unknown:
            parts = [f"{name!r}{did_you_mean(similar_names(name, known))}" for name in unknown]
            noun = "provider" if len(unknown) == 1 else "providers"
            raise UnknownName(
                field, f"unknown {noun} {', '.join(parts)}; known: {', '.join(sorted(known))}"
            )
        if names != given:
            spelled[field] = names
    return requirement.model_copy(update=spelled) if spelled else requirement
