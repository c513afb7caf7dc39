"""The explorer's form: one control per query field, labelled as people read them."""

from __future__ import annotations

import re

from starlette.datastructures import QueryParams

from service.web.form import form_groups, presentation

#: Acronyms and units, as a label generated from a field name would spell them.
_LOWERCASE_ACRONYMS = re.compile(
    r"\b(gpus?|v?cpus?|gb|gbps|mbps|usd|ram|ecc|sla|pct|nvlink|ethernet|psus?|os|cuda|mfu)\b"
)


def test_every_label_spells_its_acronyms_and_units_as_written() -> None:
    """'Min GPU memory (GB per GPU)', not 'Min gpu memory gb' (a name capitalized)."""
    controls = [c for g in form_groups(QueryParams("")) for c in g.controls]
    controls += list(presentation(QueryParams("")).values())
    assert len(controls) > 30
    wrong = [c.label for c in controls if _LOWERCASE_ACRONYMS.search(c.label)]
    assert wrong == []
    assert "_" not in "".join(c.label for c in controls)
