"""What `gpuscout providers` and the provider table of ``adapters/README.md`` say of each
provider: what its adapter declares (where its prices come from, whether it needs an account,
its settings, when its format was checked) and what its current offers cover (regions, GPU
models, terms).

One pure function over the registry and an offer frame, so the command (the stored offers,
else the offline sample) and the generated docs (the sample) say the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import polars as pl

from gpuscout.adapters import registry
from gpuscout.adapters.declarations import declaration_of
from gpuscout.adapters.format_checks import format_checks
from gpuscout.adapters.schema import RentalTerm

__all__ = ["ProviderFacts", "provider_facts"]

#: The order terms are listed in: the enum's, shortest commitment first.
_TERM_ORDER = {term.value: i for i, term in enumerate(RentalTerm)}


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderFacts:
    """One provider as the table shows it."""

    name: str
    title: str
    source: str
    """where its prices come from (:meth:`adapters.base.Adapter.source_text`)"""
    account_needed: bool
    """a credential must be set to fetch it"""
    settings: tuple[str, ...]
    """the environment variables it reads, its base URL's last"""
    format_checked: str | None
    """the day its format was checked against the provider's current documentation, ``not
    found`` or ``not checked`` (``data/format_checks.csv``)"""
    format_doc: str
    """the documentation it was checked against"""
    lifecycle: str
    """``active``, ``deprecated`` or ``retired``"""
    lifecycle_note: str
    """for a deprecated or retired provider: since when, why, and the source; else empty"""
    offers: int
    regions: int
    gpu_models: tuple[str, ...]
    terms: tuple[str, ...]


def provider_facts(frame: pl.DataFrame, names: Iterable[str] | None = None) -> list[ProviderFacts]:
    """The facts of each registered provider (only ``names`` when given), in registry order;
    what the offers cover is counted over ``frame`` (columns ``provider``, ``region``,
    ``gpu_model``, ``term``): zero and empty for a provider without offers there."""
    covered = _coverage(frame)
    wanted = None if names is None else set(names)
    facts = []
    for name, cls in registry().items():
        if wanted is not None and name not in wanted:
            continue
        declared = declaration_of(cls)
        settings = [s.env_name for s in declared.settings]
        if declared.base_url_setting:
            settings.append(f"GPUSCOUT_{declared.base_url_setting.upper()}")
        offers, regions, models, terms = covered.get(name, (0, 0, (), ()))
        check = format_checks().get(name)
        life = declared.lifecycle
        facts.append(
            ProviderFacts(
                name=name,
                title=cls.title,
                source=cls.source_text(),
                account_needed=bool(cls.credential_names),
                settings=tuple(settings),
                format_checked=check.checked_on if check else None,
                format_doc=check.source if check else "",
                lifecycle=life.state.value,
                lifecycle_note="" if life.text() == life.state.value else life.text(),
                offers=offers,
                regions=regions,
                gpu_models=models,
                terms=terms,
            )
        )
    return facts


def _coverage(
    frame: pl.DataFrame,
) -> dict[str, tuple[int, int, tuple[str, ...], tuple[str, ...]]]:
    """Per provider: offers, distinct regions, GPU models (sorted) and terms (in term order)."""
    if frame.is_empty():
        return {}
    grouped = (
        frame.lazy()
        .group_by("provider")
        .agg(
            pl.len().alias("offers"),
            pl.col("region").drop_nulls().n_unique().alias("regions"),
            pl.col("gpu_model").drop_nulls().unique().sort().alias("gpu_models"),
            pl.col("term").cast(pl.String).unique().alias("terms"),
        )
        .collect()
    )
    return {
        row["provider"]: (
            row["offers"],
            row["regions"],
            tuple(row["gpu_models"]),
            tuple(sorted(row["terms"], key=lambda t: _TERM_ORDER.get(t, len(_TERM_ORDER)))),
        )
        for row in grouped.iter_rows(named=True)
    }
