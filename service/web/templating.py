"""The Jinja2 environment of the web pages and the filters that format their numbers.

Units are always printed with the number, as everywhere in gpuscout. Autoescaping is on
for every template: provider data (names, notes, error texts) is never trusted markup.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from gpuscout.pricing.display import published_price_text

if TYPE_CHECKING:
    from fastapi.templating import Jinja2Templates

__all__ = ["TEMPLATES_DIR", "break_even", "hours", "money", "templates", "with_param"]

TEMPLATES_DIR = Path(__file__).parent / "templates"


def published_price(price: Any) -> str | None:
    """An answer row's price as its provider publishes it (``2.72 CNY/GPU-h``), shown under
    the dollars where it is in another currency; ``None`` for a USD price."""
    fields = price if isinstance(price, Mapping) else vars(price)
    amount, currency = fields.get("price_amount"), fields.get("price_currency")
    if currency in (None, "USD") or amount is None:
        return None
    unit, basis = str(fields.get("price_unit")), str(fields.get("price_basis"))
    return published_price_text(amount, str(currency), unit, basis)


def money(value: Any, places: int = 2) -> str:
    """``$1,234.50``; small figures keep their significant digits (``$0.0042``)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    number = float(value)
    if 0 < abs(number) < 0.1:
        return f"${number:.4f}"
    return f"${number:,.{places}f}"


def hours(value: Any) -> str:
    """Hours as ``45 min``, ``3.5 h`` or ``12.4 d``."""
    if value is None:
        return "–"
    h = float(value)
    if h < 1:
        return f"{h * 60:.0f} min"
    if h < 48:
        return f"{h:.1f} h"
    return f"{h / 24:.1f} d"


def break_even(term: Mapping[str, Any]) -> str:
    """A term's "beats on-demand after" cell: its break-even hours; ``–`` where none applies
    (on-demand itself, and terms without a commitment such as interruptible ones, which are
    cheaper from the first hour); "no on-demand price" for a commitment with no on-demand
    price of its configuration to compare to."""
    if term.get("break_even_hours") is not None:
        return hours(term["break_even_hours"])
    if term.get("commitment_hours"):
        return "no on-demand price"
    return "–"


def age(when: Any, now: datetime | None = None) -> str:
    """How long ago ``when`` (a datetime or ISO text) was, in words."""
    if when is None:
        return "never"
    if isinstance(when, str):
        when = datetime.fromisoformat(when)
    seconds = max(0.0, ((now or datetime.now(UTC)) - when).total_seconds())
    return hours(seconds / 3600) + " ago"


def number(value: Any, places: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.{places}f}"
    return str(value)


#: How a page shows a value that is an API code (a select's or a checkbox's option, a
#: table's term; the value stays the code, the query string's and the API's): yes/no, the
#: sort keys as the table's headers say them, rental terms, form factors, fabrics, storage
#: and cooling as people write them. A code not here is shown as it is.
OPTION_LABELS: dict[str, str] = {
    "true": "yes",
    "false": "no",
    "usd_per_effective_tflop_hour": "$ / eff. TFLOP-h",
    "all_in_cost_usd": "all-in cost",
    "job_cost_usd": "job cost",
    "usd_per_hour": "$ / h",
    "usd_per_gpu_hour": "$ / GPU-h",
    "on_demand": "on-demand",
    "interruptible": "interruptible (spot)",
    "commit_1d": "1-day commitment",
    "commit_1w": "1-week commitment",
    "commit_1mo": "1-month commitment",
    "commit_3mo": "3-month commitment",
    "commit_6mo": "6-month commitment",
    "commit_1y": "1-year commitment",
    "commit_3y": "3-year commitment",
    "sxm": "SXM",
    "pcie": "PCIe",
    "oam": "OAM",
    "infiniband": "InfiniBand",
    "roce": "RoCE",
    "efa": "EFA (AWS)",
    "ethernet": "Ethernet",
    "nvme": "NVMe",
    "ssd": "SSD",
    "hdd": "HDD",
    "network": "network volume",
}


def with_param(params: QueryParams, **changes: Any) -> str:
    """The query string ``params`` with ``changes`` set (``None`` removes a parameter)."""
    items = [(k, v) for k, v in params.multi_items() if k not in changes]
    items += [(k, str(v)) for k, v in changes.items() if v is not None]
    return "?" + urlencode(items) if items else "?"


@functools.cache
def templates() -> Jinja2Templates:
    """The one template set, built on first use: Jinja2 is imported then, not when a worker
    starts (~45 ms of its start, before it can answer anything)."""
    from fastapi.templating import Jinja2Templates

    t = Jinja2Templates(directory=str(TEMPLATES_DIR))
    t.env.filters.update(money=money, hours=hours, age=age, number=number, break_even=break_even)
    t.env.globals.update(
        with_param=with_param, option_labels=OPTION_LABELS, published_price=published_price
    )
    t.env.trim_blocks = True
    t.env.lstrip_blocks = True
    return t
