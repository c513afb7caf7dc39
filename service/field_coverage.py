"""The field-coverage answer of ``gpuscout providers --coverage`` and
``GET /v1/providers/coverage``: one shape for both, built from the current state.

The counting is :mod:`adapters.field_coverage`; this adds where the offers come from (the
database or the offline sample, with its note) and every provider's share in one list.
"""

from __future__ import annotations

from typing import Any

from gpuscout.adapters.field_coverage import coverage_json, total_coverage
from gpuscout.db.state import CurrentState

__all__ = ["coverage_answer", "sample_table"]


def coverage_answer(current: CurrentState, provider: str | None = None) -> dict[str, Any]:
    """Each provider's coverage (only ``provider``'s when given) and all of them together.

    A provider without current offers is not listed (nothing to count); a state that
    cannot count (``field_coverage`` is ``None``) lists none.
    """
    coverage = dict(current.field_coverage or {})
    if provider is not None:
        coverage = {k: v for k, v in coverage.items() if k == provider}
    return {
        "source": current.source,
        "sample": current.sample,
        "note": current.note,
        "providers": [coverage_json(c) for c in coverage.values()],
        "all": coverage_json(total_coverage(coverage)),
    }


def sample_table() -> str:
    """docs/providers.md's coverage table: the offline sample's offers, as the code counts them."""
    from gpuscout.adapters.field_coverage import coverage_markdown
    from gpuscout.adapters.schema import default_fx

    from .current import load_sample

    return coverage_markdown(load_sample(default_fx()).field_coverage or {})


if __name__ == "__main__":  # python -m gpuscout.service.field_coverage: docs/providers.md's table
    print(sample_table(), end="")
