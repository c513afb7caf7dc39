"""The explorer's form: one control per query field, labelled as people read them."""

from __future__ import annotations

import re

from starlette.datastructures import QueryParams

from gpuscout.service.web.form import form_groups, presentation
from gpuscout.service.web.templating import OPTION_LABELS, templates

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


def test_a_sort_option_shows_what_the_table_calls_it_its_value_the_apis() -> None:
    """The sort select's options read as the table's headers; each value stays the API's."""
    sort = presentation(QueryParams(""))["sort"]
    assert set(sort.options) <= set(OPTION_LABELS)
    assert OPTION_LABELS["usd_per_effective_tflop_hour"] == "$ / eff. TFLOP-h"
    html = (
        templates()
        .env.from_string('{% from "_control.html" import control %}{{ control(c) }}')
        .render(c=sort)
    )
    assert '<option value="usd_per_effective_tflop_hour" selected>$ / eff. TFLOP-h</option>' in html
    assert ">usd_per_" not in html


def test_a_checkbox_shows_its_code_as_people_write_it_its_value_the_apis() -> None:
    """Terms, form factors, fabrics, storage: 'on-demand', 'PCIe', 'InfiniBand', not the
    API's codes (which stay the values, and what a code without a label shows)."""
    groups = {c.name: c for g in form_groups(QueryParams("terms=on_demand")) for c in g.controls}
    render = templates().env.from_string(
        '{% from "_control.html" import control %}{{ control(c) }}'
    )
    shown = {}
    for name in ("terms", "form_factors", "fabrics", "storage_types"):
        control = groups[name]
        html = render.render(c=control)
        for option in control.options:
            label = OPTION_LABELS.get(option, option)
            assert f'value="{option}"' in html and f"> {label}</label>" in html
            shown[option] = label
    assert shown["on_demand"] == "on-demand" and shown["commit_1y"] == "1-year commitment"
    assert shown["pcie"] == "PCIe" and shown["infiniband"] == "InfiniBand"
    assert shown["other"] == "other"  # no label: as it is
    assert [o for o, label in shown.items() if "_" in label] == []
    checked = render.render(c=groups["terms"])
    assert 'value="on_demand" checked> on-demand</label>' in checked
