"""CoreWeave: GPU instances from the price list CoreWeave publishes on its pricing page.

CoreWeave lists its on-demand and spot prices on https://www.coreweave.com/pricing and offers
no price API; its Kubernetes API needs an account and quotes no prices. So CoreWeave's prices
are that page, captured on a known day (``data/coreweave_prices.yaml``, each entry quoting the
page's line; :mod:`adapters.price_list`): one on-demand offer per instance and, where the
page gives one, its North American spot price. CoreWeave bills by the minute and its price
includes the instance's vCPUs, RAM and local disk (CoreWeave's billing documentation, quoted
in the file).
"""

from __future__ import annotations

from typing import ClassVar

from .price_list import PublishedPriceList

__all__ = ["CoreWeaveAdapter"]


class CoreWeaveAdapter(PublishedPriceList):
    """CoreWeave's published per-instance prices: on-demand and spot."""

    name: ClassVar[str] = "coreweave"
    title: ClassVar[str] = "CoreWeave"
    price_file: ClassVar[str] = "coreweave_prices.yaml"
